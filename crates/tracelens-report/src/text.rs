//! The terminal summary of `tracelens analyze`: short, aligned, one screen. Every trace
//! string goes through [`crate::escape::terminal_text`], and the finished text through
//! [`crate::escape::terminal_output`]: the only escape sequences printed are our colours.

use crate::escape::{terminal_output, terminal_text as clean};
use std::fmt::Write;
use tracelens_analysis::{BusyIdle, Diagnosis, Overview};
use tracelens_model::{format_ms, Trace};

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

/// Renders the text summary (ending with a newline); `color` adds ANSI colours.
pub fn render_text(
    trace: &Trace,
    overview: &Overview,
    diagnosis: &Diagnosis,
    color: bool,
) -> String {
    let style = Style { on: color };
    let mut out = String::new();
    let s = &trace.source;
    let _ = writeln!(
        out,
        "tracelens {} - {}",
        env!("CARGO_PKG_VERSION"),
        clean(&s.path)
    );
    let _ = writeln!(
        out,
        "verdict     {}",
        style.paint("1", &clean(&diagnosis.verdict.text))
    );
    if let Some(w) = &diagnosis.window {
        let _ = writeln!(out, "window      {}", crate::window_line(w));
    }
    let compression = s
        .compression
        .as_deref()
        .map(|c| format!(", {c}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "format      {} ({} container{compression}), {}",
        s.format.label(),
        s.container,
        s.generation
    );
    let _ = writeln!(out, "            {}", clean(&s.generation_note));
    let _ = writeln!(
        out,
        "{:<11} {} read, {} kept as spans ({} of {})",
        s.format.records(),
        s.events_read,
        s.events_kept,
        format_bytes(s.decoded_bytes),
        s.format.content()
    );
    let kinds: Vec<String> = overview
        .spans_by_kind
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if !kinds.is_empty() {
        let _ = writeln!(out, "spans       {}", kinds.join(", "));
    }
    let _ = writeln!(
        out,
        "lanes       {} CPU threads, {} GPU streams",
        overview.cpu_threads, overview.gpu_streams
    );
    if let Some(d) = &trace.metadata.distributed {
        let rank = d.rank.map(|r| r.to_string()).unwrap_or_else(|| "?".into());
        let world = d.world_size.map(|w| format!(" of {w}")).unwrap_or_default();
        let _ = writeln!(out, "rank        {rank}{world}");
    }
    if !overview.has_gpu_activity {
        let _ = writeln!(
            out,
            "devices     none: this trace has no GPU activity (no kernel, memcpy or memset)"
        );
    }
    for d in &overview.devices {
        let name = clean(d.name.as_deref().unwrap_or("unnamed GPU"));
        let streams: Vec<String> = d.streams.iter().map(i64::to_string).collect();
        let procs = match d.processes.as_slice() {
            [] => String::new(),
            [one] => format!(", process {one}"),
            many => format!(
                ", processes {}",
                many.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let _ = writeln!(
            out,
            "GPU {:<7} {name}, {} ops on stream{} {}{procs}",
            d.device,
            d.gpu_ops,
            if streams.len() == 1 { "" } else { "s" },
            streams.join(", ")
        );
        if let Some(b) = &d.window {
            let _ = writeln!(out, "{}", busy_line("window", b));
        }
        if let Some(b) = &d.first_to_last_op {
            let _ = writeln!(out, "{}", busy_line("first-last op", b));
        }
    }
    let st = &overview.steps;
    if st.count == 0 {
        let _ = writeln!(out, "steps       none (no ProfilerStep#N ranges)");
    }
    render_diagnosis(&mut out, diagnosis, style);
    if trace.warnings.is_empty() {
        let _ = writeln!(out, "warnings    none");
    } else {
        for (i, w) in trace.warnings.iter().enumerate() {
            let label = if i == 0 { "warnings" } else { "" };
            let _ = writeln!(out, "{label:<11} - {}", clean(&w.message));
        }
    }
    terminal_output(out, color)
}

fn busy_line(label: &str, b: &BusyIdle) -> String {
    format!(
        "  {label:<13} total {:>12}  busy {:>12} ({:5.1} %)  idle {:>12}",
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

/// Findings shown in the terminal summary.
const TEXT_FINDINGS: usize = 5;

fn render_diagnosis(out: &mut String, d: &Diagnosis, style: Style) {
    let per = crate::per(d);
    for idle in &d.idle {
        if idle.idle_ns == 0 {
            continue;
        }
        let parts: Vec<String> = idle
            .by_cause
            .iter()
            .map(|c| {
                format!(
                    "{} {} ({:.0} %)",
                    c.cause.label(),
                    format_ms(c.ns),
                    c.percent
                )
            })
            .collect();
        let _ = writeln!(out, "idle GPU {:<3} {}", idle.device, parts.join(", "));
        if !idle.attribution_reliable {
            let _ = writeln!(
                out,
                "            ({} GPU ops come from graph replays: idle attribution is unreliable)",
                idle.graph_replay_ops
            );
        }
    }
    if let Some(b) = &d.breakdown {
        let p = &b.percent;
        let label = if b.steps.is_empty() {
            "window".to_string()
        } else {
            format!("step {} mean", format_ms(d.verdict.step_ns))
        };
        let _ = writeln!(
            out,
            "breakdown   {label}: kernel {:.1} %, memcpy {:.1} %, memset {:.1} %, comm {:.1} %, runtime {:.1} %, dataloader {:.1} %, cpu {:.1} %, other {:.1} %",
            p.kernel, p.memcpy, p.memset, p.communication, p.runtime, p.dataloader, p.cpu_exec, p.other
        );
    }
    if d.findings.is_empty() {
        let _ = writeln!(
            out,
            "findings    none: no idle cause above the reporting thresholds"
        );
        return;
    }
    let _ = writeln!(
        out,
        "findings    {} (largest estimated win first; wins are upper bounds, GPU-idle wins add up to {} of {} idle)",
        d.findings.len(),
        format_ms(d.wins.gpu_idle_wins_ns),
        format_ms(d.wins.idle_ns)
    );
    for (i, f) in d.findings.iter().take(TEXT_FINDINGS).enumerate() {
        let badge = format!("[{:?}]", f.severity);
        let badge = match f.severity {
            tracelens_analysis::finding::Severity::High => style.paint("1;31", &badge),
            tracelens_analysis::finding::Severity::Medium => style.paint("1;33", &badge),
            tracelens_analysis::finding::Severity::Low => style.paint("2", &badge),
        };
        let _ = writeln!(out, "  {}. {badge} {}", i + 1, clean(&f.title));
        let _ = writeln!(out, "     {}", crate::win_line(f, per));
        let _ = writeln!(out, "     fix: {}", clean(&f.fix));
    }
    if d.findings.len() > TEXT_FINDINGS {
        let _ = writeln!(
            out,
            "  … {} more in --format json",
            d.findings.len() - TEXT_FINDINGS
        );
    }
}
