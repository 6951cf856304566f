//! GPU memory over the analysis window, from the allocator's `[memory]` samples: the peak
//! allocated and reserved bytes per device and per step, the operator running at the peak,
//! the allocations and frees, and the headroom against the device's memory.
//!
//! With `Total Allocated`/`Total Reserved` in the samples (PyTorch 1.10 and later) the peaks
//! are the allocator's own totals. Older traces record only each allocation's size: the
//! figure is then the growth from the first sample (memory allocated before the profiler
//! started is not seen), and says so.

use crate::measure::environment::Hardware;
use crate::measure::window::AnalysisWindow;
use serde::Serialize;
use tracelens_model::{MemoryDevice, SpanId, SpanKind, TimeNs, Trace};

/// How the peak was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakBasis {
    /// The allocator's running totals (`Total Allocated`, `Total Reserved`).
    AllocatorTotals,
    /// The sum of allocation sizes since the first sample: growth, not the absolute level.
    GrowthSinceFirstSample,
}

/// One step's peak.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct StepMemory {
    /// Step number.
    pub step: i64,
    /// Peak allocated bytes in the step.
    pub peak_allocated_bytes: i64,
}

/// One device's memory over the window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct DeviceMemory {
    /// The GPU index.
    pub device: i64,
    /// How the peaks were measured.
    pub basis: PeakBasis,
    /// Peak allocated bytes (tensors alive).
    pub peak_allocated_bytes: i64,
    /// Peak reserved bytes (held by the caching allocator), when recorded.
    pub peak_reserved_bytes: Option<i64>,
    /// When the allocated peak was reached.
    pub peak_at_ns: TimeNs,
    /// The outermost operator running on the allocating thread at the peak.
    pub peak_op: Option<String>,
    /// The device's memory, from the trace's device properties.
    pub capacity_bytes: Option<i64>,
    /// Allocations in the window.
    pub allocations: u64,
    /// Frees in the window.
    pub frees: u64,
    /// Bytes allocated in the window.
    pub allocated_bytes: i64,
    /// Peak per step (empty without steps).
    pub steps: Vec<StepMemory>,
    /// Reserved bytes at the allocated peak, when recorded: minus the peak, what the
    /// allocator holds but no tensor uses then.
    #[serde(default)]
    pub reserved_at_peak_bytes: Option<i64>,
    /// The level by category per step, or per slice of a window without steps.
    #[serde(default)]
    pub points: Vec<crate::views::memory_timeline::MemoryPoint>,
    /// What is alive at the peak and who allocated it (none without block addresses and
    /// allocator totals).
    #[serde(default)]
    pub composition: Option<crate::views::memory_timeline::PeakComposition>,
    /// The growth of memory alive at step ends (none under three steps).
    #[serde(default)]
    pub growth: Option<crate::views::memory_timeline::Growth>,
    /// Times the reserved total shrank in the window (the cache was emptied).
    #[serde(default)]
    pub reserved_drops: u64,
    /// Steps in which it shrank.
    #[serde(default)]
    pub reserved_drop_steps: u64,
    /// How much larger a batch would fit, an estimate (none without categories or capacity).
    #[serde(default)]
    pub batch_fit: Option<BatchFit>,
    /// What only a memory snapshot knows: the allocator's segments and failed requests
    /// (none for a profiler trace).
    #[serde(default)]
    pub allocator: Option<AllocatorSummary>,
}

/// The caching allocator's own state on one device, from a memory snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct AllocatorSummary {
    /// Segments (reservations from the driver) when the snapshot was taken.
    pub segments: u64,
    /// Of them, expandable.
    pub expandable_segments: u64,
    /// Bytes reserved in them.
    pub reserved_bytes: i64,
    /// Bytes allocated in them.
    pub allocated_bytes: i64,
    /// Bytes free inside them (reserved minus active).
    pub free_in_segments_bytes: i64,
    /// The largest free block: the largest request the cache serves without the driver.
    pub largest_free_block_bytes: i64,
    /// Free blocks.
    pub free_blocks: u64,
    /// `expandable_segments` as the snapshot's settings record it.
    pub expandable_setting: Option<bool>,
    /// Requests that failed, in time order.
    pub out_of_memory: Vec<OomSummary>,
}

