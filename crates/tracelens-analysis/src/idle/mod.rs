//! Idle gaps per device and their causes.
//!
//! A gap is a stretch of the [analysis window](crate::window) where no kernel, copy or fill
//! runs on the device, edges included (a DataLoader wait before a step's first kernel is idle
//! time of that step). The GPU op that ends the gap (for the gap after a step's last op: the
//! device's next op, even past the window) is followed back to the API call that launched it:
//!
//! - the CPU issued the launch only after the GPU went idle: the time from the gap start to the
//!   launch is *exposed CPU time*. Moments inside a DataLoader `__next__` are `data_loading`;
//!   when a host-blocking call on that thread returned inside the gap (it drained the queue),
//!   the rest is `sync_drain` for at most as long as the call blocked the host (the GPU work
//!   the CPU work after it could have overlapped) and `host_compute` beyond that; without such
//!   a call it is `host_compute`;
//! - from the launch to the op start, and for work already queued when the gap began:
//!   `launch_latency` for at most [`LAUNCH_OVERHEAD_BOUND_NS`] per gap; before that, time the
//!   launch call itself was still running is `host_compute`, and queued work that did not
//!   start is a GPU-side wait: `cross_stream_wait` (a stream-wait call or record),
//!   `collective_wait` (a communication kernel ends or starts the gap), `graph_replay` (inside
//!   a CUDA/HIP graph replay, whose kernels are often under-recorded: the op before the gap
//!   came from the same graph launch) or `gpu_wait` (no evidence of why);
//! - after the device's last op, the thread that launched the op before the gap launched
//!   nothing more: its time is exposed CPU time, split as above;
//! - no launch in the trace: `unattributed`.
//!
//! Each gap's segments sum exactly to its length (tested on every corpus trace).

mod gap;
mod host_ops;

use gap::{last_op_ending_at, GapAttribution, Outcome};
pub(crate) use host_ops::{
    credit_host_ops, credit_one_time_launches, host_parts, name_host_ops, HostTime,
};
pub use host_ops::{HostPart, BETWEEN_CALLS, BETWEEN_OPS, NOT_RECORDED};

use crate::environment::Framework;
use crate::intervals::gaps;
use crate::threads::ThreadIndex;
use crate::utilization::{DeviceWork, GpuOp};
use crate::window::AnalysisWindow;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Range;
use tracelens_model::{table_index, Interval, NameId, SpanId, TimeNs, Trace, NS_PER_US};

/// A host-blocking call may return this long before the GPU op it waited for ends (clock skew
/// between CPU and GPU timestamps) and still count as draining the queue.
pub const SYNC_RETURN_TOLERANCE_NS: TimeNs = 10 * NS_PER_US;
/// The most of one gap that counts as launch overhead: the time from a launch (or from the GPU
/// going idle, for queued work) to the op's start that the runtime and the GPU front end need.
/// Beyond it, queued work is waiting on something else. HTA's `consecutive_kernel_delay`.
pub const LAUNCH_OVERHEAD_BOUND_NS: TimeNs = 30 * NS_PER_US;

/// Why the GPU sat idle.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum IdleCause {
    /// The launching thread was waiting for the DataLoader.
    DataLoading,
    /// A host-blocking sync drained the queue; the CPU time until the next launch is exposed.
    SyncDrain,
    /// The launching thread was busy with other CPU work.
    HostCompute,
    /// The work was being launched or queued but had not started yet (bounded per gap).
    LaunchLatency,
    /// Queued work waited on an event recorded on another stream.
    CrossStreamWait,
    /// Queued work waited on a collective (a communication kernel ends or starts the gap).
    CollectiveWait,
    /// Inside a CUDA/HIP graph replay, whose kernels are often under-recorded.
    GraphReplay,
    /// Queued work did not start, and the trace shows no reason.
    GpuWait,
    /// No launch in the trace, or no GPU op after the gap.
    Unattributed,
}

impl IdleCause {
    /// Every cause, in report order (and drawing priority: later outranks earlier).
    pub const ALL: [IdleCause; 9] = [
        IdleCause::DataLoading,
        IdleCause::SyncDrain,
        IdleCause::HostCompute,
        IdleCause::LaunchLatency,
        IdleCause::CrossStreamWait,
        IdleCause::CollectiveWait,
        IdleCause::GraphReplay,
        IdleCause::GpuWait,
        IdleCause::Unattributed,
    ];

