//! Idle gaps per device and their causes.
//!
//! A gap is a stretch inside the measured window (the same clipped op set as
//! [`crate::utilization`]) where no kernel, copy or fill runs on the device. The GPU op that
//! ends the gap is followed back to the API call that launched it, and the time is split:
//!
//! - launch issued before the gap began → `launch_latency` (the work was queued; HTA's
//!   kernel_wait), or `cross_stream_wait` when a stream-wait preceded it and the gap is long;
//! - otherwise the CPU thread issued the launch only after the GPU went idle, so the window
//!   from the gap start to the launch is *exposed CPU time*: moments inside a DataLoader
//!   `__next__` are `data_loading`; the rest is `sync_drain` when a host-blocking call on that
//!   thread returned inside the gap (it drained the queue), else `host_compute`; from the
//!   launch call to the op start is `launch_latency`;
//! - no launch in the trace, or a gap inside a CUDA/HIP graph replay → `unattributed`.
//!
//! Each gap's segments sum exactly to its length (tested on every corpus trace).

use crate::intervals::gaps;
use crate::threads::ThreadIndex;
use crate::utilization::{DeviceWork, GpuOp, WindowSource};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Range;
use tracelens_model::{
    profiler_step_number, Interval, NameId, SpanId, SpanKind, TimeNs, Trace, NS_PER_US,
};

/// A host-blocking call may return this long before the GPU op it waited for ends (clock skew
/// between CPU and GPU timestamps) and still count as draining the queue.
pub const SYNC_RETURN_TOLERANCE_NS: TimeNs = 10 * NS_PER_US;
/// Gaps shorter than this with queued work are launch latency even after a stream wait
/// (HTA's `consecutive_kernel_delay`).
pub const CONSECUTIVE_KERNEL_DELAY_NS: TimeNs = 30 * NS_PER_US;

/// Why the GPU sat idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleCause {
    /// The launching thread was waiting for the DataLoader.
    DataLoading,
    /// A host-blocking sync drained the queue; the CPU time until the next launch is exposed.
    SyncDrain,
    /// The launching thread was busy with other CPU work.
    HostCompute,
    /// The work was queued (or being launched) but had not started yet.
    LaunchLatency,
    /// Queued work waited on an event recorded on another stream.
    CrossStreamWait,
    /// No launch in the trace, or inside a graph replay.
    Unattributed,
}

impl IdleCause {
    /// Every cause, in report order.
    pub const ALL: [IdleCause; 6] = [
        IdleCause::DataLoading,
        IdleCause::SyncDrain,
        IdleCause::HostCompute,
        IdleCause::LaunchLatency,
        IdleCause::CrossStreamWait,
        IdleCause::Unattributed,
    ];

    /// Snake-case label.
    pub fn label(self) -> &'static str {
        match self {
            IdleCause::DataLoading => "data_loading",
            IdleCause::SyncDrain => "sync_drain",
            IdleCause::HostCompute => "host_compute",
            IdleCause::LaunchLatency => "launch_latency",
            IdleCause::CrossStreamWait => "cross_stream_wait",
            IdleCause::Unattributed => "unattributed",
        }
    }
}

/// Why a gap could not be attributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnattributedReason {
    /// The op that ends the gap has a correlation id but its launch is not in the trace
    /// (work from before the profiling window).
    LaunchNotInTrace,
    /// The op has no correlation id at all (GPU-only trace).
    NoCorrelation,
    /// The gap lies inside a CUDA/HIP graph replay, whose kernels are often under-recorded.
    GraphReplay,
}

/// One piece of a gap with one cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct IdleSegment {
    /// Why.
    pub cause: IdleCause,
    /// When.
    pub interval: Interval,
    /// The blocking call charged, for `sync_drain`.
    #[serde(skip)]
    pub sync: Option<SpanId>,
    /// The step (by number) the segment falls in, if any.
    pub step: Option<i64>,
}

/// One idle gap.
#[derive(Clone, Debug)]
pub struct Gap {
    /// When.
    pub interval: Interval,
    /// The GPU op whose start ends the gap.
    pub ended_by: SpanId,
    /// Its launch call, if in the trace.
    pub launch: Option<SpanId>,
    /// Why it could not be attributed, if it could not.
    pub unattributed: Option<UnattributedReason>,
    /// Its segments in [`DeviceIdle::segments`].
    pub segments: Range<u32>,
}

