//! The before/after comparison in Markdown (for `$GITHUB_STEP_SUMMARY` and PR comments),
//! terminal text, JSON and one self-contained HTML page. Layout only: the comparison itself is
//! `tracelens_results::diff`.

use crate::escape::{markdown_text as esc, terminal_text};
use askama::Template;
use std::fmt::Write;
use tracelens_model::{format_ms, format_signed, shorten};
use tracelens_results::Diff;

fn signed_ms(before: i64, after: i64) -> String {
    let d = after - before;
    let sign = if d > 0 {
        "+"
    } else if d < 0 {
        "−"
    } else {
        "±"
    };
    format!("{sign}{}", format_ms(d.abs()))
}

/// A finding key for people: `implicit sync: train.py:52 step`.
fn readable_key(key: &str) -> String {
    match key.split_once(':') {
        Some((kind, subject)) => format!("{}: {subject}", kind.replace('_', " ")),
        None => key.replace('_', " "),
    }
}

/// Rows shared by every format: (label, before, after, change).
fn summary_rows(d: &Diff) -> Vec<[String; 4]> {
    let mut rows = vec![
        [
            "step (mean)".to_string(),
            format_ms(d.before_step_ns),
            format_ms(d.after_step_ns),
            format!(
                "{} % (noise ±{:.1} %)",
                format_signed(d.step_change_percent, 1),
                d.noise_percent
            ),
        ],
        [
            "GPU busy".to_string(),
            format!("{:.1} %", d.before_busy_percent),
            format!("{:.1} %", d.after_busy_percent),
            format!(
                "{} points",
                format_signed(d.after_busy_percent - d.before_busy_percent, 1)
            ),
        ],
    ];
    for c in &d.idle_by_cause {
        let label = c.cause.map_or("idle", |c| c.describe());
        rows.push([
            format!("idle: {label}"),
            format_ms(c.before_ns),
            format_ms(c.after_ns),
            signed_ms(c.before_ns, c.after_ns),
        ]);
    }
    // A fix the earlier run predicted, checked against the later run's measured step.
    for f in &d.resolved {
        let Some(p) = f.predicted_step_ns.filter(|_| d.after_step_ns > 0) else {
            continue;
        };
        rows.push([
            format!("predicted step, {} fixed", f.kind.label().replace('_', " ")),
            format_ms(p),
            format_ms(d.after_step_ns),
            format!(
                "prediction {} %",
                format_signed(
                    (p - d.after_step_ns) as f64 * 100.0 / d.after_step_ns as f64,
                    1
                )
            ),
        ]);
    }
    rows
}

/// The diff as GitHub-flavoured Markdown.
#[must_use]
pub fn render_diff_markdown(d: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## tracelens diff: {} → {}\n",
        esc(&d.before),
        esc(&d.after)
    );
    let _ = writeln!(out, "**{}**\n", esc(&d.verdict));
    let _ = writeln!(out, "| | before | after | change |\n|---|---:|---:|---:|");
    for [a, b, c, e] in summary_rows(d) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            esc(&a),
            esc(&b),
            esc(&c),
            esc(&e)
        );
    }
    let list = |out: &mut String, title: &str, items: Vec<String>| {
        if !items.is_empty() {
            let _ = writeln!(out, "\n### {title}\n");
            for i in items {
                let _ = writeln!(out, "- {i}");
            }
        }
    };
    list(
        &mut out,
        "Resolved",
        d.resolved
            .iter()
            .map(|f| esc(&shorten(&f.title, 200)))
            .collect(),
    );
    list(
        &mut out,
        "New",
        d.new.iter().map(|f| esc(&shorten(&f.title, 200))).collect(),
    );
    list(
        &mut out,
        "Changed",
        d.changed
            .iter()
            .map(|c| {
                format!(
                    "{}: win {} → {} per step",
                    esc(&shorten(&readable_key(&c.key), 120)),
                    format_ms(c.before_win_ns),
                    format_ms(c.after_win_ns)
                )
            })
            .collect(),
    );
    if !d.kernels.is_empty() {
        let _ = writeln!(out, "\n### Kernels whose time per step moved most\n");
        let _ = writeln!(
            out,
            "| kernel | before | after | change |\n|---|---:|---:|---:|"
        );
        for k in d.kernels.iter().take(5) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                esc(&shorten(&k.name, 80)),
                format_ms(k.before_ns),
                format_ms(k.after_ns),
                signed_ms(k.before_ns, k.after_ns)
            );
        }
    }
    out
}

/// The diff for the terminal.
#[must_use]
pub fn render_diff_text(d: &Diff, width: usize) -> String {
    let mut out = String::new();
    out.push_str(&crate::wrap(&terminal_text(&d.verdict), width, "", 0));
    out.push('\n');
    for [a, b, c, e] in summary_rows(d) {
        let _ = writeln!(out, "  {:<44} {:>12} → {:>12}  {e}", shorten(&a, 44), b, c);
    }
    for (title, list) in [("resolved", &d.resolved), ("new", &d.new)] {
        for f in list.iter() {
            out.push_str(&crate::wrap(
                &terminal_text(&f.title),
                width,
                &format!("  {title:<9} "),
                12,
            ));
        }
    }
    crate::escape::terminal_output(out, false)
}

/// The diff as JSON.
#[must_use]
pub fn render_diff_json(d: &Diff) -> String {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        schema_version: u32,
        diff: &'a Diff,
    }
    let mut s = serde_json::to_string_pretty(&Doc {
        schema_version: crate::SCHEMA_VERSION,
        diff: d,
    })
    .expect("a diff serializes");
    s.push('\n');
    s
}

#[derive(Template)]
#[template(path = "diff.html")]
struct DiffPage<'a> {
    d: &'a Diff,
    rows: Vec<[String; 4]>,
    resolved: Vec<String>,
    new: Vec<String>,
    changed: Vec<(String, String, String)>,
    kernels: Vec<[String; 4]>,
    version: &'static str,
}

/// The diff as one self-contained HTML page.
#[must_use]
pub fn render_diff_html(d: &Diff) -> String {
    DiffPage {
        d,
        rows: summary_rows(d),
        resolved: d.resolved.iter().map(|f| f.title.clone()).collect(),
        new: d.new.iter().map(|f| f.title.clone()).collect(),
        changed: d
            .changed
            .iter()
            .map(|c| {
                (
                    c.title.clone(),
                    format_ms(c.before_win_ns),
                    format_ms(c.after_win_ns),
                )
            })
            .collect(),
        kernels: d
            .kernels
            .iter()
            .map(|k| {
                [
                    shorten(&k.name, 140),
                    format_ms(k.before_ns),
                    format_ms(k.after_ns),
                    signed_ms(k.before_ns, k.after_ns),
                ]
            })
            .collect(),
        version: env!("CARGO_PKG_VERSION"),
    }
    .render()
    .map(crate::escape::html_output)
    .expect("the diff template renders")
}