    /// Snake-case label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            IdleCause::DataLoading => "data_loading",
            IdleCause::SyncDrain => "sync_drain",
            IdleCause::HostCompute => "host_compute",
            IdleCause::LaunchLatency => "launch_latency",
            IdleCause::CrossStreamWait => "cross_stream_wait",
            IdleCause::CollectiveWait => "collective_wait",
            IdleCause::GraphReplay => "graph_replay",
            IdleCause::GpuWait => "gpu_wait",
            IdleCause::Unattributed => "unattributed",
        }
    }

    /// A few words for people ("waiting for the DataLoader").
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            IdleCause::DataLoading => "waiting for the DataLoader",
            IdleCause::SyncDrain => "CPU work after a host-blocking sync drained the queue",
            IdleCause::HostCompute => "waiting for CPU work between launches",
            IdleCause::LaunchLatency => "launch overhead",
            IdleCause::CrossStreamWait => "queued work waiting on another stream",
            IdleCause::CollectiveWait => "queued work waiting on a collective",
            IdleCause::GraphReplay => "inside graph replays the profiler under-records",
            IdleCause::GpuWait => "queued work waiting, reason not in the trace",
            IdleCause::Unattributed => "time the trace cannot attribute",
        }
    }

    /// Whether the launching thread's own work kept the GPU waiting: data loading, CPU work
    /// after a drained queue, or CPU work between launches.
    #[must_use]
    pub fn is_host_side(self) -> bool {
        matches!(
            self,
            IdleCause::DataLoading | IdleCause::SyncDrain | IdleCause::HostCompute
        )
    }

    /// Whether the host was not the bottleneck: the GPU had work queued and waited on
    /// something on the device side.
    #[must_use]
    pub fn is_gpu_side_wait(self) -> bool {
        matches!(
            self,
            IdleCause::CrossStreamWait
                | IdleCause::CollectiveWait
                | IdleCause::GraphReplay
                | IdleCause::GpuWait
        )
    }
}

/// Why a gap could not be attributed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum UnattributedReason {
    /// The op that ends the gap has a correlation id but its launch is not in the trace
    /// (work from before the profiling window).
    LaunchNotInTrace,
    /// The op has no correlation id at all (GPU-only trace).
    NoCorrelation,
    /// The gap runs to the window's end, the device runs nothing after it, and the op before
    /// it has no launch in the trace.
    NoLaterWork,
}

/// What shows a GPU-side wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum WaitEvidence {
    /// A stream-wait call (`cudaStreamWaitEvent`, `hipStreamWaitEvent`) on the launching
    /// thread since the stream's previous launch, or a CUPTI "Stream Wait Event" record.
    StreamWait,
    /// A communication kernel on another stream ended when the gap began.
    CollectiveBefore,
    /// The op ending the gap is a communication kernel.
    CollectiveKernel,
    /// The op was fed by a graph launch (one launch, many ops).
    GraphLaunch,
}

/// Stored for "none" in the id fields of [`IdleSegment`] and [`Gap`].
const NO_ID: u32 = u32::MAX;

fn no_id() -> u32 {
    NO_ID
}

fn stored_id(id: Option<u32>) -> u32 {
    id.unwrap_or(NO_ID)
}

fn read_id(at: u32) -> Option<u32> {
    (at != NO_ID).then_some(at)
}

/// One piece of a gap with one cause. 24 bytes: there is one or more per gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct IdleSegment {
    /// Why.
    pub cause: IdleCause,
    /// When.
    pub interval: Interval,
    #[serde(skip, default = "no_id")]
    sync_at: u32,
}

impl IdleSegment {
    /// A segment; `sync` is the blocking call charged, for `sync_drain`.
    #[must_use]
    pub fn new(cause: IdleCause, interval: Interval, sync: Option<SpanId>) -> IdleSegment {
        IdleSegment {
            cause,
            interval,
            sync_at: stored_id(sync.map(|s| s.0)),
        }
    }

    /// The blocking call charged, for `sync_drain`.
    #[must_use]
    pub fn sync(&self) -> Option<SpanId> {
        read_id(self.sync_at).map(SpanId)
    }
}

/// One idle gap. 40 bytes: ids are stored with a sentinel and read through methods.
#[derive(Clone, Debug)]
pub struct Gap {
    /// When (inside the window).
    pub interval: Interval,
    ended_by_at: u32,
    launch_at: u32,
    lane_at: u32,
    /// Its segments in [`DeviceIdle::segments`].
    pub segments: Range<u32>,
    /// Why it could not be attributed, if it could not.
    pub unattributed: Option<UnattributedReason>,
    /// What shows a GPU-side wait, for gaps that have one.
    pub wait: Option<WaitEvidence>,
}

