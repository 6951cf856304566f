//! `tracelens check`: rules over a trace, a stored result or a folder of ranks.

use crate::args::CheckArgs;
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use crate::{gate, job};
use std::path::Path;

/// `tracelens check`.
pub(crate) fn check(args: &CheckArgs, out: &mut Sink) -> Result<(), Stop> {
    let rules = gate::collect_rules(
        &args.rule,
        args.rules.as_deref(),
        args.not_measured,
        out.stderr,
    )?;
    let Some(input) = &args.input else {
        let n = rules.len();
        let parse = if n == 1 { "rule parses" } else { "rules parse" };
        return out.print(&format!("tracelens check: {n} {parse}\n"));
    };
    let (results, mut metrics) = check_input(input, out)?;
    if let Some(before) = &args.baseline {
        let base = gate::results_of(before, out.stderr)?;
        metrics.add_diff(&tracelens_results::diff(&base, &results));
    }
    if !args.history.is_empty() {
        let mut runs = Vec::with_capacity(args.history.len());
        for path in &args.history {
            runs.extend(
                super::history::runs_of(path, out.stderr)
                    .map_err(|why| fail(out.stderr, path, why))?,
            );
        }
        let this =
            tracelens_results::history::Run::of(&results, String::new(), String::new(), None);
        if let Some(figures) = tracelens_results::history::against(&this, &runs) {
            metrics.add_history(&figures);
        }
    }
    if let Some(lines) = args.annotate.lines(&results) {
        out.print_commands(&lines)?;
    }
    let label = input.display().to_string();
    if gate::report_rules(out, &label, &rules, &metrics)? {
        return Err(Stop::RuleFired);
    }
    Ok(())
}

/// The results and metrics `check` decides on: of a trace or result document; of a folder's
/// one trace, or of its ranks as one job (the job's metrics and its straggler's).
fn check_input(
    input: &Path,
    out: &mut Sink,
) -> Result<(tracelens_results::Results, tracelens_results::Metrics), Stop> {
    let Some(files) = job::resolve_folder(input, out.stderr) else {
        let (results, job) = gate::stored_or_analysed(input, out.stderr)?;
        let mut metrics = tracelens_results::Metrics::of(&results);
        // A stored job's rules read as the folder's: its gate rank and the job figures.
        if let Some(job) = &job {
            metrics.add_job(job);
        }
        return Ok((results, metrics));
    };
    match files.as_slice() {
        [] => Err(fail(out.stderr, input, job::NO_TRACES_IN_FOLDER)),
        // A folder holding one trace is that trace.
        [one] => check_input(one, out),
        _ => {
            let (job, ranks) = job::job_of(&files, None, false, false, input, out)?;
            let (metrics, straggler) = job::gate_metrics(&job, &ranks);
            let results = straggler
                .cloned()
                .ok_or_else(|| fail(out.stderr, input, "no rank could be read"))?;
            Ok((results, metrics))
        }
    }
}
