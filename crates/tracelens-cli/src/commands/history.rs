//! `tracelens history`: stored results as one series of runs, rendered.

use crate::args::{Format, HistoryArgs};
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use std::path::{Path, PathBuf};
use tracelens_load as input;
use tracelens_results::history::{history, Run};

/// `tracelens history`.
pub(crate) fn history_of(args: &HistoryArgs, out: &mut Sink) -> Result<(), Stop> {
    let target = args.output.as_ref().filter(|p| p.as_os_str() != "-");
    if let Some(path) = target {
        out.check_not_input(path)?;
        // Never over any of the results read.
        for r in &args.results {
            if input::identity(path).is_some() && input::identity(path) == input::identity(r) {
                return Err(fail(
                    out.stderr,
                    path,
                    "refusing to write the output over an input",
                ));
            }
        }
    }
    let mut runs = Vec::with_capacity(args.results.len());
    for path in &args.results {
        runs.extend(runs_of(path, out.stderr).map_err(|why| fail(out.stderr, path, why))?);
    }
    let h = history(runs);
    let format = args
        .format
        .map(Format::from)
        .unwrap_or_else(|| target.map_or(Format::Text, |p| Format::from_extension(p)));
    let text = match format {
        Format::Html => tracelens_report::render_history_html(&h),
        Format::Json => tracelens_report::render_history_json(&h),
        Format::Md => tracelens_report::render_history_markdown(&h),
        _ => tracelens_report::render_history_text(&h),
    };
    match target {
        Some(path) => {
            out.write_file(path, &text)?;
            out.announce("wrote ", path)
        }
        None => out.print(&text),
    }
}

/// The runs one argument stands for: a result document; a rank's Parquet tables (one run) or
/// a folder of rank folders (one job, one run: its gate rank); else a folder, local or a
/// prefix in object storage, whose result documents are each a run (in name order).
pub(crate) fn runs_of(path: &Path, stderr: &mut dyn std::io::Write) -> Result<Vec<Run>, String> {
    let listed: Vec<PathBuf> = match input::remote::folder(path) {
        Some(Ok(Some(entries))) => {
            if entries
                .iter()
                .any(|e| e.path.file_name().is_some_and(|n| n == "rank.parquet"))
            {
                return Err("Parquet tables are read from a local folder: copy the rank folders down first (or keep each run's result document beside them)".into());
            }
            entries.into_iter().map(|e| e.path).collect()
        }
        Some(Ok(None)) => return Ok(vec![run_of(path)?]),
        Some(Err(e)) => return Err(input::read_problem(&e)),
        None if !path.is_dir() => return Ok(vec![run_of(path)?]),
        None => {
            if let Some(run) = parquet_run(path)? {
                return Ok(vec![run]);
            }
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| input::read_problem(&e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            files
        }
    };
    // Every JSON document in the folder is tried (a result's keys may come in any order, so
    // its first bytes do not tell it from a trace); those that are not results are skipped.
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for p in listed.iter().filter(|p| {
        let name = p.to_string_lossy().to_ascii_lowercase();
        name.ends_with(".json") || name.ends_with(".json.gz")
    }) {
        match run_of(p) {
            Ok(run) => runs.push(run),
            Err(_) => skipped.push(
                p.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            ),
        }
    }
    if runs.is_empty() {
        return Err("holds no tracelens result documents (tracelens analyze TRACE --format json -o run.json) and no Parquet tables".into());
    }
    if !skipped.is_empty() {
        let _ = writeln!(
            stderr,
            "tracelens: note: {}: skipped {} JSON file(s) that are not tracelens results: {}",
            tracelens_report::escape::terminal_text(&path.display().to_string()),
            skipped.len(),
            tracelens_report::escape::terminal_text(&skipped.join(", "))
        );
    }
    Ok(runs)
}

/// The run of a local folder of Parquet tables: one rank's (`rank.parquet` in it), or a job's
/// (rank folders in it); `None` when it holds neither.
#[cfg(feature = "parquet")]
fn parquet_run(dir: &Path) -> Result<Option<Run>, String> {
    let label = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let source = dir.display().to_string();
    if dir.join("rank.parquet").is_file() {
        let rank = tracelens_parquet::read_rank(dir)?;
        return Ok(Some(Run::of(&rank.results, label, source, None)));
    }
    let mut rank_dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| input::read_problem(&e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("rank.parquet").is_file())
        .collect();
    if rank_dirs.is_empty() {
        return Ok(None);
    }
    rank_dirs.sort();
    let ranks = rank_dirs
        .iter()
        .map(|d| tracelens_parquet::read_rank(d).map_err(|e| format!("{}: {e}", d.display())))
        .collect::<Result<Vec<_>, _>>()?;
    let job = tracelens_results::analyze_job(&ranks, false)?;
    let doc = crate::job::job_document(&job, &ranks);
    Ok(Some(Run::of(doc.gate_results()?, label, source, None)))
}

#[cfg(not(feature = "parquet"))]
fn parquet_run(_: &Path) -> Result<Option<Run>, String> {
    Ok(None)
}

/// One run from its stored document: its results, its label (`analyze --label`, else the
/// file's name), when its trace was recorded, and its HTML report beside it if there is one.
pub(crate) fn run_of(path: &Path) -> Result<Run, String> {
    let text = input::read_result_text(path, crate::gate::MAX_RESULT_BYTES)?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let source = path.display().to_string();
    let mut run = if tracelens_results::JobDocument::is_job(&text) {
        let doc = tracelens_results::JobDocument::from_json(&text)?;
        Run::of(doc.gate_results()?, name, source, None)
    } else {
        let report = tracelens_results::Report::from_json(&text).map_err(|e| e.to_string())?;
        let recorded = recorded_unix_ns(&report);
        let label = report.label.clone().unwrap_or(name);
        Run::of(&report.results(), label, source, recorded)
    };
    // The report of `run.json` is `run.html` beside it, when it was written.
    let html = path.with_extension("html");
    if html.is_file() {
        run.report = html.file_name().map(|n| n.to_string_lossy().into_owned());
    }
    Ok(run)
}

/// When the trace was recorded, Unix ns: the window's start on an absolute clock (Kineto's
/// `baseTimeNanoseconds` plus the start, or a start that is itself epoch time).
fn recorded_unix_ns(report: &tracelens_results::Report) -> Option<i64> {
    /// 2001-09-09: a clock value past this is epoch time, not time since the process started.
    const EPOCH_LIKE_NS: i64 = 1_000_000_000_000_000_000;
    let start = report.diagnosis.window.as_ref()?.interval.start_ns;
    match report.metadata.base_time_ns {
        Some(base) if base > 0 => base.checked_add(start),
        _ => (start > EPOCH_LIKE_NS).then_some(start),
    }
}
