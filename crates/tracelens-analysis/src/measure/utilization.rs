//! GPU busy and idle time per device.
//!
//! Two figures, named apart:
//! - over the [analysis window](crate::measure::window) (the one every report figure uses): busy =
//!   union of the kernel, memcpy and memset intervals clipped to the window; idle = window
//!   length − busy, so idle before the first and after the last op of a step counts;
//! - `first_to_last_op`, AMD TraceLens `gpu_timeline.csv`'s definition: the same union, but
//!   total = last GPU op end − first GPU op start after clipping every op to the hull of the
//!   GPU-side `ProfilerStep#N` ranges (or, when the trace has none, the CPU-side ones).

use crate::measure::intervals::union_sorted_ns;
use serde::Serialize;
use tracelens_model::{Interval, SpanId, SpanKind, TimeNs, Trace};

/// Which window a measurement covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// The analysis window ([`crate::measure::window::AnalysisWindow`]); total = its length.
    AnalysisWindow,
    /// First to last GPU op of the device.
    WholeTrace,
    /// Hull of the GPU-side `ProfilerStep#N` ranges (`gpu_user_annotation`).
    GpuProfilerSteps,
    /// Hull of the CPU-side `ProfilerStep#N` ranges (no GPU-side ones in the trace).
    CpuProfilerSteps,
}

/// Busy and idle time of one device over one window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct BusyIdle {
    /// What the window is.
    pub window_source: WindowSource,
    /// The clipping window (for whole-trace: the device's GPU extent).
    pub window: Interval,
    /// The measured total: the window length for the analysis window, else last GPU op end −
    /// first GPU op start after clipping.
    pub total_ns: TimeNs,
    /// Union of kernel ∪ memcpy ∪ memset.
    pub busy_ns: TimeNs,
    /// `total_ns − busy_ns`.
    pub idle_ns: TimeNs,
    /// `busy / total` in percent (0 when total is 0).
    pub busy_percent: f64,
    /// Union of kernels alone.
    pub kernel_ns: TimeNs,
    /// Union of copies alone.
    pub memcpy_ns: TimeNs,
    /// Union of fills alone.
    pub memset_ns: TimeNs,
}

/// Utilization of one GPU device.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct DeviceUtilization {
    /// Device index.
    pub device: i64,
    /// Device name, when known.
    pub name: Option<String>,
    /// Stream ids with activity.
    pub streams: Vec<i64>,
    /// Processes that launched work on the device.
    pub processes: Vec<i64>,
    /// Kernels, copies and fills on the device.
    pub gpu_ops: u64,
    /// Over the analysis window: the figure every report shows.
    pub window: Option<BusyIdle>,
    /// AMD TraceLens-compatible: first to last GPU op, clipped to the GPU-side steps when the
    /// trace has them (else the CPU-side ones, else unclipped).
    pub first_to_last_op: Option<BusyIdle>,
}

/// One GPU op: kind, interval, span.
pub type GpuOp = (SpanKind, Interval, SpanId);

/// The GPU work of one device and the step window its measurements clip to.
#[derive(Clone, Debug)]
pub struct DeviceWork {
    /// Device index.
    pub device: i64,
    /// Kernels, copies and fills: kind, interval, span; sorted by start (then end, span).
    pub ops: Vec<GpuOp>,
    /// The step window, when the trace has steps.
    pub step_window: Option<(Interval, WindowSource)>,
}

impl DeviceWork {
    /// The ops clipped to `window`, still sorted by start: a slice of [`DeviceWork::ops`]
    /// when no op crosses the window's edges (a window from the first to the last op), a
    /// clipped copy otherwise.
    #[must_use]
    pub fn ops_in(&self, window: Interval) -> std::borrow::Cow<'_, [GpuOp]> {
        let lo = self.ops.partition_point(|o| o.1.start_ns < window.start_ns);
        let hi = self.ops.partition_point(|o| o.1.start_ns < window.end_ns);
        let inside = &self.ops[lo..hi];
        let before_all_end_before = self.ops[..lo]
            .iter()
            .all(|o| clip_one(o.1, window).is_none());
        if before_all_end_before && inside.iter().all(|o| clip_one(o.1, window) == Some(o.1)) {
            std::borrow::Cow::Borrowed(inside)
        } else {
            std::borrow::Cow::Owned(clip_ops(&self.ops, Some(window)))
        }
    }

    /// The TraceLens clipping window (steps when present, else none = whole trace) and its
    /// source.
    #[must_use]
    pub fn tracelens_window(&self) -> (Option<Interval>, WindowSource) {
        match self.step_window {
            Some((w, src)) => (Some(w), src),
            None => (None, WindowSource::WholeTrace),
        }
    }
}