/// Idle attribution of one device.
#[derive(Clone, Debug)]
pub struct DeviceIdle {
    /// Device index.
    pub device: i64,
    /// The clipping window and its source.
    pub window: Option<Interval>,
    /// Where the window comes from.
    pub window_source: WindowSource,
    /// First to last op after clipping (the measured total).
    pub extent: Option<Interval>,
    /// Total idle time: equals the utilization's `idle_ns` for the same window.
    pub idle_ns: TimeNs,
    /// Every gap, in time order.
    pub gaps: Vec<Gap>,
    /// Every segment, gap by gap.
    pub segments: Vec<IdleSegment>,
    /// Idle time per cause (every cause listed).
    pub by_cause: BTreeMap<IdleCause, TimeNs>,
    /// Idle time per unattributed reason.
    pub unattributed_by_reason: BTreeMap<UnattributedReason, TimeNs>,
    /// CPU work during `host_compute` idle, by op name, largest first.
    pub host_compute_ops: Vec<(String, TimeNs)>,
    /// OS waits (Nsight Systems OSRT) of the launching threads during exposed CPU time
    /// (`host_compute` and `data_loading`), by call name, largest first.
    pub os_waits: Vec<(String, TimeNs)>,
    /// Exposed CPU time in which the launching thread was off the CPU outside any traced OS
    /// wait (Nsight Systems scheduling trace): runnable but not running.
    pub descheduled_ns: TimeNs,
    /// Ops in the window launched by graph launches (one launch, many ops).
    pub graph_replay_ops: u64,
}

impl DeviceIdle {
    /// Whether the attribution can be trusted: false when graph replays feed the window.
    pub fn reliable(&self) -> bool {
        self.graph_replay_ops == 0
    }
}

/// Step windows used to label segments: GPU-side when present, else CPU-side.
pub fn step_windows(trace: &Trace) -> Vec<(i64, Interval)> {
    trace
        .steps
        .iter()
        .filter_map(|s| s.gpu.or(s.cpu).map(|w| (s.number, w)))
        .collect()
}

/// Attributes every idle gap of one device; `ops` are its [`DeviceWork::headline_ops`].
pub fn attribute_idle(
    trace: &Trace,
    work: &DeviceWork,
    ops: &[GpuOp],
    threads: &ThreadIndex,
) -> DeviceIdle {
    let (window, window_source) = work.headline_window();
    let mut steps = step_windows(trace);
    steps.sort_unstable_by_key(|&(n, w)| (w.start_ns, n));
    let mut idle = DeviceIdle {
        device: work.device,
        window,
        window_source,
        extent: None,
        idle_ns: 0,
        gaps: Vec::new(),
        segments: Vec::new(),
        by_cause: IdleCause::ALL.iter().map(|&c| (c, 0)).collect(),
        unattributed_by_reason: BTreeMap::new(),
        host_compute_ops: Vec::new(),
        os_waits: Vec::new(),
        descheduled_ns: 0,
        graph_replay_ops: 0,
    };
    let (Some(first), Some(last)) = (
        ops.iter().map(|o| o.1.start_ns).min(),
        ops.iter().map(|o| o.1.end_ns).max(),
    ) else {
        return idle;
    };
    idle.extent = Some(Interval::new(first, last));
    if trace.links.graph_launches > 0 {
        idle.graph_replay_ops = ops
            .iter()
            .filter(|&&(_, _, id)| {
                trace
                    .launch_of(id)
                    .is_some_and(|l| trace.launched_by(l).len() > 1)
            })
            .count() as u64;
    }
    let busy = crate::intervals::union_sorted(ops.iter().map(|o| o.1));
    let mut host_ops: FxHashMap<Option<NameId>, TimeNs> = FxHashMap::default();
    let mut os_waits: FxHashMap<NameId, TimeNs> = FxHashMap::default();
    for gap in gaps(&busy, Interval::new(first, last)) {
        // The op that ends the gap: prefer one with a launch among those starting there.
        let at = ops.partition_point(|o| o.1.start_ns < gap.end_ns);
        let candidates = ops[at..].iter().take_while(|o| o.1.start_ns == gap.end_ns);
        let ender = candidates
            .clone()
            .find(|o| trace.launch_of(o.2).is_some())
            .or_else(|| candidates.clone().next())
            .map(|o| o.2)
            .expect("a gap inside the extent ends where an op starts");
        let seg_start = idle.segments.len() as u32;
        let (launch, unattributed) = attribute_gap(
            trace,
            threads,
            gap,
            ender,
            &mut idle.segments,
            &mut host_ops,
        );
        for seg in &mut idle.segments[seg_start as usize..] {
            seg.step = step_at(&steps, seg.interval.start_ns);
        }
        if let Some(l) = launch {
            let facts = threads.lane(trace.span(l).lane);
            if !facts.os_waits.is_empty() || !facts.off_cpu.is_empty() {
                for seg in &idle.segments[seg_start as usize..] {
                    if matches!(seg.cause, IdleCause::HostCompute | IdleCause::DataLoading) {
                        for (name, ns) in facts.os_waits_within(seg.interval) {
                            *os_waits.entry(name).or_default() += ns;
                        }
                        idle.descheduled_ns += facts.unexplained_off_cpu_within(seg.interval);
                    }
                }
            }
        }
        if let Some(reason) = unattributed {
            *idle.unattributed_by_reason.entry(reason).or_default() += gap.dur_ns();
        }
        idle.gaps.push(Gap {
            interval: gap,
            ended_by: ender,
            launch,
            unattributed,
            segments: seg_start..idle.segments.len() as u32,
        });
    }
    for seg in &idle.segments {
        *idle.by_cause.entry(seg.cause).or_default() += seg.interval.dur_ns();
    }
    idle.idle_ns = idle.gaps.iter().map(|g| g.interval.dur_ns()).sum();
    let mut named: Vec<(String, TimeNs)> = host_ops
        .into_iter()
        .map(|(n, t)| {
            let name = n.map_or("(other CPU work)".to_string(), |n| {
                trace.names.get(n).to_string()
            });
            (name, t)
        })
        .collect();
    named.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    named.truncate(8);
    idle.host_compute_ops = named;
    let mut waits: Vec<(String, TimeNs)> = os_waits
        .into_iter()
        .map(|(n, t)| (trace.names.get(n).to_string(), t))
        .collect();
    waits.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    waits.truncate(8);
    idle.os_waits = waits;
    idle
}

