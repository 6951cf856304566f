//! The terminal summary of `tracelens analyze`: the answer first (verdict, idle by cause with
//! what each cause means, the findings with their win, fix and call site), then a few facts;
//! input details under `--verbose`. Wrapped to the terminal width. Every trace string goes
//! through [`crate::escape::terminal_text`] and the finished text through
//! [`crate::escape::terminal_output`]: the only escape sequences printed are our colours.

use crate::escape::{terminal_output, terminal_text as clean};
use std::fmt::Write;
use tracelens_analysis::diagnose::finding::Severity;
use tracelens_analysis::{BusyIdle, Diagnosis};
use tracelens_model::format_ms;
use tracelens_results::Report;

/// How the summary is laid out.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    /// ANSI colours.
    pub color: bool,
    /// Columns to wrap to (80 when piped).
    pub width: usize,
    /// Input details: format, counts, lanes, both busy figures, every warning.
    pub verbose: bool,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            color: false,
            width: 80,
            verbose: false,
        }
    }
}

/// Findings listed.
const TEXT_FINDINGS: usize = 5;
/// Lines the default summary fits in, the CLI's closing `wrote …` line included, so the
/// answer is on one screen: the top three findings are always shown (in short form when in
/// full they would not fit), more only as they fit, the rest counted (`--verbose` shows five
/// in full whatever the length).
pub const SUMMARY_LINES: usize = 30;
/// Warnings listed without `--verbose`.
const TEXT_WARNINGS: usize = 2;
/// Width of the label column of the facts block.
const LABEL: usize = 10;

/// ANSI styles for the terminal, or none.
#[derive(Clone, Copy)]
struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// The longest word the terminal shows whole: about four lines of a wide terminal. Longer
/// ones (crafted names) end in `…`; the JSON has them in full.
pub const MAX_WORD_CHARS: usize = 320;

/// Wraps `text` to `width` columns: the first line starts with `first`, the others with
/// `indent` spaces. Words longer than a line (kernel names) are cut across lines, and words
/// longer than [`MAX_WORD_CHARS`] are shortened. Linear in the text's length.
#[must_use]
pub fn wrap(text: &str, width: usize, first: &str, indent: usize) -> String {
    let width = width.max(indent + 20);
    // A number and its unit stay on one line (`290.175 ms`, `6.2 %`).
    let glued = crate::keep_units(text);
    let text = glued.as_str();
    let mut out = String::new();
    let mut line = first.to_string();
    let mut line_len = first.chars().count();
    let mut empty = true;
    for word in text.split([' ', '\n', '\t']).filter(|w| !w.is_empty()) {
        // A word is counted once (cutting a long one is linear, not quadratic), and one
        // longer than a few lines is shortened for display: full names are in the JSON.
        let (shown, mut wlen) = match word.char_indices().nth(MAX_WORD_CHARS) {
            Some((cut, _)) => (
                std::borrow::Cow::Owned(format!("{}…", &word[..cut])),
                MAX_WORD_CHARS + 1,
            ),
            None => (std::borrow::Cow::Borrowed(word), word.chars().count()),
        };
        let mut word: &str = &shown;
        loop {
            let need = if empty { wlen } else { wlen + 1 };
            if line_len + need <= width {
                if !empty {
                    line.push(' ');
                }
                line.push_str(word);
                line_len += need;
                empty = false;
                break;
            }
            if empty {
                // Alone on a line and still too long: cut it.
                let room = width.saturating_sub(line_len).max(1);
                let cut = word.char_indices().nth(room).map_or(word.len(), |(i, _)| i);
                line.push_str(&word[..cut]);
                word = &word[cut..];
                wlen = wlen.saturating_sub(room);
            }
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
            line_len = indent;
            empty = true;
            if word.is_empty() {
                break;
            }
        }
    }
    if !empty || out.is_empty() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    // The glue was only for wrapping: print plain spaces (people grep for "12.3 ms").
    out.replace('\u{a0}', " ")
}

/// Renders the summary with default options (80 columns, no colour unless asked).
#[must_use]
pub fn render_text(report: &Report, color: bool) -> String {
    render_text_with(
        report,
        &TextOptions {
            color,
            ..TextOptions::default()
        },
    )
}

