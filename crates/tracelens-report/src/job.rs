//! A multi-rank job: the verdict naming the straggler, the rank table and a rank × step heat
//! map, in terminal text, Markdown, JSON and one self-contained HTML page. Layout only: the
//! job is `tracelens_results::analyze_job`.

use crate::escape::{markdown_text as esc, terminal_output, terminal_text};
use askama::Template;
use std::fmt::Write;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Job;

/// The table's cells of one rank: rank, step, busy, collectives, wait, last arrivals, cause.
fn cells(job: &Job) -> Vec<[String; 7]> {
    job.ranks
        .iter()
        .map(|r| {
            [
                r.rank.to_string(),
                format_ms(r.step_ns),
                format!("{:.1} %", r.gpu_busy_percent),
                format!(
                    "{} ({:.0} %)",
                    format_ms(r.collective_ns),
                    r.collective_percent
                ),
                format_ms(r.wait_ns),
                r.last_arrivals.to_string(),
                r.top_cause
                    .as_ref()
                    .map(|(c, ns)| format!("{c} {}", format_ms(*ns)))
                    .unwrap_or_else(|| "–".into()),
            ]
        })
        .collect()
}

const HEAD: [&str; 7] = [
    "rank",
    "step",
    "GPU busy",
    "collectives / step",
    "wait / step",
    "last at",
    "top idle cause / step",
];

/// The job for the terminal.
#[must_use]
pub fn render_job_text(job: &Job, width: usize) -> String {
    let mut out = String::new();
    out.push_str(&crate::wrap(&terminal_text(&job.verdict), width, "", 0));
    let _ = writeln!(
        out,
        "\n{:>4}  {:>11}  {:>8}  {:>20}  {:>11}  {:>7}  top idle cause/step",
        "rank", "step", "busy", "collectives/step", "wait/step", "last at"
    );
    for c in cells(job) {
        let _ = writeln!(
            out,
            "{:>4}  {:>11}  {:>8}  {:>20}  {:>11}  {:>7}  {}",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            shorten(&c[6], 60)
        );
    }
    let _ = write!(
        out,
        "\nranks numbered by {}; {} collectives matched by order{}\n",
        job.rank_source,
        job.collectives_matched,
        if job.collective_counts_differ {
            " (ranks have different counts: the first ones compared)"
        } else {
            ""
        }
    );
    terminal_output(out, false)
}

/// The job as Markdown.
#[must_use]
pub fn render_job_markdown(job: &Job) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## tracelens: {} ranks\n", job.ranks.len());
    let _ = writeln!(out, "**{}**\n", esc(&job.verdict));
    let _ = writeln!(out, "| {} |", HEAD.join(" | "));
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---|");
    for c in cells(job) {
        let c: Vec<String> = c.iter().map(|x| esc(x)).collect();
        let _ = writeln!(out, "| {} |", c.join(" | "));
    }
    let _ = writeln!(
        out,
        "\nRanks numbered by {}; {} collectives matched.",
        esc(&job.rank_source),
        job.collectives_matched
    );
    out
}

/// The job as JSON.
#[must_use]
pub fn render_job_json(job: &Job) -> String {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        schema_version: u32,
        job: &'a Job,
    }
    let mut s = serde_json::to_string_pretty(&Doc {
        schema_version: crate::SCHEMA_VERSION,
        job,
    })
    .expect("a job serializes");
    s.push('\n');
    s
}

/// One cell of the heat map.
struct HeatCell {
    x: usize,
    y: usize,
    shade: String,
    title: String,
}

#[derive(Template)]
#[template(path = "job.html")]
struct JobPage<'a> {
    job: &'a Job,
    head: [&'static str; 7],
    rows: Vec<(bool, [String; 7])>,
    heat: Vec<HeatCell>,
    heat_width: usize,
    heat_height: usize,
    labels: Vec<(usize, String)>,
    version: &'static str,
}

/// Size of one heat-map cell.
const CELL: usize = 18;
/// The most step columns of the heat map; more steps are binned.
pub const MAX_HEAT_COLUMNS: usize = 200;