/// The step whose window holds `t`, from windows sorted by start (the latest-starting one
/// when windows overlap).
fn step_at(steps: &[(i64, Interval)], t: TimeNs) -> Option<i64> {
    let after = steps.partition_point(|(_, w)| w.start_ns <= t);
    let (n, w) = steps[..after].last()?;
    (t < w.end_ns).then_some(*n)
}

fn push(segments: &mut Vec<IdleSegment>, cause: IdleCause, iv: Interval, sync: Option<SpanId>) {
    if iv.dur_ns() > 0 {
        segments.push(IdleSegment {
            cause,
            interval: iv,
            sync,
            step: None,
        });
    }
}

fn attribute_gap(
    trace: &Trace,
    threads: &ThreadIndex,
    gap: Interval,
    ender: SpanId,
    segments: &mut Vec<IdleSegment>,
    host_ops: &mut FxHashMap<Option<NameId>, TimeNs>,
) -> (Option<SpanId>, Option<UnattributedReason>) {
    let Some(launch) = trace.launch_of(ender) else {
        let reason = if trace.span(ender).correlation().is_some() {
            UnattributedReason::LaunchNotInTrace
        } else {
            UnattributedReason::NoCorrelation
        };
        push(segments, IdleCause::Unattributed, gap, None);
        return (None, Some(reason));
    };
    let api = trace.span(launch);
    let launch_start = api.start_ns.min(gap.end_ns);
    if launch_start <= gap.start_ns {
        if trace.launched_by(launch).len() > 1 {
            push(segments, IdleCause::Unattributed, gap, None);
            return (Some(launch), Some(UnattributedReason::GraphReplay));
        }
        let cause = if api.end_ns() <= gap.start_ns
            && gap.dur_ns() >= CONSECUTIVE_KERNEL_DELAY_NS
            && waited_on_other_stream(trace, threads, ender, launch, gap)
        {
            IdleCause::CrossStreamWait
        } else {
            IdleCause::LaunchLatency
        };
        push(segments, cause, gap, None);
        return (Some(launch), None);
    }
    // The CPU issued the launch only after the GPU went idle: what was it doing?
    let exposed = Interval::new(gap.start_ns, launch_start);
    let facts = threads.lane(api.lane);
    let drain =
        facts.blocking_call_ending_in(gap.start_ns - SYNC_RETURN_TOLERANCE_NS, launch_start);
    let rest_cause = if drain.is_some() {
        IdleCause::SyncDrain
    } else {
        IdleCause::HostCompute
    };
    let mut cursor = exposed.start_ns;
    for dl in facts.data_loading_within(exposed) {
        let before = Interval::new(cursor, dl.start_ns);
        push(segments, rest_cause, before, drain);
        if rest_cause == IdleCause::HostCompute {
            credit_host_ops(trace, api.lane, before, host_ops);
        }
        push(segments, IdleCause::DataLoading, dl, None);
        cursor = dl.end_ns;
    }
    let tail = Interval::new(cursor, exposed.end_ns);
    push(segments, rest_cause, tail, drain);
    if rest_cause == IdleCause::HostCompute {
        credit_host_ops(trace, api.lane, tail, host_ops);
    }
    push(
        segments,
        IdleCause::LaunchLatency,
        Interval::new(launch_start, gap.end_ns),
        None,
    );
    (Some(launch), None)
}

