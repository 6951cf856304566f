//! GPU memory per device: peaks allocated and reserved, capacity and headroom, the level by
//! category per step, what is alive at the peak and who allocated it, what each step keeps,
//! and the memory problems with their fixes; one line of it for the summaries.

use super::cells::{format_gb, NAME_CHARS};
use askama::Template;
use tracelens_analysis::diagnose::memory::{site_words, MemoryAdvice};
use tracelens_analysis::views::memory::{DeviceMemory, PeakBasis};
use tracelens_analysis::views::memory_blocks::{AllocationSite, CategoryBytes, MemoryCategory};
use tracelens_analysis::views::memory_timeline::MemoryPoint;
use tracelens_model::shorten;
use tracelens_results::Report;

use super::cells::ChartRect as Rect;

/// One device's detail.
struct Device {
    name: String,
    chart: Vec<Rect>,
    chart_note: String,
    composition: Vec<Vec<String>>,
    sites: Vec<Vec<String>>,
    kept: Vec<Vec<String>>,
    growth: Option<String>,
    fit: Option<String>,
    allocator: Option<String>,
    ooms: Vec<Vec<String>>,
}

#[derive(Template)]
#[template(path = "sections/memory.html")]
struct Html<'a> {
    memory_rows: Vec<Vec<String>>,
    memory_note: String,
    problems: &'a [MemoryAdvice],
    devices: Vec<Device>,
    legend: Vec<(&'static str, &'static str)>,
}

/// The chart's class for each category (the report's palette).
fn class(c: MemoryCategory) -> &'static str {
    match c {
        MemoryCategory::BeforeCapture => "idle-unattributed",
        MemoryCategory::Persistent => "runtime",
        MemoryCategory::Gradient => "idle-collective",
        MemoryCategory::Activation => "kernel",
        MemoryCategory::Temporary => "memcpy",
        MemoryCategory::Other => "python",
        MemoryCategory::AliveAtEnd => "memset",
    }
}

/// The section's HTML.
pub(crate) fn html(report: &Report) -> String {
    let diagnosis = &report.diagnosis;
    let mut rows: Vec<Vec<String>> = diagnosis.memory.iter().map(memory_row).collect();
    super::cells::keep_units(&mut rows);
    Html {
        memory_rows: rows,
        memory_note: memory_note(diagnosis),
        problems: &diagnosis.memory_advice,
        devices: diagnosis.memory.iter().map(device).collect(),
        legend: MemoryCategory::ALL
            .iter()
            .map(|&c| (class(c), c.label()))
            .collect(),
    }
    .render()
    .expect("the memory template renders")
}

/// Height of the chart's drawing, in view units.
const CHART_HEIGHT: f64 = 120.0;
/// Columns at most: more points are thinned to every n-th.
const MAX_COLUMNS: usize = 200;

fn device(m: &DeviceMemory) -> Device {
    let categorized = m.composition.is_some();
    Device {
        name: format!("GPU {}", m.device),
        chart: chart(&m.points),
        chart_note: match (m.points.first().and_then(|p| p.step), categorized) {
            (Some(_), true) => "one column per step at its peak allocated, by category; the dark line is the reserved peak; hover for the figures",
            (None, true) => "one column per slice of the window at its peak allocated, by category; the dark line is the reserved peak",
            (Some(_), false) => "one column per step at its peak allocated (no block addresses in this trace, so no categories); the dark line is the reserved peak",
            (None, false) => "one column per slice of the window at its peak allocated (no block addresses in this trace, so no categories)",
        }
        .into(),
        composition: m
            .composition
            .as_ref()
            .map_or_else(Vec::new, |c| composition_rows(&c.categories, m.peak_allocated_bytes)),
        sites: m
            .composition
            .as_ref()
            .map_or_else(Vec::new, |c| site_rows(&c.sites)),
        kept: m
            .growth
            .as_ref()
            .map_or_else(Vec::new, |g| site_rows(&g.kept_sites)),
        growth: growth_words(m),
        fit: fit_words(m),
        allocator: m.allocator.as_ref().map(allocator_words),
        ooms: m.allocator.as_ref().map_or_else(Vec::new, |a| {
            a.out_of_memory
                .iter()
                .map(|o| {
                    vec![
                        format_gb(o.requested_bytes),
                        o.device_free_bytes.map_or("not recorded".into(), format_gb),
                        format_gb(o.allocated_bytes),
                        o.reserved_bytes.map_or("–".into(), format_gb),
                        o.alive_sites
                            .first()
                            .map_or("–".into(), |s| shorten(&site_words(s), NAME_CHARS)),
                    ]
                })
                .collect()
        }),
    }
}