/// Collects each device's GPU work and step window.
#[must_use]
pub fn device_work(trace: &Trace) -> Vec<DeviceWork> {
    let any_gpu_steps = trace.steps.iter().any(|s| s.gpu.is_some());
    trace
        .devices
        .iter()
        .map(|device| {
            // Counted first: the list is made at its size, not doubled up to it.
            let count = device
                .lanes
                .iter()
                .flat_map(|&lane| trace.lane_span_ids(lane))
                .filter(|&id| trace.span(id).kind.is_gpu_work())
                .count();
            let mut ops = Vec::with_capacity(count);
            let mut step_window: Option<Interval> = None;
            for id in trace.spans_by_start(device.lanes.iter().copied()) {
                let s = trace.span(id);
                if s.kind.is_gpu_work() {
                    ops.push((s.kind, s.interval(), id));
                } else if s.kind == SpanKind::GpuUserAnnotation && trace.is_step_span(id) {
                    step_window = Some(step_window.map_or(s.interval(), |w| w.hull(s.interval())));
                }
            }
            let step_window = match step_window {
                Some(w) => Some((w, WindowSource::GpuProfilerSteps)),
                None if any_gpu_steps => {
                    gpu_steps_hull(trace).map(|w| (w, WindowSource::GpuProfilerSteps))
                }
                None => cpu_steps_hull(trace).map(|w| (w, WindowSource::CpuProfilerSteps)),
            };
            // In time order from here on: clipping keeps the order, so every later union, gap
            // search and stretch walk reads the ops without sorting again. The merge gave
            // start order; ops starting together go by end, then id.
            for same_start in ops.chunk_by_mut(|a, b| a.1.start_ns == b.1.start_ns) {
                if same_start.len() > 1 {
                    same_start.sort_unstable_by_key(|&(_, iv, id)| (iv.end_ns, id));
                }
            }
            debug_assert!(ops.is_sorted_by_key(|&(_, iv, id)| (iv.start_ns, iv.end_ns, id)));
            DeviceWork {
                device: device.index,
                ops,
                step_window,
            }
        })
        .collect()
}

/// The part of `iv` inside `w`; a zero-length op strictly inside still counts.
fn clip_one(iv: Interval, w: Interval) -> Option<Interval> {
    iv.clip(w).or_else(|| {
        (iv.dur_ns() == 0 && iv.start_ns > w.start_ns && iv.start_ns < w.end_ns).then_some(iv)
    })
}

/// Clips ops to `window` as the measurements do, keeping their order: an op keeps its part
/// inside the window, and a zero-length op strictly inside still marks the extent.
#[must_use]
pub fn clip_ops(ops: &[GpuOp], window: Option<Interval>) -> Vec<GpuOp> {
    ops.iter()
        .filter_map(|&(k, iv, id)| match window {
            None => Some((k, iv, id)),
            Some(w) => clip_one(iv, w).map(|c| (k, c, id)),
        })
        .collect()
}

/// Busy/idle for every device of the trace.
#[must_use]
pub fn device_utilization(trace: &Trace) -> Vec<DeviceUtilization> {
    let window = crate::measure::window::analysis_window(trace).map(|w| w.interval);
    utilization_of(trace, &device_work(trace), window)
}

