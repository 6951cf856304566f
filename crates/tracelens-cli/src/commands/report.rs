//! `tracelens report RESULT.json`: a stored result (a run's or a job's) rendered again, as
//! `analyze` renders it.

use crate::args::{Format, ReportArgs};
use crate::output::{render_report, terminal_width, text_options};
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use std::io::IsTerminal;
use tracelens_load as input;

/// `tracelens report RESULT.json`: the stored report, rendered as `analyze` renders it.
pub(crate) fn rerender(args: &ReportArgs, out: &mut Sink) -> Result<(), Stop> {
    let format = match (&args.output, args.format) {
        (_, Some(f)) => f.into(),
        (Some(p), None) if p.as_os_str() != "-" => Format::from_extension(p),
        _ => Format::Text,
    };
    let target = args.output.as_ref().filter(|p| p.as_os_str() != "-");
    if let Some(path) = target {
        out.check_not_input(path)?;
    }
    let text = input::read_result_text(&args.result, crate::gate::MAX_RESULT_BYTES)
        .map_err(|p| fail(out.stderr, &args.result, p))?;
    // A job's document (`analyze DIR/ --format json`): the job page, as analyze wrote it.
    if tracelens_results::JobDocument::is_job(&text) {
        let doc = tracelens_results::JobDocument::from_json(&text)
            .map_err(|e| fail(out.stderr, &args.result, e))?;
        return crate::job::write_job(&doc, Some(format), args.output.as_ref(), None, &[], out);
    }
    let report = tracelens_results::Report::from_json(&text)
        .map_err(|e| fail(out.stderr, &args.result, e))?;
    let tty = target.is_none() && std::io::stdout().is_terminal();
    let color = tty && format == Format::Text && std::env::var_os("NO_COLOR").is_none();
    let rendered = render_report(
        &report,
        format,
        &text_options(color, terminal_width(tty), args.verbose),
    );
    match target {
        Some(path) => {
            out.write_file(path, &rendered)?;
            out.announce("wrote ", path)
        }
        None => out.print(&rendered),
    }
}