/// The allocator's segments at the snapshot, in words.
fn allocator_words(a: &tracelens_analysis::views::memory::AllocatorSummary) -> String {
    let setting = match a.expandable_setting {
        Some(true) => "expandable_segments on",
        Some(false) => "expandable_segments off",
        None => "expandable_segments not recorded",
    };
    format!(
        "At the snapshot the allocator held {} segments ({} expandable): {} reserved, {} allocated, {} free inside them in {} free blocks, the largest {} (the largest request it serves without asking the driver); {setting}",
        a.segments,
        a.expandable_segments,
        format_gb(a.reserved_bytes),
        format_gb(a.allocated_bytes),
        format_gb(a.free_in_segments_bytes),
        a.free_blocks,
        format_gb(a.largest_free_block_bytes)
    )
}

fn chart(points: &[MemoryPoint]) -> Vec<Rect> {
    if points.len() < 2 {
        return Vec::new();
    }
    let every = points.len().div_ceil(MAX_COLUMNS);
    let shown: Vec<&MemoryPoint> = points.iter().step_by(every).collect();
    let tallest = shown
        .iter()
        .map(|p| {
            p.peak_reserved_bytes
                .unwrap_or(0)
                .max(p.peak_allocated_bytes)
        })
        .max()
        .unwrap_or(0);
    if tallest <= 0 {
        return Vec::new();
    }
    let scale = |b: i64| b.max(0) as f64 * CHART_HEIGHT / tallest as f64;
    let width = 1000.0 / shown.len() as f64;
    let mut rects = Vec::new();
    for (i, p) in shown.iter().enumerate() {
        let label = p
            .step
            .map_or_else(|| format!("slice {}", i + 1), |s| format!("step {s}"));
        let x = format!("{:.2}", i as f64 * width);
        let w = format!("{:.2}", (width * 0.9).max(0.5));
        let segments: Vec<(MemoryCategory, i64)> = match &p.at_peak {
            Some(c) => MemoryCategory::ALL.iter().map(|&k| (k, c.get(k))).collect(),
            None => vec![(MemoryCategory::BeforeCapture, p.peak_allocated_bytes)],
        };
        let mut y = CHART_HEIGHT;
        for (k, bytes) in segments.into_iter().filter(|(_, b)| *b > 0) {
            let h = scale(bytes);
            y -= h;
            let what = if p.at_peak.is_some() {
                k.label()
            } else {
                "allocated"
            };
            rects.push(Rect {
                class: class(k),
                x: x.clone(),
                y: format!("{y:.2}"),
                w: w.clone(),
                h: format!("{h:.2}"),
                title: format!(
                    "{label}: {} {what} of {} allocated at its peak",
                    format_gb(bytes),
                    format_gb(p.peak_allocated_bytes)
                ),
            });
        }
        if let Some(r) = p.peak_reserved_bytes {
            rects.push(Rect {
                class: "sync",
                x: x.clone(),
                y: format!("{:.2}", (CHART_HEIGHT - scale(r)).max(0.0)),
                w: w.clone(),
                h: "1.5".into(),
                title: format!("{label}: {} reserved at most", format_gb(r)),
            });
        }
    }
    rects
}

fn composition_rows(c: &CategoryBytes, peak: i64) -> Vec<Vec<String>> {
    MemoryCategory::ALL
        .iter()
        .filter(|&&k| c.get(k) != 0)
        .map(|&k| {
            vec![
                k.label().to_string(),
                format_gb(c.get(k)),
                format!(
                    "{:.1} %",
                    (c.get(k) as f64 * 100.0 / peak.max(1) as f64).clamp(0.0, 100.0)
                ),
            ]
        })
        .collect()
}

fn site_rows(sites: &[AllocationSite]) -> Vec<Vec<String>> {
    sites
        .iter()
        .map(|s| {
            vec![
                shorten(s.op.as_deref().unwrap_or("–"), NAME_CHARS),
                shorten(s.line.as_deref().unwrap_or("not recorded"), NAME_CHARS),
                s.category.label().to_string(),
                format_gb(s.bytes),
                s.blocks.to_string(),
            ]
        })
        .collect()
}

/// How memory alive at step ends changes, in words.
fn growth_words(m: &DeviceMemory) -> Option<String> {
    let g = m.growth.as_ref()?;
    let kept = g
        .kept_sites
        .first()
        .map_or(String::new(), |s| format!(", most at {}", site_words(s)));
    Some(
        if g.per_step_bytes.abs() < 1_000_000 && g.kept_bytes_per_step < 1_000_000 {
            format!(
                "memory alive at step ends is flat over {} steps (under 1 MB per step)",
                g.steps
            )
        } else {
            format!(
            "memory alive at step ends changes by {} per step over {} steps; each middle step keeps {} alive to the end{kept}",
            format_gb(g.per_step_bytes),
            g.steps,
            format_gb(g.kept_bytes_per_step)
        )
        },
    )
}

/// The batch estimate in words, with its basis.
fn fit_words(m: &DeviceMemory) -> Option<String> {
    let f = m.batch_fit.as_ref()?;
    let times = f.times_words();
    Some(format!(
        "An estimate: the batch could grow {times} before the peak reaches the device's {} — {} at the peak grows with the batch (activations, temporaries, intermediates, memory alive at capture end), {} does not (weights, gradients, optimizer state, memory held before the capture, the allocator's unused reserve). The CUDA/HIP context and other processes are not in the trace.",
        format_gb(m.capacity_bytes.unwrap_or(0)),
        format_gb(f.scaling_bytes),
        format_gb(f.fixed_bytes)
    ))
}

