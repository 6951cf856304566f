//! Many traces, one job: the ranks of a distributed run analysed in parallel, the per-rank
//! Parquet tables of the map step and `tracelens merge`, the reduce step.

use crate::args::{AnalyzeArgs, Format, MergeArgs};
use crate::gate;
use crate::output::{self, terminal_width};
use crate::rank_pages::{self, RankReport};
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use tracelens_load as input;
use tracelens_report::escape::terminal_text;

/// Renders a job in `format` to `-o` or stdout (shared by multi-file analyze and merge); the
/// plain command also writes the HTML job page beside the summary, named after `page` (the
/// folder or capture the job came from; `None` for `merge`, which prints only).
pub(crate) fn write_job(
    doc: &tracelens_results::JobDocument,
    format: Option<Format>,
    output: Option<&PathBuf>,
    page: Option<&Path>,
    rank_reports: &[RankReport],
    out: &mut Sink,
) -> Result<(), Stop> {
    let target = output.filter(|p| p.as_os_str() != "-");
    let width = terminal_width(std::io::stdout().is_terminal());
    let plain = output.is_none() && format.is_none_or(|f| f == Format::Text);
    let format =
        format.unwrap_or_else(|| target.map_or(Format::Text, |p| Format::from_extension(p)));
    let job = &doc.job;
    let source = page.map_or_else(String::new, |p| p.display().to_string());
    // The job page, with the per-process reports written beside it and linked.
    let job_page = |path: &Path, out: &mut Sink| -> Result<String, Stop> {
        let links = rank_pages::write_beside(path, job, rank_reports, out)?;
        Ok(tracelens_report::render_job_html(job, &source, &links))
    };
    let text = match (format, target) {
        (Format::Html, Some(path)) => job_page(path, out)?,
        _ => String::new(),
    };
    let text = match format {
        _ if !text.is_empty() => text,
        Format::Text => tracelens_report::render_job_text(job, width),
        Format::Md => tracelens_report::render_job_markdown(job),
        Format::Json => tracelens_report::render_job_json(doc),
        Format::Html => tracelens_report::render_job_html(job, &source, &[]),
        Format::Parquet => {
            let why = "--format parquet writes one rank; give one trace (the map step)";
            return Err(fail(out.stderr, Path::new("-"), why));
        }
    };
    match (target, page) {
        (Some(path), _) => {
            out.print(&tracelens_report::render_job_text(job, width))?;
            out.write_file(path, &text)?;
            out.announce("wrote ", path)
        }
        (None, Some(page)) if plain => {
            out.print(&text)?;
            let (path, note) = output::report_path_for(page);
            out.check_not_input(&path)?;
            let html = job_page(&path, out)?;
            out.write_file(&path, &html)?;
            out.announce("report: ", &path)?;
            if let Some(note) = note {
                out.print(&format!(
                    "        ({})\n",
                    tracelens_report::escape::terminal_text(&note)
                ))?;
            }
            Ok(())
        }
        (None, _) => out.print(&text),
    }
}

/// `tracelens merge`: ranks read back from their Parquet folders.
#[cfg(feature = "parquet")]
pub(crate) fn merge(args: &MergeArgs, out: &mut Sink) -> Result<(), Stop> {
    use rayon::prelude::*;
    if let Some(twice) = given_twice(&args.dirs) {
        return Err(fail(
            out.stderr,
            twice,
            "given twice: one rank would count as two (each folder once)",
        ));
    }
    let ranks: Vec<Result<tracelens_results::RankSummary, (PathBuf, String)>> = args
        .dirs
        .par_iter()
        .map(|d| tracelens_parquet::read_rank(d).map_err(|e| (d.clone(), e)))
        .collect();
    let mut all = Vec::with_capacity(ranks.len());
    for r in ranks {
        match r {
            Ok(r) => all.push(r),
            Err((d, why)) => return Err(fail(out.stderr, &d, why)),
        }
    }
    let job = tracelens_results::analyze_job(&all, args.as_job)
        .map_err(|why| fail(out.stderr, Path::new("merge"), why))?;
    write_job(
        &job_document(&job, &all),
        args.format.map(Format::from),
        args.output.as_ref(),
        None,
        &[],
        out,
    )
}

