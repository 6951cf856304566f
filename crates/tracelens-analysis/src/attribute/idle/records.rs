//! The idle attribution's records: why the GPU sat idle ([`IdleCause`]), each gap and its
//! segments, and the device's whole account ([`DeviceIdle`]), with the bounds that decide
//! between causes.

use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Range;
use tracelens_model::{Interval, SpanId, TimeNs, NS_PER_US};

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
            IdleCause::GraphReplay => "between the kernels of one graph replay",
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
    /// The op that ends the gap is a unified-memory migration: the driver moved managed pages
    /// on a fault (the host or a kernel touched them), with no launch call behind it.
    UnifiedMemory,
    /// The op that ends the gap is a migration the program asked for (a prefetch), whose
    /// call the trace does not link to it.
    Prefetch,
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
pub(super) const NO_ID: u32 = u32::MAX;

pub(super) fn no_id() -> u32 {
    NO_ID
}

pub(super) fn stored_id(id: Option<u32>) -> u32 {
    id.unwrap_or(NO_ID)
}

pub(super) fn read_id(at: u32) -> Option<u32> {
    (at != NO_ID).then_some(at)
}

/// One piece of a gap with one cause, as read ([`DeviceIdle::segments_of`]); stored as a
/// [`StoredSegment`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct IdleSegment {
    /// Why.
    pub cause: IdleCause,
    /// When.
    pub interval: Interval,
    #[serde(skip, default = "no_id")]
    pub(super) sync_at: u32,
}

impl IdleSegment {
    /// The blocking call charged, for `sync_drain`.
    #[must_use]
    pub fn sync(&self) -> Option<SpanId> {
        read_id(self.sync_at).map(SpanId)
    }
}

/// A segment as stored. A gap's segments tile it in time order (each starts where the one
/// before it ends, the first where the gap starts), so only the end is kept: 16 bytes, one
/// or more per gap.
#[derive(Clone, Copy, Debug)]
pub(super) struct StoredSegment {
    pub(super) end_ns: TimeNs,
    pub(super) sync_at: u32,
    pub(super) cause: IdleCause,
}

/// The segments `stored` holds, the first starting at `start_ns`.
pub(super) fn read_segments(
    stored: &[StoredSegment],
    mut start_ns: TimeNs,
) -> impl Iterator<Item = IdleSegment> + '_ {
    stored.iter().map(move |s| {
        let seg = IdleSegment {
            cause: s.cause,
            interval: Interval::new(start_ns, s.end_ns),
            sync_at: s.sync_at,
        };
        start_ns = s.end_ns;
        seg
    })
}

/// One idle gap. 40 bytes: ids are stored with a sentinel and read through methods.
#[derive(Clone, Debug)]
pub struct Gap {
    /// When (inside the window).
    pub interval: Interval,
    pub(super) ended_by_at: u32,
    pub(super) launch_at: u32,
    pub(super) lane_at: u32,
    /// Where its segments are in the device's list ([`DeviceIdle::segments_of`] reads them).
    pub(super) segments: Range<u32>,
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
    /// Every segment, gap by gap ([`DeviceIdle::segments`] reads them).
    pub(super) segments: Vec<StoredSegment>,
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
    /// Ops in the window launched by graph launches (one launch, many ops) that neither a
    /// capture trace nor graph annotations account for (no origin at capture).
    pub graph_replay_ops: u64,
}

impl DeviceIdle {
    /// Whether the attribution can be trusted: false when graph replays that no capture
    /// evidence accounts for feed the window.
    #[must_use]
    pub fn reliable(&self) -> bool {
        self.graph_replay_ops == 0
    }

    /// The segments of one gap, in time order; together they cover it.
    pub fn segments_of(&self, gap: &Gap) -> impl Iterator<Item = IdleSegment> + '_ {
        read_segments(
            &self.segments[gap.segments.start as usize..gap.segments.end as usize],
            gap.interval.start_ns,
        )
    }

    /// Every segment, gap by gap.
    pub fn segments(&self) -> impl Iterator<Item = IdleSegment> + '_ {
        self.gaps.iter().flat_map(|g| self.segments_of(g))
    }
}
