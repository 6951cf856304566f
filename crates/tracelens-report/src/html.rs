//! The self-contained HTML report: a view model of pre-formatted strings rendered by an
//! askama template (which escapes every value), an inline SVG timeline, inline CSS and a few
//! lines of inline JS for sorting tables. Nothing is loaded from the network.

use crate::timeline::{self, cause_class, Timeline, PLOT_WIDTH};
use askama::Template;
use tracelens_analysis::diagnose::finding::{EvidenceValue, Severity};
use tracelens_analysis::Diagnosis;
use tracelens_model::{format_ms, shorten};
use tracelens_results::Report;

/// Longest kernel or op name shown in tables, in characters.
const NAME_CHARS: usize = 140;
/// Most findings in the report.
const MAX_FINDINGS: usize = 20;
/// Most sync sites in the table.
const MAX_SYNC_ROWS: usize = 30;
/// Operator rows shown (the JSON keeps up to 50).
const MAX_OPERATOR_ROWS: usize = 20;
/// Most redacted paths listed.
const MAX_REDACTED_LISTED: usize = 10;

/// Steps listed at each end of the breakdown table when there are more.
const BREAKDOWN_EDGE_ROWS: usize = 20;

/// Width of the overview bars in SVG units.
const OVERVIEW_UNITS: f64 = 1000.0;

struct FindingView {
    rank: usize,
    severity: &'static str,
    title: String,
    win: String,
    /// The predicted step and what it assumes, or why there is none.
    prediction: String,
    call_site: Option<String>,
    fix: String,
    advice: String,
    snippet: String,
    confidence: String,
    evidence: Vec<(String, String)>,
    ranges: Vec<String>,
}

struct Bar {
    class: &'static str,
    label: &'static str,
    width: String,
    value: String,
}

/// One segment of an overview bar.
struct Segment {
    class: &'static str,
    label: &'static str,
    x: String,
    w: String,
    value: String,
}

/// One rectangle of the per-step chart.
struct StepRect {
    class: &'static str,
    x: String,
    y: String,
    w: String,
    h: String,
    title: String,
}

/// A stacked bar of the first screen.
struct OverviewBar {
    title: String,
    segments: Vec<Segment>,
}

struct IdleView {
    title: String,
    descheduled: Option<String>,
    bars: Vec<Bar>,
    host_ops: Vec<(String, String)>,
    os_waits: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "report.html")]