/// Whether queued op `ender` waited for another stream: a stream-wait call on the launching
/// thread since the previous op of its stream was launched, or a CUPTI "Stream Wait Event"
/// record on its stream during the gap.
fn waited_on_other_stream(
    trace: &Trace,
    threads: &ThreadIndex,
    ender: SpanId,
    launch: SpanId,
    gap: Interval,
) -> bool {
    let lane = trace.lane(trace.span(ender).lane);
    let lane_start = lane.spans.start;
    let mut prev_launch_ns = None;
    let mut i = ender.0;
    while i > lane_start {
        i -= 1;
        let s = trace.span(SpanId(i));
        if s.kind == SpanKind::CudaSync
            && trace.names.get(s.name).contains("Wait")
            && s.interval().clip(gap).is_some()
        {
            return true;
        }
        if s.kind.is_gpu_work() {
            prev_launch_ns = trace.launch_of(SpanId(i)).map(|l| trace.span(l).start_ns);
            break;
        }
    }
    let api = trace.span(launch);
    let from = prev_launch_ns.unwrap_or(api.start_ns - gap.dur_ns());
    threads
        .lane(api.lane)
        .stream_wait_between(from, api.start_ns)
}

/// Credits the CPU ops running on `lane` during `window` (outermost ops, not the step or the
/// DataLoader range) to `host_ops`; time under no op goes to `None`.
fn credit_host_ops(
    trace: &Trace,
    lane: tracelens_model::LaneId,
    window: Interval,
    host_ops: &mut FxHashMap<Option<NameId>, TimeNs>,
) {
    if window.dur_ns() <= 0 {
        return;
    }
    let op_like = |id: SpanId| {
        let s = trace.span(id);
        matches!(s.kind, SpanKind::CpuOp | SpanKind::UserAnnotation) && {
            let n = trace.names.get(s.name);
            profiler_step_number(n).is_none() && !crate::api::is_data_loader(n)
        }
    };
    let range = trace.lane(lane).spans.clone();
    let spans = &trace.spans[range.start as usize..range.end as usize];
    let mut cursor = window.start_ns;
    let mut credited: TimeNs = 0;
    // The outermost op already running when the window opens.
    let before = spans.partition_point(|s| s.start_ns <= window.start_ns);
    if before > 0 {
        let innermost = SpanId(range.start + before as u32 - 1);
        let outer = std::iter::once(innermost)
            .chain(trace.ancestors(innermost))
            .filter(|&id| trace.span(id).end_ns() > window.start_ns && op_like(id))
            .last();
        if let Some(op) = outer {
            let end = trace.span(op).end_ns().min(window.end_ns);
            *host_ops.entry(Some(trace.span(op).name)).or_default() += end - cursor;
            credited += end - cursor;
            cursor = end;
        }
    }
    for (offset, s) in spans[before..].iter().enumerate() {
        if s.start_ns >= window.end_ns {
            break;
        }
        let id = SpanId(range.start + (before + offset) as u32);
        if s.start_ns >= cursor && op_like(id) {
            let end = s.end_ns().min(window.end_ns);
            *host_ops.entry(Some(s.name)).or_default() += end - s.start_ns;
            credited += end - s.start_ns;
            cursor = end;
        }
    }
    let rest = window.dur_ns() - credited;
    if rest > 0 {
        // Time under no op: name the innermost user Python frame running, when recorded.
        let frame = (before > 0)
            .then(|| SpanId(range.start + before as u32 - 1))
            .and_then(|innermost| {
                std::iter::once(innermost)
                    .chain(trace.ancestors(innermost))
                    .find(|&id| {
                        let s = trace.span(id);
                        s.kind == SpanKind::PythonFunction
                            && s.end_ns() > window.start_ns
                            && tracelens_model::PyFrame::parse(trace.names.get(s.name))
                                .is_some_and(|f| !f.is_library())
                    })
            });
        *host_ops
            .entry(frame.map(|f| trace.span(f).name))
            .or_default() += rest;
    }
}