/// One failed request.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct OomSummary {
    /// When.
    pub at_ns: TimeNs,
    /// Bytes requested.
    pub requested_bytes: i64,
    /// Free on the device then, as the driver said.
    pub device_free_bytes: Option<i64>,
    /// Allocated then (the level before it).
    pub allocated_bytes: i64,
    /// Reserved then.
    pub reserved_bytes: Option<i64>,
    /// Who allocated what was alive then, most bytes first.
    pub alive_sites: Vec<crate::views::memory_blocks::AllocationSite>,
}

impl AllocatorSummary {
    fn of(
        state: &tracelens_model::AllocatorState,
        device: i64,
        samples: &[&tracelens_model::MemorySample],
        levels: &[i64],
        oom_sites: Vec<Vec<crate::views::memory_blocks::AllocationSite>>,
    ) -> AllocatorSummary {
        let segs: Vec<_> = state
            .segments
            .iter()
            .filter(|s| s.device == device)
            .collect();
        let sum = |f: fn(&tracelens_model::SegmentState) -> i64| {
            segs.iter().fold(0i64, |acc, s| acc.saturating_add(f(s)))
        };
        let (reserved, active) = (sum(|s| s.total_bytes), sum(|s| s.active_bytes));
        let ooms = state.out_of_memory.iter().filter(|o| o.device == device);
        AllocatorSummary {
            segments: segs.len() as u64,
            expandable_segments: segs.iter().filter(|s| s.expandable).count() as u64,
            reserved_bytes: reserved,
            allocated_bytes: sum(|s| s.allocated_bytes),
            free_in_segments_bytes: reserved.saturating_sub(active).max(0),
            largest_free_block_bytes: segs
                .iter()
                .map(|s| s.largest_free_block_bytes)
                .max()
                .unwrap_or(0),
            free_blocks: segs.iter().map(|s| u64::from(s.free_blocks)).sum(),
            expandable_setting: state.expandable_segments,
            out_of_memory: ooms
                .zip(
                    oom_sites
                        .into_iter()
                        .chain(std::iter::repeat_with(Vec::new)),
                )
                .map(|(o, alive_sites)| {
                    let before = samples.partition_point(|m| m.ts_ns <= o.ts_ns);
                    let at = before.checked_sub(1);
                    OomSummary {
                        at_ns: o.ts_ns,
                        requested_bytes: o.requested_bytes,
                        device_free_bytes: o.device_free_bytes,
                        allocated_bytes: at.map_or(0, |i| levels[i]),
                        reserved_bytes: at.and_then(|i| samples[i].total_reserved),
                        alive_sites,
                    }
                })
                .collect(),
        }
    }
}

/// How much larger a batch would fit: an estimate from the peak's composition, assuming the
/// memory that scales with the batch (activations, temporaries, other intermediates) grows
/// linearly with it and the rest (weights, gradients, optimizer state, memory held before
/// the capture, the allocator's unused reserve at the peak) does not. The CUDA/HIP context
/// and other processes' memory are not in the trace and not counted.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct BatchFit {
    /// The batch could grow about this many times (below 1: the peak is already over).
    pub times: f64,
    /// Bytes at the peak that scale with the batch.
    pub scaling_bytes: i64,
    /// Bytes at the peak that do not.
    pub fixed_bytes: i64,
}

impl BatchFit {
    /// How much larger, in words: `about ×1.8`, or `more than ×10` (the estimate says no more).
    #[must_use]
    pub fn times_words(&self) -> String {
        if self.times >= 10.0 {
            "more than ×10".into()
        } else {
            format!("about ×{:.1}", self.times)
        }
    }

    fn estimate(m: &DeviceMemory) -> Option<BatchFit> {
        let cap = m.capacity_bytes.filter(|&c| c > 0)?;
        let c = &m.composition.as_ref()?.categories;
        let scaling = c.scaling();
        let slack = m
            .reserved_at_peak_bytes
            .map_or(0, |r| r.saturating_sub(m.peak_allocated_bytes).max(0));
        let fixed = c.total().saturating_sub(scaling).saturating_add(slack);
        (scaling > 0).then(|| BatchFit {
            times: (cap.saturating_sub(fixed) as f64 / scaling as f64).max(0.0),
            scaling_bytes: scaling,
            fixed_bytes: fixed,
        })
    }
}

