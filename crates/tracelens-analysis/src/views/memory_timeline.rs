//! One GPU's memory over the window, summarised in one sweep of its samples: the level by
//! category per step (or per slice of a window without steps), the composition and the
//! allocation sites at the peak, the growth of memory alive at step ends and the sites that
//! keep it, and how often the allocator's reserve shrank. Nothing per sample is kept.

use crate::measure::window::AnalysisWindow;
use crate::views::memory_blocks::{self, AllocationSite, Block, CategoryBytes, NOT_FREED};
use serde::Serialize;
use tracelens_model::{MemorySample, TimeNs, Trace};

/// Slices of a window without steps.
const SLICES: i64 = 40;
/// Allocation sites listed at the peak and among the kept blocks.
const SITES: usize = 8;

/// The memory of one step (or one slice of a window without steps).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct MemoryPoint {
    /// The step number, when the window has steps.
    pub step: Option<i64>,
    /// Start of the step or slice.
    pub start_ns: TimeNs,
    /// Its end.
    pub end_ns: TimeNs,
    /// Peak allocated bytes in it.
    pub peak_allocated_bytes: i64,
    /// Peak reserved bytes in it, when recorded.
    pub peak_reserved_bytes: Option<i64>,
    /// Allocated bytes at its end (after its last sample).
    pub end_allocated_bytes: i64,
    /// The categories at its peak; they add up to `peak_allocated_bytes` (none without
    /// block addresses).
    pub at_peak: Option<CategoryBytes>,
}

/// What is alive at the window's peak.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct PeakComposition {
    /// By category; adds up to the peak allocated.
    pub categories: CategoryBytes,
    /// Who allocated the blocks alive then, most bytes first (blocks held before the
    /// capture have no site).
    pub sites: Vec<AllocationSite>,
}

/// How memory alive at step ends changes from step to step.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Growth {
    /// The least-squares slope of the allocated level at step ends, bytes per step (the
    /// first step, which allocates state once, is left out from four steps on).
    pub per_step_bytes: i64,
    /// Steps the slope is measured over.
    pub steps: u32,
    /// Bytes allocated in a middle step (not the first, not the last) and still alive at the
    /// window's end, per middle step: what each step keeps.
    pub kept_bytes_per_step: i64,
    /// Where those kept blocks were allocated.
    pub kept_sites: Vec<AllocationSite>,
}

/// The summary of one device's samples.
pub(crate) struct Timeline {
    pub points: Vec<MemoryPoint>,
    pub composition: Option<PeakComposition>,
    pub growth: Option<Growth>,
    pub reserved_drops: u64,
    pub reserved_drop_steps: u64,
    /// Sites of the blocks alive at each of the asked instants.
    pub alive_at: Vec<Vec<AllocationSite>>,
}

/// The buckets: the window's steps as the host ran them (the allocator's samples are the
/// host's; a step's GPU work may run long after its host part), or equal slices of it.
fn buckets(trace: &Trace, window: &AnalysisWindow) -> Vec<(Option<i64>, TimeNs, TimeNs)> {
    if window.has_steps() {
        let host: std::collections::HashMap<i64, tracelens_model::Interval> = trace
            .steps
            .iter()
            .filter_map(|h| Some((h.number, h.cpu?)))
            .collect();
        return window
            .steps
            .iter()
            .map(|s| {
                let host = host.get(&s.number).copied().unwrap_or(s.interval);
                (Some(s.number), host.start_ns, host.end_ns)
            })
            .collect();
    }
    let w = window.interval;
    let width = (w.dur_ns() / SLICES).max(1);
    let mut out = Vec::new();
    let mut t = w.start_ns;
    while t < w.end_ns && i64::try_from(out.len()).unwrap_or(i64::MAX) <= SLICES {
        let end = t.saturating_add(width).min(w.end_ns);
        out.push((None, t, end));
        t = end;
    }
    out
}

/// The bucket of each sample (the latest-starting bucket holding it), by index.
fn bucket_of(
    samples: &[&MemorySample],
    buckets: &[(Option<i64>, TimeNs, TimeNs)],
) -> Vec<Option<u32>> {
    let mut out = vec![None; samples.len()];
    let mut from = 0;
    for (b, &(_, start, end)) in buckets.iter().enumerate() {
        from += samples[from..].partition_point(|m| m.ts_ns < start);
        let n = samples[from..].partition_point(|m| m.ts_ns < end);
        for slot in &mut out[from..from + n] {
            *slot = u32::try_from(b).ok();
        }
    }
    out
}

