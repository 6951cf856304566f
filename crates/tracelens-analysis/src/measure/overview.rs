//! The trace at a glance: span counts, steps, devices with busy/idle.

use crate::measure::utilization::DeviceUtilization;
use serde::Serialize;
use std::collections::BTreeMap;
use tracelens_model::{Interval, TimeNs, Trace};

/// The trace's `ProfilerStep#N` ranges in brief (the step figure every report shows is the
/// analysis window's, [`crate::measure::window::StepStats`]).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct StepSummary {
    /// Number of steps.
    pub count: usize,
    /// Step numbers, in order.
    pub numbers: Vec<i64>,
    /// Steps that have a GPU-side range.
    pub with_gpu_side: usize,
}

/// Everything `tracelens analyze` reports before diagnoses.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Overview {
    /// Spans per kind label (every kind listed).
    pub spans_by_kind: BTreeMap<String, u64>,
    /// Whether the trace holds any GPU work.
    pub has_gpu_activity: bool,
    /// CPU threads with spans.
    pub cpu_threads: usize,
    /// GPU streams with spans.
    pub gpu_streams: usize,
    /// Steps.
    pub steps: StepSummary,
    /// Per-device busy/idle.
    pub devices: Vec<DeviceUtilization>,
    /// Start of the first GPU op (0 without GPU work): the origin of the relative times the
    /// reports show.
    pub time_origin_ns: TimeNs,
}

/// Computes the overview of a trace.
#[must_use]
pub fn overview(trace: &Trace) -> Overview {
    let window = crate::measure::window::analysis_window(trace).map(|w| w.interval);
    overview_of(
        trace,
        &crate::measure::utilization::device_work(trace),
        window,
    )
}

/// Computes the overview from already collected device work, with busy/idle over the
/// analysis `window`.
#[must_use]
pub fn overview_of(
    trace: &Trace,
    works: &[crate::measure::utilization::DeviceWork],
    window: Option<Interval>,
) -> Overview {
    let spans_by_kind = trace
        .count_by_kind()
        .into_iter()
        .map(|(k, n)| (k.label().to_string(), n))
        .collect();
    let steps = StepSummary {
        count: trace.steps.len(),
        numbers: trace.steps.iter().map(|s| s.number).collect(),
        with_gpu_side: trace.steps.iter().filter(|s| s.gpu.is_some()).count(),
    };
    let gpu_streams = trace.lanes.iter().filter(|l| l.key.is_gpu()).count();
    Overview {
        spans_by_kind,
        has_gpu_activity: trace.has_gpu_activity(),
        // Threads with spans: a thread seen only in allocator samples is not counted.
        cpu_threads: trace
            .lanes
            .iter()
            .filter(|l| !l.key.is_gpu() && !l.spans.is_empty())
            .count(),
        gpu_streams,
        steps,
        devices: crate::measure::utilization::utilization_of(trace, works, window),
        time_origin_ns: time_origin(trace),
    }
}

/// Start of the first GPU op, the origin of the relative times reports show (0 without GPU
/// work).
#[must_use]
pub fn time_origin(trace: &Trace) -> TimeNs {
    trace
        .spans
        .iter()
        .filter(|s| s.kind.is_gpu_work())
        .map(|s| s.start_ns)
        .min()
        .unwrap_or(0)
}
