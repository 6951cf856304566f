//! `tracelens history`: the series of runs as text and as one HTML page (a chart per figure,
//! the runs as a table linking each run's report, the changes named).

use crate::escape::{markdown_text, terminal_text};
use askama::Template;
use tracelens_model::{format_ms, shorten};
use tracelens_results::history::{Change, History, Run};

/// Characters of the top finding the runs table shows (all of it on hover).
const TOP_CHARS: usize = 110;

/// Chart size in SVG units.
const WIDTH: usize = 760;
const HEIGHT: usize = 150;

struct Chart {
    title: String,
    points: String,
    dots: Vec<(String, String, String)>,
    change_xs: Vec<String>,
    max_label: String,
    min_label: String,
}

struct Row {
    index: usize,
    label: String,
    report: Option<String>,
    cells: Vec<String>,
    /// The top finding, shortened for the table; in full on hover.
    top: String,
    top_full: String,
}

#[derive(Template)]
#[template(path = "history.html")]
struct Page<'a> {
    runs: &'a [Run],
    verdict: String,
    order: &'a str,
    changes: Vec<String>,
    charts: Vec<Chart>,
    rows: Vec<Row>,
    width: usize,
    height: usize,
    version: &'static str,
}

/// One change in a sentence.
fn change_line(h: &History, c: &Change) -> String {
    let run = &h.runs[c.at];
    let findings = if c.findings.is_empty() {
        "no finding appeared or grew there".to_string()
    } else {
        let named: Vec<String> = c
            .findings
            .iter()
            .map(|(t, was, now)| {
                if *was == 0 {
                    format!("new: {t} ({} per step)", format_ms(*now))
                } else {
                    format!(
                        "grew: {t} ({} → {} per step)",
                        format_ms(*was),
                        format_ms(*now)
                    )
                }
            })
            .collect();
        named.join("; ")
    };
    format!(
        "run {} ({}): step {} → {} ({}{:.1} %, noise ±{:.1} %); {findings}",
        c.at + 1,
        run.label,
        format_ms(c.before_ns),
        format_ms(c.after_ns),
        if c.change_percent >= 0.0 { "+" } else { "" },
        c.change_percent,
        c.noise_percent
    )
}

/// The series in one sentence.
fn verdict(h: &History) -> String {
    match h.changes.as_slice() {
        [] => format!(
            "{} runs: no change in step time beyond the noise",
            h.runs.len()
        ),
        changes => {
            let worse = changes.iter().filter(|c| c.change_percent > 0.0).count();
            format!(
                "{} runs: {} change{} in step time beyond the noise ({worse} slower, {} faster); the last at run {}",
                h.runs.len(),
                changes.len(),
                if changes.len() == 1 { "" } else { "s" },
                changes.len() - worse,
                changes.last().map_or(0, |c| c.at + 1)
            )
        }
    }
}

fn chart(
    h: &History,
    title: &str,
    value: impl Fn(&Run) -> Option<f64>,
    unit: &str,
) -> Option<Chart> {
    let values: Vec<Option<f64>> = h.runs.iter().map(&value).collect();
    let known: Vec<f64> = values.iter().flatten().copied().collect();
    if known.is_empty() {
        return None;
    }
    let (lo, hi) = known
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    // A margin around the values, never below 0 for figures that cannot be negative.
    let (lo, hi) = (
        (lo - span * 0.1).max(if lo >= 0.0 { 0.0 } else { lo - span * 0.1 }),
        hi + span * 0.1,
    );
    let n = h.runs.len().max(2) - 1;
    let x = |i: usize| 40.0 + (WIDTH as f64 - 60.0) * i as f64 / n as f64;
    let y = |v: f64| 10.0 + (HEIGHT as f64 - 25.0) * (1.0 - (v - lo) / (hi - lo));
    let mut points = Vec::new();
    let mut dots = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if let Some(v) = v {
            points.push(format!("{:.1},{:.1}", x(i), y(*v)));
            dots.push((
                format!("{:.1}", x(i)),
                format!("{:.1}", y(*v)),
                format!("run {} ({}): {v:.3} {unit}", i + 1, h.runs[i].label),
            ));
        }
    }
    Some(Chart {
        title: title.to_string(),
        points: points.join(" "),
        dots,
        change_xs: h
            .changes
            .iter()
            .map(|c| format!("{:.1}", (x(c.at) + x(c.at.saturating_sub(1))) / 2.0))
            .collect(),
        max_label: format!("{hi:.2} {unit}"),
        min_label: format!("{lo:.2} {unit}"),
    })
}

