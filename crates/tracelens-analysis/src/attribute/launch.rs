//! Launches: launch-bound stretches (runs of kernels shorter than their launch calls, with the
//! GPU starving between them: HTA's "short kernels", launch ≤ 50 µs and GPU time < launch
//! time), and how far the host runs ahead of each stream (launch-to-start delay).

use crate::attribute::idle::{DeviceIdle, IdleCause};
use crate::measure::seek::partition_point_from;
use crate::measure::utilization::{DeviceWork, GpuOp};
use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{Interval, LaneId, LaneKey, SpanKind, TimeNs, Trace, NS_PER_US};

/// A launch call at most this long can be a "short kernel" launch.
pub const SHORT_LAUNCH_MAX_NS: TimeNs = 50 * NS_PER_US;
/// A stretch needs at least this many consecutive short kernels.
pub const MIN_STRETCH_KERNELS: usize = 10;

/// One run of consecutive short kernels.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
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
    /// Launch-to-start delay per stream, in the window.
    pub launch_delays: Vec<StreamLaunchDelay>,
    /// Every stretch per device (device, intervals sorted by start), for the idle credit.
    #[serde(skip)]
    pub stretch_intervals: Vec<(i64, Vec<Interval>)>,
}

/// How far the host runs ahead of one stream: the delay from each launch call's start to its
/// op's start (graph replays left out). Large delays mean the work was queued long before the
/// GPU ran it: the host is not what the stream waits for.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct StreamLaunchDelay {
    /// Device index.
    pub device: i64,
    /// Stream id.
    pub stream: i64,
    /// Ops measured.
    pub ops: u64,
    /// Median delay.
    pub median_ns: TimeNs,
    /// 90th percentile.
    pub p90_ns: TimeNs,
    /// Largest delay.
    pub max_ns: TimeNs,
}

/// Finds launch-bound stretches on every device and the launch delays of every stream;
/// `window_ops` holds each device's ops clipped to the analysis window.
#[must_use]
pub fn launch_report(
    trace: &Trace,
    works: &[DeviceWork],
    window_ops: &[std::borrow::Cow<[GpuOp]>],
    idle: &[DeviceIdle],
) -> LaunchReport {
    let mut report = LaunchReport {
        graph_launches: trace.links.graph_launches,
        ..LaunchReport::default()
    };
    let mut stretches = Vec::new();
    let mut delays: FxHashMap<LaneId, Vec<TimeNs>> = FxHashMap::default();
    for ((work, ops), dev_idle) in works.iter().zip(window_ops).zip(idle) {
        // Queue depth bookkeeping over every linked op of the device.
        let mut launch_starts: Vec<TimeNs> = Vec::with_capacity(ops.len());
        let mut op_starts: Vec<TimeNs> = Vec::with_capacity(ops.len());
        for &(_, iv, id) in ops.iter() {
            if let Some(l) = trace.launch_of(id) {
                let launch_ns = trace.span(l).start_ns;
                launch_starts.push(launch_ns);
                op_starts.push(iv.start_ns);
                if trace.launched_by(l).len() <= 1 {
                    let op = trace.span(id);
                    delays
                        .entry(op.lane)
                        .or_default()
                        .push((op.start_ns - launch_ns).max(0));
                }
            }
        }
        // Launches start nearly in their ops' order: a run-adaptive sort finishes in few passes.
        launch_starts.sort();
        // `ops` is sorted by start, so `op_starts` already is. Kernels are asked about in op
        // order, whose launches start in nearly the same order: each search starts from the
        // previous answer.
        let (mut launched, mut started) = (0, 0);
        let mut depth = |t: TimeNs| {
            launched = partition_point_from(&launch_starts, launched, |&x| x <= t);
            started = partition_point_from(&op_starts, started, |&x| x <= t);
            launched.saturating_sub(started)
        };
        let mut run: Vec<(Interval, TimeNs, TimeNs, usize)> = Vec::new();
        let mut flush = |run: &mut Vec<(Interval, TimeNs, TimeNs, usize)>| {
            if run.len() >= MIN_STRETCH_KERNELS {
                let interval = Interval::new(
                    run[0].0.start_ns,
                    run.iter().map(|r| r.0.end_ns).max().unwrap_or(0),
                );
                let n = crate::num::count_i64(run.len());
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
    let mut by_device: FxHashMap<i64, Vec<Interval>> = FxHashMap::default();
    for s in &stretches {
        by_device.entry(s.device).or_default().push(s.interval);
    }
    let mut intervals: Vec<(i64, Vec<Interval>)> = by_device.into_iter().collect();
    for (_, v) in &mut intervals {
        v.sort_unstable();
    }
    intervals.sort_unstable_by_key(|(d, _)| *d);
    report.stretch_intervals = intervals;
    report.launch_delays = delay_stats(trace, delays);
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

fn delay_stats(trace: &Trace, delays: FxHashMap<LaneId, Vec<TimeNs>>) -> Vec<StreamLaunchDelay> {
    let mut out: Vec<StreamLaunchDelay> = delays
        .into_iter()
        .filter_map(|(lane, mut d)| {
            let LaneKey::Gpu { device, stream } = trace.lane(lane).key else {
                return None;
            };
            // Order statistics by selection (no sort of millions of delays).
            let max_ns = *d.iter().max()?;
            let (median_at, p90_at) = ((d.len() - 1) * 50 / 100, (d.len() - 1) * 90 / 100);
            let (below, &mut p90_ns, _) = d.select_nth_unstable(p90_at);
            let median_ns = if median_at < p90_at {
                *below.select_nth_unstable(median_at).1
            } else {
                p90_ns
            };
            Some(StreamLaunchDelay {
                device,
                stream,
                ops: d.len() as u64,
                median_ns,
                p90_ns,
                max_ns,
            })
        })
        .collect();
    out.sort_by_key(|s| (s.device, s.stream));
    out
}

/// Launch-latency and host-compute idle inside `window`.
fn starving_idle(idle: &DeviceIdle, window: Interval) -> TimeNs {
    let first = idle
        .gaps
        .partition_point(|g| g.interval.end_ns <= window.start_ns);
    idle.gaps[first..]
        .iter()
        .take_while(|g| g.interval.start_ns < window.end_ns)
        .flat_map(|g| idle.segments_of(g))
        .filter(|s| matches!(s.cause, IdleCause::LaunchLatency | IdleCause::HostCompute))
        .filter_map(|s| s.interval.clip(window))
        .map(|c| c.dur_ns())
        .sum()
}