struct ReportPage {
    file_name: String,
    source_id: String,
    verdict: String,
    facts: Vec<(String, String)>,
    findings: Vec<FindingView>,
    findings_total: usize,
    timeline: Option<Timeline>,
    plot_width: usize,
    overview_bars: Vec<OverviewBar>,
    /// Whether `tracelens annotate` can take this trace (Kineto JSON).
    annotatable: bool,
    idle: Vec<IdleView>,
    breakdown_title: &'static str,
    breakdown_head: Vec<&'static str>,
    breakdown_rows: Vec<Vec<String>>,
    spread: Option<String>,
    sync_rows: Vec<Vec<String>>,
    copy_rows: Vec<Vec<String>>,
    kernel_rows: Vec<Vec<String>>,
    operator_rows: Vec<Vec<String>>,
    operator_shape_rows: Vec<Vec<String>>,
    critical: crate::critical::CriticalView,
    communication_line: String,
    communication_rows: Vec<Vec<String>>,
    efficiency_note: String,
    efficiency_class_rows: Vec<Vec<String>>,
    efficiency_op_rows: Vec<Vec<String>>,
    memory_rows: Vec<Vec<String>>,
    memory_note: String,
    tensor_core_note: String,
    region_rows: Vec<Vec<String>>,
    step_chart: Vec<StepRect>,
    health: Vec<(&'static str, String)>,
    version: String,
}

fn pct(x: f64) -> String {
    format!("{x:.1} %")
}

fn evidence_value(v: EvidenceValue) -> String {
    match v {
        EvidenceValue::Count(n) => n.to_string(),
        EvidenceValue::DurationNs(ns) => format_ms(ns),
        EvidenceValue::Percent(p) => pct(p),
        EvidenceValue::Bytes(b) => format!("{:.1} MB", b as f64 / 1e6),
        EvidenceValue::Number(x) => format!("{x:.2}"),
    }
}

/// Renders the HTML report.
pub fn render_html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let origin = report.overview.time_origin_ns;
    let rel = |t: i64| format!("+{}", format_ms(t - origin));
    let (per, of_time) = (crate::per(diagnosis), crate::of_time(diagnosis));
    let has_steps = diagnosis.has_steps();
    let source = &report.input;
    let page = ReportPage {
        source_id: crate::source_id(&source.path),
        file_name: std::path::Path::new(&source.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| source.path.clone()),
        verdict: diagnosis.verdict.text.clone(),
        facts: facts(report)
            .into_iter()
            .map(|(k, v)| (k, crate::keep_units(&v)))
            .collect(),
        findings: diagnosis
            .findings
            .iter()
            .take(MAX_FINDINGS)
            .enumerate()
            .map(|(i, f)| FindingView {
                rank: i + 1,
                severity: match f.severity {
                    Severity::High => "high",
                    Severity::Medium => "medium",
                    Severity::Low => "low",
                },
                title: crate::keep_units(&f.title),
                win: crate::keep_units(&match f.win_kind {
                    tracelens_analysis::WinKind::HostOnly => format!(
                        "No GPU idle caused; the host is blocked {} {per}",
                        format_ms(f.cpu_cost_per_step_ns.unwrap_or(0))
                    ),
                    _ => format!(
                        "Estimated win: up to {} {per} ({:.1} % {of_time}) — {}",
                        format_ms(f.estimated_win_per_step_ns),
                        f.estimated_win_percent,
                        f.win_basis
                    ),
                }),
                prediction: crate::keep_units(&match crate::prediction_phrase(f, diagnosis) {
                    Some(p) => format!("{}: {}.", crate::capitalized(&p), f.prediction),
                    None => crate::capitalized(&f.prediction),
                }),
                call_site: f.call_site.clone(),
                fix: f.fix.clone(),
                advice: f.advice.clone(),
                snippet: f.snippet.clone(),
                confidence: format!("{:?}", f.confidence).to_lowercase(),
                evidence: f
                    .evidence
                    .items
                    .iter()
                    .map(|item| (shorten(&item.label, NAME_CHARS), evidence_value(item.value)))
                    .collect(),
                ranges: f
                    .evidence
                    .time_ranges
                    .iter()
                    .map(|r| {
                        format!(
                            "{} – {} ({}); trace ts {} µs",
                            rel(r.start_ns),
                            rel(r.end_ns),
                            format_ms(r.dur_ns()),
                            crate::perfetto::ts_us(r.start_ns)
                        )
                    })
                    .collect(),
            })
            .collect(),
        findings_total: diagnosis.findings.len(),
        timeline: report.timeline.as_ref().and_then(timeline::build),
        plot_width: PLOT_WIDTH,
        overview_bars: overview_bars(diagnosis),
        annotatable: source.annotatable,
        idle: idle_views(diagnosis),
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
        breakdown_rows: breakdown_rows(diagnosis),
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
        sync_rows: diagnosis
            .syncs
            .sites
            .iter()
            .take(MAX_SYNC_ROWS)
            .map(|s| {
                vec![
                    s.trigger.describe().to_string(),
                    s.call_site.clone().unwrap_or_else(|| "–".into()),
                    s.apis.join(", "),
                    s.count.to_string(),
                    format!("{:.1}", s.per_step),
                    format_ms(s.blocked_ns),
                    format_ms(s.gpu_idle_ns),
                    shorten(&s.op_chain.join(" › "), NAME_CHARS),
                ]
            })
            .collect(),
        copy_rows: copy_rows(diagnosis),
        kernel_rows: diagnosis
            .top_kernels
            .iter()
            .map(|k| {
                vec![
                    shorten(&k.name, NAME_CHARS),
                    k.count.to_string(),
                    format_ms(k.total_ns),
                    format_ms(k.mean_ns),
                    format_ms(k.min_ns),
                    format_ms(k.max_ns),
                    pct(k.share_percent),
                    k.mean_blocks_per_sm
                        .map_or("–".into(), |b| format!("{b:.2}")),
                    k.mean_est_occupancy_percent.map_or("–".into(), pct),
                    k.launch.as_ref().map_or("–".into(), launch_text),
                    if k.tensor_cores { "yes" } else { "no" }.into(),
                ]
            })
            .collect(),
        critical: crate::critical::view(diagnosis, origin),
        communication_line: crate::communication::line(diagnosis)
            .map(|l| crate::capitalized(&l))
            .unwrap_or_default(),
        communication_rows: crate::communication::rows(diagnosis),
        efficiency_note: efficiency_note(diagnosis),
        efficiency_class_rows: diagnosis
            .efficiency
            .classes
            .iter()
            .map(|c| {
                let mut row = vec![c.class.label().to_string(), c.precision.label().to_string()];
                row.extend(throughput_cells(&c.throughput));
                row
            })
            .collect(),
        efficiency_op_rows: diagnosis
            .efficiency
            .operators
            .iter()
            .map(|o| {
                let mut row = vec![
                    shorten(&o.name, NAME_CHARS),
                    shorten(&o.input_dims, NAME_CHARS),
                    o.precision.label().to_string(),
                ];
                row.extend(throughput_cells(&o.throughput));
                row
            })
            .collect(),
        memory_rows: diagnosis.memory.iter().map(memory_row).collect(),
        memory_note: memory_note(diagnosis),
        region_rows: region_rows(diagnosis),
        step_chart: step_chart(diagnosis),
        tensor_core_note: diagnosis.tensor_core_percent.map_or_else(String::new, |p| {
            format!(
                "{} of the window's kernel time runs in tensor-core kernels (by kernel name).",
                pct(p)
            )
        }),
        operator_rows: diagnosis
            .operators
            .iter()
            .take(MAX_OPERATOR_ROWS)
            .map(|o| {
                vec![
                    shorten(&o.name, NAME_CHARS),
                    o.calls.to_string(),
                    format_ms(o.device_self_ns),
                    format_ms(o.device_total_ns),
                    format_ms(o.host_self_ns),
                    format_ms(o.host_total_ns),
                    if o.tensor_core_eligible {
                        pct(o.tensor_core_total_percent)
                    } else {
                        "–".into()
                    },
                    o.call_sites
                        .first()
                        .map_or("–".into(), |c| shorten(&c.site, NAME_CHARS)),
                ]
            })
            .collect(),
        operator_shape_rows: diagnosis
            .operators_by_shape
            .iter()
            .take(MAX_OPERATOR_ROWS)
            .map(|o| {
                vec![
                    shorten(&o.name, NAME_CHARS),
                    shorten(&o.input_dims, NAME_CHARS),
                    o.calls.to_string(),
                    format_ms(o.device_self_ns),
                    format_ms(o.device_total_ns),
                    format_ms(o.host_self_ns),
                    format_ms(o.host_total_ns),
                ]
            })
            .collect(),
        health: health(report),
        version: report.tool.version.clone(),
    };
    let mut page = page;
    for rows in [
        &mut page.breakdown_rows,
        &mut page.sync_rows,
        &mut page.copy_rows,
        &mut page.kernel_rows,
        &mut page.operator_rows,
        &mut page.operator_shape_rows,
        &mut page.efficiency_class_rows,
        &mut page.efficiency_op_rows,
        &mut page.memory_rows,
        &mut page.region_rows,
    ] {
        for cell in rows.iter_mut().flatten() {
            *cell = crate::keep_units(cell);
        }
    }
    page.render().expect("the report template renders")
}

