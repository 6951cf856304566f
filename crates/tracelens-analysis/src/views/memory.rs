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
    let note = if fits >= 1.25 {
        format!(
            " Memory allows it: GPU {} peaks at {:.1} of {:.1} GB held, so the step's peak could grow about ×{:.1} (activations grow with the batch; weights and optimizer state do not).",
            m.device,
            gb(m.peak_held_bytes()),
            gb(cap),
            fits
        )
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
    let samples: Vec<_> = trace
        .memory
        .iter()
        .filter(|m| m.device == MemoryDevice::Gpu(device))
        .collect();
    let absolute = samples.iter().all(|m| m.total_allocated.is_some());
    let basis = if absolute {
        PeakBasis::AllocatorTotals
    } else {
        PeakBasis::GrowthSinceFirstSample
    };
    // The level after each sample: the allocator's total, or the running sum.
    let mut running = 0i64;
    let levels: Vec<i64> = samples
        .iter()
        .map(|m| {
            running = running.saturating_add(m.bytes);
            m.total_allocated.filter(|_| absolute).unwrap_or(running)
        })
        .collect();
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
    // Samples and steps are both in time order: one pass over each.
    let mut steps = Vec::with_capacity(window.steps.len());
    let mut from = 0;
    for s in &window.steps {
        from += samples[from..].partition_point(|m| m.ts_ns < s.interval.start_ns);
        let n = samples[from..].partition_point(|m| m.ts_ns < s.interval.end_ns);
        if let Some(&peak) = levels[from..from + n].iter().max() {
            steps.push(StepMemory {
                step: s.number,
                peak_allocated_bytes: peak,
            });
        }
    }
    Some(DeviceMemory {
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
        steps,
    })
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
