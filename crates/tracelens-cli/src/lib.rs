//! The `tracelens` command line: parses arguments, loads the trace, runs the analyses and
//! hands the results to a renderer. Exit codes: 0 success, 2 usage, unreadable input, an
//! output that would replace the input, or a failed write (1 is reserved for a later rule
//! gate).
#![deny(missing_docs)]

mod input;
pub mod memory;
mod output;

use clap::{Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use tracelens_report::escape::terminal_text;

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code for usage errors and unreadable input.
pub const EXIT_INPUT: i32 = 2;

#[derive(Parser)]
#[command(
    name = "tracelens",
    version,
    about = "Fast offline analyzer for GPU training traces (PyTorch Profiler / Kineto JSON, Nsight Systems SQLite)",
    after_help = "Run `tracelens analyze --help` for inputs and examples."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Diagnose a trace: where the GPU sat idle, why, which line caused it, what to fix.
    #[command(visible_alias = "analyse", after_help = ANALYZE_EXAMPLES)]
    Analyze(AnalyzeArgs),
    /// Write the trace back with our findings as extra tracks, for Perfetto UI or
    /// chrome://tracing: GPU idle coloured by cause, each finding at its evidence, arrows from
    /// blocking syncs to the idle they caused.
    #[command(after_help = ANNOTATE_EXAMPLES)]
    Annotate(AnnotateArgs),
}

/// Examples under `tracelens annotate --help`.
const ANNOTATE_EXAMPLES: &str = "\
Examples:
  tracelens annotate worker0.pt.trace.json.gz                 writes worker0.annotated.json.gz
  tracelens annotate trace.json -o annotated.json             uncompressed
Then open the file in ui.perfetto.dev (Open trace file) or chrome://tracing. Kineto traces only.";

#[derive(clap::Args)]
struct AnnotateArgs {
    /// Kineto/Chrome trace, plain or gzip (not stdin: the file is read twice).
    trace: PathBuf,
    /// Where to write the annotated trace (default `./<stem>.annotated.json.gz`); gzip when
    /// the name ends in `.gz`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Examples under `tracelens analyze --help`.
const ANALYZE_EXAMPLES: &str = "\
Inputs (recognised by content, not by extension):
  PyTorch Profiler / Kineto Chrome traces: .json or .json.gz (torch.profiler, tensorboard_trace_handler)
  Nsight Systems SQLite exports: nsys export --type sqlite report.nsys-rep

Examples:
  tracelens analyze worker0.pt.trace.json.gz         summary, and the HTML report beside it
  tracelens analyze trace.json -o report.html        the report where you want it
  tracelens analyze trace.json --format md >> \"$GITHUB_STEP_SUMMARY\"
  tracelens analyze report.sqlite --format json      JSON for scripts (docs/json-output.md)
  tracelens analyze --rules nsys report.sqlite       the nsys analyze rules, as nsys prints them
  gzip -dc trace.json.gz | tracelens analyze -       read stdin";

#[derive(clap::Args)]
struct AnalyzeArgs {
    /// Trace file: Kineto/Chrome JSON (plain or gzip) or an Nsight Systems SQLite export;
    /// `-` reads stdin. It is never overwritten: an output that names it is refused.
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
    /// Also show input details in the summary: format, event and span counts, lanes, every
    /// warning.
    #[arg(short = 'v', long)]
    verbose: bool,
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

/// Prints `tracelens: error: PATH: PROBLEM` (both made safe for a terminal) and returns the
/// input-error exit code.
fn fail(stderr: &mut dyn Write, path: &Path, problem: impl std::fmt::Display) -> i32 {
    let line = format!("{}: {problem}", path.display());
    let _ = writeln!(stderr, "tracelens: error: {}", terminal_text(&line));
    EXIT_INPUT
}

/// Where results go, and the one input they must never replace.
struct Sink<'a> {
    stdout: &'a mut dyn Write,
    stderr: &'a mut dyn Write,
    input: &'a Path,
    input_identity: Option<input::FileIdentity>,
}

impl Sink<'_> {
    /// Writes to stdout; a failure (a full device, a closed pipe) ends the run with exit 2.
    fn print(&mut self, text: &str) -> Result<(), i32> {
        match self.stdout.write_all(text.as_bytes()) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stdout_failed(&e)),
        }
    }

    /// Flushes stdout, reporting a failure as [`Sink::print`] does.
    fn flush(&mut self) -> Result<(), i32> {
        match self.stdout.flush() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stdout_failed(&e)),
        }
    }

    fn stdout_failed(&mut self, e: &std::io::Error) -> i32 {
        // A reader that went away (`| head`) needs no message.
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return EXIT_INPUT;
        }
        let why = format!("cannot write output: {}", input::write_problem(e));
        fail(self.stderr, Path::new("<stdout>"), why)
    }

    /// Refuses a path that is the input (same file through any name or link).
    fn check_not_input(&mut self, path: &Path) -> Result<(), i32> {
        if self.input_identity.is_some() && input::identity(path) == self.input_identity {
            let why = format!(
                "refusing to write the output over the input trace {} (choose another -o path)",
                self.input.display()
            );
            return Err(fail(self.stderr, path, why));
        }
        Ok(())
    }

    /// Writes `text` to `path` atomically, or reports why it could not.
    fn write_file(&mut self, path: &Path, text: &str) -> Result<(), i32> {
        self.check_not_input(path)?;
        output::write_atomically(path, text).map_err(|e| {
            let why = format!("cannot write output: {}", input::write_problem(&e));
            fail(self.stderr, path, why)
        })
    }

    /// `wrote PATH` / `report: PATH` on stdout.
    fn announce(&mut self, label: &str, path: &Path) -> Result<(), i32> {
        let line = format!("{label}{}\n", terminal_text(&path.display().to_string()));
        self.print(&line)
    }
}

