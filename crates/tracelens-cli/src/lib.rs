//! The `tracelens` command line: parses arguments, loads the trace, runs the analyses and
//! hands the results to a renderer. Exit codes: 0 success, 2 usage or unreadable input
//! (1 is reserved for a later rule gate).
#![deny(missing_docs)]

mod input;
mod output;

use clap::{Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code for usage errors and unreadable input.
pub const EXIT_INPUT: i32 = 2;

#[derive(Parser)]
#[command(
    name = "tracelens",
    version,
    about = "Fast offline analyzer for GPU training traces (PyTorch Profiler / Kineto)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read a trace and summarise it: format, events, devices with GPU busy/idle, steps.
    Analyze(AnalyzeArgs),
}

#[derive(clap::Args)]
struct AnalyzeArgs {
    /// Trace file: Kineto/Chrome JSON, plain or gzip-compressed.
    trace: PathBuf,
    /// Output format (default: json when -o ends in .json, else text).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Write the output to FILE instead of stdout (`-` for stdout). Written atomically.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Runs the command line `args` (including the program name), writing to the given streams.
/// Returns the exit code.
pub fn run(args: Vec<OsString>, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_INPUT } else { EXIT_OK };
            let text = e.render().to_string();
            let _ = if e.use_stderr() {
                stderr.write_all(text.as_bytes())
            } else {
                stdout.write_all(text.as_bytes())
            };
            return code;
        }
    };
    match cli.command {
        Command::Analyze(a) => analyze(a, stdout, stderr),
    }
}

fn analyze(args: AnalyzeArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    let trace = match input::load(&args.trace) {
        Ok(t) => t,
        Err(problem) => {
            let _ = writeln!(
                stderr,
                "tracelens: error: {}: {problem}",
                args.trace.display()
            );
            return EXIT_INPUT;
        }
    };
    let overview = tracelens_analysis::overview(&trace);
    let diagnosis = tracelens_analysis::diagnose(&trace);
    let to_file = args.output.as_ref().filter(|p| p.as_os_str() != "-");
    let format = args.format.unwrap_or_else(|| match to_file {
        Some(p)
            if p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json")) =>
        {
            Format::Json
        }
        _ => Format::Text,
    });
    let text = match format {
        Format::Text => tracelens_report::render_text(&trace, &overview, &diagnosis),
        Format::Json => tracelens_report::render_json(&trace, &overview, &diagnosis),
    };
    match to_file {
        Some(path) => {
            if let Err(e) = output::write_atomically(path, &text) {
                let _ = writeln!(
                    stderr,
                    "tracelens: error: {}: cannot write output: {}",
                    path.display(),
                    input::io_problem(&e)
                );
                return EXIT_INPUT;
            }
            let _ = writeln!(stdout, "wrote {}", path.display());
        }
        None => {
            if stdout.write_all(text.as_bytes()).is_err() {
                return EXIT_INPUT;
            }
        }
    }
    EXIT_OK
}
