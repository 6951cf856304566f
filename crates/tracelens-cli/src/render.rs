//! Rendering a report in the chosen format, and `tracelens report RESULT.json`: a stored
//! result rendered again, as `analyze` renders it.

use crate::stop::Stop;
use crate::{fail, input, terminal_width, Format, ReportArgs, Sink};
use std::io::IsTerminal;

/// The text options of a summary.
pub(crate) fn text_options(
    color: bool,
    width: usize,
    verbose: bool,
) -> tracelens_report::TextOptions {
    tracelens_report::TextOptions {
        color,
        width,
        verbose,
    }
}

/// A report in one of the text formats (Parquet is written as tables, never rendered).
pub(crate) fn render_report(
    report: &tracelens_results::Report,
    format: Format,
    text: &tracelens_report::TextOptions,
) -> String {
    match format {
        Format::Text => tracelens_report::render_text_with(report, text),
        Format::Json => tracelens_report::render_json(report),
        Format::Md => tracelens_report::render_markdown(report),
        Format::Html => tracelens_report::render_html(report),
        Format::Parquet => String::new(),
    }
}

/// Largest result document `tracelens report` reads (results are kilobytes; this bounds a
/// hostile file).
const MAX_RESULT_BYTES: u64 = 256 << 20;

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
    let text = input::read_result_text(&args.result, MAX_RESULT_BYTES)
        .map_err(|p| fail(out.stderr, &args.result, p))?;
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