#[cfg(not(feature = "parquet"))]
pub(crate) fn merge(_: &MergeArgs, out: &mut Sink) -> Result<(), Stop> {
    Err(fail(
        out.stderr,
        Path::new("merge"),
        "this tracelens was built without the parquet feature",
    ))
}

/// Analyses one rank and keeps what the job analysis needs: its report's results and its
/// collectives on the focus device.
pub(crate) fn rank_summary(trace: &tracelens_model::Trace) -> tracelens_results::RankSummary {
    rank_summary_and_report(trace).0
}

/// One rank's summary and its whole report (analysed once for both).
fn rank_summary_and_report(
    trace: &tracelens_model::Trace,
) -> (tracelens_results::RankSummary, tracelens_results::Report) {
    let analysis = tracelens_analysis::analyze(trace);
    let collectives = tracelens_analysis::attribute::collectives::collectives_on(
        trace,
        analysis.diagnosis.focus_device,
    );
    let report = tracelens_results::Report::new(trace, analysis);
    (
        tracelens_results::RankSummary::of(&report, collectives),
        report,
    )
}

/// The ranks one trace holds: itself, or one per process of a capture of several rank
/// processes (an Nsight Systems export of `torchrun` on one node), in process order.
pub(crate) fn rank_summaries(
    trace: &tracelens_model::Trace,
) -> Vec<tracelens_results::RankSummary> {
    let processes = trace.rank_processes();
    if processes.is_empty() {
        return vec![rank_summary(trace)];
    }
    processes
        .iter()
        .map(|p| rank_summary(&trace.only_process(p)))
        .collect()
}

/// `--format parquet -o DIR`: one rank's tables.
#[cfg(feature = "parquet")]
pub(crate) fn write_parquet(
    summary: &tracelens_results::RankSummary,
    dir: &Path,
    out: &mut Sink,
) -> Result<(), Stop> {
    tracelens_parquet::write_rank(dir, summary)
        .map_err(|why| fail(out.stderr, dir, format!("cannot write output: {why}")))?;
    out.announce("wrote ", dir)
}

#[cfg(not(feature = "parquet"))]
pub(crate) fn write_parquet(
    _: &tracelens_results::RankSummary,
    dir: &Path,
    out: &mut Sink,
) -> Result<(), Stop> {
    Err(fail(
        out.stderr,
        dir,
        "this tracelens was built without the parquet feature",
    ))
}

/// Why a folder cannot be read as traces.
pub(crate) const NO_TRACES_IN_FOLDER: &str = "is a directory with no trace files (.json, .json.gz, .sqlite); a folder is read as the newest trace of each worker, several workers as the ranks of one job";

/// The trace files of a multi-rank job: the files given, or [the traces of a
/// folder](folder_traces), saying on `stderr` what the folder's resolution left out.
pub(crate) fn job_files(
    args: &AnalyzeArgs,
    stderr: &mut dyn std::io::Write,
) -> Option<Vec<PathBuf>> {
    if !args.more.is_empty() {
        let mut all = vec![args.trace.clone()];
        all.extend(args.more.iter().cloned());
        return Some(all);
    }
    resolve_folder(&args.trace, stderr)
}

/// The trace files directly in a folder, each with when it was last written: a local
/// directory, or a prefix in object storage (listed once). `None` when `dir` is not a folder
/// (a URL that cannot be listed is taken as one trace, whose opening then says why).
fn folder_entries(dir: &Path) -> Option<Vec<(PathBuf, std::time::SystemTime)>> {
    if let Some(listed) = input::remote::folder(dir) {
        let entries = listed.ok().flatten()?;
        return Some(
            entries
                .into_iter()
                .filter(|e| input::is_trace_file_name(&e.path))
                .map(|e| (e.path, e.modified))
                .collect(),
        );
    }
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && input::is_trace_file_name(p))
            .map(|p| {
                let modified = std::fs::metadata(&p)
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (p, modified)
            })
            .collect(),
    )
}

/// [The traces of a folder](folder_traces), with a note on `stderr` of what was skipped;
/// `None` when `dir` is not a folder.
pub(crate) fn resolve_folder(dir: &Path, stderr: &mut dyn std::io::Write) -> Option<Vec<PathBuf>> {
    let found = folder_traces(folder_entries(dir)?);
    if let Some(note) = found.note(dir) {
        let _ = writeln!(stderr, "{note}");
    }
    Some(found.files)
}

