//! The `tracelens` command line: parses arguments, loads the trace, runs the analyses and
//! hands the results to a renderer. Exit codes: 0 success, 2 usage, unreadable input, an
//! output that would replace the input, or a failed write (1 is reserved for a later rule
//! gate).
#![deny(missing_docs)]

//!
//! The crate is laid out as the run goes: [`args`] (what the user said), one module per
//! command under `commands/`, and what they share: `sink` (where results go), `output`
//! (paths, atomic writes, the terminal), `gate` (rules), `job` (the ranks of one job),
//! `progress`, `memory` and `stop` (exit codes). Nothing below this file imports from it.

mod args;
mod commands;
mod gate;
mod job;
pub mod mcp;
pub mod memory;
mod output;
mod progress;
mod rank_pages;
mod sink;
mod stop;

pub use output::default_report_path;
pub use stop::{EXIT_INPUT, EXIT_OK, EXIT_RULE};

use args::{Cli, Command, RuleSet};
use clap::Parser;
use commands::{analyze, annotate, check, diff, history, nsys_rules, report};
use sink::Sink;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use tracelens_load as input;
use tracelens_report::escape::terminal_text;

/// Runs the command line `args` (including the program name), writing to the given streams.
/// Returns the exit code.
pub fn run(args: Vec<OsString>, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    // Messages can quote trace text: none of it may become a CI runner command.
    let mut stderr = output::CommandSafe::new(stderr);
    let stderr: &mut dyn Write = &mut stderr;
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
        Command::Check(a) => {
            let mut sink = Sink {
                stdout,
                stderr,
                input: a.input.as_deref().unwrap_or(Path::new("-")),
                input_identity: None,
            };
            stop::exit_code(check::check(&a, &mut sink).and_then(|()| sink.flush()))
        }
        Command::Diff(a) => {
            let mut sink = Sink {
                stdout,
                stderr,
                input: &a.after,
                input_identity: input::identity(&a.after),
            };
            stop::exit_code(diff::diff(&a, &mut sink).and_then(|()| sink.flush()))
        }
        Command::Report(a) => {
            let mut sink = Sink {
                stdout,
                stderr,
                input: &a.result,
                input_identity: input::identity(&a.result),
            };
            stop::exit_code(report::rerender(&a, &mut sink).and_then(|()| sink.flush()))
        }
        Command::Merge(a) => {
            let mut sink = Sink {
                stdout,
                stderr,
                input: Path::new("-"),
                input_identity: None,
            };
            stop::exit_code(job::merge(&a, &mut sink).and_then(|()| sink.flush()))
        }
        Command::Annotate(a) => {
            memory::name_input(&terminal_text(&a.trace.display().to_string()));
            let mut sink = Sink {
                stdout,
                stderr,
                input: &a.trace,
                input_identity: input::identity(&a.trace),
            };
            stop::exit_code(annotate::annotate(&a, &mut sink).and_then(|()| sink.flush()))
        }
        Command::Completions(a) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(a.shell, &mut command, "tracelens", &mut script);
            write_out(stdout, stderr, &script)
        }
        Command::History(a) => {
            let mut sink = Sink {
                stdout,
                stderr,
                input: a.results.first().map_or(Path::new("-"), PathBuf::as_path),
                input_identity: None,
            };
            stop::exit_code(history::history_of(&a, &mut sink).and_then(|()| sink.flush()))
        }
        Command::Mcp(a) => {
            let stdin = std::io::stdin();
            mcp::serve(&a.roots, run, &mut stdin.lock(), stdout, stderr)
        }
        Command::Man => {
            let command = <Cli as clap::CommandFactory>::command();
            let mut page = Vec::new();
            match clap_mangen::Man::new(command).render(&mut page) {
                Ok(()) => write_out(stdout, stderr, &page),
                Err(e) => {
                    let _ = writeln!(stderr, "tracelens: error: the manual page: {e}");
                    EXIT_INPUT
                }
            }
        }
        Command::Analyze(a) => {
            memory::name_input(&terminal_text(&a.trace.display().to_string()));
            let mut sink = Sink {
                stdout,
                stderr,
                input: &a.trace,
                input_identity: if input::is_stdin(&a.trace) {
                    None
                } else {
                    input::identity(&a.trace)
                },
            };
            let result = if a.rules == Some(RuleSet::Nsys) {
                nsys_rules::nsys_rules(&a, &mut sink)
            } else {
                analyze::analyze(&a, &mut sink)
            };
            stop::exit_code(result.and_then(|()| sink.flush()))
        }
    }
}

/// Writes generated text (a completion script, the manual page) to stdout; a closed pipe is
/// not an error worth more than the exit code.
fn write_out(stdout: &mut dyn Write, stderr: &mut dyn Write, bytes: &[u8]) -> i32 {
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => EXIT_OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            let _ = writeln!(stderr, "tracelens: error: writing to stdout: {e}");
            EXIT_INPUT
        }
    }
}
