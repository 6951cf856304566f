//! The per-process reports of a multi-process capture (an Nsight Systems export of
//! `torchrun`), written beside its job page and linked from it: each rank's findings and fixes
//! one click away.

use crate::sink::Sink;
use crate::stop::Stop;
use std::path::{Path, PathBuf};
use tracelens_results::{Job, Report};

/// One process of the capture: the rank file name the job knows it by, and its report.
pub(crate) struct RankReport {
    pub(crate) file: String,
    pub(crate) report: Report,
}

/// Where rank `rank`'s report goes beside `job_page`: `run.tracelens.html` →
/// `run.rank1.tracelens.html`, `job.html` → `job.rank1.html`.
fn page_for(job_page: &Path, rank: i64) -> PathBuf {
    let name = job_page.file_name().map_or_else(
        || "job.html".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let named = match name.strip_suffix(".tracelens.html") {
        Some(stem) => format!("{stem}.rank{rank}.tracelens.html"),
        None => match name.rsplit_once('.') {
            Some((stem, ext)) => format!("{stem}.rank{rank}.{ext}"),
            None => format!("{name}.rank{rank}.html"),
        },
    };
    job_page.with_file_name(named)
}

/// Writes each rank's report beside `job_page`; returns `(rank, link)` for the job page (the
/// link is the file's name: the pages sit in one folder).
pub(crate) fn write_beside(
    job_page: &Path,
    job: &Job,
    reports: &[RankReport],
    out: &mut Sink,
) -> Result<Vec<(i64, String)>, Stop> {
    let mut links = Vec::with_capacity(reports.len());
    for r in reports {
        let Some(row) = job.ranks.iter().find(|row| row.file == r.file) else {
            continue;
        };
        let path = page_for(job_page, row.rank);
        out.check_not_input(&path)?;
        out.write_file(&path, &tracelens_report::render_html(&r.report))?;
        links.push((
            row.rank,
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        ));
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::page_for;
    use std::path::{Path, PathBuf};

    #[test]
    fn rank_pages_are_named_after_the_job_page() {
        assert_eq!(
            page_for(Path::new("out/run.tracelens.html"), 1),
            PathBuf::from("out/run.rank1.tracelens.html")
        );
        assert_eq!(
            page_for(Path::new("job.html"), 0),
            PathBuf::from("job.rank0.html")
        );
    }
}
