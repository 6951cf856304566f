//! A multi-rank job: the verdict naming the bottleneck, the rank table, the collective
//! operations with their bus bandwidth, per-rank stacked step bars and a rank × step heat map,
//! in terminal text (80 columns), Markdown, JSON and one self-contained HTML page. Layout only:
//! the job is `tracelens_results::analyze_job`.

use crate::escape::{markdown_text as esc, terminal_output, terminal_text};
use askama::Template;
use std::fmt::Write;
use tracelens_model::format_ms;
use tracelens_results::job::OperationRow;
use tracelens_results::{matching_words, missing_ranks_words, ranks_words, Job};

/// The table's cells of one rank: rank, step, busy, collectives, exposed, overlap, wait, last
/// arrivals, top idle cause.
fn cells(job: &Job) -> Vec<[String; 9]> {
    job.ranks
        .iter()
        .map(|r| {
            [
                r.rank.to_string(),
                format_ms(r.step_ns),
                format!("{:.1} %", r.gpu_busy_percent),
                format_ms(r.collective_ns),
                format_ms(r.exposed_ns),
                format!("{:.0} %", r.overlap_percent),
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

const HEAD: [&str; 9] = [
    "rank",
    "step",
    "GPU busy",
    "collectives / step",
    "exposed / step",
    "overlap",
    "wait / step",
    "last at",
    "top idle cause / step",
];

/// The cells of one operation: op, calls, transfer per call, bus bandwidth, % of peak,
/// algorithms.
fn operation_cells(o: &OperationRow) -> [String; 6] {
    [
        o.op.label().replace('_', "-"),
        o.calls.to_string(),
        format_ms(o.transfer_ns),
        o.busbw_gb_per_s
            .map_or_else(|| "–".into(), |b| format!("{b:.1} GB/s")),
        o.busbw_percent_of_peak
            .map_or_else(|| "–".into(), |p| format!("{p:.0} %")),
        if o.algorithms.is_empty() {
            "–".into()
        } else {
            o.algorithms.join(", ")
        },
    ]
}

const OPERATION_HEAD: [&str; 6] = [
    "operation",
    "calls",
    "transfer / call",
    "bus bandwidth",
    "of peak",
    "algorithm",
];

/// The clock line: the skew the matched calls show.
fn clock_words(job: &Job) -> Option<String> {
    let c = job.clock.as_ref()?;
    Some(format!(
        "clocks aligned on {} matched collectives: skew {} across ranks (arrivals compared on the aligned clock)",
        c.calls_used,
        format_ms(c.skew_ns)
    ))
}

/// Ranks the terminal lists in full; a larger job shows the ranks that explain it.
const TERMINAL_RANKS: usize = 16;

/// Indices into `job.ranks` of the rows the terminal shows: every rank of a small job; of a
/// large one the straggler, then the slowest steps, the ranks last at most collectives and
/// those that wait least and most, up to [`TERMINAL_RANKS`], in rank order.
fn terminal_rows(job: &Job) -> Vec<usize> {
    let n = job.ranks.len();
    if n <= TERMINAL_RANKS {
        return (0..n).collect();
    }
    let mut picked: Vec<usize> = Vec::with_capacity(TERMINAL_RANKS);
    let take = |i: usize, picked: &mut Vec<usize>| {
        if picked.len() < TERMINAL_RANKS && !picked.contains(&i) {
            picked.push(i);
        }
    };
    if let Some(s) = &job.straggler {
        if let Some(i) = job.ranks.iter().position(|r| r.rank == s.rank) {
            take(i, &mut picked);
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(job.ranks[i].step_ns), i));
    order.iter().take(4).for_each(|&i| take(i, &mut picked));
    order.sort_by_key(|&i| (std::cmp::Reverse(job.ranks[i].last_arrivals), i));
    order.iter().take(4).for_each(|&i| take(i, &mut picked));
    order.sort_by_key(|&i| (job.ranks[i].wait_ns, i));
    order.iter().take(3).for_each(|&i| take(i, &mut picked));
    order
        .iter()
        .rev()
        .take(3)
        .for_each(|&i| take(i, &mut picked));
    (0..n).for_each(|i| take(i, &mut picked));
    picked.sort_unstable();
    picked
}

/// The job for the terminal: at most 80 columns (the verdict wraps at `width`).
#[must_use]
pub fn render_job_text(job: &Job, width: usize) -> String {
    let mut out = String::new();
    out.push_str(&crate::wrap(&terminal_text(&job.verdict), width, "", 0));
    let _ = writeln!(
        out,
        "\n{:>4}  {:>11}  {:>6}  {:>11}  {:>11}  {:>7}  {:>11}  {:>4}",
        "rank", "step", "busy", "comm/step", "exposed", "overlap", "wait/step", "last"
    );
    let all = cells(job);
    let shown = terminal_rows(job);
    for (i, c) in all.iter().enumerate() {
        if !shown.contains(&i) {
            continue;
        }
        let _ = writeln!(
            out,
            "{:>4}  {:>11}  {:>6}  {:>11}  {:>11}  {:>7}  {:>11}  {:>4}",
            c[0],
            c[1],
            c[2].trim_end_matches(" %").to_string() + "%",
            c[3],
            c[4],
            c[5].replace(' ', ""),
            c[6],
            c[7]
        );
    }
    if shown.len() < job.ranks.len() {
        let (lo, hi) = job.ranks.iter().fold((i64::MAX, i64::MIN), |(lo, hi), r| {
            (lo.min(r.step_ns), hi.max(r.step_ns))
        });
        let hidden = job.ranks.len() - shown.len();
        let steps = if lo == hi {
            format!("each with a {} step", format_ms(lo))
        } else {
            format!(
                "steps of all ranks from {} to {}",
                format_ms(lo),
                format_ms(hi)
            )
        };
        out.push_str(&crate::wrap(
            &format!(
                "… {hidden} more ranks ({steps}); every rank is in the job page and --format json"
            ),
            width.min(80),
            "",
            0,
        ));
    }
    if !job.operations.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<15} {:>6}  {:>15}  {:>13}  {:>7}  algorithm",
            "operation", "calls", "transfer/call", "bus bandwidth", "of peak"
        );
        for o in &job.operations {
            let c = operation_cells(o);
            let _ = writeln!(
                out,
                "{:<15} {:>6}  {:>15}  {:>13}  {:>7}  {}",
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                tracelens_model::shorten(&c[5], 14)
            );
        }
    }
    let mut notes: Vec<String> = missing_ranks_words(job).into_iter().collect();
    notes.push(format!("ranks numbered by {}", job.rank_source));
    notes.push(matching_words(job));
    notes.extend(clock_words(job));
    if let Some(link) = &job.link {
        notes.push(format!("bandwidth compared with {link} (one node)"));
    }
    if job.forced {
        notes.push("taken as one job by --as-job: the traces do not show it".into());
    }
    out.push('\n');
    for n in notes {
        out.push_str(&crate::wrap(&terminal_text(&n), width.min(80), "", 0));
    }
    terminal_output(out, false)
}

/// The job as Markdown.
#[must_use]
pub fn render_job_markdown(job: &Job) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## tracelens: {}\n", ranks_words(job));
    let _ = writeln!(out, "**{}**\n", esc(&job.verdict));
    if let Some(m) = missing_ranks_words(job) {
        let _ = writeln!(out, "{}.\n", esc(&crate::capitalized(&m)));
    }
    let _ = writeln!(out, "| {} |", HEAD.join(" | "));
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for c in cells(job) {
        let c: Vec<String> = c.iter().map(|x| esc(x)).collect();
        let _ = writeln!(out, "| {} |", c.join(" | "));
    }
    if !job.operations.is_empty() {
        let _ = writeln!(out, "\n| {} |", OPERATION_HEAD.join(" | "));
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---|");
        for o in &job.operations {
            let c: Vec<String> = operation_cells(o).iter().map(|x| esc(x)).collect();
            let _ = writeln!(out, "| {} |", c.join(" | "));
        }
    }
    let _ = writeln!(
        out,
        "\nRanks numbered by {}; {}.",
        esc(&job.rank_source),
        esc(&matching_words(job))
    );
    if let Some(c) = clock_words(job) {
        let _ = writeln!(out, "{}.", esc(&crate::capitalized(&c)));
    }
    out
}

