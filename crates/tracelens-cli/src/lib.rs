//! The `tracelens` command line: parses arguments, loads the trace, runs the analyses and
//! hands the results to a renderer. Exit codes: 0 success, 2 usage or unreadable input
//! (1 is reserved for a later rule gate).
#![deny(missing_docs)]

mod input;
mod output;

use clap::{Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

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
    /// Output format. Without -o: `text` prints the summary and writes the HTML report;
    /// `json`, `md` and `html` print that format to stdout. With -o: the file's format
    /// (default: from its extension, .html/.json/.md, else text).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Write the output to FILE (atomically) instead of the default report; `-` for stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Do not write the HTML report next to the summary.
    #[arg(long)]
    no_report: bool,
    /// Compatibility mode: run another tool's rules instead of the native diagnoses.
    /// `nsys` reproduces the six CUDA rules of `nsys analyze` on an Nsight Systems export.
    #[arg(long, value_enum, value_name = "SET")]
    rules: Option<RuleSet>,
    /// Print how long reading, analysing and rendering took (to stderr).
    #[arg(long)]
    timings: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RuleSet {
    Nsys,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
    #[value(alias = "markdown")]
    Md,
    Html,
}

impl Format {
    fn from_extension(path: &Path) -> Format {
        match path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .as_deref()
        {
            Some("html" | "htm") => Format::Html,
            Some("json") => Format::Json,
            Some("md" | "markdown") => Format::Md,
            _ => Format::Text,
        }
    }
}

/// Prints `tracelens: error: PATH: PROBLEM` and returns the input-error exit code.
fn fail(stderr: &mut dyn Write, path: &Path, problem: impl std::fmt::Display) -> i32 {
    let _ = writeln!(stderr, "tracelens: error: {}: {problem}", path.display());
    EXIT_INPUT
}

/// Writes `text` to `path` atomically, or reports why it could not.
fn write_file(path: &Path, text: &str, stderr: &mut dyn Write) -> Result<(), i32> {
    output::write_atomically(path, text).map_err(|e| {
        fail(
            stderr,
            path,
            format_args!("cannot write output: {}", input::io_problem(&e)),
        )
    })
}

/// `--rules nsys`: the six `nsys analyze` CUDA rules, printed as nsys prints them, or with
/// `-o DIR` written as one `<stem>_<rule>.csv` per rule, as `nsys analyze --format csv` does.
fn nsys_rules(args: &AnalyzeArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    let db = match input::open_nsys(&args.trace) {
        Ok(db) => db,
        Err(problem) => return fail(stderr, &args.trace, problem),
    };
    let results = tracelens_nsys::rules::run_all(&db);
    let name = args
        .trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match &args.output {
        Some(dir) if dir.as_os_str() != "-" => {
            // Like `nsys analyze --format csv --output DIR`: one <stem>_<rule>.csv per rule.
            let stem = name.strip_suffix(".sqlite").unwrap_or(&name);
            if let Err(e) = std::fs::create_dir_all(dir) {
                let why = format!("cannot write output: {}", input::io_problem(&e));
                return fail(stderr, dir, why);
            }
            for r in results.iter().filter(|r| r.skipped.is_none()) {
                let path = dir.join(format!("{stem}_{}.csv", r.rule));
                if let Err(code) = write_file(&path, &r.to_csv(), stderr) {
                    return code;
                }
                let _ = writeln!(stdout, "wrote {}", path.display());
            }
        }
        _ => {
            let _ =
                stdout.write_all(tracelens_nsys::rules::render_text(&results, &name).as_bytes());
        }
    }
    EXIT_OK
}

/// The default report path: `./<trace stem>.tracelens.html` (stem without `.json`/`.gz`).
pub fn default_report_path(trace: &Path) -> PathBuf {
    let mut stem = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    for suffix in [".gz", ".json", ".pt.trace"] {
        if let Some(s) = stem.strip_suffix(suffix) {
            stem = s.to_string();
        }
    }
    PathBuf::from(format!("{stem}.tracelens.html"))
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
    if args.rules == Some(RuleSet::Nsys) {
        return nsys_rules(&args, stdout, stderr);
    }
    let started = std::time::Instant::now();
    let trace = match input::load(&args.trace) {
        Ok(t) => t,
        Err(problem) => return fail(stderr, &args.trace, problem),
    };
    let loaded = started.elapsed();
    let (overview, diagnosis) = tracelens_analysis::analyze(&trace);
    let analysed = started.elapsed();
    if args.timings {
        let _ = writeln!(
            stderr,
            "timings: read {:.3} s ({} spans), analyse {:.3} s",
            loaded.as_secs_f64(),
            trace.spans.len(),
            (analysed - loaded).as_secs_f64()
        );
    }
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let render = |format: Format, color: bool| match format {
        Format::Text => tracelens_report::render_text(&trace, &overview, &diagnosis, color),
        Format::Json => tracelens_report::render_json(&trace, &overview, &diagnosis),
        Format::Md => tracelens_report::render_markdown(&trace, &overview, &diagnosis),
        Format::Html => tracelens_report::render_html(&trace, &overview, &diagnosis),
    };
    match (&args.output, args.format) {
        // -o -: the chosen format (default text) on stdout, nothing else.
        (Some(p), format) if p.as_os_str() == "-" => {
            let text = render(format.unwrap_or(Format::Text), color);
            if stdout.write_all(text.as_bytes()).is_err() {
                return EXIT_INPUT;
            }
        }
        // -o FILE: the summary on stdout, the file in its format, its path last.
        (Some(path), format) => {
            let format = format.unwrap_or_else(|| Format::from_extension(path));
            if format != Format::Text {
                let _ = stdout.write_all(render(Format::Text, color).as_bytes());
            }
            if let Err(code) = write_file(path, &render(format, false), stderr) {
                return code;
            }
            let _ = writeln!(stdout, "wrote {}", path.display());
        }
        // --format json|md|html: that format on stdout.
        (None, Some(format)) if format != Format::Text => {
            let _ = stdout.write_all(render(format, false).as_bytes());
        }
        // The plain command: summary, then the HTML report beside it.
        (None, _) => {
            let _ = stdout.write_all(render(Format::Text, color).as_bytes());
            if !args.no_report {
                let path = default_report_path(&args.trace);
                if let Err(code) = write_file(&path, &render(Format::Html, false), stderr) {
                    return code;
                }
                let _ = writeln!(stdout, "report: {}", path.display());
            }
        }
    }
    EXIT_OK
}