/// `--rules nsys`: the six `nsys analyze` CUDA rules, printed as nsys prints them, or with
/// `-o DIR` written as one `<stem>_<rule>.csv` per rule, as `nsys analyze --format csv` does.
fn nsys_rules(args: &AnalyzeArgs, out: &mut Sink) -> Result<(), i32> {
    let input = input::open_nsys(&args.trace).map_err(|p| fail(out.stderr, &args.trace, p))?;
    for w in input.db.unread_warnings() {
        let _ = writeln!(out.stderr, "tracelens: warning: {}", terminal_text(&w));
    }
    let results =
        tracelens_nsys::rules::run_all(&input.db).map_err(|e| fail(out.stderr, &args.trace, e))?;
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
            let text = tracelens_nsys::rules::render_text(&results, &name);
            out.print(&tracelens_report::escape::terminal_output(text, false))?;
        }
    }
    Ok(())
}

/// `tracelens annotate`: the trace copied verbatim with our tracks added first.
fn annotate(args: &AnnotateArgs, out: &mut Sink) -> Result<(), i32> {
    if input::is_stdin(&args.trace) {
        return Err(fail(
            out.stderr,
            &args.trace,
            "annotate reads the trace twice: give it a file, not stdin",
        ));
    }
    let path = args.output.clone().unwrap_or_else(|| {
        let report = default_report_path(&args.trace);
        let stem = report
            .to_string_lossy()
            .trim_end_matches(".tracelens.html")
            .to_string();
        PathBuf::from(format!("{stem}.annotated.json.gz"))
    });
    out.check_not_input(&path)?;
    let trace = input::load(&args.trace).map_err(|p| fail(out.stderr, &args.trace, p))?;
    if trace.source.format != tracelens_model::InputFormat::KinetoJson {
        return Err(fail(
            out.stderr,
            &args.trace,
            "annotate writes Chrome-trace JSON and needs a Kineto trace; open Nsight Systems reports in Nsight Systems",
        ));
    }
    let (_, diagnosis) = tracelens_analysis::analyze(&trace);
    let events = tracelens_report::perfetto::annotation_events(&trace, &diagnosis);
    let gzip = path.to_string_lossy().ends_with(".gz");
    let mut stats = None;
    let written = output::write_atomically_with(&path, |w| {
        let src = tracelens_kineto::open_decoded(&args.trace)?;
        stats = Some(if gzip {
            let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::new(6));
            let s = tracelens_kineto::copy_with_events(src, &mut gz, &events)?;
            gz.finish()?;
            s
        } else {
            tracelens_kineto::copy_with_events(src, w, &events)?
        });
        Ok(())
    });
    if let Err(e) = written {
        let why = format!("cannot write output: {}", input::write_problem(&e));
        return Err(fail(out.stderr, &path, why));
    }
    let stats = stats.unwrap_or_default();
    out.announce("wrote ", &path)?;
    let dropped = if stats.dropped > 0 {
        format!(
            " ({} events that could not be copied whole were left out)",
            stats.dropped
        )
    } else {
        String::new()
    };
    out.print(&format!(
        "        {} trace events and {} tracelens events{dropped}; open it in ui.perfetto.dev or chrome://tracing\n",
        stats.events,
        events.len()
    ))
}

/// Columns of the terminal summary: `COLUMNS` when set, else the terminal's width, else 80
/// (piped output).
fn terminal_width(tty: bool) -> usize {
    if let Some(c) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
    {
        return usize::clamp(c, 40, 400);
    }
    #[cfg(unix)]
    if tty {
        // SAFETY: TIOCGWINSZ fills a winsize we own; a failure leaves it zeroed.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
        if ok && size.ws_col >= 40 {
            return size.ws_col as usize;
        }
    }
    let _ = tty;
    80
}