impl DeviceMemory {
    /// The highest of the peaks that holds memory on the device: reserved when recorded,
    /// else allocated.
    #[must_use]
    pub fn peak_held_bytes(&self) -> i64 {
        self.peak_reserved_bytes
            .unwrap_or(self.peak_allocated_bytes)
            .max(self.peak_allocated_bytes)
    }

    /// The peak as a share of the device's memory, in percent, when both are known and the
    /// peak is absolute.
    #[must_use]
    pub fn peak_percent(&self) -> Option<f64> {
        let cap = self.capacity_bytes.filter(|&c| c > 0)?;
        (self.basis == PeakBasis::AllocatorTotals)
            .then(|| (self.peak_held_bytes() as f64 * 100.0 / cap as f64).clamp(0.0, 100.0))
    }

    /// How many times the peak fits in the device's memory (1.8 = the work could grow by
    /// about 80 %), when the peak is absolute.
    #[must_use]
    pub fn fits_times(&self) -> Option<f64> {
        let cap = self.capacity_bytes.filter(|&c| c > 0)?;
        let peak = self.peak_held_bytes();
        (self.basis == PeakBasis::AllocatorTotals && peak > 0).then(|| cap as f64 / peak as f64)
    }
}

/// `fix` with what the trace says about room for a larger batch, when it advises raising the
/// batch size: the peak held against the device's memory ("about ×1.8 fits"), or that the
/// peak is near the limit; unchanged without allocator totals.
#[must_use]
pub fn fit_batch_advice(fix: &str, memory: &[DeviceMemory], hw: &Hardware) -> String {
    // text, not a trace name
    if !fix.to_lowercase().contains("batch size") {
        return fix.to_string();
    }
    let Some(m) = memory
        .iter()
        .filter(|m| m.basis == PeakBasis::AllocatorTotals)
        .max_by_key(|m| m.peak_held_bytes())
    else {
        return fix.to_string();
    };
    let (Some(cap), Some(fits)) = (m.capacity_bytes, m.fits_times()) else {
        return fix.to_string();
    };
    let gb = |b: i64| b as f64 / 1e9;
    // With categories, the batch estimate the memory section shows; else the peak's room.
    let room = m.batch_fit.as_ref().map_or(fits, |f| f.times);
    let note = if room >= 1.25 {
        match &m.batch_fit {
            Some(f) => format!(
                " Memory allows it: GPU {} peaks at {:.1} of {:.1} GB held, and the batch could grow {} (an estimate: {} at the peak grows with the batch, {} does not; see the memory section).",
                m.device,
                gb(m.peak_held_bytes()),
                gb(cap),
                f.times_words(),
                tracelens_model::format_bytes(f.scaling_bytes),
                tracelens_model::format_bytes(f.fixed_bytes)
            ),
            None => format!(
                " Memory allows it: GPU {} peaks at {:.1} of {:.1} GB held, so the step's peak could grow about ×{:.1} (activations grow with the batch; weights and optimizer state do not).",
                m.device,
                gb(m.peak_held_bytes()),
                gb(cap),
                fits
            ),
        }
    } else {
        // Half-precision activations halve their memory; bf16 only where the GPU runs it.
        let half = if hw.has_bf16() == Some(true) {
            "bf16"
        } else {
            "fp16"
        };
        format!(
            " Memory is tight: GPU {} peaks at {:.1} of {:.1} GB held; make room first (activation checkpointing with torch.utils.checkpoint, {half} activations under torch.autocast) or raise the batch size with gradient accumulation instead.",
            m.device,
            gb(m.peak_held_bytes()),
            gb(cap)
        )
    };
    format!("{}{note}", fix.trim_end())
}

/// GPU memory per device over `window`, largest peak first; empty when the trace has no GPU
/// memory samples in it.
#[must_use]
pub fn device_memory(trace: &Trace, window: &AnalysisWindow) -> Vec<DeviceMemory> {
    let w = window.interval;
    let mut devices: Vec<i64> = trace
        .memory
        .iter()
        .filter_map(|m| match m.device {
            MemoryDevice::Gpu(d) => Some(d),
            _ => None,
        })
        .collect();
    devices.sort_unstable();
    devices.dedup();
    let mut out: Vec<DeviceMemory> = devices
        .into_iter()
        .filter_map(|device| one_device(trace, window, w, device))
        .collect();
    out.sort_by_key(|d| std::cmp::Reverse(d.peak_allocated_bytes));
    out
}