/// The summary of one device's `samples` (in time order) over `window`; `levels[i]` is the
/// allocated level after sample `i`, `peak` the index of the window's peak. Categories and
/// sites need every sample's address and absolute levels.
pub(crate) fn timeline(
    trace: &Trace,
    window: &AnalysisWindow,
    samples: &[&MemorySample],
    levels: &[i64],
    peak: usize,
    with_blocks: bool,
    alive_at: &[TimeNs],
) -> Timeline {
    let buckets = buckets(trace, window);
    let bucket = bucket_of(samples, &buckets);
    let steps_of = if window.has_steps() {
        bucket.clone()
    } else {
        vec![None; samples.len()]
    };
    let blocks = if with_blocks {
        memory_blocks::blocks(trace, samples, &steps_of, window.steps.len())
    } else {
        Vec::new()
    };
    // Which block each sample allocates or frees.
    let (mut alloc_at, mut free_at) = (
        vec![NOT_FREED; samples.len()],
        vec![NOT_FREED; samples.len()],
    );
    for (b, block) in blocks.iter().enumerate() {
        let b = u32::try_from(b).unwrap_or(NOT_FREED);
        alloc_at[block.alloc as usize] = b;
        if block.free != NOT_FREED {
            free_at[block.free as usize] = b;
        }
    }
    let mut points: Vec<MemoryPoint> = buckets
        .iter()
        .map(|&(step, start_ns, end_ns)| MemoryPoint {
            step,
            start_ns,
            end_ns,
            peak_allocated_bytes: i64::MIN,
            peak_reserved_bytes: None,
            end_allocated_bytes: 0,
            at_peak: None,
        })
        .collect();
    let mut cats = CategoryBytes::default();
    let mut at_window_peak = None;
    let (mut drops, mut drop_buckets) = (0u64, Vec::new());
    let w = window.interval;
    for (i, m) in samples.iter().enumerate() {
        if free_at[i] != NOT_FREED {
            let block = &blocks[free_at[i] as usize];
            memory_blocks::add(&mut cats, block.category, -block.bytes);
        }
        if alloc_at[i] != NOT_FREED {
            let block = &blocks[alloc_at[i] as usize];
            memory_blocks::add(&mut cats, block.category, block.bytes);
        }
        let with_before = |cats: &CategoryBytes| CategoryBytes {
            before_capture: levels[i].saturating_sub(
                CategoryBytes {
                    before_capture: 0,
                    ..*cats
                }
                .total(),
            ),
            ..*cats
        };
        if with_blocks && i == peak {
            at_window_peak = Some(with_before(&cats));
        }
        let inside = w.start_ns <= m.ts_ns && m.ts_ns < w.end_ns;
        if inside && i > 0 {
            if let (Some(r), Some(prev)) = (m.total_reserved, samples[i - 1].total_reserved) {
                if r < prev {
                    drops += 1;
                    drop_buckets.push(bucket[i]);
                }
            }
        }
        let Some(b) = bucket[i] else { continue };
        let p = &mut points[b as usize];
        if levels[i] > p.peak_allocated_bytes {
            p.peak_allocated_bytes = levels[i];
            p.at_peak = with_blocks.then(|| with_before(&cats));
        }
        if let Some(r) = m.total_reserved {
            p.peak_reserved_bytes = Some(p.peak_reserved_bytes.map_or(r, |x| x.max(r)));
        }
        p.end_allocated_bytes = levels[i];
    }
    drop_buckets.sort_unstable();
    drop_buckets.dedup();
    let composition = at_window_peak.map(|categories| PeakComposition {
        categories,
        sites: memory_blocks::sites(
            trace,
            blocks.iter().filter(|b| {
                b.alloc as usize <= peak && (b.free == NOT_FREED || b.free as usize > peak)
            }),
            SITES,
        ),
    });
    let growth = growth(trace, window, samples, &blocks, &points, &steps_of);
    let alive_at = alive_at
        .iter()
        .map(|&ts| {
            // Samples up to `ts` happened; a block is alive if allocated by then and not freed.
            let n = samples.partition_point(|m| m.ts_ns <= ts);
            memory_blocks::sites(
                trace,
                blocks.iter().filter(|b| {
                    (b.alloc as usize) < n && (b.free == NOT_FREED || b.free as usize >= n)
                }),
                SITES,
            )
        })
        .collect();
    points.retain(|p| p.peak_allocated_bytes != i64::MIN);
    Timeline {
        points,
        composition,
        growth,
        reserved_drops: drops,
        // Slices of a window without steps are not steps.
        reserved_drop_steps: if window.has_steps() {
            drop_buckets.iter().filter(|b| b.is_some()).count() as u64
        } else {
            0
        },
        alive_at,
    }
}

/// The growth of memory alive at step ends, from three steps on.
fn growth(
    trace: &Trace,
    window: &AnalysisWindow,
    samples: &[&MemorySample],
    blocks: &[Block],
    points: &[MemoryPoint],
    steps_of: &[Option<u32>],
) -> Option<Growth> {
    if !window.has_steps() || points.len() < 3 {
        return None;
    }
    // Steps without samples keep the level of the step before.
    let mut ends = Vec::with_capacity(points.len());
    let mut last = None;
    for p in points {
        if p.peak_allocated_bytes != i64::MIN {
            last = Some(p.end_allocated_bytes);
        }
        ends.push(last?);
    }
    let from = usize::from(ends.len() >= 4);
    let ys = &ends[from..];
    let n = ys.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().map(|&y| y as f64).sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, &y) in ys.iter().enumerate() {
        let dx = x as f64 - mean_x;
        sxy += dx * (y as f64 - mean_y);
        sxx += dx * dx;
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let last_step = u32::try_from(points.len() - 1).ok()?;
    let end = window.interval.end_ns;
    let kept = blocks.iter().filter(|b| {
        let step = steps_of[b.alloc as usize];
        let middle = step.is_some_and(|s| s >= 1 && s < last_step);
        middle && (b.free == NOT_FREED || samples[b.free as usize].ts_ns >= end)
    });
    let middle_steps = i64::from(last_step.saturating_sub(1)).max(1);
    let kept_bytes = kept
        .clone()
        .fold(0i64, |acc, b| acc.saturating_add(b.bytes));
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a byte slope is far below i64::MAX"
    )]
    let per_step_bytes = slope.round() as i64;
    Some(Growth {
        per_step_bytes,
        steps: u32::try_from(ys.len()).unwrap_or(u32::MAX),
        kept_bytes_per_step: kept_bytes / middle_steps,
        kept_sites: memory_blocks::sites(trace, kept, SITES),
    })
}