/// Renders the summary (ending with a newline).
#[must_use]
pub fn render_text_with(report: &Report, opts: &TextOptions) -> String {
    let diagnosis = &report.diagnosis;
    let style = Style { on: opts.color };
    let w = opts.width;
    let mut out = String::new();
    let name = std::path::Path::new(&report.input.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| report.input.path.clone());
    let _ = writeln!(
        out,
        "tracelens {} · {}",
        clean(&report.tool.version),
        clean(&name)
    );
    out.push_str(&style.paint(
        "1",
        wrap(&clean(&diagnosis.verdict.text), w, "", 0).trim_end(),
    ));
    out.push('\n');
    render_idle(&mut out, diagnosis, w);
    let mut facts = String::new();
    render_facts(&mut facts, report, opts);
    // The closing `wrote …` line of the CLI counts too.
    let used = out.lines().count() + facts.lines().count() + 1;
    let budget = (!opts.verbose).then(|| SUMMARY_LINES.saturating_sub(used));
    render_findings(&mut out, diagnosis, style, w, budget);
    out.push_str(&facts);
    terminal_output(out, opts.color)
}

/// Idle time by cause, with what each cause means: per step wherever there are steps (the
/// unit of the findings below it), the window's total named beside it.
fn render_idle(out: &mut String, d: &Diagnosis, width: usize) {
    let stepped = d.window.as_ref().filter(|w| w.has_steps());
    for idle in d.idle.iter().filter(|i| i.idle_ns > 0) {
        let head = match (stepped, d.window.as_ref()) {
            (Some(w), _) if w.step_count() == 1 => format!(
                "GPU {} idle {} of the {} step, by cause:",
                idle.device,
                format_ms(idle.idle_ns),
                format_ms(w.step_ns())
            ),
            (Some(w), _) => format!(
                "GPU {} idle {} per step of {} ({} over the {}-step window), by cause:",
                idle.device,
                format_ms(w.per_step(idle.idle_ns)),
                format_ms(w.step_ns()),
                format_ms(idle.idle_ns),
                w.step_count()
            ),
            (None, Some(w)) => format!(
                "GPU {} idle {} of the {} window, by cause:",
                idle.device,
                format_ms(idle.idle_ns),
                format_ms(w.interval.dur_ns())
            ),
            (None, None) => format!(
                "GPU {} idle {}, by cause:",
                idle.device,
                format_ms(idle.idle_ns)
            ),
        };
        out.push_str(&wrap(&head, width, "", 0));
        for c in &idle.by_cause {
            let ns = stepped.map_or(c.ns, |w| w.per_step(c.ns));
            let head = format!(
                "  {:<17} {:>12} {:>4.0} %  ",
                c.cause.label().replace('_', " "),
                format_ms(ns),
                c.percent
            );
            let indent = head.chars().count();
            out.push_str(&wrap(c.describe(), width, &head, indent));
        }
        if !idle.attribution_reliable {
            out.push_str(&wrap(
                &format!(
                    "({} GPU ops come from graph replays no capture accounts for: the attribution is less certain)",
                    idle.graph_replay_ops
                ),
                width,
                "  ",
                2,
            ));
        }
    }
}

/// Findings always shown, however narrow the terminal: shorter lines, not fewer findings.
const TOP_FINDINGS: usize = 3;