/// What a folder stands for: the traces read, and the files left out with the reason.
pub(crate) struct FolderTraces {
    pub(crate) files: Vec<PathBuf>,
    /// Older cycles of a worker whose newer complete cycle is read.
    pub(crate) older: Vec<PathBuf>,
    /// Newer cycles that end mid-document (still being written, or cut): the newest complete
    /// one is read instead.
    pub(crate) incomplete: Vec<PathBuf>,
}

impl FolderTraces {
    /// One line saying what was left out, when anything was.
    pub(crate) fn note(&self, dir: &Path) -> Option<String> {
        let names = |ps: &[PathBuf]| {
            ps.iter()
                .map(|p| output::file_name_of(&p.display().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.older.is_empty() {
            parts.push(format!("older cycles {}", names(&self.older)));
        }
        if !self.incomplete.is_empty() {
            parts.push(format!(
                "incomplete newer cycles {} (the document ends early)",
                names(&self.incomplete)
            ));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "tracelens: note: {}: read the newest complete cycle of each worker ({}); skipped {}",
                terminal_text(&dir.display().to_string()),
                terminal_text(&names(&self.files)),
                terminal_text(&parts.join("; "))
            )
        })
    }
}

/// The traces a folder's `entries` stand for: its trace files, and of the files one worker wrote over
/// several profiling cycles only the newest complete one (`tensorboard_trace_handler` names
/// them `WORKER.<time.time_ns()>.pt.trace.json[.gz]`, milliseconds in older PyTorch, and
/// `WORKER.pt.trace.json` before it numbered cycles; the Python handler
/// `WORKER.<step>.pt.trace.json.gz`). A numbered cycle is newer than an unnumbered file of the
/// same worker; files otherwise alike are ordered by modification time. One worker is one
/// trace; several are the ranks of one job.
pub(crate) fn folder_traces(entries: Vec<(PathBuf, std::time::SystemTime)>) -> FolderTraces {
    type Candidate = ((bool, u64, std::time::SystemTime), PathBuf);
    let mut by_worker: std::collections::BTreeMap<String, Vec<Candidate>> =
        std::collections::BTreeMap::new();
    for (path, modified) in entries {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let (worker, numbered, cycle) = match worker_and_cycle(&name) {
            Some((worker, cycle)) => (worker.to_string(), true, cycle),
            None => match name.find(".pt.trace") {
                Some(at) if at > 0 => (name[..at].to_string(), false, 0),
                _ => (name, false, 0),
            },
        };
        by_worker
            .entry(worker)
            .or_default()
            .push(((numbered, cycle, modified), path));
    }
    let mut out = FolderTraces {
        files: Vec::new(),
        older: Vec::new(),
        incomplete: Vec::new(),
    };
    for (_, mut cycles) in by_worker {
        // Newest first.
        cycles.sort_by(|a, b| b.cmp(a));
        let chosen = if cycles.len() == 1 {
            0
        } else {
            cycles
                .iter()
                .position(|(_, p)| ends_as_a_document(p))
                .unwrap_or(0)
        };
        for (i, (_, path)) in cycles.into_iter().enumerate() {
            match i.cmp(&chosen) {
                std::cmp::Ordering::Less => out.incomplete.push(path),
                std::cmp::Ordering::Equal => out.files.push(path),
                std::cmp::Ordering::Greater => out.older.push(path),
            }
        }
    }
    out
}

/// Whether a trace file decodes to its end and, for JSON, ends as a document does (`}` or
/// `]`): a cycle still being written, or cut, does not. SQLite exports count as complete.
fn ends_as_a_document(path: &Path) -> bool {
    use std::io::Read;
    let Ok(head) = input::head_of(path, 16) else {
        return false;
    };
    if head.starts_with(b"SQLite format 3") {
        return true;
    }
    let Ok(mut reader) = input::open_decoded(path) else {
        return false;
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut last = None;
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(&b) = buf[..n].iter().rev().find(|b| !b.is_ascii_whitespace()) {
                    last = Some(b);
                }
            }
            Err(_) => return false,
        }
    }
    matches!(last, Some(b'}' | b']'))
}

