//! The trace at a glance: span counts, steps, devices with busy/idle.

use crate::utilization::DeviceUtilization;
use serde::Serialize;
use std::collections::BTreeMap;
use tracelens_model::{TimeNs, Trace};

/// Profiler steps in brief.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StepSummary {
    /// Number of steps.
    pub count: usize,
    /// Step numbers, in order.
    pub numbers: Vec<i64>,
    /// Steps that have a GPU-side range.
    pub with_gpu_side: usize,
    /// Mean CPU-side step duration.
    pub cpu_mean_ns: Option<TimeNs>,
    /// Shortest CPU-side step.
    pub cpu_min_ns: Option<TimeNs>,
    /// Longest CPU-side step.
    pub cpu_max_ns: Option<TimeNs>,
}

/// Everything `tracelens analyze` reports before diagnoses.
#[derive(Clone, Debug, Serialize)]
pub struct Overview {
    /// Spans per kind label (every kind listed).
    pub spans_by_kind: BTreeMap<&'static str, u64>,
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
}

/// Computes the overview of a trace.
pub fn overview(trace: &Trace) -> Overview {
    overview_of(trace, &crate::utilization::device_work(trace))
}

/// Computes the overview from already collected device work.
pub fn overview_of(trace: &Trace, works: &[crate::utilization::DeviceWork]) -> Overview {
    let spans_by_kind = trace
        .count_by_kind()
        .into_iter()
        .map(|(k, n)| (k.label(), n))
        .collect();
    let durations: Vec<TimeNs> = trace
        .steps
        .iter()
        .filter_map(|s| s.cpu.map(|c| c.dur_ns()))
        .collect();
    let steps = StepSummary {
        count: trace.steps.len(),
        numbers: trace.steps.iter().map(|s| s.number).collect(),
        with_gpu_side: trace.steps.iter().filter(|s| s.gpu.is_some()).count(),
        cpu_mean_ns: (!durations.is_empty())
            .then(|| durations.iter().sum::<TimeNs>() / durations.len() as TimeNs),
        cpu_min_ns: durations.iter().copied().min(),
        cpu_max_ns: durations.iter().copied().max(),
    };
    let gpu_streams = trace.lanes.iter().filter(|l| l.key.is_gpu()).count();
    Overview {
        spans_by_kind,
        has_gpu_activity: trace.has_gpu_activity(),
        cpu_threads: trace.lanes.len() - gpu_streams,
        gpu_streams,
        steps,
        devices: crate::utilization::utilization_of(trace, works),
    }
}