fn render_findings(
    out: &mut String,
    d: &Diagnosis,
    style: Style,
    width: usize,
    budget_lines: Option<usize>,
) {
    if d.findings.is_empty() {
        out.push_str("\nNo findings above the reporting thresholds.\n");
        return;
    }
    let mut section = String::from("\n");
    // The wins in the findings' unit: per step wherever there are steps.
    let (wins, idle, unit) = match d.window.as_ref().filter(|w| w.has_steps()) {
        Some(w) => (
            w.per_step(d.wins.gpu_idle_wins_ns),
            w.per_step(d.wins.idle_ns),
            " per step",
        ),
        None => (d.wins.gpu_idle_wins_ns, d.wins.idle_ns, ""),
    };
    section.push_str(&wrap(
        &format!(
            "Findings, by expected gain{} (upper bounds; GPU-idle wins {} of {} idle{unit}):",
            if d.one_time_set_apart() {
                ", one-time work after the per-step ones"
            } else {
                ""
            },
            format_ms(wins),
            format_ms(idle)
        ),
        width,
        "",
        0,
    ));
    let block_of = |i: usize, f: &tracelens_analysis::Finding, form: Form| {
        let badge = format!("[{:?}]", f.severity);
        let painted = match f.severity {
            Severity::High => style.paint("1;31", &badge),
            Severity::Medium => style.paint("1;33", &badge),
            Severity::Low => style.paint("2", &badge),
        };
        // Wrap on the plain badge, then paint it: colour codes have no width.
        let head = format!("  {}. {badge} ", i + 1);
        let title = at_most(
            wrap(&clean(&f.title), width, &head, 5),
            form.title_lines,
            width,
            5,
        );
        let mut block = title.replacen(&badge, &painted, 1);
        // Short forms: the same facts in fewer lines (the win and prediction in short words,
        // the fix's first lines; all of it in the HTML report and the JSON).
        let win = if form.short_win {
            crate::win_and_prediction_short(f, d)
        } else {
            crate::win_and_prediction(f, d)
        };
        block.push_str(&wrap(&win, width, "     ", 5));
        block.push_str(&at_most(
            wrap(&clean(&f.fix), width, "     fix: ", 10),
            form.fix_lines,
            width,
            10,
        ));
        if let Some(site) = &f.call_site {
            block.push_str(&wrap(&clean(site), width, "     at:  ", 10));
        }
        block
    };
    // The top findings in the fullest form that fits the screen, else in the shortest.
    let top = d.findings.len().min(TOP_FINDINGS);
    let more_line = usize::from(d.findings.len() > top);
    let lines_in = |form: Form| -> usize {
        d.findings[..top]
            .iter()
            .enumerate()
            .map(|(i, f)| block_of(i, f, form).lines().count())
            .sum()
    };
    let form = match budget_lines {
        None => Form::FULL,
        Some(budget) => Form::ALL
            .into_iter()
            .find(|&form| section.lines().count() + lines_in(form) + more_line <= budget)
            .unwrap_or(Form::SHORTEST),
    };
    for (i, f) in d.findings[..top].iter().enumerate() {
        section.push_str(&block_of(i, f, form));
    }
    let mut shown = top;
    for (i, f) in d.findings.iter().enumerate().take(TEXT_FINDINGS).skip(top) {
        let block = block_of(i, f, form);
        let more_line = usize::from(i + 1 < d.findings.len());
        let fits = budget_lines.is_none_or(|budget| {
            section.lines().count() + block.lines().count() + more_line <= budget
        });
        if !fits {
            break;
        }
        section.push_str(&block);
        shown += 1;
    }
    if d.findings.len() > shown {
        let _ = writeln!(
            section,
            "  … {} more in the HTML report and --format json",
            d.findings.len() - shown
        );
    }
    out.push_str(&section);
}

/// How much of a finding the summary shows: the full form, or shorter ones that keep the
/// top findings on one screen.
#[derive(Clone, Copy)]
struct Form {
    /// Title lines at most (`None`: all).
    title_lines: Option<usize>,
    /// Fix lines at most (`None`: all).
    fix_lines: Option<usize>,
    /// The win and prediction in short words.
    short_win: bool,
}

impl Form {
    const FULL: Form = Form {
        title_lines: None,
        fix_lines: None,
        short_win: false,
    };
    /// A one-line title: for a long verdict (a cold run's capture advice) on a small screen.
    const SHORTEST: Form = Form {
        title_lines: Some(1),
        fix_lines: Some(1),
        short_win: true,
    };
    /// Fullest first.
    const ALL: [Form; 5] = [
        Form::FULL,
        Form {
            title_lines: None,
            fix_lines: Some(2),
            short_win: true,
        },
        Form {
            title_lines: Some(2),
            fix_lines: Some(2),
            short_win: true,
        },
        Form {
            title_lines: Some(2),
            fix_lines: Some(1),
            short_win: true,
        },
        Form::SHORTEST,
    ];
}

/// The first `most` lines of `wrapped`, the last of them ending in ` …` when text was left
/// out (never cut into its first `indent` columns).
fn at_most(wrapped: String, most: Option<usize>, width: usize, indent: usize) -> String {
    let Some(most) = most.filter(|&m| m > 0 && wrapped.lines().count() > m) else {
        return wrapped;
    };
    let lines: Vec<&str> = wrapped.lines().take(most).collect();
    let mut out = String::new();
    for line in &lines[..most - 1] {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&ellipsized(lines[most - 1], width, indent));
    out
}

