//! Renderers of tracelens results. Each takes a finished [`Report`] (or a job, or a diff) and
//! only lays it out: no trace, no span scans, no wording read back; never reads files.
//!
//! - [`render_text`]: the terminal summary (ANSI colour optional).
//! - [`render_html`]: the self-contained HTML report (askama; everything escaped, no network).
//! - [`render_markdown`]: a compact summary for CI step summaries and PR comments.
//! - [`render_json`]: the versioned, stable-order JSON document ([`SCHEMA_VERSION`]).
#![deny(missing_docs)]

mod diff;
pub mod escape;
mod history;
mod html;
mod job;
mod json;
mod markdown;
pub mod perfetto;
pub mod sections;
mod text;

pub use diff::{render_diff_html, render_diff_json, render_diff_markdown, render_diff_text};
pub use history::{
    render_history_html, render_history_json, render_history_markdown, render_history_text,
};
pub use html::render_html;
pub use job::{render_job_html, render_job_json, render_job_markdown, render_job_text};
pub use json::render_json;
pub use markdown::render_markdown;
pub use sections::{Section, Shown, SECTIONS};
pub use text::{render_text, render_text_with, wrap, TextOptions};
pub use tracelens_results::{Report, SCHEMA_VERSION};

use tracelens_analysis::diagnose::finding::{Finding, WinKind};
use tracelens_analysis::{AnalysisWindow, Diagnosis, WindowKind};
use tracelens_model::format_ms;

/// A stable id of a trace path (FNV-1a, 16 hex digits), written into the HTML report so the
/// CLI can tell its own earlier report of the same trace from another trace's.
#[must_use]
pub fn source_id(path: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The [`source_id`] recorded in the head of an HTML report, if it is one.
#[must_use]
pub fn source_id_in(html_head: &str) -> Option<String> {
    const MARK: &str = "<meta name=\"tracelens-source\" content=\"";
    let at = html_head.find(MARK)? + MARK.len();
    let id = html_head.get(at..at + 16)?;
    id.bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then(|| id.to_string())
}

/// `1 step`, `2 steps`.
/// An operator's calls, saying how many were replayed from CUDA/HIP graphs: `24` or
/// `24 (20 replayed)`.
fn calls_text(o: &tracelens_analysis::views::operators::OperatorStat) -> String {
    if o.replayed_calls > 0 {
        format!("{} ({} replayed)", o.calls, o.replayed_calls)
    } else {
        o.calls.to_string()
    }
}

/// What the graph attribution gave, for a note under the operator tables.
fn graph_attribution_note(report: &Report) -> Option<String> {
    let a = report.graph_attribution.as_ref()?;
    let from = match (&a.capture_file, a.source) {
        (Some(f), tracelens_model::OriginSource::CaptureTrace) => format!("the capture trace {f}"),
        _ => "PyTorch's CUDA-graph annotations".to_string(),
    };
    Some(format!(
        "{} of {} GPU ops replayed from CUDA/HIP graphs ({:.1} %) got the op or scope that launched them at capture, from {from}; a replayed call counts device time only (the host ran no op for it).",
        a.attributed_ops,
        a.replayed_ops,
        a.match_percent()
    ))
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `text` with a no-break space between each number and its unit (`97.9 %`, `12.3 ms`), so
/// neither a narrow page nor the terminal's wrapping splits a figure.
fn keep_units(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev_digit = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let unit = c == ' '
            && prev_digit
            && matches!(
                chars.peek(),
                Some('m' | '%' | 'k' | 'M' | 'G' | 'µ' | 'n' | 's')
            );
        out.push(if unit { '\u{a0}' } else { c });
        prev_digit = c.is_ascii_digit();
    }
    out
}

/// "per step", or "in the trace" without steps.
fn per(d: &Diagnosis) -> &'static str {
    if d.has_steps() {
        "per step"
    } else {
        "in the trace"
    }
}

/// "of step time", or "of the profiled time" without steps.
fn of_time(d: &Diagnosis) -> &'static str {
    if d.has_steps() {
        "of step time"
    } else {
        "of the profiled time"
    }
}