/// The job as JSON: the [`JobDocument`](tracelens_results::JobDocument) that `report`,
/// `check` and `diff` read back.
#[must_use]
pub fn render_job_json(doc: &tracelens_results::JobDocument) -> String {
    let mut s = serde_json::to_string_pretty(doc).expect("a job serializes");
    s.push('\n');
    s
}

/// One cell of the heat map.
struct HeatCell {
    x: usize,
    y: usize,
    shade: String,
    title: String,
    straggler: bool,
}

/// One part of a rank's stacked step bar.
struct BarPart {
    x: f64,
    width: f64,
    class: &'static str,
    title: String,
}

/// One rank's stacked step bar.
struct Bar {
    y: usize,
    label: String,
    parts: Vec<BarPart>,
}

#[derive(Template)]
#[template(path = "job.html")]
struct JobPage<'a> {
    job: &'a Job,
    /// `4 ranks`, or `2 of 8 ranks`.
    title: String,
    source_id: String,
    head: [&'static str; 9],
    rows: Vec<(bool, [String; 9])>,
    straggler_note: Option<String>,
    operation_head: [&'static str; 6],
    operations: Vec<[String; 6]>,
    notes: Vec<String>,
    bars: Vec<Bar>,
    bars_height: usize,
    heat: Vec<HeatCell>,
    heat_width: usize,
    heat_height: usize,
    /// Each rank's own report beside this page (a split multi-process capture): rank, file.
    rank_pages: Vec<(i64, String)>,
    labels: Vec<(usize, String)>,
    version: &'static str,
}

/// Width of the longest bar, pixels.
const BAR_WIDTH: f64 = 640.0;

/// Each rank's step as stacked parts: compute (hidden communication within it), exposed
/// communication, DataLoader idle, other idle; scaled to the longest step.
#[allow(clippy::cast_precision_loss)]
fn bars(job: &Job) -> Vec<Bar> {
    let longest = job
        .ranks
        .iter()
        .map(|r| r.step_ns)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    job.ranks
        .iter()
        .enumerate()
        .map(|(y, r)| {
            let b = &r.breakdown;
            let mut parts = Vec::new();
            let mut x = 90.0;
            let mut push = |ns: i64, class: &'static str, title: String| {
                if ns > 0 {
                    let width = ns as f64 * BAR_WIDTH / longest;
                    parts.push(BarPart {
                        x,
                        width,
                        class,
                        title,
                    });
                    x += width;
                }
            };
            push(
                b.compute_ns,
                "compute",
                format!(
                    "GPU busy {} per step (communication hidden under it: {})",
                    format_ms(b.compute_ns),
                    format_ms(b.comm_hidden_ns)
                ),
            );
            push(
                b.comm_exposed_ns,
                "exposed",
                format!(
                    "communication alone {} per step",
                    format_ms(b.comm_exposed_ns)
                ),
            );
            push(
                b.idle_data_loader_ns,
                "loader",
                format!(
                    "idle waiting for the DataLoader {} per step",
                    format_ms(b.idle_data_loader_ns)
                ),
            );
            for (cause, ns) in &b.idle_other {
                push(
                    *ns,
                    "idle",
                    format!("idle {cause}: {} per step", format_ms(*ns)),
                );
            }
            let straggler = job.straggler.as_ref().is_some_and(|s| s.rank == r.rank);
            Bar {
                y: y * 22,
                label: if straggler {
                    format!("rank {} (late)", r.rank)
                } else {
                    format!("rank {}", r.rank)
                },
                parts,
            }
        })
        .collect()
}