/// The job as one self-contained HTML page.
#[must_use]
pub fn render_job_html(job: &Job) -> String {
    let steps: Vec<i64> = {
        let mut s: Vec<i64> = job
            .ranks
            .iter()
            .flat_map(|r| r.steps.iter().map(|x| x.0))
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    let all: Vec<i64> = job
        .ranks
        .iter()
        .flat_map(|r| r.steps.iter().map(|x| x.1))
        .collect();
    let (lo, hi) = (
        all.iter().copied().min().unwrap_or(0),
        all.iter().copied().max().unwrap_or(0),
    );
    // At most MAX_HEAT_COLUMNS columns: many steps share a column (their mean), so the page
    // grows with ranks × columns, never with the square of the steps.
    let columns = steps.len().min(MAX_HEAT_COLUMNS);
    let bin_of = |i: usize| i * columns / steps.len().max(1);
    let index: std::collections::HashMap<i64, usize> = steps
        .iter()
        .enumerate()
        .map(|(i, &s)| (s, bin_of(i)))
        .collect();
    let mut heat = Vec::new();
    for (y, r) in job.ranks.iter().enumerate() {
        let mut sums = vec![(0_i64, 0_i64); columns];
        for &(step, ns) in &r.steps {
            if let Some(&b) = index.get(&step) {
                sums[b].0 = sums[b].0.saturating_add(ns);
                sums[b].1 += 1;
            }
        }
        for (x, &(sum, n)) in sums.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let ns = sum / n;
            let t = if hi > lo {
                (ns - lo) as f64 / (hi - lo) as f64
            } else {
                0.0
            };
            let first = steps[x * steps.len() / columns];
            let last = steps[((x + 1) * steps.len() / columns).saturating_sub(1)];
            let which = if first == last {
                format!("step {first}")
            } else {
                format!("steps {first}–{last} (mean)")
            };
            heat.push(HeatCell {
                x: 60 + x * CELL,
                y: y * CELL,
                // Light (fast) to dark orange (slow): one hue, readable without colour vision.
                shade: format!("hsl(28, 90%, {:.0}%)", 88.0 - 50.0 * t),
                title: format!("rank {}, {which}: {}", r.rank, format_ms(ns)),
            });
        }
    }
    JobPage {
        job,
        head: HEAD,
        rows: cells(job)
            .into_iter()
            .zip(&job.ranks)
            .map(|(c, r)| (job.straggler.as_ref().is_some_and(|s| s.rank == r.rank), c))
            .collect(),
        heat_width: 60 + columns.max(1) * CELL,
        heat_height: job.ranks.len() * CELL,
        labels: job
            .ranks
            .iter()
            .enumerate()
            .map(|(y, r)| (y * CELL + 13, format!("rank {}", r.rank)))
            .collect(),
        heat,
        version: env!("CARGO_PKG_VERSION"),
    }
    .render()
    .expect("the job template renders")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelens_results::{analyze_job, RankSummary, Results};

    #[test]
    fn the_heat_map_bins_many_steps() {
        let rank = |r: i64| RankSummary {
            file: format!("rank{r}.json"),
            rank_in_trace: Some(r),
            world_size: Some(2),
            results: Results::empty(),
            collectives: Vec::new(),
            steps: (0..50_000).map(|s| (s, 1_000 + s % 7 + r)).collect(),
        };
        let job = analyze_job(&[rank(0), rank(1)]).unwrap();
        let html = render_job_html(&job);
        let cells = html.matches("hsl(28, 90%").count();
        assert!(cells <= 2 * MAX_HEAT_COLUMNS, "{cells} cells");
        assert!(cells >= 2 * MAX_HEAT_COLUMNS - 2, "{cells} cells");
        assert!(html.contains("(mean)"), "binned columns say so");
        // Few steps: one column each.
        let few = |r: i64| RankSummary {
            steps: vec![(0, 1_000), (1, 2_000)],
            ..rank(r)
        };
        let job = analyze_job(&[few(0), few(1)]).unwrap();
        assert_eq!(render_job_html(&job).matches("hsl(28, 90%").count(), 4);
    }
}