/// `WORKER.<digits>.pt.trace…` split into the worker and the cycle number.
fn worker_and_cycle(name: &str) -> Option<(&str, u64)> {
    let stem = &name[..name.find(".pt.trace")?];
    let (worker, digits) = stem.rsplit_once('.')?;
    let cycle = digits.parse().ok()?;
    (!worker.is_empty()).then_some((worker, cycle))
}

/// The first input that names the same file or folder as an earlier one (through any path or
/// link), if any.
pub(crate) fn given_twice(paths: &[PathBuf]) -> Option<&Path> {
    let mut seen = Vec::with_capacity(paths.len());
    for p in paths {
        let id = input::identity(p).map_or_else(
            || {
                std::fs::canonicalize(p)
                    .ok()
                    .map(|c| format!("{}", c.display()))
            },
            |i| Some(format!("{i:?}")),
        );
        if let Some(id) = id {
            if seen.contains(&id) {
                return Some(p);
            }
            seen.push(id);
        }
    }
    None
}

/// The ranks of one job read from `files` in parallel, `jobs` at a time (clamped to the
/// cores), each trace dropped once summarised (with only its file name kept when
/// `redact_path`); `label` names the job in errors.
pub(crate) fn job_of(
    files: &[PathBuf],
    jobs: Option<usize>,
    redact_path: bool,
    as_job: bool,
    label: &Path,
    out: &mut Sink,
) -> Result<(tracelens_results::Job, Vec<tracelens_results::RankSummary>), Stop> {
    use rayon::prelude::*;
    // At most one thread per core: `--jobs 100000` must not start 100,000 threads.
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let jobs = jobs.map_or(cores.min(4), |j| j.clamp(1, cores));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| {
            fail(
                out.stderr,
                label,
                format!("cannot start worker threads: {e}"),
            )
        })?;
    let summaries: Vec<Result<Vec<tracelens_results::RankSummary>, (PathBuf, String)>> = pool
        .install(|| {
            files
                .par_iter()
                .with_max_len(1)
                .map(|f| {
                    let mut trace = input::open(f).map_err(|e| (f.clone(), e.to_string()))?;
                    input::attach_captures(&mut trace, f, None)
                        .map_err(|(c, e)| (c, e.to_string()))?;
                    if redact_path {
                        trace.source.path = output::file_name_of(&trace.source.path);
                    }
                    Ok(rank_summaries(&trace))
                })
                .collect()
        });
    let mut ranks = Vec::with_capacity(summaries.len());
    for s in summaries {
        match s {
            Ok(r) => ranks.extend(r),
            Err((f, why)) => return Err(fail(out.stderr, &f, why)),
        }
    }
    let job = tracelens_results::analyze_job(&ranks, as_job)
        .map_err(|why| fail(out.stderr, label, why))?;
    Ok((job, ranks))
}

/// What the rules of a job read: the job's metrics and the straggler's own (else the first
/// rank's), with the straggler's results.
pub(crate) fn gate_metrics<'a>(
    job: &tracelens_results::Job,
    ranks: &'a [tracelens_results::RankSummary],
) -> (
    tracelens_results::Metrics,
    Option<&'a tracelens_results::Results>,
) {
    let straggler = gate_rank(job, ranks).map(|(_, r)| &r.results);
    let mut metrics = straggler
        .map(tracelens_results::Metrics::of)
        .unwrap_or_default();
    metrics.add_job(job);
    (metrics, straggler)
}

/// The rank a job's rules read: the straggler, else the first rank; with its number.
fn gate_rank<'a>(
    job: &tracelens_results::Job,
    ranks: &'a [tracelens_results::RankSummary],
) -> Option<(i64, &'a tracelens_results::RankSummary)> {
    let row = job
        .straggler
        .as_ref()
        .and_then(|s| job.ranks.iter().find(|r| r.rank == s.rank))
        .or(job.ranks.first())?;
    let summary = ranks
        .iter()
        .find(|r| r.file == row.file)
        .or(ranks.first())?;
    Some((row.rank, summary))
}

