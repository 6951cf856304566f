//! `tracelens diff`: two runs compared against the noise, rendered and gated.

use crate::args::{DiffArgs, Format};
use crate::gate;
use crate::output::{self, terminal_width};
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use std::io::IsTerminal;
use tracelens_load as input;
use tracelens_report::escape::terminal_text;

/// `tracelens diff`.
pub(crate) fn diff(args: &DiffArgs, out: &mut Sink) -> Result<(), Stop> {
    let rules = gate::parse_all(&args.fail_on, args.not_measured, out.stderr)?;
    if let Some(path) = gate::diff_target(args.output.as_ref()) {
        out.check_not_input(path)?;
        if input::identity(path).is_some() && input::identity(path) == input::identity(&args.before)
        {
            return Err(fail(
                out.stderr,
                path,
                "refusing to write the output over an input",
            ));
        }
    }
    let before = gate::results_of(&args.before, out.stderr)?;
    let after = gate::results_of(&args.after, out.stderr)?;
    let mut d = tracelens_results::diff(&before, &after);
    // Name the runs as the command line did: two runs often share a file name.
    let (before_name, after_name) = output::distinct_names(&args.before, &args.after);
    d.before = terminal_text(&before_name).into_owned();
    d.after = terminal_text(&after_name).into_owned();
    let format = args.format.map(Format::from).unwrap_or_else(|| {
        match gate::diff_target(args.output.as_ref()) {
            Some(p) => Format::from_extension(p),
            None => Format::Text,
        }
    });
    let text = match format {
        Format::Text => {
            tracelens_report::render_diff_text(&d, terminal_width(std::io::stdout().is_terminal()))
        }
        Format::Md => tracelens_report::render_diff_markdown(&d),
        Format::Json => tracelens_report::render_diff_json(&d),
        Format::Html => tracelens_report::render_diff_html(&d),
        Format::Parquet => {
            let why = "a diff is text, md, json or html";
            return Err(fail(out.stderr, &args.after, why));
        }
    };
    match gate::diff_target(args.output.as_ref()) {
        Some(path) => {
            out.write_file(path, &text)?;
            out.announce("wrote ", path)?;
        }
        None => out.print(&text)?,
    }
    if !rules.is_empty() {
        let mut metrics = tracelens_results::Metrics::of(&after);
        metrics.add_diff(&d);
        let label = format!("{} → {}", args.before.display(), args.after.display());
        if gate::report_rules(out, &label, &rules, &metrics)? {
            return Err(Stop::RuleFired);
        }
    }
    Ok(())
}