/// `grid 564×1×1, block 128×1×1, 32 regs, 0 B smem`.
fn launch_text(l: &tracelens_analysis::views::kernels::LaunchConfig) -> String {
    let dims = |d: [u32; 3]| format!("{}×{}×{}", d[0], d[1], d[2]);
    format!(
        "{} × {}, {} regs, {} B shared",
        dims(l.grid),
        dims(l.block),
        l.registers_per_thread,
        l.shared_memory_bytes
    )
}

/// Calls, GPU time, FLOPs per call, TFLOP/s, TB/s, FLOP/byte, bound and roofline share.
fn throughput_cells(t: &tracelens_analysis::views::efficiency::Throughput) -> Vec<String> {
    use tracelens_analysis::views::efficiency::Bound;
    vec![
        t.calls.to_string(),
        format_ms(t.gpu_ns),
        crate::format_flops(t.flops / t.calls.max(1) as f64),
        format!("{:.2}", t.tflops_per_s),
        format!("{:.3}", t.tb_per_s),
        format!("{:.1}", t.intensity),
        t.bound.map_or("–", Bound::label).to_string(),
        t.roofline_percent.map_or("–".into(), pct),
    ]
}

/// What the efficiency figures are, or why there are none.
fn efficiency_note(d: &tracelens_analysis::Diagnosis) -> String {
    if d.window.is_none() {
        return String::new();
    }
    let mut note = crate::capitalized(&crate::efficiency_line(d));
    note.push('.');
    if !d.efficiency.classes.is_empty() {
        note.push_str(" FLOPs from the recorded shapes (2 per multiply-add), bytes the least each op must read and write; an op counts once, at the outermost op the FLOP model knows; time is the GPU time it launched. Bound: compute when FLOPs per byte reach the device's ridge point (peak FLOP/s ÷ bandwidth), else memory; roofline: achieved in percent of what the roofline allows at that intensity.");
    }
    note
}

