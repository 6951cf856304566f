//! tb_plugin's step breakdown: each step's time split by category (one column per step in a
//! chart, a row per step in a table) and the steps' spread.

use super::cells::pct;
use askama::Template;
use tracelens_analysis::Diagnosis;
use tracelens_model::format_ms;
use tracelens_results::Report;

/// Steps listed at each end of the breakdown table when there are more.
const BREAKDOWN_EDGE_ROWS: usize = 20;

use super::cells::ChartRect as StepRect;

#[derive(Template)]
#[template(path = "sections/breakdown.html")]
struct Html {
    breakdown_title: &'static str,
    breakdown_head: Vec<&'static str>,
    breakdown_rows: Vec<Vec<String>>,
    spread: Option<String>,
    step_chart: Vec<StepRect>,
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let has_steps = diagnosis.has_steps();
    let mut rows = breakdown_rows(diagnosis);
    super::cells::keep_units(&mut rows);
    Html {
        breakdown_title: if has_steps {
            "Step breakdown"
        } else {
            "Time breakdown of the window"
        },
        breakdown_head: vec![
            if has_steps { "step" } else { "window" },
            "duration",
            "kernel",
            "memcpy",
            "memset",
            "comm",
            "runtime",
            "dataloader",
            "CPU exec",
            "other",
            "GPU util",
        ],
        breakdown_rows: rows,
        spread: diagnosis
            .window
            .as_ref()
            .filter(|w| w.has_steps())
            .map(|w| {
                format!(
                    "{} step{}: mean {}, min {}, max {}, standard deviation {}",
                    w.step.count,
                    if w.step.count == 1 { "" } else { "s" },
                    format_ms(w.step.mean_ns),
                    format_ms(w.step.min_ns),
                    format_ms(w.step.max_ns),
                    format_ms(w.step.stddev_ns)
                )
            }),
        step_chart: step_chart(diagnosis),
    }
    .render()
    .expect("the breakdown template renders")
}

/// Columns of the per-step chart at most: more steps are averaged in groups.
const MAX_STEP_COLUMNS: usize = 200;

/// Height of the per-step chart's drawing, in view units.
const STEP_CHART_HEIGHT: f64 = 120.0;

/// tb_plugin's headline: one stacked column per step (kernel, memcpy, memset,
/// communication, runtime, DataLoader, CPU exec, other), heights to scale, so a slow or
/// warm-up step stands out. Steps beyond [`MAX_STEP_COLUMNS`] are averaged in groups.
fn step_chart(d: &Diagnosis) -> Vec<StepRect> {
    let Some(b) = &d.breakdown else {
        return Vec::new();
    };
    if b.steps.len() < 2 {
        return Vec::new();
    }
    let per_column = b.steps.len().div_ceil(MAX_STEP_COLUMNS);
    let columns: Vec<(String, [i64; 8])> = b
        .steps
        .chunks(per_column)
        .map(|group| {
            let mut sum = [0i64; 8];
            for s in group {
                for (acc, t) in sum.iter_mut().zip(s.times.as_array()) {
                    *acc += t;
                }
            }
            let n = i64::try_from(group.len()).unwrap_or(1).max(1);
            let label = match (group.first(), group.last()) {
                (Some(a), Some(z)) if group.len() > 1 => {
                    format!("steps {}–{} (mean)", a.step, z.step)
                }
                (Some(a), _) => format!("step {}", a.step),
                _ => String::new(),
            };
            (label, sum.map(|t| t / n))
        })
        .collect();
    let tallest = columns
        .iter()
        .map(|(_, t)| t.iter().sum::<i64>())
        .max()
        .unwrap_or(0);
    if tallest <= 0 {
        return Vec::new();
    }
    const CATEGORIES: [(&str, &str); 8] = [
        ("kernel", "kernel"),
        ("memcpy", "memcpy"),
        ("memset", "memset"),
        ("idle-collective", "communication"),
        ("runtime", "runtime"),
        ("dataloader", "DataLoader"),
        ("cpu-op", "CPU exec"),
        ("idle-unattributed", "other"),
    ];
    let width = 1000.0 / columns.len() as f64;
    let mut rects = Vec::new();
    for (i, (label, times)) in columns.iter().enumerate() {
        let total: i64 = times.iter().sum();
        let mut y = STEP_CHART_HEIGHT;
        for ((class, name), &t) in CATEGORIES.iter().zip(times) {
            if t <= 0 {
                continue;
            }
            let h = t as f64 * STEP_CHART_HEIGHT / tallest as f64;
            y -= h;
            rects.push(StepRect {
                class,
                x: format!("{:.2}", i as f64 * width),
                y: format!("{y:.2}"),
                w: format!("{:.2}", (width * 0.9).max(0.5)),
                h: format!("{h:.2}"),
                title: format!("{label}: {} of {} {name}", format_ms(t), format_ms(total)),
            });
        }
    }
    rects
}

fn breakdown_rows(diagnosis: &Diagnosis) -> Vec<Vec<String>> {
    let Some(b) = &diagnosis.breakdown else {
        return Vec::new();
    };
    let n = b.steps.len();
    let shown = b.steps.iter().enumerate().filter(|(i, _)| {
        n <= 2 * BREAKDOWN_EDGE_ROWS || *i < BREAKDOWN_EDGE_ROWS || *i >= n - BREAKDOWN_EDGE_ROWS
    });
    let mut rows: Vec<Vec<String>> = shown
        .flat_map(|(i, s)| {
            let gap = (n > 2 * BREAKDOWN_EDGE_ROWS && i == n - BREAKDOWN_EDGE_ROWS).then(|| {
                let mut row = vec![format!(
                    "… {}",
                    crate::plural(n - 2 * BREAKDOWN_EDGE_ROWS, "step")
                )];
                row.resize(11, String::new());
                row
            });
            gap.into_iter().chain(std::iter::once(step_row(s)))
        })
        .collect();
    let p = &b.percent;
    let step_ns = diagnosis.verdict.step_ns;
    rows.push(vec![
        if b.steps.is_empty() { "window" } else { "mean" }.into(),
        format_ms(step_ns),
        pct(p.kernel),
        pct(p.memcpy),
        pct(p.memset),
        pct(p.communication),
        pct(p.runtime),
        pct(p.dataloader),
        pct(p.cpu_exec),
        pct(p.other),
        pct(b.gpu_utilization_percent),
    ]);
    rows
}

fn step_row(s: &tracelens_analysis::views::breakdown::StepBreakdown) -> Vec<String> {
    let d = s.window.dur_ns();
    let t = &s.times;
    let share = |v: i64| {
        pct(if d > 0 {
            v as f64 * 100.0 / d as f64
        } else {
            0.0
        })
    };
    vec![
        format!("#{}", s.step),
        format_ms(d),
        share(t.kernel_ns),
        share(t.memcpy_ns),
        share(t.memset_ns),
        share(t.communication_ns),
        share(t.runtime_ns),
        share(t.dataloader_ns),
        share(t.cpu_exec_ns),
        share(t.other_ns),
        pct(s.gpu_utilization_percent),
    ]
}