/// A wrapped `line` that text continues past, ending in ` …`: words dropped from its end
/// (never into its first `indent` columns) until the mark fits in `width`.
fn ellipsized(line: &str, width: usize, indent: usize) -> String {
    let mut line = line.trim_end().to_string();
    while line.chars().count() + 2 > width {
        match line.rfind(' ') {
            Some(at) if at > indent => line.truncate(at),
            _ => break,
        }
        line.truncate(line.trim_end().len());
    }
    format!("{line} …\n")
}

/// The facts block: the window, each device, the breakdown, warnings; more with `verbose`.
fn render_facts(out: &mut String, report: &Report, opts: &TextOptions) {
    let (overview, d) = (&report.overview, &report.diagnosis);
    let w = opts.width;
    let fact = |out: &mut String, label: &str, text: &str| {
        out.push_str(&wrap(text, w, &format!("{label:<LABEL$} "), LABEL + 1));
    };
    out.push('\n');
    if let Some(win) = &d.window {
        let line = if opts.verbose {
            crate::window_line(win)
        } else {
            crate::window_line_short(win)
        };
        fact(out, "window", &clean(&line));
    }
    if !d.program.is_empty() {
        fact(out, "program", &clean(&d.program));
    }
    // One unnamed GPU: its idle line above already says all the facts line would.
    let lone_unnamed = overview.devices.len() == 1 && overview.devices[0].name.is_none();
    for dev in overview
        .devices
        .iter()
        .filter(|_| opts.verbose || !lone_unnamed)
    {
        let name = clean(dev.name.as_deref().unwrap_or("unnamed GPU")).into_owned();
        let busy = dev
            .window
            .as_ref()
            .map(|b| {
                format!(
                    "busy {:.1} %, idle {} of the {} window",
                    b.busy_percent,
                    format_ms(b.idle_ns),
                    format_ms(b.total_ns)
                )
            })
            .unwrap_or_else(|| "no work in the window".into());
        fact(
            out,
            &format!("GPU {}", dev.device),
            &format!("{name}: {busy}"),
        );
        if opts.verbose {
            let streams: Vec<String> = dev.streams.iter().map(i64::to_string).collect();
            fact(
                out,
                "",
                &format!(
                    "{} ops on stream{} {}",
                    dev.gpu_ops,
                    if streams.len() == 1 { "" } else { "s" },
                    streams.join(", ")
                ),
            );
            if let Some(b) = &dev.first_to_last_op {
                fact(out, "", &busy_line("first to last op", b));
            }
        }
    }
    if !overview.has_gpu_activity {
        fact(
            out,
            "devices",
            "none: no kernel, memcpy or memset in the trace",
        );
    }
    if let Some(b) = &d.breakdown {
        let p = &b.percent;
        let parts: Vec<String> = [
            ("kernel", p.kernel),
            ("memcpy", p.memcpy),
            ("memset", p.memset),
            ("comm", p.communication),
            ("runtime", p.runtime),
            ("dataloader", p.dataloader),
            ("cpu", p.cpu_exec),
            ("other", p.other),
        ]
        .iter()
        .filter(|(_, v)| *v >= 0.05)
        .map(|(k, v)| format!("{k} {v:.1} %"))
        .collect();
        let of = if b.steps.is_empty() {
            "of the window"
        } else {
            "of the mean step"
        };
        fact(out, "breakdown", &format!("{} ({of})", parts.join(", ")));
    }
    if !d.critical_path.breakdown.is_empty() {
        let ends = if d.has_steps() {
            "each step's end"
        } else {
            "the window's end"
        };
        let mut line = format!(
            "{} of the chain of work that sets {ends}",
            crate::sections::critical_path::breakdown_line(&d.critical_path, 4)
        );
        if let Some(all) = crate::sections::critical_path::all_fixes_short(d) {
            line = format!("{line}; {all}");
        }
        fact(out, "critical", &clean(&line));
    }
    if let Some(line) = crate::sections::communication::line(d) {
        fact(out, "comm", &clean(&line));
    }
    if let Some(m) = d.memory.first() {
        fact(out, "memory", &clean(&crate::sections::memory::line(m)));
    }
    for a in &d.memory_advice {
        fact(
            out,
            "memory!",
            &clean(&format!("{}. Fix: {}", a.title, a.fix)),
        );
    }
    if let Some(line) = crate::sections::regions::line(d) {
        fact(out, "regions", &clean(&line));
    }
    if let Some(line) = crate::sections::compiled::line(d) {
        fact(out, "compile", &clean(&line));
    }
    if let Some(line) = crate::sections::serving::line(d) {
        fact(out, "serving", &clean(&line));
    }
    // A busy GPU: the operator with the most device time is the next place to look.
    if d.verdict.kind == tracelens_analysis::VerdictKind::GpuBound {
        let window_ns = d.window.as_ref().map_or(0, |w| w.interval.dur_ns());
        if let Some(top) = d.operators.iter().max_by_key(|o| o.device_total_ns) {
            let share = if window_ns > 0 {
                (top.device_total_ns as f64 * 100.0 / window_ns as f64).min(100.0)
            } else {
                0.0
            };
            let line = format!(
                "{}: GPU time {} in {} calls with the ops inside it, {share:.0} % of the window",
                clean(&top.name),
                format_ms(top.device_total_ns),
                crate::calls_text(top)
            );
            fact(out, "top op", &line);
        }
        if d.window.is_some() {
            fact(
                out,
                "efficiency",
                &clean(&crate::sections::efficiency::line(d)),
            );
        }
    }
    if let Some(dist) = &report.metadata.distributed {
        let rank = dist.rank.map_or("?".into(), |r| r.to_string());
        let world = dist
            .world_size
            .map(|w| format!(" of {w}"))
            .unwrap_or_default();
        fact(out, "rank", &format!("{rank}{world}"));
    }
    let s = &report.input;
    if opts.verbose {
        // The format's own one-word facts (Kineto: its container), then the compression.
        let mut about: Vec<String> = s
            .details
            .iter()
            .filter_map(|(k, v)| match v {
                tracelens_model::Detail::Text(t) => Some(format!("{} {}", clean(t), clean(k))),
                _ => None,
            })
            .collect();
        about.extend(s.compression.as_deref().map(clean).map(String::from));
        let about = if about.is_empty() {
            String::new()
        } else {
            format!(" ({})", about.join(", "))
        };
        fact(
            out,
            "format",
            &format!(
                "{}{about}, {}: {}",
                clean(&s.format_name),
                clean(&s.version),
                clean(&s.version_note)
            ),
        );
        fact(
            out,
            &clean(&s.records),
            &format!(
                "{} read, {} kept as spans ({} of {})",
                s.records_read,
                s.records_kept,
                format_bytes(s.decoded_bytes),
                s.content
            ),
        );
        let kinds: Vec<String> = overview
            .spans_by_kind
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        fact(out, "spans", &kinds.join(", "));
        fact(
            out,
            "lanes",
            &format!(
                "{} CPU threads, {} GPU streams",
                overview.cpu_threads, overview.gpu_streams
            ),
        );
        fact(out, "path", &clean(&s.path));
    }
    let shown = if opts.verbose {
        report.warnings.len()
    } else {
        TEXT_WARNINGS
    };
    for (i, warning) in report.warnings.iter().take(shown).enumerate() {
        let label = if i == 0 { "warnings" } else { "" };
        fact(out, label, &format!("- {}", clean(&warning.message)));
    }
    if report.warnings.len() > shown {
        fact(
            out,
            "",
            &format!("… {} more with --verbose", report.warnings.len() - shown),
        );
    }
}

fn busy_line(label: &str, b: &BusyIdle) -> String {
    format!(
        "{label}: total {}, busy {} ({:.1} %), idle {}",
        format_ms(b.total_ns),
        format_ms(b.busy_ns),
        b.busy_percent,
        format_ms(b.idle_ns)
    )
}

fn format_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.2} GB", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1_000 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_words_and_cuts_long_ones() {
        let text = wrap("aaa bbb ccc ddd eee", 30, "> ", 2);
        assert_eq!(text, "> aaa bbb ccc ddd eee\n");
        let long = "x".repeat(70);
        let text = wrap(&format!("short {long} end"), 30, "- ", 2);
        assert!(text.lines().all(|l| l.chars().count() <= 30), "{text}");
        assert_eq!(
            text.replace(['\n', ' ', '-'], ""),
            format!("short{long}end")
        );
        assert_eq!(wrap("", 30, "label ", 6), "label\n");
        let text = wrap("blocks the CPU 290.175 ms in the trace", 24, "", 0);
        assert!(text.contains("290.175 ms"), "{text}");
    }
}