/// One device's memory: peaks, capacity, headroom, allocator calls, the op at the peak.
fn memory_row(m: &tracelens_analysis::views::memory::DeviceMemory) -> Vec<String> {
    let steps = if m.steps.is_empty() {
        "–".to_string()
    } else {
        let lo = m
            .steps
            .iter()
            .map(|s| s.peak_allocated_bytes)
            .min()
            .unwrap_or(0);
        let hi = m
            .steps
            .iter()
            .map(|s| s.peak_allocated_bytes)
            .max()
            .unwrap_or(0);
        format!("{} – {}", crate::format_gb(lo), crate::format_gb(hi))
    };
    vec![
        format!("GPU {}", m.device),
        crate::format_gb(m.peak_allocated_bytes),
        m.peak_reserved_bytes.map_or("–".into(), crate::format_gb),
        m.capacity_bytes.map_or("unknown".into(), crate::format_gb),
        m.fits_times().map_or("–".into(), |x| format!("×{x:.1}")),
        steps,
        format!("{} / {}", m.allocations, m.frees),
        m.peak_op
            .as_deref()
            .map_or("–".into(), |o| shorten(o, NAME_CHARS)),
    ]
}

/// The regions by host time, each indented by how deep it sits among regions, at most
/// [`MAX_OPERATOR_ROWS`].
fn region_rows(d: &tracelens_analysis::Diagnosis) -> Vec<Vec<String>> {
    let window_ns = d.window.as_ref().map_or(0, |w| w.interval.dur_ns());
    d.regions
        .iter()
        .take(MAX_OPERATOR_ROWS)
        .map(|r| {
            let share = if window_ns > 0 {
                pct((r.host_ns as f64 * 100.0 / window_ns as f64).min(100.0))
            } else {
                "–".into()
            };
            vec![
                format!(
                    "{}{}",
                    "\u{a0}\u{a0}".repeat(r.depth.min(8) as usize),
                    shorten(&r.name, NAME_CHARS)
                ),
                r.calls.to_string(),
                format_ms(r.host_ns),
                share,
                format_ms(r.gpu_ns),
            ]
        })
        .collect()
}

/// What the memory figures are, or why there are none.
fn memory_note(d: &tracelens_analysis::Diagnosis) -> String {
    use tracelens_analysis::views::memory::PeakBasis;
    if d.memory.is_empty() {
        return "No allocator samples in the window: record with torch.profiler.profile(profile_memory=True) to see peaks and headroom.".into();
    }
    if d.memory
        .iter()
        .any(|m| m.basis == PeakBasis::GrowthSinceFirstSample)
    {
        return "This trace records allocation sizes but not the allocator's totals (PyTorch before 1.10): the peak is the growth since the first sample, not the absolute level, so no headroom is given.".into();
    }
    "Peaks of the caching allocator's own totals over the window. Fits: how many times the peak held (reserved) fits in the device's memory.".into()
}

