//! Launch-bound stretches: runs of kernels shorter than their launch calls, with the GPU
//! starving between them (HTA's "short kernels": launch ≤ 50 µs and GPU time < launch time).

use crate::idle::{DeviceIdle, IdleCause};
use crate::utilization::{DeviceWork, GpuOp};
use serde::Serialize;
use tracelens_model::{Interval, SpanKind, TimeNs, Trace, NS_PER_US};

/// A launch call at most this long can be a "short kernel" launch.
pub const SHORT_LAUNCH_MAX_NS: TimeNs = 50 * NS_PER_US;
/// A stretch needs at least this many consecutive short kernels.
pub const MIN_STRETCH_KERNELS: usize = 10;

/// One run of consecutive short kernels.
#[derive(Clone, Debug, Serialize)]
pub struct LaunchStretch {
    /// Device index.
    pub device: i64,
    /// First kernel start to last kernel end.
    pub interval: Interval,
    /// Kernels in the run.
    pub kernels: u64,
    /// Mean kernel duration.
    pub mean_kernel_ns: TimeNs,
    /// Mean launch-call duration.
    pub mean_launch_ns: TimeNs,
    /// GPU idle inside the run caused by launch latency and host work.
    pub starving_idle_ns: TimeNs,
    /// Mean number of launched-but-not-started GPU ops when each kernel was launched
    /// (0 means the CPU was not ahead of the GPU at all).
    pub mean_queue_depth: f64,
}

/// Launch statistics of the trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LaunchReport {
    /// Kernels with a launch call in the measured window.
    pub kernels_with_launch: u64,
    /// Of those, short kernels.
    pub short_kernels: u64,
    /// Stretches, largest starving idle first (at most 5 kept).
    pub stretches: Vec<LaunchStretch>,
    /// Number of stretches found.
    pub stretch_count: u64,
    /// Starving idle over all stretches.
    pub stretch_idle_ns: TimeNs,
    /// Kernels in all stretches.
    pub stretch_kernels: u64,
    /// Graph launches (one launch call, many GPU ops).
    pub graph_launches: u64,
}

/// Finds launch-bound stretches on every device; `headline` holds each device's
/// [`crate::utilization::DeviceWork::headline_ops`].
pub fn launch_report(
    trace: &Trace,
    works: &[DeviceWork],
    headline: &[Vec<GpuOp>],
    idle: &[DeviceIdle],
) -> LaunchReport {
    let mut report = LaunchReport {
        graph_launches: trace.links.graph_launches,
        ..LaunchReport::default()
    };
    let mut stretches = Vec::new();
    for ((work, ops), dev_idle) in works.iter().zip(headline).zip(idle) {
        // Queue depth bookkeeping over every linked op of the device.
        let mut launch_starts: Vec<TimeNs> = Vec::new();
        let mut op_starts: Vec<TimeNs> = Vec::new();
        for &(_, iv, id) in ops.iter() {
            if let Some(l) = trace.launch_of(id) {
                launch_starts.push(trace.span(l).start_ns);
                op_starts.push(iv.start_ns);
            }
        }
        launch_starts.sort_unstable();
        // `ops` is sorted by start, so `op_starts` already is.
        let depth = |t: TimeNs| {
            let launched = launch_starts.partition_point(|&x| x <= t);
            let started = op_starts.partition_point(|&x| x <= t);
            launched.saturating_sub(started)
        };
        let mut run: Vec<(Interval, TimeNs, TimeNs, usize)> = Vec::new();
        let mut flush = |run: &mut Vec<(Interval, TimeNs, TimeNs, usize)>| {
            if run.len() >= MIN_STRETCH_KERNELS {
                let interval = Interval::new(
                    run[0].0.start_ns,
                    run.iter().map(|r| r.0.end_ns).max().unwrap_or(0),
                );
                let n = run.len() as i64;
                stretches.push(LaunchStretch {
                    device: work.device,
                    interval,
                    kernels: run.len() as u64,
                    mean_kernel_ns: run.iter().map(|r| r.1).sum::<TimeNs>() / n,
                    mean_launch_ns: run.iter().map(|r| r.2).sum::<TimeNs>() / n,
                    starving_idle_ns: starving_idle(dev_idle, interval),
                    mean_queue_depth: run.iter().map(|r| r.3 as f64).sum::<f64>() / n as f64,
                });
            }
            run.clear();
        };
        for &(kind, iv, id) in ops.iter() {
            if kind != SpanKind::Kernel {
                continue;
            }
            let Some(l) = trace.launch_of(id) else {
                flush(&mut run);
                continue;
            };
            report.kernels_with_launch += 1;
            let api = trace.span(l);
            let short = api.kind.is_api_call()
                && api.dur_ns <= SHORT_LAUNCH_MAX_NS
                && iv.dur_ns() < api.dur_ns
                && trace.launched_by(l).len() <= 1;
            if short {
                report.short_kernels += 1;
                run.push((
                    iv,
                    iv.dur_ns(),
                    api.dur_ns,
                    depth(api.start_ns).saturating_sub(1),
                ));
            } else {
                flush(&mut run);
            }
        }
        flush(&mut run);
    }
    report.stretch_count = stretches.len() as u64;
    report.stretch_idle_ns = stretches.iter().map(|s| s.starving_idle_ns).sum();
    report.stretch_kernels = stretches.iter().map(|s| s.kernels).sum();
    stretches.sort_by(|a, b| {
        b.starving_idle_ns
            .cmp(&a.starving_idle_ns)
            .then(a.interval.cmp(&b.interval))
    });
    stretches.truncate(5);
    report.stretches = stretches;
    report
}

/// Launch-latency and host-compute idle inside `window`.
fn starving_idle(idle: &DeviceIdle, window: Interval) -> TimeNs {
    let first = idle
        .gaps
        .partition_point(|g| g.interval.end_ns <= window.start_ns);
    idle.gaps[first..]
        .iter()
        .take_while(|g| g.interval.start_ns < window.end_ns)
        .flat_map(|g| &idle.segments[g.segments.start as usize..g.segments.end as usize])
        .filter(|s| matches!(s.cause, IdleCause::LaunchLatency | IdleCause::HostCompute))
        .filter_map(|s| s.interval.clip(window))
        .map(|c| c.dur_ns())
        .sum()
}
