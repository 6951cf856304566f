//! The `tracelens` command line: parses arguments, loads the trace, runs the analyses and
//! hands the results to a renderer. Exit codes: 0 success, 2 usage, unreadable input, an
//! output that would replace the input, or a failed write (1 is reserved for a later rule
//! gate).
#![deny(missing_docs)]

mod annotate;
mod gate;
mod job;
use tracelens_load as input;
pub mod memory;
mod nsys_rules;
mod output;
pub use output::default_report_path;
use output::report_path_for;
mod progress;
mod render;
mod stop;

use clap::{Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use tracelens_report::escape::terminal_text;

use stop::Stop;
pub use stop::{EXIT_INPUT, EXIT_OK, EXIT_RULE};

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
    /// Gate a CI job: evaluate rules on a trace or a stored result; exit 1 when a rule fires.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// Compare two runs (traces or stored results): step time against the noise, GPU busy,
    /// idle by cause, findings resolved/new/changed, kernels that moved.
    Diff(DiffArgs),
    /// Render a stored result (`analyze --format json`) again: the same HTML, Markdown or text
    /// that `analyze` wrote, without the trace (a CI artifact re-rendered later).
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// The reduce step of a many-rank job: the cross-rank report from per-rank Parquet
    /// folders written by `analyze TRACE --format parquet -o DIR/`, without the traces.
    Merge(MergeArgs),
}

/// Examples under `tracelens report --help`.
const REPORT_EXAMPLES: &str = "\
Examples:
  tracelens analyze trace.json.gz -o result.json     in CI: keep the result, not the trace
  tracelens report result.json -o report.html        later: the HTML report, byte for byte
  tracelens report result.json --format md           the Markdown summary on stdout
A result written by a tracelens with another schema version is refused.";

#[derive(clap::Args)]
struct ReportArgs {
    /// A result document written by `tracelens analyze TRACE --format json`.
    result: PathBuf,
    /// Output format (default: from the -o extension, else text).
    #[arg(long, value_enum)]
    format: Option<DocFormat>,
    /// Write to FILE (atomically) instead of stdout; `-` for stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also show input details in the text summary.
    #[arg(short = 'v', long)]
    verbose: bool,
}

