//! The first screen's chart: the mean step (or the window) split by the breakdown categories
//! and the focus device's idle time by cause, as stacked bars. HTML only: the terminal and
//! Markdown summaries lead with the same figures as words.

use super::timeline::cause_class;
use askama::Template;
use tracelens_analysis::Diagnosis;
use tracelens_model::format_ms;
use tracelens_results::Report;

/// Width of the overview bars in SVG units.
const OVERVIEW_UNITS: f64 = 1000.0;

/// One segment of an overview bar.
struct Segment {
    class: &'static str,
    label: &'static str,
    x: String,
    w: String,
    value: String,
}

/// A stacked bar of the first screen.
struct OverviewBar {
    title: String,
    segments: Vec<Segment>,
}

#[derive(Template)]
#[template(path = "sections/overview.html")]
struct Html {
    overview_bars: Vec<OverviewBar>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    Html {
        overview_bars: overview_bars(&report.diagnosis),
    }
    .render()
    .expect("the overview template renders")
}

/// Lays `parts` (class, name, ns) side by side over the bar's width.
fn stacked(parts: &[(&'static str, &'static str, i64)]) -> Vec<Segment> {
    let total: i64 = parts.iter().map(|p| p.2.max(0)).sum();
    if total <= 0 {
        return Vec::new();
    }
    let mut x = 0.0;
    parts
        .iter()
        .filter(|p| p.2 > 0)
        .map(|&(class, label, ns)| {
            let w = ns as f64 / total as f64 * OVERVIEW_UNITS;
            let seg = Segment {
                class,
                label,
                x: format!("{x:.2}"),
                w: format!("{w:.2}"),
                value: format!(
                    "{} ({:.1} %)",
                    format_ms(ns),
                    ns as f64 * 100.0 / total as f64
                ),
            };
            x += w;
            seg
        })
        .collect()
}

/// The first screen's chart: the mean step (or the window) split by the breakdown
/// categories, and the focus device's idle time by cause.
fn overview_bars(d: &Diagnosis) -> Vec<OverviewBar> {
    let mut bars = Vec::new();
    if let Some(b) = &d.breakdown {
        let t = &b.mean;
        let parts = [
            ("kernel", "kernel", t.kernel_ns),
            ("memcpy", "memcpy", t.memcpy_ns),
            ("memset", "memset", t.memset_ns),
            ("idle-collective", "communication", t.communication_ns),
            ("runtime", "runtime calls", t.runtime_ns),
            ("dataloader", "DataLoader", t.dataloader_ns),
            ("cpu-op", "CPU execution", t.cpu_exec_ns),
            ("idle-unattributed", "other", t.other_ns),
        ];
        let total: i64 = parts.iter().map(|p| p.2).sum();
        let title = if b.steps.is_empty() {
            format!("The window, {}: where the time goes", format_ms(total))
        } else {
            format!("The mean step, {}: where the time goes", format_ms(total))
        };
        let segments = stacked(&parts);
        if !segments.is_empty() {
            bars.push(OverviewBar { title, segments });
        }
    }
    let idle = d.focus_idle().or(d.idle.first());
    if let Some(idle) = idle {
        let parts: Vec<(&'static str, &'static str, i64)> = idle
            .by_cause
            .iter()
            .map(|c| (cause_class(c.cause), c.describe(), c.ns))
            .collect();
        let segments = stacked(&parts);
        if !segments.is_empty() {
            bars.push(OverviewBar {
                title: format!(
                    "GPU {} idle, {} in the window: why",
                    idle.device,
                    format_ms(idle.idle_ns)
                ),
                segments,
            });
        }
    }
    bars
}
