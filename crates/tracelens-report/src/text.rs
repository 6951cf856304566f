//! The terminal summary of `tracelens analyze`: short, aligned, one screen.

use std::fmt::Write;
use tracelens_analysis::{BusyIdle, Diagnosis, Overview, WindowSource};
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
    let _ = writeln!(out, "tracelens {} - {}", env!("CARGO_PKG_VERSION"), s.path);
    let _ = writeln!(
        out,
        "verdict     {}",
        style.paint("1", &crate::verdict::verdict(trace, overview, diagnosis))
    );
    let compression = s
        .compression
        .as_deref()
        .map(|c| format!(", {c}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "format      Kineto JSON ({} container{compression}), {}",
        s.container, s.generation
    );
    let _ = writeln!(out, "            {}", s.generation_note);
    let _ = writeln!(
        out,
        "events      {} read, {} kept as spans ({} of JSON)",
        s.events_read,
        s.events_kept,
        format_bytes(s.decoded_bytes)
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
        let name = d.name.as_deref().unwrap_or("unnamed GPU");
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
        if let Some(b) = &d.whole_trace {
            let _ = writeln!(out, "{}", busy_line("whole trace", b));
        }
        if let Some(b) = &d.steps {
            let label = match b.window_source {
                WindowSource::GpuProfilerSteps => "steps (GPU)",
                _ => "steps (CPU)",
            };
            let _ = writeln!(out, "{}", busy_line(label, b));
        }
    }
    let st = &overview.steps;
    if st.count > 0 {
        let first = st.numbers.first().copied().unwrap_or_default();
        let last = st.numbers.last().copied().unwrap_or_default();
        let range = if st.count == 1 {
            format!("ProfilerStep#{first}")
        } else {
            format!("ProfilerStep#{first}..#{last}")
        };
        let timing = match (st.cpu_mean_ns, st.cpu_min_ns, st.cpu_max_ns) {
            (Some(mean), Some(min), Some(max)) => format!(
                ", CPU step mean {} (min {}, max {})",
                format_ms(mean),
                format_ms(min),
                format_ms(max)
            ),
            _ => String::new(),
        };
        let _ = writeln!(out, "steps       {} ({range}){timing}", st.count);
    } else {
        let _ = writeln!(out, "steps       none (no ProfilerStep#N ranges)");
    }
    render_diagnosis(&mut out, diagnosis, !trace.steps.is_empty(), style);
    if trace.warnings.is_empty() {
        let _ = writeln!(out, "warnings    none");
    } else {
        for (i, w) in trace.warnings.iter().enumerate() {
            let label = if i == 0 { "warnings" } else { "" };
            let _ = writeln!(out, "{label:<11} - {}", w.message);
        }
    }
    out
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

fn render_diagnosis(out: &mut String, d: &Diagnosis, has_steps: bool, style: Style) {
    let per = if has_steps {
        "per step"
    } else {
        "in the trace"
    };
    for idle in &d.idle {
        if idle.idle_ns == 0 {
            continue;
        }
        let parts: Vec<String> = idle
            .by_cause
            .iter()
            .filter(|(_, &ns)| ns > 0)
            .map(|(cause, &ns)| {
                format!(
                    "{cause} {} ({:.0} %)",
                    format_ms(ns),
                    ns as f64 * 100.0 / idle.idle_ns as f64
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
        let _ = writeln!(
            out,
            "breakdown   step {} mean: kernel {:.1} %, memcpy {:.1} %, memset {:.1} %, comm {:.1} %, runtime {:.1} %, dataloader {:.1} %, cpu {:.1} %, other {:.1} %",
            format_ms(b.mean_step_ns),
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
        "findings    {} (largest estimated win first; wins are upper bounds)",
        d.findings.len()
    );
    for (i, f) in d.findings.iter().take(TEXT_FINDINGS).enumerate() {
        let badge = format!("[{:?}]", f.severity);
        let badge = match f.severity {
            tracelens_analysis::finding::Severity::High => style.paint("1;31", &badge),
            tracelens_analysis::finding::Severity::Medium => style.paint("1;33", &badge),
            tracelens_analysis::finding::Severity::Low => style.paint("2", &badge),
        };
        let _ = writeln!(out, "  {}. {badge} {}", i + 1, f.title);
        let cost = if f.estimated_win_ns > 0 {
            format!(
                "win up to {} {} ({:.1} %)",
                format_ms(f.estimated_win_per_step_ns),
                per,
                f.estimated_win_percent
            )
        } else {
            format!(
                "no GPU idle caused; frees {} of CPU {}",
                format_ms(f.cpu_cost_per_step_ns.unwrap_or(0)),
                per
            )
        };
        let _ = writeln!(out, "     {cost}; fix: {}", first_sentence(&f.advice));
    }
    if d.findings.len() > TEXT_FINDINGS {
        let _ = writeln!(
            out,
            "  … {} more in --format json",
            d.findings.len() - TEXT_FINDINGS
        );
    }
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}