/// Size of one heat-map cell.
const CELL: usize = 18;
/// The most step columns of the heat map; more steps are binned.
pub const MAX_HEAT_COLUMNS: usize = 200;

/// The job as one self-contained HTML page; `rank_pages` links each rank's own report (the
/// pages written beside it for a split multi-process capture).
#[must_use]
pub fn render_job_html(job: &Job, source: &str, rank_pages: &[(i64, String)]) -> String {
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
                straggler: job.straggler.as_ref().is_some_and(|s| s.rank == r.rank),
            });
        }
    }
    let bars = bars(job);
    let mut notes: Vec<String> = missing_ranks_words(job)
        .map(|m| format!("{}.", crate::capitalized(&m)))
        .into_iter()
        .collect();
    notes.push(format!("Ranks numbered by {}.", job.rank_source));
    notes.push(format!("{}.", crate::capitalized(&matching_words(job))));
    notes.extend(clock_words(job).map(|c| format!("{}.", crate::capitalized(&c))));
    if let Some(link) = &job.link {
        notes.push(format!("Bus bandwidth (nccl-tests definition) compared with {link}, the peer link inside one node; a job across nodes is bounded by its network instead."));
    }
    if job.forced {
        notes.push("Taken as one job by --as-job: the traces do not show it themselves.".into());
    }
    JobPage {
        job,
        title: ranks_words(job),
        source_id: crate::source_id(source),
        straggler_note: job
            .straggler
            .as_ref()
            .map(|s| crate::capitalized(&s.explanation)),
        operation_head: OPERATION_HEAD,
        operations: job.operations.iter().map(operation_cells).collect(),
        notes,
        bars_height: bars.len() * 22,
        bars,
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
            .map(|(y, r)| {
                let late = job.straggler.as_ref().is_some_and(|s| s.rank == r.rank);
                let label = if late {
                    format!("rank {} ▶", r.rank)
                } else {
                    format!("rank {}", r.rank)
                };
                (y * CELL + 13, label)
            })
            .collect(),
        heat,
        rank_pages: rank_pages.to_vec(),
        version: env!("CARGO_PKG_VERSION"),
    }
    .render()
    .map(crate::escape::html_output)
    .expect("the job template renders")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelens_results::{analyze_job, RankSummary};

    #[test]
    fn the_heat_map_bins_many_steps() {
        let rank = |r: i64| RankSummary {
            file: format!("rank{r}.json"),
            rank_in_trace: Some(r),
            world_size: Some(2),
            steps: (0..50_000).map(|s| (s, 1_000 + s % 7 + r)).collect(),
            ..RankSummary::default()
        };
        let job = analyze_job(&[rank(0), rank(1)], true).unwrap();
        let html = render_job_html(&job, "job", &[]);
        let cells = html.matches("hsl(28, 90%").count();
        assert!(cells <= 2 * MAX_HEAT_COLUMNS, "{cells} cells");
        assert!(cells >= 2 * MAX_HEAT_COLUMNS - 2, "{cells} cells");
        assert!(html.contains("(mean)"), "binned columns say so");
        // Few steps: one column each.
        let few = |r: i64| RankSummary {
            steps: vec![(0, 1_000), (1, 2_000)],
            ..rank(r)
        };
        let job = analyze_job(&[few(0), few(1)], true).unwrap();
        assert_eq!(
            render_job_html(&job, "job", &[])
                .matches("hsl(28, 90%")
                .count(),
            4
        );
    }
}