impl Gap {
    /// The GPU op whose start ends the gap (after the window for a step's tail).
    #[must_use]
    pub fn ended_by(&self) -> Option<SpanId> {
        read_id(self.ended_by_at).map(SpanId)
    }

    /// Its launch call, if in the trace.
    #[must_use]
    pub fn launch(&self) -> Option<SpanId> {
        read_id(self.launch_at).map(SpanId)
    }

    /// The CPU thread whose time explains the gap: the launching thread of the op that ends
    /// it, or, after the device's last op, of the op before it.
    #[must_use]
    pub fn lane(&self) -> Option<tracelens_model::LaneId> {
        read_id(self.lane_at).map(tracelens_model::LaneId)
    }
}

/// Idle attribution of one device.
#[derive(Clone, Debug)]
pub struct DeviceIdle {
    /// Device index.
    pub device: i64,
    /// The analysis window.
    pub window: Interval,
    /// First to last op inside the window, when any op falls inside.
    pub extent: Option<Interval>,
    /// Total idle time: the window minus the busy union; equals the utilization's window
    /// `idle_ns`.
    pub idle_ns: TimeNs,
    /// Every gap, in time order.
    pub gaps: Vec<Gap>,
    /// Every segment, gap by gap.
    pub segments: Vec<IdleSegment>,
    /// Idle time per cause (every cause listed).
    pub by_cause: BTreeMap<IdleCause, TimeNs>,
    /// Unattributed idle per reason.
    pub unattributed_by_reason: BTreeMap<UnattributedReason, TimeNs>,
    /// CPU work during `host_compute` idle, by op name, largest first.
    pub host_compute_ops: Vec<(String, TimeNs)>,
    /// OS waits (Nsight Systems OSRT) of the launching threads during exposed CPU time
    /// (`host_compute` and `data_loading`), by call name, largest first.
    pub os_waits: Vec<(String, TimeNs)>,
    /// `host_compute` time in which the launching thread was off the CPU outside any traced
    /// OS wait (Nsight Systems scheduling trace): runnable but not running.
    pub descheduled_ns: TimeNs,
    /// Ops in the window launched by graph launches (one launch, many ops).
    pub graph_replay_ops: u64,
}

impl DeviceIdle {
    /// Whether the attribution can be trusted: false when graph replays feed the window.
    #[must_use]
    pub fn reliable(&self) -> bool {
        self.graph_replay_ops == 0
    }

    /// The segments of one gap.
    #[must_use]
    pub fn segments_of(&self, gap: &Gap) -> &[IdleSegment] {
        &self.segments[gap.segments.start as usize..gap.segments.end as usize]
    }
}

/// Whether a GPU op is a collective's kernel (NCCL, RCCL, MSCCL).
#[must_use]
pub fn is_communication_kernel(name: &str) -> bool {
    let b = name.as_bytes();
    b.windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"nccl") || w.eq_ignore_ascii_case(b"rccl"))
        || name.contains("msccl")
}

/// [`is_communication_kernel`] asked once per distinct name: a trace launches the same few
/// kernel names millions of times.
#[derive(Default)]
pub struct CommunicationNames(rustc_hash::FxHashMap<tracelens_model::NameId, bool>);

impl CommunicationNames {
    /// Whether kernel name `name` is a collective's.
    pub fn is(&mut self, trace: &Trace, name: tracelens_model::NameId) -> bool {
        *self
            .0
            .entry(name)
            .or_insert_with(|| is_communication_kernel(trace.names.get(name)))
    }
}

/// Attributes every idle gap of one device inside the analysis window; `ops`: its work
/// clipped to the window ([`DeviceWork::ops_in`]).
#[must_use]
pub fn attribute_idle(
    trace: &Trace,
    work: &DeviceWork,
    ops: &[GpuOp],
    window: &AnalysisWindow,
    threads: &ThreadIndex,
    fw: &Framework,
) -> DeviceIdle {
    attribute_idle_in_chunks(trace, work, ops, window, threads, fw, GAP_CHUNK)
}