#[derive(clap::Args)]
struct MergeArgs {
    /// Per-rank folders (each with rank.parquet, steps.parquet, collectives.parquet, …).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Output format (default: from the -o extension, else text).
    #[arg(long, value_enum)]
    format: Option<DocFormat>,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Take the ranks as one job even when nothing in them says so (no distributedInfo, and
    /// no kernel or step count in common).
    #[arg(long)]
    as_job: bool,
}

/// Examples under `tracelens check --help`.
const CHECK_EXAMPLES: &str = "\
A rule describes a problem; the check fails (exit 1) when any rule is true. Metrics and the
grammar: docs/rules.md. Without --rule/--rules, ./tracelens.toml (rules = [\"...\"]) or the
default set is used.

Examples:
  tracelens check trace.json.gz --rule 'gpu.idle_percent > 25' --rule 'finding.implicit_sync.count_per_step >= 1'
  tracelens check trace.json.gz --rules default
  tracelens check after.json --baseline before.json --rule 'diff.step_time_percent > 5'
  tracelens check trace.json.gz --annotations github";

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Annotations {
    /// `::warning file=…,line=…::` lines for GitHub Actions.
    Github,
}

/// The least severity a finding needs to become an annotation.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MinSeverity {
    Low,
    Medium,
    High,
}

/// Which findings become CI annotations, and for which files.
#[derive(clap::Args, Clone)]
struct AnnotationArgs {
    /// Also print findings with a Python call site as CI annotations.
    #[arg(long, value_enum)]
    annotations: Option<Annotations>,
    /// Annotate only findings of this severity or more (low: under 3 % of the step, medium:
    /// 3-10 %, high: 10 % or more).
    #[arg(long, value_enum, default_value = "medium")]
    min_severity: MinSeverity,
    /// Annotate only call sites whose file is in this folder, by its path there (default:
    /// $GITHUB_WORKSPACE, else the working directory): a PR cannot be annotated on library
    /// files it does not hold.
    #[arg(long, value_name = "DIR")]
    source_root: Option<PathBuf>,
}

impl AnnotationArgs {
    /// The annotation lines for `results`, when asked for.
    fn lines(&self, results: &tracelens_results::Results) -> Option<String> {
        use tracelens_analysis::finding::Severity;
        self.annotations?;
        let min = match self.min_severity {
            MinSeverity::Low => Severity::Low,
            MinSeverity::Medium => Severity::Medium,
            MinSeverity::High => Severity::High,
        };
        let root = self
            .source_root
            .clone()
            .or_else(|| std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("."));
        Some(gate::github_annotations(results, min, &root))
    }
}

#[derive(clap::Args)]
struct CheckArgs {
    /// A trace (any supported format), a result document (`tracelens analyze --format json`)
    /// or a folder of traces (the newest profiling cycle of each worker: one worker is one
    /// trace, several are the ranks of one job).
    #[arg(required_unless_present = "parse_only")]
    input: Option<PathBuf>,
    /// Only parse the rules and stop: exit 0 when they all parse, 2 naming the first that
    /// does not (the Python handler checks its `fail_on` rules this way before training).
    #[arg(long)]
    parse_only: bool,
    /// A rule, e.g. 'gpu.idle_percent > 25' (repeatable).
    #[arg(long = "rule", value_name = "RULE")]
    rule: Vec<String>,
    /// A rules file (`rules = ["...", ...]`), or `default` for the documented default set.
    #[arg(long = "rules", value_name = "FILE|default")]
    rules: Option<PathBuf>,
    /// A run to compare with, enabling the `diff.*` metrics.
    #[arg(long, value_name = "BEFORE")]
    baseline: Option<PathBuf>,
    #[command(flatten)]
    annotate: AnnotationArgs,
}

#[derive(clap::Args)]
struct DiffArgs {
    /// The earlier run: a trace or a result document.
    before: PathBuf,
    /// The later run.
    after: PathBuf,
    /// Output format (default: from the -o extension, else text).
    #[arg(long, value_enum)]
    format: Option<DocFormat>,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Fail (exit 1) when this rule over the run and the diff is true (repeatable).
    #[arg(long = "fail-on", value_name = "RULE")]
    fail_on: Vec<String>,
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

#[derive(clap::Args, Clone)]
struct AnalyzeArgs {
    /// Trace file: Kineto/Chrome JSON (plain or gzip) or an Nsight Systems SQLite export;
    /// `-` reads stdin. It is never overwritten: an output that names it is refused. A
    /// folder, or several files, are the ranks of one distributed job.
    trace: PathBuf,
    /// More traces: with TRACE, the ranks of one job.
    #[arg(value_name = "MORE")]
    more: Vec<PathBuf>,
    /// Ranks analysed at once for a multi-rank job (bounds memory to about that many ranks).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
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
    /// No progress bar (one is shown on a terminal for traces over 200 MB; never in CI).
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Also show input details in the summary: format, event and span counts, lanes, every
    /// warning.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Fail (exit 1) after writing the outputs when this rule is true, e.g.
    /// 'idle.data_loading.percent > 10' (repeatable; docs/rules.md).
    #[arg(long = "fail-on", value_name = "RULE")]
    fail_on: Vec<String>,
    #[command(flatten)]
    annotate: AnnotationArgs,
    /// Keep only the trace's file name in the JSON (`input.path`, a job's rank files): for
    /// results shared outside the machine. The other outputs name the file only anyway.
    #[arg(long)]
    redact_path: bool,
    /// With several traces: take them as the ranks of one job even when nothing in them says
    /// so (no distributedInfo, and no kernel or step count in common).
    #[arg(long)]
    as_job: bool,
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
    /// Per-rank Parquet tables into the folder given with -o (the map step of a big job).
    Parquet,
}

/// The formats of a rendered document (`report`, `diff`, `merge`): Parquet is the map step
/// of `analyze` only, so these commands do not offer it.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DocFormat {
    Text,
    Json,
    #[value(alias = "markdown")]
    Md,
    Html,
}

impl From<DocFormat> for Format {
    fn from(f: DocFormat) -> Format {
        match f {
            DocFormat::Text => Format::Text,
            DocFormat::Json => Format::Json,
            DocFormat::Md => Format::Md,
            DocFormat::Html => Format::Html,
        }
    }
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
pub(crate) fn fail(stderr: &mut dyn Write, path: &Path, problem: impl std::fmt::Display) -> Stop {
    let line = format!("{}: {problem}", path.display());
    let _ = writeln!(stderr, "tracelens: error: {}", terminal_text(&line));
    Stop::Refused
}

/// Where results go, and the one input they must never replace.
pub(crate) struct Sink<'a> {
    stdout: &'a mut dyn Write,
    stderr: &'a mut dyn Write,
    input: &'a Path,
    input_identity: Option<input::FileIdentity>,
}

impl Sink<'_> {
    /// Writes to stdout, [workflow-command safe](tracelens_report::escape::workflow_command_safe):
    /// no line of it can be a CI runner command. A failure (a full device, a closed pipe) ends
    /// the run with exit 2.
    pub(crate) fn print(&mut self, text: &str) -> Result<(), Stop> {
        let safe = tracelens_report::escape::workflow_command_safe(text);
        self.print_commands(&safe)
    }

    /// Writes to stdout as is: only for tracelens's own `--annotations` workflow commands,
    /// whose trace-derived parts are escaped by the command format.
    pub(crate) fn print_commands(&mut self, text: &str) -> Result<(), Stop> {
        match self.stdout.write_all(text.as_bytes()) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stdout_failed(&e)),
        }
    }

    /// Flushes stdout, reporting a failure as [`Sink::print`] does.
    fn flush(&mut self) -> Result<(), Stop> {
        match self.stdout.flush() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stdout_failed(&e)),
        }
    }

    fn stdout_failed(&mut self, e: &std::io::Error) -> Stop {
        // A reader that went away (`| head`) needs no message.
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Stop::ClosedPipe;
        }
        let why = format!("cannot write output: {}", input::write_problem(e));
        fail(self.stderr, Path::new("<stdout>"), why)
    }

    /// Refuses a path that is the input (same file through any name or link).
    fn check_not_input(&mut self, path: &Path) -> Result<(), Stop> {
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
    fn write_file(&mut self, path: &Path, text: &str) -> Result<(), Stop> {
        self.check_not_input(path)?;
        output::write_atomically(path, text).map_err(|e| {
            let why = format!("cannot write output: {}", input::write_problem(&e));
            fail(self.stderr, path, why)
        })
    }

    /// `wrote PATH` / `report: PATH` on stdout.
    fn announce(&mut self, label: &str, path: &Path) -> Result<(), Stop> {
        let line = format!("{label}{}\n", terminal_text(&path.display().to_string()));
        self.print(&line)
    }
}