fn one_device(
    trace: &Trace,
    window: &AnalysisWindow,
    w: tracelens_model::Interval,
    device: i64,
) -> Option<DeviceMemory> {
    let samples = gpu_samples(trace, device);
    let absolute = samples.iter().all(|m| m.total_allocated.is_some());
    let basis = if absolute {
        PeakBasis::AllocatorTotals
    } else {
        PeakBasis::GrowthSinceFirstSample
    };
    let levels = allocated_levels(&samples, absolute);
    let inside = |ts: TimeNs| w.start_ns <= ts && ts < w.end_ns;
    let mut peak: Option<(i64, usize)> = None;
    let mut peak_reserved: Option<i64> = None;
    let (mut allocations, mut frees, mut allocated_bytes) = (0u64, 0u64, 0i64);
    for (i, m) in samples.iter().enumerate() {
        if !inside(m.ts_ns) {
            continue;
        }
        if peak.is_none_or(|(p, _)| levels[i] > p) {
            peak = Some((levels[i], i));
        }
        if let Some(r) = m.total_reserved {
            peak_reserved = Some(peak_reserved.map_or(r, |p: i64| p.max(r)));
        }
        if m.bytes > 0 {
            allocations += 1;
            allocated_bytes = allocated_bytes.saturating_add(m.bytes);
        } else if m.bytes < 0 {
            frees += 1;
        }
    }
    let (peak_allocated_bytes, at) = peak?;
    let sample = samples[at];
    let with_blocks = absolute && samples.iter().all(|m| m.addr.is_some());
    let oom_at: Vec<TimeNs> = trace.allocator.as_ref().map_or_else(Vec::new, |a| {
        a.out_of_memory
            .iter()
            .filter(|o| o.device == device)
            .map(|o| o.ts_ns)
            .collect()
    });
    let t = crate::views::memory_timeline::timeline(
        trace,
        window,
        &samples,
        &levels,
        at,
        with_blocks,
        &oom_at,
    );
    let allocator = trace
        .allocator
        .as_ref()
        .map(|a| AllocatorSummary::of(a, device, &samples, &levels, t.alive_at.clone()));
    let mut out = DeviceMemory {
        device,
        basis,
        peak_allocated_bytes,
        peak_reserved_bytes: peak_reserved.filter(|_| absolute),
        peak_at_ns: sample.ts_ns,
        peak_op: op_at(trace, sample.lane, sample.ts_ns),
        capacity_bytes: trace
            .metadata
            .device_properties
            .iter()
            .find(|p| p.id == device)
            .and_then(|p| p.total_global_mem_bytes)
            .and_then(|b| i64::try_from(b).ok()),
        allocations,
        frees,
        allocated_bytes,
        // The step peaks are the chart's: steps as the host ran them (the allocator's side).
        steps: t
            .points
            .iter()
            .filter_map(|p| {
                Some(StepMemory {
                    step: p.step?,
                    peak_allocated_bytes: p.peak_allocated_bytes,
                })
            })
            .collect(),
        reserved_at_peak_bytes: sample.total_reserved.filter(|_| absolute),
        points: t.points,
        composition: t.composition,
        growth: t.growth,
        reserved_drops: t.reserved_drops,
        reserved_drop_steps: t.reserved_drop_steps,
        batch_fit: None,
        allocator,
    };
    out.batch_fit = BatchFit::estimate(&out);
    Some(out)
}

/// The allocated level after each of one device's `samples` (in time order): the running sum
/// of their sizes, from the first sample's total minus its own size when the trace has the
/// allocator's totals (`absolute`), else from zero (growth since the first sample).
#[must_use]
pub fn allocated_levels(samples: &[&tracelens_model::MemorySample], absolute: bool) -> Vec<i64> {
    let base = samples
        .first()
        .filter(|_| absolute)
        .and_then(|m| m.total_allocated.map(|t| t.saturating_sub(m.bytes)))
        .unwrap_or(0);
    let mut running = base;
    samples
        .iter()
        .map(|m| {
            running = running.saturating_add(m.bytes);
            running
        })
        .collect()
}

