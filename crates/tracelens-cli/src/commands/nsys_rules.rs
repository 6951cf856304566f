//! `tracelens analyze --rules nsys`: the `nsys analyze` compatibility mode.

use crate::args::AnalyzeArgs;
use crate::sink::{fail, Sink};
use crate::stop::Stop;
use tracelens_load as input;
use tracelens_report::escape::terminal_text;

/// `--rules nsys`: the six `nsys analyze` CUDA rules, printed as nsys prints them, or with
/// `-o DIR` written as one `<stem>_<rule>.csv` per rule, as `nsys analyze --format csv` does.
pub(crate) fn nsys_rules(args: &AnalyzeArgs, out: &mut Sink) -> Result<(), Stop> {
    let input = input::open_nsys(&args.trace).map_err(|p| fail(out.stderr, &args.trace, p))?;
    for w in input.db.unread_warnings() {
        let _ = writeln!(out.stderr, "tracelens: warning: {}", terminal_text(&w));
    }
    let results = input::nsys_rules(&input).map_err(|e| fail(out.stderr, &args.trace, e))?;
    let name = args
        .trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match &args.output {
        Some(dir) if dir.as_os_str() != "-" => {
            // Like `nsys analyze --format csv --output DIR`: one <stem>_<rule>.csv per rule.
            let stem = name.strip_suffix(".sqlite").unwrap_or(&name);
            out.check_not_input(dir)?;
            if let Err(e) = std::fs::create_dir_all(dir) {
                let why = format!("cannot write output: {}", input::write_problem(&e));
                return Err(fail(out.stderr, dir, why));
            }
            for r in results.iter().filter(|r| r.skipped.is_none()) {
                let path = dir.join(format!("{stem}_{}.csv", r.rule));
                out.write_file(&path, &r.to_csv())?;
                out.announce("wrote ", &path)?;
            }
        }
        _ => {
            let text = input::nsys_rules_text(&results, &name);
            out.print(&tracelens_report::escape::terminal_output(text, false))?;
        }
    }
    Ok(())
}