/// The window in one line: its length, the step figure, and where it comes from.
fn window_line(w: &AnalysisWindow) -> String {
    match w.kind {
        WindowKind::ProfiledSteps => format!("{}; {}", window_line_short(w), w.kind.describe()),
        WindowKind::FoundIterations => format!("{}; {}", window_line_short(w), w.kind.describe()),
        _ => format!("{}, {}", format_ms(w.interval.dur_ns()), w.kind.describe()),
    }
}

/// The window without saying where it comes from (the terminal's facts block).
fn window_line_short(w: &AnalysisWindow) -> String {
    match w.kind {
        WindowKind::FoundIterations => format!(
            "{}, {} in all: mean iteration {} (min {}, max {})",
            w.iterations_from
                .as_deref()
                .unwrap_or("iterations found by structure"),
            format_ms(w.interval.dur_ns()),
            format_ms(w.step.mean_ns),
            format_ms(w.step.min_ns),
            format_ms(w.step.max_ns),
        ),
        WindowKind::ProfiledSteps => format!(
            "{} step{}, {} in all: mean step {} (min {}, max {})",
            w.step.count,
            if w.step.count == 1 { "" } else { "s" },
            format_ms(w.interval.dur_ns()),
            format_ms(w.step.mean_ns),
            format_ms(w.step.min_ns),
            format_ms(w.step.max_ns),
        ),
        _ => window_line(w),
    }
}

/// `text` with its first letter in capitals (a phrase made into a sentence).
pub(crate) fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A finding's predicted step in a phrase: "predicted step 118.124 ms (now 148.736 ms)", or
/// `None` without a prediction.
fn prediction_phrase(f: &Finding, d: &Diagnosis) -> Option<String> {
    let p = f.predicted_step_ns?;
    let what = if d.has_steps() {
        "step"
    } else {
        "profiled time"
    };
    let now = d.window.as_ref().map_or(0, AnalysisWindow::step_ns);
    Some(format!(
        "predicted {what} {} (now {})",
        format_ms(p),
        format_ms(now)
    ))
}

/// A finding's win and, when the replay predicts one, its step after the fix, in one line.
fn win_and_prediction(f: &Finding, d: &Diagnosis) -> String {
    let win = win_line(f, per(d));
    match prediction_phrase(f, d) {
        Some(p) => format!("{win}; {p}"),
        None => win,
    }
}

/// [`win_and_prediction`] in fewer words, for a narrow terminal: "win ≤ 30.612 ms per step
/// (20.6 %) → step 121.183 ms (now 148.736 ms)".
fn win_and_prediction_short(f: &Finding, d: &Diagnosis) -> String {
    let per = per(d);
    let win = match f.win_kind {
        WinKind::HostOnly => format!(
            "frees {} of CPU {per}, no GPU idle",
            format_ms(f.cpu_cost_per_step_ns.unwrap_or(0))
        ),
        _ => format!(
            "win ≤ {} {per} ({:.1} %)",
            format_ms(f.estimated_win_per_step_ns),
            f.estimated_win_percent
        ),
    };
    match prediction_phrase(f, d) {
        Some(p) => format!("{win} → {}", p.trim_start_matches("predicted ")),
        None => win,
    }
}

/// A finding's win in one line.
fn win_line(f: &Finding, per: &str) -> String {
    match f.win_kind {
        WinKind::GpuIdle => format!(
            "win up to {} of GPU idle {per} ({:.1} %)",
            format_ms(f.estimated_win_per_step_ns),
            f.estimated_win_percent
        ),
        WinKind::ExposedCopy => format!(
            "win up to {} of exposed copy time {per} ({:.1} %)",
            format_ms(f.estimated_win_per_step_ns),
            f.estimated_win_percent
        ),
        WinKind::ExposedCommunication => format!(
            "win up to {} of exposed communication {per} ({:.1} %)",
            format_ms(f.estimated_win_per_step_ns),
            f.estimated_win_percent
        ),
        WinKind::KernelTime => format!(
            "win up to {} of kernel time {per} ({:.1} %)",
            format_ms(f.estimated_win_per_step_ns),
            f.estimated_win_percent
        ),
        WinKind::HostOnly => format!(
            "no GPU idle caused; frees {} of CPU {per}",
            format_ms(f.cpu_cost_per_step_ns.unwrap_or(0))
        ),
    }
}