/// `tracelens check`.
fn check(args: &CheckArgs, out: &mut Sink) -> Result<(), Stop> {
    let texts = gate::collect_rules(&args.rule, args.rules.as_deref(), out.stderr)?;
    let rules = gate::parse_all(&texts, out.stderr)?;
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
    if !input.is_dir() {
        let results = gate::results_of(input, out.stderr)?;
        let metrics = tracelens_results::Metrics::of(&results);
        return Ok((results, metrics));
    }
    let files = job::folder_traces(input);
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

/// `tracelens diff`.
fn diff(args: &DiffArgs, out: &mut Sink) -> Result<(), Stop> {
    let rules = gate::parse_all(&args.fail_on, out.stderr)?;
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
            stop::exit_code(check(&a, &mut sink).and_then(|()| sink.flush()))
        }
        Command::Diff(a) => {
            let mut sink = Sink {
                stdout,
                stderr,
                input: &a.after,
                input_identity: input::identity(&a.after),
            };
            stop::exit_code(diff(&a, &mut sink).and_then(|()| sink.flush()))
        }
        Command::Report(a) => {
            let mut sink = Sink {
                stdout,
                stderr,
                input: &a.result,
                input_identity: input::identity(&a.result),
            };
            stop::exit_code(render::rerender(&a, &mut sink).and_then(|()| sink.flush()))
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
                analyze(&a, &mut sink)
            };
            stop::exit_code(result.and_then(|()| sink.flush()))
        }
    }
}