fn facts(report: &Report) -> Vec<(String, String)> {
    let (overview, diagnosis) = (&report.overview, &report.diagnosis);
    // The file name only: a shared report must not carry the author's folders (the JSON
    // keeps the full path in `input.path`).
    let name = std::path::Path::new(&report.input.path)
        .file_name()
        .map_or_else(
            || report.input.path.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
    let mut f = vec![("Trace".to_string(), name)];
    let gpus: Vec<String> = overview
        .devices
        .iter()
        .map(|d| {
            let procs: Vec<String> = d.processes.iter().map(i64::to_string).collect();
            let by = if procs.is_empty() {
                String::new()
            } else {
                format!(" (process {})", procs.join(", "))
            };
            format!(
                "GPU {}: {}{by}",
                d.device,
                d.name.as_deref().unwrap_or("unnamed")
            )
        })
        .collect();
    f.push((
        "GPUs".into(),
        if gpus.is_empty() {
            "none".into()
        } else {
            gpus.join("; ")
        },
    ));
    let versions: Vec<String> = report
        .metadata
        .versions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if !versions.is_empty() {
        f.push(("Versions".into(), versions.join(", ")));
    }
    f.push((
        "Format".into(),
        format!("{} — {}", report.input.version, report.input.version_note),
    ));
    if let Some(d) = &report.metadata.distributed {
        f.push((
            "Rank".into(),
            format!(
                "{} of {} ({})",
                d.rank.map_or("?".into(), |r| r.to_string()),
                d.world_size.map_or("?".into(), |w| w.to_string()),
                d.backend.clone().unwrap_or_default()
            ),
        ));
    }
    if let Some(w) = &diagnosis.window {
        f.push(("Analysis window".into(), crate::window_line(w)));
    }
    let v = &diagnosis.verdict;
    if let Some(dev) = v.device {
        let b = v.busy_by;
        f.push((
            "GPU utilization".into(),
            format!(
                "GPU {dev}: {:.1} % busy, {} idle in the window; busy time is kernels {:.1} %, copies {:.1} %, fills {:.1} %, collectives {:.1} %",
                v.gpu_busy_percent,
                format_ms(v.gpu_idle_ns),
                b.kernel,
                b.memcpy,
                b.memset,
                b.communication
            ),
        ));
    }
    if let Some(ahead) = v.host_ahead_ns {
        f.push((
            "Host ahead of GPU".into(),
            format!("{} median launch-to-start delay", format_ms(ahead)),
        ));
    }
    if let Some(t) = diagnosis.framework.describe_torch() {
        let opt = diagnosis
            .framework
            .optimizer
            .as_deref()
            .map(|o| format!(", optimizer {o}"))
            .unwrap_or_default();
        f.push((
            "Framework".into(),
            format!("{t} (from the trace format){opt}"),
        ));
    }
    let st = &overview.steps;
    if st.count > 0 {
        let first = st.numbers.first().copied().unwrap_or(0);
        let last = st.numbers.last().copied().unwrap_or(0);
        let range = if first == last {
            format!("ProfilerStep#{first}")
        } else {
            format!("ProfilerStep#{first}..#{last}")
        };
        f.push((
            "ProfilerStep ranges".into(),
            format!("{} ({range})", st.count),
        ));
    }
    f
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
            .map(|c| (cause_class(c.cause), c.cause.describe(), c.ns))
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

fn idle_views(diagnosis: &Diagnosis) -> Vec<IdleView> {
    diagnosis
        .idle
        .iter()
        .filter(|d| d.idle_ns > 0)
        .map(|d| {
            IdleView {
                title: format!("GPU {}: {} idle", d.device, format_ms(d.idle_ns)),
                descheduled: (d.descheduled_ns > 0).then(|| {
                    format!(
                        "During {} of the host-compute idle the launching thread was off the CPU outside any traced OS wait: runnable but not running (Nsight Systems scheduling trace).",
                        format_ms(d.descheduled_ns)
                    )
                }),
                bars: d
                    .by_cause
                    .iter()
                    .map(|c| Bar {
                        class: cause_class(c.cause),
                        label: c.cause.describe(),
                        width: format!("{:.2}", c.percent),
                        value: format!("{} ({:.1} %)", format_ms(c.ns), c.percent),
                    })
                    .collect(),
                host_ops: d
                    .host_compute_ops
                    .iter()
                    .map(|(n, t)| (shorten(n, NAME_CHARS), format_ms(*t)))
                    .collect(),
                os_waits: d
                    .os_waits
                    .iter()
                    .map(|(n, t)| (shorten(n, NAME_CHARS), format_ms(*t)))
                    .collect(),
            }
        })
        .collect()
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

fn copy_rows(diagnosis: &Diagnosis) -> Vec<Vec<String>> {
    let c = &diagnosis.copies;
    [
        ("host → device, pageable", c.htod_pageable),
        ("device → host, pageable", c.dtoh_pageable),
        ("host → device, pinned", c.htod_pinned),
        ("device → host, pinned", c.dtoh_pinned),
        (
            "host ↔ device, kind not recorded (ROCm)",
            c.host_kind_unknown,
        ),
        ("device → device", c.device_to_device),
        ("other", c.other),
    ]
    .into_iter()
    .filter(|(_, s)| s.count > 0)
    .map(|(label, s)| {
        vec![
            label.to_string(),
            s.count.to_string(),
            format!("{:.1} MB", s.bytes as f64 / 1e6),
            format_ms(s.gpu_ns),
            format_ms(s.exposed_ns),
            format_ms(s.host_blocked_ns),
        ]
    })
    .collect()
}

fn health(report: &Report) -> Vec<(&'static str, String)> {
    let (overview, diagnosis) = (&report.overview, &report.diagnosis);
    let s = &report.input;
    let mut h = vec![(
        "info",
        format!(
            "Read {} {} ({} kept as spans) from {:.1} MB of {}{}; format {}: {}",
            s.records_read,
            s.records,
            s.records_kept,
            s.decoded_bytes as f64 / 1e6,
            s.content,
            s.compression
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            s.version,
            s.version_note
        ),
    )];
    if let Some(at) = s.truncated_at_byte {
        h.push((
            "warn",
            format!("Truncated trace: salvaged the events before byte {at}"),
        ));
    }
    for w in &report.warnings {
        h.push(("warn", w.message.clone()));
    }
    for o in &overview.devices {
        if let Some(b) = &o.first_to_last_op {
            h.push((
                "info",
                format!(
                    "GPU {} from its first to its last op (AMD TraceLens definition, clipped to the GPU-side steps): {:.1} % busy, {} busy, {} idle of {}",
                    o.device,
                    b.busy_percent,
                    format_ms(b.busy_ns),
                    format_ms(b.idle_ns),
                    format_ms(b.total_ns)
                ),
            ));
        }
    }
    for d in &diagnosis.idle {
        if !d.attribution_reliable {
            h.push((
                "warn",
                format!(
                    "GPU {}: {} ops come from CUDA/HIP graph replays, which are often under-recorded; idle figures and their attribution are unreliable",
                    d.device, d.graph_replay_ops
                ),
            ));
        }
    }
    let m = &report.metadata;
    if !m.redacted.is_empty() {
        let listed: Vec<&str> = m
            .redacted
            .iter()
            .take(MAX_REDACTED_LISTED)
            .map(String::as_str)
            .collect();
        h.push((
            "info",
            format!(
                "Redacted {} secret-looking metadata values: {}",
                m.redacted.len(),
                listed.join(", ")
            ),
        ));
    }
    if !s.ignored.is_empty() {
        let cats: Vec<String> = s.ignored.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
        h.push((
            "info",
            format!("Categories not analysed: {}", cats.join(", ")),
        ));
    }
    h
}
