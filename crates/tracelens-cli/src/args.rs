//! The command line's words: the subcommands, their arguments and the output formats (clap).

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

/// `tracelens --version`: the version, the commit and its date.
pub(crate) const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TRACELENS_COMMIT"),
    " ",
    env!("TRACELENS_COMMIT_DATE"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "tracelens",
    version = LONG_VERSION,
    about = "Fast offline analyzer for GPU training traces (PyTorch Profiler / Kineto JSON, Nsight Systems SQLite)",
    after_help = "Run `tracelens analyze --help` for inputs and examples."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Diagnose a trace: where the GPU sat idle, why, which line caused it, what to fix.
    #[command(visible_alias = "analyse", after_help = ANALYZE_EXAMPLES)]
    Analyze(AnalyzeArgs),
    /// Write the trace back with our findings as extra tracks, for Perfetto UI or
    /// chrome://tracing: GPU idle coloured by cause, each finding at its evidence, arrows from
    /// blocking syncs to the idle they caused. The input's events are copied byte for byte,
    /// secrets included: share the report, not the annotated trace, when it may hold any.
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
    /// Print the shell completion script for SHELL, e.g. `tracelens completions bash >
    /// ~/.local/share/bash-completion/completions/tracelens`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), e.g. `tracelens man > ~/.local/share/man/man1/tracelens.1`.
    Man,
    /// Performance across runs: stored results (`analyze --format json`, `--label` to name
    /// them) as one series, ordered by when each trace was recorded: step time, GPU busy, MFU,
    /// exposed communication, the top finding, and the runs where the step time changed beyond
    /// the noise with the findings that appeared or grew there.
    History(HistoryArgs),
    /// Serve the analysis to coding agents: a Model Context Protocol server on stdin/stdout
    /// (tools: analyze, view, diff, check, locate), reading only under the given roots.
    Mcp(McpArgs),
}