/// The process's peak resident memory so far in MB (`VmHWM`; Linux only, else `None`).
fn peak_rss_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024)
}

fn analyze(args: &AnalyzeArgs, out: &mut Sink) -> Result<(), Stop> {
    if let Some(files) = job::job_files(args) {
        return match files.len() {
            0 => Err(fail(out.stderr, &args.trace, job::NO_TRACES_IN_FOLDER)),
            // A folder holding one trace is that trace.
            1 if args.more.is_empty() => {
                let mut one = args.clone();
                one.trace = files[0].clone();
                analyze(&one, out)
            }
            _ => job::analyze_job(args, files, out),
        };
    }
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
        // Parquet output is a folder of tables, created as needed.
        let folder = match path
            .parent()
            .filter(|_| args.format != Some(Format::Parquet))
        {
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
    // Bad rules are refused before the trace is read.
    let rules = gate::parse_all(&args.fail_on, out.stderr)?;
    let started = std::time::Instant::now();
    let mut trace =
        progress::open(&args.trace, args.quiet).map_err(|e| fail(out.stderr, &args.trace, e))?;
    if args.redact_path {
        trace.source.path = output::file_name_of(&trace.source.path);
    }
    let loaded = started.elapsed();
    let read_peak = peak_rss_mb();
    // One capture of several rank processes (Nsight Systems of `torchrun`): their job.
    if args.format != Some(Format::Parquet) && !trace.rank_processes().is_empty() {
        return job::analyze_capture(args, &trace, out);
    }
    let spans = trace.spans.len();
    let analysis = tracelens_analysis::analyze(&trace);
    let collectives = (args.format == Some(Format::Parquet)).then(|| {
        tracelens_analysis::collectives::collectives_on(&trace, analysis.diagnosis.focus_device)
    });
    let report = tracelens_results::Report::new(&trace, analysis);
    let rank = collectives.map(|c| tracelens_results::RankSummary::of(&report, c));
    // The report stands on its own: the trace's memory goes before rendering.
    drop(trace);
    let analysed = started.elapsed();
    if args.timings {
        let _ = writeln!(
            out.stderr,
            "timings: read {:.3} s ({} spans), analyse {:.3} s{}",
            loaded.as_secs_f64(),
            spans,
            (analysed - loaded).as_secs_f64(),
            match (read_peak, peak_rss_mb()) {
                (Some(r), Some(a)) =>
                    format!("; peak RSS {r} MB after reading, {a} MB after analysing"),
                _ => String::new(),
            }
        );
    }
    let tty = std::io::stdout().is_terminal();
    let color = tty && std::env::var_os("NO_COLOR").is_none();
    let width = terminal_width(tty);
    let render = |format: Format, color: bool| {
        render::render_report(
            &report,
            format,
            &render::text_options(color, width, args.verbose),
        )
    };
    if args.format == Some(Format::Parquet) {
        let Some(dir) = args.output.as_ref().filter(|p| p.as_os_str() != "-") else {
            return Err(fail(
                out.stderr,
                &args.trace,
                "--format parquet needs -o DIR (a folder for the tables)",
            ));
        };
        return match rank {
            Some(rank) => job::write_parquet(&rank, dir, out),
            None => Ok(()),
        };
    }
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
    if args.annotate.annotations.is_some() || !args.fail_on.is_empty() {
        let results = &report.results;
        if let Some(lines) = args.annotate.lines(results) {
            out.print_commands(&lines)?;
        }
        out.flush()?;
        gate::fail_on(&rules, &tracelens_results::Metrics::of(results), out.stderr)?;
    }
    Ok(())
}