fn percent(v: Option<f64>) -> String {
    v.map_or("–".into(), |p| format!("{p:.1} %"))
}

/// The history as one self-contained HTML page.
#[must_use]
pub fn render_history_html(h: &History) -> String {
    let charts = [
        chart(h, "Step time", |r| Some(r.step_ns as f64 / 1e6), "ms"),
        chart(h, "GPU busy", |r| r.gpu_busy_percent, "%"),
        chart(h, "MFU", |r| r.mfu_percent, "%"),
        chart(
            h,
            "Exposed communication",
            |r| r.exposed_comm_percent,
            "% of the step",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    Page {
        runs: &h.runs,
        verdict: verdict(h),
        order: &h.order,
        changes: h.changes.iter().map(|c| change_line(h, c)).collect(),
        charts,
        rows: h
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| Row {
                index: i + 1,
                label: r.label.clone(),
                report: r.report.clone(),
                cells: vec![
                    format_ms(r.step_ns),
                    format!("±{:.1} %", r.step_spread_percent),
                    percent(r.gpu_busy_percent),
                    percent(r.mfu_percent),
                    percent(r.exposed_comm_percent),
                ],
                top: r
                    .top_finding
                    .as_deref()
                    .map_or_else(|| "–".into(), |t| shorten(t, TOP_CHARS)),
                top_full: r.top_finding.clone().unwrap_or_default(),
            })
            .collect(),
        width: WIDTH,
        height: HEIGHT,
        version: env!("CARGO_PKG_VERSION"),
    }
    .render()
    .map(crate::escape::html_output)
    .expect("the history template renders")
}

/// The history as terminal text: the verdict, the changes, one line per run. Labels and
/// finding titles come from the documents: each is one line of plain text here.
#[must_use]
pub fn render_history_text(h: &History) -> String {
    let mut out = format!("{}\n", verdict(h));
    for c in &h.changes {
        out.push_str(&format!("  {}\n", terminal_text(&change_line(h, c))));
    }
    out.push_str(&format!("\nruns, {}:\n", h.order));
    for (i, r) in h.runs.iter().enumerate() {
        let mark = if h.changes.iter().any(|c| c.at == i) {
            "▶"
        } else {
            " "
        };
        out.push_str(&format!(
            "{mark}{:>3}  {:>12}  ±{:>4.1} %  busy {:>7}  {}\n",
            i + 1,
            format_ms(r.step_ns),
            r.step_spread_percent,
            percent(r.gpu_busy_percent),
            terminal_text(&r.label)
        ));
    }
    crate::escape::terminal_output(out, false)
}

/// The history as Markdown (a CI step summary): the verdict, the changes, the runs; every
/// label and title escaped.
#[must_use]
pub fn render_history_markdown(h: &History) -> String {
    let mut out = format!(
        "### Performance history\n\n**{}**\n\n",
        markdown_text(&verdict(h))
    );
    for c in &h.changes {
        out.push_str(&format!("- {}\n", markdown_text(&change_line(h, c))));
    }
    out.push_str("\n| # | run | step | spread | GPU busy |\n|---:|---|---:|---:|---:|\n");
    for (i, r) in h.runs.iter().enumerate() {
        out.push_str(&format!(
            "| {} | {} | {} | ±{:.1} % | {} |\n",
            i + 1,
            markdown_text(&r.label),
            format_ms(r.step_ns),
            r.step_spread_percent,
            percent(r.gpu_busy_percent)
        ));
    }
    out
}

/// The history as JSON.
#[must_use]
pub fn render_history_json(h: &History) -> String {
    let mut s = serde_json::to_string_pretty(h).expect("a history serializes");
    s.push('\n');
    s
}