#[derive(clap::Args)]
pub(crate) struct HistoryArgs {
    /// The runs: result documents (`tracelens analyze TRACE --format json -o run.json`),
    /// folders or object-storage prefixes of them, or Parquet folders (a rank's tables, or
    /// a job's rank folders: one run each).
    #[arg(required = true, value_name = "RESULT")]
    pub(crate) results: Vec<PathBuf>,
    /// Output format (default: from the -o extension, else text).
    #[arg(long, value_enum)]
    pub(crate) format: Option<DocFormat>,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct McpArgs {
    /// A folder the server may read traces under (repeatable; symlinks are resolved, nothing
    /// outside is read, and nothing is written).
    #[arg(long = "root", value_name = "DIR", required = true)]
    pub(crate) roots: Vec<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// Examples under `tracelens report --help`.
pub(crate) const REPORT_EXAMPLES: &str = "\
Examples:
  tracelens analyze trace.json.gz -o result.json     in CI: keep the result, not the trace
  tracelens report result.json -o report.html        later: the HTML report, byte for byte
  tracelens report result.json --format md           the Markdown summary on stdout
A result written by a tracelens with another schema version is refused.";

#[derive(clap::Args)]
pub(crate) struct ReportArgs {
    /// A result document written by `tracelens analyze TRACE --format json`.
    pub(crate) result: PathBuf,
    /// Output format (default: from the -o extension, else text).
    #[arg(long, value_enum)]
    pub(crate) format: Option<DocFormat>,
    /// Write to FILE (atomically) instead of stdout; `-` for stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Also show input details in the text summary.
    #[arg(short = 'v', long)]
    pub(crate) verbose: bool,
}

#[derive(clap::Args)]
pub(crate) struct MergeArgs {
    /// Per-rank folders (each with rank.parquet, steps.parquet, collectives.parquet, …).
    #[arg(required = true)]
    pub(crate) dirs: Vec<PathBuf>,
    /// Output format (default: from the -o extension, else text).
    #[arg(long, value_enum)]
    pub(crate) format: Option<DocFormat>,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Take the ranks as one job even when nothing in them says so (no distributedInfo, and
    /// no kernel or step count in common).
    #[arg(long)]
    pub(crate) as_job: bool,
}

/// Examples under `tracelens check --help`.
pub(crate) const CHECK_EXAMPLES: &str = "\
A rule describes a problem; the check fails (exit 1) when any rule is true. Metrics and the
grammar: docs/rules.md. Without --rule/--rules, ./tracelens.toml (rules = [\"...\"]) or the
default set is used.

Examples:
  tracelens check trace.json.gz --rule 'gpu.idle_percent > 25' --rule 'finding.implicit_sync.count_per_step >= 1'
  tracelens check trace.json.gz --rules default
  tracelens check after.json --baseline before.json --rule 'diff.step_time_percent > 5'
  tracelens check trace.json.gz --annotations github";

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Annotations {
    /// `::warning file=…,line=…::` lines for GitHub Actions.
    Github,
}

/// The least severity a finding needs to become an annotation.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MinSeverity {
    Low,
    Medium,
    High,
}

/// Which findings become CI annotations, and for which files.
#[derive(clap::Args, Clone)]
pub(crate) struct AnnotationArgs {
    /// Also print findings with a Python call site as CI annotations.
    #[arg(long, value_enum)]
    pub(crate) annotations: Option<Annotations>,
    /// Annotate only findings of this severity or more (low: under 3 % of the step, medium:
    /// 3-10 %, high: 10 % or more).
    #[arg(long, value_enum, default_value = "medium")]
    pub(crate) min_severity: MinSeverity,
    /// Annotate only call sites whose file is in this folder, by its path there (default:
    /// $GITHUB_WORKSPACE, else the working directory): a PR cannot be annotated on library
    /// files it does not hold.
    #[arg(long, value_name = "DIR")]
    pub(crate) source_root: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// A trace (any supported format), a result document (`tracelens analyze --format json`)
    /// or a folder of traces (the newest profiling cycle of each worker: one worker is one
    /// trace, several are the ranks of one job).
    #[arg(required_unless_present = "parse_only")]
    pub(crate) input: Option<PathBuf>,
    /// Only parse the rules and stop: exit 0 when they all parse, 2 naming the first that
    /// does not (the Python handler checks its `fail_on` rules this way before training).
    #[arg(long)]
    pub(crate) parse_only: bool,
    /// A rule, e.g. 'gpu.idle_percent > 25' (repeatable).
    #[arg(long = "rule", value_name = "RULE")]
    pub(crate) rule: Vec<String>,
    /// A rules file (`rules = ["...", ...]`), or `default` for the documented default set.
    #[arg(long = "rules", value_name = "FILE|default")]
    pub(crate) rules: Option<PathBuf>,
    /// A run to compare with, enabling the `diff.*` metrics.
    #[arg(long, value_name = "BEFORE")]
    pub(crate) baseline: Option<PathBuf>,
    /// Stored results of the last runs, enabling the `history.*` metrics (this run against
    /// their median step, beyond their noise).
    #[arg(long, value_name = "RESULT", num_args = 1..)]
    pub(crate) history: Vec<PathBuf>,
    /// A rule on a figure this capture does not give (a GPU rule on a CPU-only run, a diff
    /// without a baseline): `error` refuses it (exit 2), `pass` lets it pass with a note.
    /// Rules of the default set always pass with the note.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "error")]
    pub(crate) not_measured: NotMeasured,
    #[command(flatten)]
    pub(crate) annotate: AnnotationArgs,
}

#[derive(clap::Args)]
pub(crate) struct DiffArgs {
    /// The earlier run: a trace or a result document.
    pub(crate) before: PathBuf,
    /// The later run.
    pub(crate) after: PathBuf,
    /// Output format (default: from the -o extension, else text).
    #[arg(long, value_enum)]
    pub(crate) format: Option<DocFormat>,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Fail (exit 1) when this rule over the run and the diff is true (repeatable).
    #[arg(long = "fail-on", value_name = "RULE")]
    pub(crate) fail_on: Vec<String>,
    /// A rule on a figure these runs do not give: `error` refuses it (exit 2), `pass` lets it
    /// pass with a note.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "error")]
    pub(crate) not_measured: NotMeasured,
}

/// Examples under `tracelens annotate --help`.
pub(crate) const ANNOTATE_EXAMPLES: &str = "\
Examples:
  tracelens annotate worker0.pt.trace.json.gz                 writes worker0.annotated.json.gz
  tracelens annotate trace.json -o annotated.json             uncompressed
Then open the file in ui.perfetto.dev (Open trace file) or chrome://tracing. Kineto traces only.";

#[derive(clap::Args)]
pub(crate) struct AnnotateArgs {
    /// Kineto/Chrome trace, plain or gzip (not stdin: the file is read twice).
    pub(crate) trace: PathBuf,
    /// Where to write the annotated trace (default `./<stem>.annotated.json.gz`); gzip when
    /// the name ends in `.gz`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// Examples under `tracelens analyze --help`.
pub(crate) const ANALYZE_EXAMPLES: &str = "\
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
pub(crate) struct AnalyzeArgs {
    /// Trace file: Kineto/Chrome JSON (plain or gzip) or an Nsight Systems SQLite export;
    /// `-` reads stdin. It is never overwritten: an output that names it is refused. A
    /// folder, or several files, are the ranks of one distributed job.
    pub(crate) trace: PathBuf,
    /// More traces: with TRACE, the ranks of one job.
    #[arg(value_name = "MORE")]
    pub(crate) more: Vec<PathBuf>,
    /// A profile of the CUDA/HIP graphs' capture, for a trace that replays them: each
    /// replayed kernel gets the op, shapes and module that launched it at capture. Without
    /// it, a `capture_traces/` folder beside TRACE is read on its own.
    #[arg(long, value_name = "FILE")]
    pub(crate) capture: Option<PathBuf>,
    /// Ranks analysed at once for a multi-rank job (bounds memory to about that many ranks).
    #[arg(long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Output format. Without -o: `text` prints the summary and writes the HTML report;
    /// `json`, `md` and `html` print that format to stdout. With -o: the file's format
    /// (default: from its extension, .html/.json/.md, else text).
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// Write the output to FILE (atomically) instead of the default report; `-` for stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Do not write the HTML report next to the summary.
    #[arg(long)]
    pub(crate) no_report: bool,
    /// Compatibility mode: run another tool's rules instead of the native diagnoses.
    /// `nsys` reproduces the six CUDA rules of `nsys analyze` on an Nsight Systems export.
    #[arg(long, value_enum, value_name = "SET")]
    pub(crate) rules: Option<RuleSet>,
    /// Print how long reading, analysing and rendering took (to stderr).
    #[arg(long)]
    pub(crate) timings: bool,
    /// No progress bar (one is shown on a terminal for traces over 200 MB; never in CI).
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
    /// Also show input details in the summary: format, event and span counts, lanes, every
    /// warning.
    #[arg(short = 'v', long)]
    pub(crate) verbose: bool,
    /// Fail (exit 1) after writing the outputs when this rule is true, e.g.
    /// 'idle.data_loading.percent > 10' (repeatable; docs/rules.md).
    #[arg(long = "fail-on", value_name = "RULE")]
    pub(crate) fail_on: Vec<String>,
    /// A rule on a figure this capture does not give (a GPU rule on a CPU-only run, a diff
    /// without a baseline): `error` refuses it (exit 2), `pass` lets it pass with a note.
    /// Rules of the default set always pass with the note.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "error")]
    pub(crate) not_measured: NotMeasured,
    #[command(flatten)]
    pub(crate) annotate: AnnotationArgs,
    /// Name this run in its JSON (a commit, a CI run number), for `tracelens history`.
    #[arg(long, value_name = "TEXT")]
    pub(crate) label: Option<String>,
    /// Keep only the trace's file name in the JSON (`input.path`, a job's rank files): for
    /// results shared outside the machine. The other outputs name the file only anyway.
    #[arg(long)]
    pub(crate) redact_path: bool,
    /// With several traces: take them as the ranks of one job even when nothing in them says
    /// so (no distributedInfo, and no kernel or step count in common).
    #[arg(long)]
    pub(crate) as_job: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RuleSet {
    Nsys,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
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
pub(crate) enum DocFormat {
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
    pub(crate) fn from_extension(path: &Path) -> Format {
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

/// What a rule on a figure the capture cannot give becomes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub(crate) enum NotMeasured {
    /// Refused: one line saying why, exit 2.
    Error,
    /// Passes, with a note saying what the capture lacks.
    Pass,
}