/// The document a job's JSON output stores: the job and its gate rank's results.
pub(crate) fn job_document(
    job: &tracelens_results::Job,
    ranks: &[tracelens_results::RankSummary],
) -> tracelens_results::JobDocument {
    let gate = gate_rank(job, ranks).map(|(rank, r)| tracelens_results::GateRank {
        rank,
        results: r.results.clone(),
    });
    tracelens_results::JobDocument::new(job.clone(), gate)
}

/// `analyze` of several traces: the ranks of one job, analysed in parallel, `--jobs` at a
/// time; each trace is dropped once summarised.
pub(crate) fn analyze_job(
    args: &AnalyzeArgs,
    files: Vec<PathBuf>,
    out: &mut Sink,
) -> Result<(), Stop> {
    if files.len() < 2 {
        let why = "a multi-rank job needs at least two trace files (a folder of one rank per file)";
        return Err(fail(out.stderr, &args.trace, why));
    }
    if let Some(twice) = given_twice(&files) {
        return Err(fail(
            out.stderr,
            twice,
            "given twice: one rank would count as two (each trace once)",
        ));
    }
    let target = args.output.clone().filter(|p| p.as_os_str() != "-");
    if let Some(path) = &target {
        for f in &files {
            if input::identity(path).is_some() && input::identity(path) == input::identity(f) {
                return Err(fail(
                    out.stderr,
                    path,
                    "refusing to write the output over an input trace",
                ));
            }
        }
    }
    let rules = gate::parse_all(&args.fail_on, args.not_measured, out.stderr)?;
    // Errors name the folder, or the traces given (the message names the file at fault).
    // The files came from a folder when no other trace was given.
    let label = if args.more.is_empty() {
        args.trace.clone()
    } else {
        PathBuf::from(format!("{} traces", files.len()))
    };
    let (job, ranks) = job_of(
        &files,
        args.jobs,
        args.redact_path,
        args.as_job,
        &label,
        out,
    )?;
    finish_job(args, &job, &ranks, &[], &rules, out)
}

/// `analyze` of one capture that holds several rank processes: their job.
pub(crate) fn analyze_capture(
    args: &AnalyzeArgs,
    trace: &tracelens_model::Trace,
    out: &mut Sink,
) -> Result<(), Stop> {
    let rules = gate::parse_all(&args.fail_on, args.not_measured, out.stderr)?;
    let (ranks, reports): (Vec<_>, Vec<_>) = trace
        .rank_processes()
        .iter()
        .map(|p| {
            let (summary, report) = rank_summary_and_report(&trace.only_process(p));
            let file = summary.file.clone();
            (summary, RankReport { file, report })
        })
        .unzip();
    let job = tracelens_results::analyze_job(&ranks, args.as_job)
        .map_err(|why| fail(out.stderr, &args.trace, why))?;
    finish_job(args, &job, &ranks, &reports, &rules, out)
}

/// Writes a job's outputs and applies the rules.
fn finish_job(
    args: &AnalyzeArgs,
    job: &tracelens_results::Job,
    ranks: &[tracelens_results::RankSummary],
    rank_reports: &[RankReport],
    rules: &[gate::GateRule],
    out: &mut Sink,
) -> Result<(), Stop> {
    let page = (!args.no_report).then_some(args.trace.as_path());
    write_job(
        &job_document(job, ranks),
        args.format,
        args.output.as_ref(),
        page,
        rank_reports,
        out,
    )?;
    if !rules.is_empty() {
        let (metrics, _) = gate_metrics(job, ranks);
        out.flush()?;
        gate::fail_on(rules, &metrics, out.stderr)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::worker_and_cycle;

    #[test]
    fn profiling_cycles_are_told_from_workers() {
        assert_eq!(
            worker_and_cycle("node-1_4242.1733000009000123456.pt.trace.json.gz"),
            Some(("node-1_4242", 1_733_000_009_000_123_456))
        );
        assert_eq!(
            worker_and_cycle("worker0_step_12.1694128201545.pt.trace.json"),
            Some(("worker0_step_12", 1_694_128_201_545))
        );
        assert_eq!(worker_and_cycle("w0.7.pt.trace.json.gz"), Some(("w0", 7)));
        assert_eq!(worker_and_cycle("worker0.pt.trace.json.gz"), None);
        assert_eq!(worker_and_cycle("rank-0.json.gz"), None);
        assert_eq!(worker_and_cycle(".5.pt.trace.json"), None);
    }
}
