//! `tracelens history`: stored results as one series of runs, rendered.

use crate::args::{Format, HistoryArgs};
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use std::path::Path;
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
        runs.push(run_of(path).map_err(|why| fail(out.stderr, path, why))?);
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