/// Where the default report goes, and a note when it is not the plain default: a report of
/// another trace already has that name (two traces with the same file name in different
/// folders), so this one gets a short id of its path appended.
fn report_path_for(trace: &Path) -> (PathBuf, Option<String>) {
    let plain = default_report_path(trace);
    let id = tracelens_report::source_id(&trace.display().to_string());
    let existing = std::fs::File::open(&plain).ok().map(|f| {
        let mut head = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(f, 4096), &mut head);
        tracelens_report::source_id_in(&String::from_utf8_lossy(&head))
    });
    match existing {
        None => (plain, None),
        Some(Some(other)) if other == id => (plain, None),
        Some(_) => {
            let stem = plain
                .to_string_lossy()
                .trim_end_matches(".tracelens.html")
                .to_string();
            let own = PathBuf::from(format!("{stem}-{}.tracelens.html", &id[..8]));
            let note = format!(
                "{} exists and is not this trace's report: this one is named after the trace's path",
                plain.display()
            );
            (own, Some(note))
        }
    }
}

/// The default report path: `./<trace stem>.tracelens.html` (stem without `.json`/`.gz`;
/// `stdin` for `-`).
pub fn default_report_path(trace: &Path) -> PathBuf {
    if input::is_stdin(trace) {
        return PathBuf::from("stdin.tracelens.html");
    }
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
        Command::Annotate(a) => {
            memory::name_input(&terminal_text(&a.trace.display().to_string()));
            let mut sink = Sink {
                stdout,
                stderr,
                input: &a.trace,
                input_identity: input::identity(&a.trace),
            };
            match annotate(&a, &mut sink).and_then(|()| sink.flush()) {
                Ok(()) => EXIT_OK,
                Err(code) => code,
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
                nsys_rules(&a, &mut sink)
            } else {
                analyze(&a, &mut sink)
            };
            match result.and_then(|()| sink.flush()) {
                Ok(()) => EXIT_OK,
                Err(code) => code,
            }
        }
    }
}

fn analyze(args: &AnalyzeArgs, out: &mut Sink) -> Result<(), i32> {
    // Refuse a bad output before spending time on reading the trace: one over the input,
    // or one in a folder that does not exist.
    let writes_report =
        args.output.is_none() && !args.no_report && args.format.is_none_or(|f| f == Format::Text);
    let (report_path, report_note) = report_path_for(&args.trace);
    let target = match &args.output {
        Some(p) if p.as_os_str() != "-" => Some(p.clone()),
        None if writes_report => Some(report_path.clone()),
        _ => None,
    };
    if let Some(path) = &target {
        out.check_not_input(path)?;
        let folder = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !folder.is_dir() {
            return Err(fail(
                out.stderr,
                path,
                "cannot write output: no such directory",
            ));
        }
    }
    let started = std::time::Instant::now();
    let trace = input::load(&args.trace).map_err(|p| fail(out.stderr, &args.trace, p))?;
    let loaded = started.elapsed();
    let (overview, diagnosis) = tracelens_analysis::analyze(&trace);
    let analysed = started.elapsed();
    if args.timings {
        let _ = writeln!(
            out.stderr,
            "timings: read {:.3} s ({} spans), analyse {:.3} s",
            loaded.as_secs_f64(),
            trace.spans.len(),
            (analysed - loaded).as_secs_f64()
        );
    }
    let tty = std::io::stdout().is_terminal();
    let color = tty && std::env::var_os("NO_COLOR").is_none();
    let width = terminal_width(tty);
    let render = |format: Format, color: bool| match format {
        Format::Text => tracelens_report::render_text_with(
            &trace,
            &overview,
            &diagnosis,
            &tracelens_report::TextOptions {
                color,
                width,
                verbose: args.verbose,
            },
        ),
        Format::Json => tracelens_report::render_json(&trace, &overview, &diagnosis),
        Format::Md => tracelens_report::render_markdown(&trace, &overview, &diagnosis),
        Format::Html => tracelens_report::render_html(&trace, &overview, &diagnosis),
    };
    match (&args.output, args.format) {
        // -o -: the chosen format (default text) on stdout, nothing else.
        (Some(p), format) if p.as_os_str() == "-" => {
            out.print(&render(format.unwrap_or(Format::Text), color))?;
        }
        // -o FILE: the summary on stdout, the file in its format, its path last.
        (Some(path), format) => {
            let format = format.unwrap_or_else(|| Format::from_extension(path));
            if format != Format::Text {
                out.print(&render(Format::Text, color))?;
            }
            out.write_file(path, &render(format, false))?;
            out.announce("wrote ", path)?;
        }
        // --format json|md|html: that format on stdout.
        (None, Some(format)) if format != Format::Text => {
            out.print(&render(format, false))?;
        }
        // The plain command: summary, then the HTML report beside it.
        (None, _) => {
            out.print(&render(Format::Text, color))?;
            if writes_report {
                out.write_file(&report_path, &render(Format::Html, false))?;
                out.announce("report: ", &report_path)?;
                if let Some(note) = report_note {
                    out.print(&format!("        ({})\n", terminal_text(&note)))?;
                }
            }
        }
    }
    Ok(())
}