/// Busy/idle from already collected device work, over the analysis `window`.
#[must_use]
pub fn utilization_of(
    trace: &Trace,
    works: &[DeviceWork],
    window: Option<Interval>,
) -> Vec<DeviceUtilization> {
    works
        .iter()
        .zip(&trace.devices)
        .map(|(work, device)| DeviceUtilization {
            device: device.index,
            name: device.name.clone(),
            streams: device.streams.clone(),
            processes: device.processes.clone(),
            gpu_ops: work.ops.len() as u64,
            window: window.and_then(|w| measure_window(&work.ops, w)),
            first_to_last_op: {
                let (w, src) = work.tracelens_window();
                measure(&work.ops, w, src)
            },
        })
        .collect()
}

fn gpu_steps_hull(trace: &Trace) -> Option<Interval> {
    trace
        .steps
        .iter()
        .filter_map(|s| s.gpu)
        .reduce(|a, b| a.hull(b))
}

fn cpu_steps_hull(trace: &Trace) -> Option<Interval> {
    trace
        .steps
        .iter()
        .filter_map(|s| s.cpu)
        .reduce(|a, b| a.hull(b))
}

/// Busy/idle of `work` (sorted by start) over the analysis `window`: total = its length;
/// `None` when no op falls inside.
#[must_use]
pub fn measure_window(work: &[GpuOp], window: Interval) -> Option<BusyIdle> {
    let mut b = measure(work, Some(window), WindowSource::AnalysisWindow)?;
    b.total_ns = window.dur_ns();
    b.idle_ns = b.total_ns - b.busy_ns;
    b.busy_percent = crate::num::percent(b.busy_ns, b.total_ns);
    Some(b)
}

/// Busy/idle of `work` (sorted by start) clipped to `window` (or unclipped), from the first
/// to the last op (TraceLens).
#[must_use]
pub fn measure(
    work: &[GpuOp],
    window: Option<Interval>,
    window_source: WindowSource,
) -> Option<BusyIdle> {
    debug_assert!(work.windows(2).all(|p| p[0].1.start_ns <= p[1].1.start_ns));
    // `work` is sorted by start and clipping keeps that order, so every union below is a
    // linear merge, counted as it goes (no clipped copy, no union kept).
    let clipped = || {
        work.iter().filter_map(move |&(k, iv, _)| match window {
            None => Some((k, iv)),
            Some(w) => clip_one(iv, w).map(|c| (k, c)),
        })
    };
    let first = clipped().next()?.1.start_ns;
    let last = clipped().map(|(_, iv)| iv.end_ns).max()?;
    let of = |pred: &dyn Fn(SpanKind) -> bool| {
        union_sorted_ns(clipped().filter(|(k, _)| pred(*k)).map(|(_, iv)| iv))
    };
    let busy_ns = of(&|_| true);
    let total_ns = last - first;
    Some(BusyIdle {
        window_source,
        window: window.unwrap_or(Interval::new(first, last)),
        total_ns,
        busy_ns,
        idle_ns: total_ns - busy_ns,
        busy_percent: crate::num::percent(busy_ns, total_ns),
        kernel_ns: of(&|k| k == SpanKind::Kernel),
        memcpy_ns: of(&|k| k == SpanKind::Memcpy),
        memset_ns: of(&|k| k == SpanKind::Memset),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_drops_work_outside_the_window_and_shrinks_total() {
        let work = vec![
            (SpanKind::Kernel, Interval::new(0, 100), SpanId(0)),
            (SpanKind::Kernel, Interval::new(150, 250), SpanId(1)),
            (SpanKind::Memcpy, Interval::new(200, 300), SpanId(2)),
        ];
        let whole = measure(&work, None, WindowSource::WholeTrace).unwrap();
        assert_eq!(
            (whole.total_ns, whole.busy_ns, whole.idle_ns),
            (300, 250, 50)
        );
        assert_eq!((whole.kernel_ns, whole.memcpy_ns), (200, 100));
        let steps = measure(
            &work,
            Some(Interval::new(120, 280)),
            WindowSource::GpuProfilerSteps,
        )
        .unwrap();
        assert_eq!(
            (steps.total_ns, steps.busy_ns, steps.idle_ns),
            (130, 130, 0)
        );
        assert!(measure(
            &work,
            Some(Interval::new(400, 500)),
            WindowSource::GpuProfilerSteps
        )
        .is_none());
    }
}
