//! The one-sentence verdict every renderer leads with.

use tracelens_analysis::{Diagnosis, Overview};
use tracelens_model::Trace;

/// Below this idle share the GPU is called the bottleneck.
const BUSY_ENOUGH_PERCENT: f64 = 5.0;

/// E.g. "GPU idle 38 % of each step, mostly waiting for the DataLoader".
pub fn verdict(trace: &Trace, overview: &Overview, diagnosis: &Diagnosis) -> String {
    if !overview.has_gpu_activity {
        return "No GPU activity in this trace: nothing to diagnose on the GPU side".into();
    }
    let per = if trace.steps.is_empty() {
        "of the profiled time"
    } else {
        "of each step"
    };
    let Some(dev) = diagnosis
        .idle
        .iter()
        .max_by_key(|d| d.idle_ns)
        .filter(|d| d.extent.is_some())
    else {
        return "The GPU work is too short to measure".into();
    };
    let total = dev.extent.map_or(0, |e| e.dur_ns());
    let idle_pct = if total > 0 {
        dev.idle_ns as f64 * 100.0 / total as f64
    } else {
        0.0
    };
    if idle_pct < BUSY_ENOUGH_PERCENT {
        return format!(
            "GPU busy {:.0} % {per}: the GPU itself is the bottleneck, look at kernel time",
            100.0 - idle_pct
        );
    }
    let (cause, ns) = dev
        .by_cause
        .iter()
        .max_by_key(|(_, &ns)| ns)
        .map(|(c, &ns)| (*c, ns))
        .unwrap_or(("unattributed", 0));
    let why = match cause {
        "data_loading" => "mostly waiting for the DataLoader",
        "sync_drain" => "mostly after host-blocking syncs drained its queue",
        "host_compute" => "mostly waiting for CPU work between launches",
        "launch_latency" => "mostly waiting for queued launches to start (launch overhead)",
        "cross_stream_wait" => "mostly waiting on work of other streams",
        _ => "mostly in time the trace cannot attribute",
    };
    let share = if dev.idle_ns > 0 {
        ns as f64 * 100.0 / dev.idle_ns as f64
    } else {
        0.0
    };
    let caveat = if dev.attribution_reliable {
        ""
    } else {
        " (graph replays: attribution unreliable)"
    };
    format!("GPU idle {idle_pct:.0} % {per}, {why} ({share:.0} % of the idle time){caveat}")
}