/// [`attribute_idle`] with `gap_chunk` gaps per parallel chunk.
fn attribute_idle_in_chunks(
    trace: &Trace,
    work: &DeviceWork,
    ops: &[GpuOp],
    window: &AnalysisWindow,
    threads: &ThreadIndex,
    fw: &Framework,
    gap_chunk: usize,
) -> DeviceIdle {
    let w = window.interval;
    let mut idle = DeviceIdle {
        device: work.device,
        window: w,
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
    let gaps = gaps(&busy, w);
    drop(busy);
    let mut host_ops = HostTime::default();
    let mut os_waits: FxHashMap<NameId, TimeNs> = FxHashMap::default();
    let cx = GapContext {
        trace,
        threads,
        work,
        ops,
        after_window: work.ops.partition_point(|o| o.1.start_ns < w.end_ns),
        window_end_ns: w.end_ns,
    };
    // Gaps are independent: chunks of them are attributed in parallel, a wave of one chunk
    // per thread at a time (so that at most a wave's partial lists sit beside the whole),
    // then appended in time order.
    let wave = gap_chunk.saturating_mul(rayon::current_num_threads().max(1));
    for wave in gaps.chunks(wave) {
        let parts: Vec<GapChunk> = if wave.len() <= gap_chunk {
            vec![cx.attribute(wave)]
        } else {
            wave.par_chunks(gap_chunk)
                .map(|c| cx.attribute(c))
                .collect()
        };
        for part in parts {
            part.append_to(&mut idle, &mut host_ops, &mut os_waits, gaps.len());
        }
    }
    for seg in &idle.segments {
        *idle.by_cause.entry(seg.cause).or_default() += seg.interval.dur_ns();
    }
    idle.idle_ns = idle.gaps.iter().map(|g| g.interval.dur_ns()).sum();
    idle.host_compute_ops = name_host_ops(trace, &host_ops, fw);
    let mut waits: Vec<(String, TimeNs)> = os_waits
        .into_iter()
        .map(|(n, t)| (trace.names.get(n).to_string(), t))
        .collect();
    waits.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    waits.truncate(8);
    idle.os_waits = waits;
    idle
}

/// Gaps attributed per chunk in parallel (a chunk is a few milliseconds of work).
const GAP_CHUNK: usize = 1 << 16;

/// What every gap of one device reads.
struct GapContext<'a> {
    trace: &'a Trace,
    threads: &'a ThreadIndex,
    work: &'a DeviceWork,
    /// The device's ops inside the window, clipped.
    ops: &'a [GpuOp],
    /// The first of the device's ops starting at or after the window's end.
    after_window: usize,
    window_end_ns: TimeNs,
}

/// The attribution of a run of consecutive gaps; segment ranges count from the run's first.
#[derive(Default)]
struct GapChunk {
    gaps: Vec<Gap>,
    segments: Vec<IdleSegment>,
    host_ops: HostTime,
    os_waits: FxHashMap<NameId, TimeNs>,
    descheduled_ns: TimeNs,
    unattributed_by_reason: BTreeMap<UnattributedReason, TimeNs>,
}

impl GapChunk {
    /// Appends the chunk after the gaps already in `idle`; the first chunk's lists become
    /// the device's, sized for all `gap_count` gaps (one segment or more each) at once
    /// instead of doubled (a doubling holds both buffers at its peak).
    fn append_to(
        self,
        idle: &mut DeviceIdle,
        host_ops: &mut HostTime,
        os_waits: &mut FxHashMap<NameId, TimeNs>,
        gap_count: usize,
    ) {
        if idle.gaps.is_empty() {
            idle.gaps = self.gaps;
            idle.segments = self.segments;
            let rest = gap_count - idle.gaps.len();
            idle.gaps.reserve_exact(rest);
            idle.segments.reserve(rest);
        } else {
            let offset = idle.segments.len();
            idle.gaps.extend(self.gaps.into_iter().map(|mut g| {
                g.segments = table_index(offset + g.segments.start as usize)
                    ..table_index(offset + g.segments.end as usize);
                g
            }));
            idle.segments.extend_from_slice(&self.segments);
        }
        for (k, t) in self.host_ops {
            *host_ops.entry(k).or_default() += t;
        }
        for (n, t) in self.os_waits {
            *os_waits.entry(n).or_default() += t;
        }
        idle.descheduled_ns += self.descheduled_ns;
        for (reason, t) in self.unattributed_by_reason {
            *idle.unattributed_by_reason.entry(reason).or_default() += t;
        }
    }
}