/// One device's memory in a line: `GPU 0 peak 23.11 GB allocated, 23.62 GB reserved of
/// 84.99 GB (fits ×3.6), at aten::linear; at the peak 20.82 GB persistent, …`.
pub(crate) fn line(m: &DeviceMemory) -> String {
    let mut line = match m.basis {
        PeakBasis::AllocatorTotals => {
            format!("GPU {} peak {} allocated", m.device, format_gb(m.peak_allocated_bytes))
        }
        PeakBasis::GrowthSinceFirstSample => format!(
            "GPU {} allocations grow by up to {} over the window (no allocator totals in this trace)",
            m.device,
            format_gb(m.peak_allocated_bytes)
        ),
    };
    if let Some(r) = m.peak_reserved_bytes {
        line.push_str(&format!(", {} reserved", format_gb(r)));
    }
    if let (Some(cap), Some(fits)) = (m.capacity_bytes, m.fits_times()) {
        line.push_str(&format!(" of {} (fits ×{fits:.1})", format_gb(cap)));
    }
    if let Some(op) = &m.peak_op {
        line.push_str(&format!(", at {op}"));
    }
    if let Some(c) = &m.composition {
        let mut parts: Vec<(i64, &str)> = MemoryCategory::ALL
            .iter()
            .map(|&k| (c.categories.get(k), k.label()))
            .filter(|(b, _)| *b > 0)
            .collect();
        parts.sort_by_key(|p| std::cmp::Reverse(p.0));
        let words: Vec<String> = parts
            .iter()
            .take(3)
            .map(|(b, l)| format!("{} {l}", format_gb(*b)))
            .collect();
        if !words.is_empty() {
            line.push_str(&format!("; at the peak {}", words.join(", ")));
        }
    }
    if let Some(g) = growth_words(m) {
        line.push_str(&format!("; {g}"));
    }
    if let Some(a) = &m.allocator {
        line.push_str(&format!(
            "; snapshot: {} segments, {} free inside them, largest free block {}",
            a.segments,
            format_gb(a.free_in_segments_bytes),
            format_gb(a.largest_free_block_bytes)
        ));
        if !a.out_of_memory.is_empty() {
            line.push_str(&format!("; {} out-of-memory errors", a.out_of_memory.len()));
        }
    }
    line
}

/// One device's memory: peaks, capacity, headroom, allocator calls, the op at the peak.
fn memory_row(m: &DeviceMemory) -> Vec<String> {
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
        format!("{} – {}", format_gb(lo), format_gb(hi))
    };
    vec![
        format!("GPU {}", m.device),
        format_gb(m.peak_allocated_bytes),
        m.peak_reserved_bytes.map_or("–".into(), format_gb),
        m.capacity_bytes.map_or("unknown".into(), format_gb),
        m.fits_times().map_or("–".into(), |x| format!("×{x:.1}")),
        steps,
        format!("{} / {}", m.allocations, m.frees),
        m.peak_op
            .as_deref()
            .map_or("–".into(), |o| shorten(o, NAME_CHARS)),
    ]
}

/// What the memory figures are, or why there are none.
fn memory_note(d: &tracelens_analysis::Diagnosis) -> String {
    if d.memory.is_empty() {
        return if d.framework.pytorch() {
            "No allocator samples in the window: record with torch.profiler.profile(profile_memory=True) to see peaks and headroom."
        } else {
            "No allocator samples in the window: this capture records none, so no peaks or headroom."
        }
        .into();
    }
    if d.memory
        .iter()
        .any(|m| m.basis == PeakBasis::GrowthSinceFirstSample)
    {
        return "This trace records allocation sizes but not the allocator's totals (PyTorch before 1.10): the peak is the growth since the first sample, not the absolute level, so no headroom is given.".into();
    }
    let snapshot = if d.memory.iter().any(|m| m.allocator.is_some()) {
        " From a PyTorch memory snapshot: the allocation history is the allocator's ring buffer of its last entries (the totals rebuilt backwards from the segments at the snapshot), grouped into 40 slices; categories without profiler ops come from each allocation's Python stack."
    } else {
        ""
    };
    let categories = if d.memory.iter().all(|m| m.composition.is_some()) {
        " Categories come from each block's lifetime (its allocation and free paired by address): temporaries are freed inside the op that allocated them, activations are allocated in the forward and freed in the backward, gradients are allocated in the backward and outlive it, persistent blocks outlive the step that allocated them."
    } else {
        " The samples carry no block addresses, so memory is not split by category."
    };
    format!("Peaks of the caching allocator's own totals over the window. Fits: how many times the peak held (reserved) fits in the device's memory.{categories}{snapshot}")
}