/// One GPU's samples, in time order.
#[must_use]
pub fn gpu_samples(trace: &Trace, device: i64) -> Vec<&tracelens_model::MemorySample> {
    trace
        .memory
        .iter()
        .filter(|m| m.device == MemoryDevice::Gpu(device))
        .collect()
}

/// The outermost CPU operator running on `lane` at `ts` (`aten::conv2d`, not the
/// `aten::empty` inside it that made the allocation): of the last span that starts by then
/// and its enclosing spans, the outermost operator still running.
fn op_at(trace: &Trace, lane: tracelens_model::LaneId, ts: TimeNs) -> Option<String> {
    let range = trace.lane(lane).spans.clone();
    let (first, end) = (range.start as usize, range.end as usize);
    let on_lane = trace.spans.get(first..end)?;
    let at = on_lane.partition_point(|s| s.start_ns <= ts);
    let last = SpanId::at(first + at.checked_sub(1)?);
    std::iter::once(last)
        .chain(trace.ancestors(last))
        .filter(|&a| {
            let s = trace.span(a);
            s.kind == SpanKind::CpuOp && s.start_ns + s.dur_ns >= ts
        })
        .last()
        .map(|id| trace.name(id).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(
        peak: i64,
        reserved: Option<i64>,
        cap: Option<i64>,
        basis: PeakBasis,
    ) -> DeviceMemory {
        DeviceMemory {
            device: 0,
            basis,
            peak_allocated_bytes: peak,
            peak_reserved_bytes: reserved,
            peak_at_ns: 0,
            peak_op: None,
            capacity_bytes: cap,
            allocations: 1,
            frees: 0,
            allocated_bytes: peak,
            steps: Vec::new(),
            reserved_at_peak_bytes: reserved,
            points: Vec::new(),
            composition: None,
            growth: None,
            reserved_drops: 0,
            reserved_drop_steps: 0,
            batch_fit: None,
            allocator: None,
        }
    }

    #[test]
    fn batch_advice_says_whether_memory_allows_it() {
        let fix = "Raise the batch size so each kernel does more work.";
        let v100 = Hardware {
            name: Some("Tesla V100-SXM2-16GB".into()),
            vendor: crate::measure::environment::Vendor::Nvidia,
            compute: Some((7, 0)),
            ..Hardware::default()
        };
        let h100 = Hardware {
            name: Some("NVIDIA H100 80GB HBM3".into()),
            vendor: crate::measure::environment::Vendor::Nvidia,
            compute: Some((9, 0)),
            ..Hardware::default()
        };
        let roomy = device(
            4_000_000_000,
            Some(5_000_000_000),
            Some(10_000_000_000),
            PeakBasis::AllocatorTotals,
        );
        let out = fit_batch_advice(fix, &[roomy], &h100);
        assert!(
            out.contains("peaks at 5.0 of 10.0 GB held") && out.contains("×2.0"),
            "{out}"
        );
        let tight = device(
            9_000_000_000,
            Some(9_500_000_000),
            Some(10_000_000_000),
            PeakBasis::AllocatorTotals,
        );
        let on_v100 = fit_batch_advice(fix, std::slice::from_ref(&tight), &v100);
        assert!(on_v100.contains("Memory is tight"), "{on_v100}");
        // Advice names only the precisions the GPU has: no bf16 on a V100.
        assert!(
            on_v100.contains("fp16") && !on_v100.contains("bf16"),
            "{on_v100}"
        );
        assert!(fit_batch_advice(fix, &[tight], &h100).contains("bf16 activations"));
        // Growth only, no capacity, or no batch advice: unchanged.
        let growth = device(
            4_000_000_000,
            None,
            Some(10_000_000_000),
            PeakBasis::GrowthSinceFirstSample,
        );
        assert_eq!(fit_batch_advice(fix, &[growth], &h100), fix);
        let unknown = device(4_000_000_000, None, None, PeakBasis::AllocatorTotals);
        assert_eq!(
            fit_batch_advice(fix, std::slice::from_ref(&unknown), &h100),
            fix
        );
        assert_eq!(
            fit_batch_advice("Pin the host buffer.", &[unknown], &h100),
            "Pin the host buffer."
        );
    }
}