impl GapContext<'_> {
    fn attribute(&self, gaps: &[Interval]) -> GapChunk {
        let mut out = GapChunk {
            gaps: Vec::with_capacity(gaps.len()),
            segments: Vec::with_capacity(gaps.len()),
            ..GapChunk::default()
        };
        for &gap in gaps {
            // The op that ends the gap: prefer one with a launch among those starting there; after
            // the last op of the window, the device's next op.
            let (pool, at) = if gap.end_ns < self.window_end_ns {
                (
                    self.ops,
                    self.ops.partition_point(|o| o.1.start_ns < gap.end_ns),
                )
            } else {
                (&self.work.ops[..], self.after_window)
            };
            let next_start = pool.get(at).map(|o| o.1.start_ns);
            let candidates = pool[at..]
                .iter()
                .take_while(|o| Some(o.1.start_ns) == next_start);
            let ender = candidates
                .clone()
                .find(|o| self.trace.launch_of(o.2).is_some())
                .or_else(|| candidates.clone().next())
                .map(|o| o.2);
            let seg_start = out.segments.len();
            let mut g = GapAttribution {
                trace: self.trace,
                threads: self.threads,
                gap,
                segments: &mut out.segments,
                host_ops: &mut out.host_ops,
            };
            let outcome = match ender {
                Some(ender) => {
                    let full = Interval::new(
                        gap.start_ns,
                        self.trace.span(ender).start_ns.max(gap.end_ns),
                    );
                    g.attribute(full, ender, last_op_ending_at(self.ops, gap.start_ns))
                }
                None => {
                    // After the device's last op: the thread that launched the work before the gap
                    // launched nothing more; what it did instead explains the gap.
                    let lane = last_op_ending_at(self.ops, gap.start_ns)
                        .and_then(|b| self.trace.launch_of(b))
                        .map(|l| self.trace.span(l).lane);
                    match lane {
                        Some(lane) => {
                            g.exposed(gap, lane);
                            Outcome {
                                launch: None,
                                lane: Some(lane),
                                unattributed: None,
                                wait: None,
                            }
                        }
                        None => {
                            g.push(IdleCause::Unattributed, gap, None);
                            Outcome {
                                launch: None,
                                lane: None,
                                unattributed: Some(UnattributedReason::NoLaterWork),
                                wait: None,
                            }
                        }
                    }
                }
            };
            if let Some(lane) = outcome.lane {
                let facts = self.threads.lane(lane);
                if !facts.os_waits.is_empty() || !facts.off_cpu.is_empty() {
                    for seg in &out.segments[seg_start..] {
                        if matches!(seg.cause, IdleCause::HostCompute | IdleCause::DataLoading) {
                            for (name, ns) in facts.os_waits_within(seg.interval) {
                                *out.os_waits.entry(name).or_default() += ns;
                            }
                        }
                        if seg.cause == IdleCause::HostCompute {
                            out.descheduled_ns += facts.unexplained_off_cpu_within(seg.interval);
                        }
                    }
                }
            }
            if let Some(reason) = outcome.unattributed {
                *out.unattributed_by_reason.entry(reason).or_default() += gap.dur_ns();
            }
            out.gaps.push(Gap {
                interval: gap,
                ended_by_at: stored_id(ender.map(|s| s.0)),
                launch_at: stored_id(outcome.launch.map(|s| s.0)),
                lane_at: stored_id(outcome.lane.map(|l| l.0)),
                segments: table_index(seg_start)..table_index(out.segments.len()),
                unattributed: outcome.unattributed,
                wait: outcome.wait,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::detectors::testing::scenario;

    /// Chunks of two gaps (many waves, several chunks per wave, run in parallel) give the
    /// attribution of one chunk, field for field.
    #[test]
    fn gaps_attributed_in_parallel_chunks_match_one_pass() {
        for name in [
            "launch_bound_tiny_kernels",
            "dataloader_single_process",
            "device_sync_every_step",
            "item_every_step",
        ] {
            let trace = scenario(name);
            let works = crate::utilization::device_work(&trace);
            let window = crate::window::analysis_window(&trace).expect("a window");
            let threads = crate::threads::ThreadIndex::build(&trace);
            let fw = crate::environment::framework(&trace);
            let work = &works[0];
            let ops = work.ops_in(window.interval);
            let run = |chunk| {
                super::attribute_idle_in_chunks(&trace, work, &ops, &window, &threads, &fw, chunk)
            };
            let (one, many) = (run(usize::MAX), run(2));
            assert!(one.gaps.len() > 4, "{name}: {} gaps", one.gaps.len());
            assert_eq!(format!("{one:?}"), format!("{many:?}"), "{name}");
        }
    }

    /// One segment or more per gap, one gap or more per kernel: the sizes are the memory of
    /// the attribution (the step a segment falls in is looked up, not stored).
    #[test]
    fn an_idle_segment_takes_24_bytes_and_a_gap_40() {
        assert_eq!(std::mem::size_of::<super::IdleSegment>(), 24);
        assert_eq!(std::mem::size_of::<super::Gap>(), 40);
    }
}
