//! GPU idle and the critical path ready to be written back into a trace as tracks (`tracelens
//! annotate`): each device's idle segments by cause, and for sync drains the thread and time
//! of the blocking call that caused them; the critical path's segments with the thread each
//! host segment runs on; each GPU's allocated and reserved memory as counters with its peak;
//! so the writer needs nothing but this data.

use crate::attribute::idle::{DeviceIdle, IdleCause};
use tracelens_model::{Ident, Interval, LaneKey, TimeNs, Trace};

/// A process or thread id as the trace wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceId {
    /// A number.
    Num(i64),
    /// A text.
    Text(String),
}

/// The blocking call an idle segment follows: where to start an arrow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncOrigin {
    /// Its process id.
    pub pid: TraceId,
    /// Its thread id.
    pub tid: TraceId,
    /// Its start.
    pub start_ns: TimeNs,
}

/// One idle segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleMark {
    /// Why the GPU was idle.
    pub cause: IdleCause,
    /// When.
    pub interval: Interval,
    /// The blocking call charged, for sync drains on a CPU thread.
    pub sync: Option<SyncOrigin>,
}

/// The idle track of one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleTrack {
    /// Device index.
    pub device: i64,
    /// Its idle segments, in time order.
    pub marks: Vec<IdleMark>,
}

/// One segment of the critical path, for a track of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriticalMark {
    /// What it is.
    pub kind: crate::predict::critical::CriticalKind,
    /// The op, call or kernel.
    pub name: String,
    /// When.
    pub interval: Interval,
    /// The CPU thread it runs on (process id, thread id), for host segments.
    pub thread: Option<(TraceId, TraceId)>,
}

fn trace_id(trace: &Trace, i: Ident) -> TraceId {
    match i {
        Ident::Num(n) => TraceId::Num(n),
        Ident::Text(t) => TraceId::Text(trace.names.get(t).to_string()),
    }
}

/// The critical path of the representative step, segment by segment.
#[must_use]
pub fn critical_marks(
    trace: &Trace,
    path: &crate::predict::critical::CriticalPath,
) -> Vec<CriticalMark> {
    path.segments
        .iter()
        .map(|s| CriticalMark {
            kind: s.kind,
            name: s.name.clone(),
            interval: Interval::new(s.start_ns, s.end_ns),
            thread: s
                .lane
                .and_then(|l| match trace.lanes.get(l.0 as usize)?.key {
                    LaneKey::Cpu { pid, tid } => Some((trace_id(trace, pid), trace_id(trace, tid))),
                    LaneKey::Gpu { .. } => None,
                }),
        })
        .collect()
}

/// The idle tracks of every device of an analysis.
#[must_use]
pub fn idle_tracks(trace: &Trace, device_idle: &[DeviceIdle]) -> Vec<IdleTrack> {
    let id = |i: Ident| trace_id(trace, i);
    device_idle
        .iter()
        .map(|d| IdleTrack {
            device: d.device,
            marks: d
                .segments()
                .map(|seg| IdleMark {
                    cause: seg.cause,
                    interval: seg.interval,
                    sync: seg.sync().and_then(|sync| {
                        let span = trace.span(sync);
                        match trace.lane(span.lane).key {
                            LaneKey::Cpu { pid, tid } => Some(SyncOrigin {
                                pid: id(pid),
                                tid: id(tid),
                                start_ns: span.start_ns,
                            }),
                            LaneKey::Gpu { .. } => None,
                        }
                    }),
                })
                .collect(),
        })
        .collect()
}

/// Counter values per device at most: a longer run keeps each slice's highest sample.
const MAX_COUNTER_POINTS: usize = 20_000;

/// One value of the memory counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryCounter {
    /// When.
    pub ts_ns: TimeNs,
    /// Allocated bytes after it (the allocator's level).
    pub allocated_bytes: i64,
    /// Reserved bytes after it, when recorded.
    pub reserved_bytes: Option<i64>,
}

/// One GPU's memory as counters, with its peak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryTrack {
    /// The GPU index.
    pub device: i64,
    /// The counters, in time order (at most 20,000: each slice's highest sample).
    pub counters: Vec<MemoryCounter>,
    /// The window's allocated peak: when and how much (the memory view's figure).
    pub peak: Option<(TimeNs, i64)>,
}

/// The memory tracks of every GPU with allocator totals, the peaks from `memory` (the
/// diagnosis's view, so the marker and the report agree).
#[must_use]
pub fn memory_tracks(
    trace: &Trace,
    memory: &[crate::views::memory::DeviceMemory],
) -> Vec<MemoryTrack> {
    use crate::views::memory::{allocated_levels, gpu_samples, PeakBasis};
    memory
        .iter()
        .filter(|m| m.basis == PeakBasis::AllocatorTotals)
        .map(|m| {
            let samples = gpu_samples(trace, m.device);
            let levels = allocated_levels(&samples, true);
            let every = samples.len().div_ceil(MAX_COUNTER_POINTS).max(1);
            let counters = samples
                .chunks(every)
                .zip(levels.chunks(every))
                .filter_map(|(s, l)| {
                    let (i, &level) = l.iter().enumerate().max_by_key(|&(_, v)| *v)?;
                    Some(MemoryCounter {
                        ts_ns: s[i].ts_ns,
                        allocated_bytes: level,
                        reserved_bytes: s[i].total_reserved,
                    })
                })
                .collect();
            MemoryTrack {
                device: m.device,
                counters,
                peak: Some((m.peak_at_ns, m.peak_allocated_bytes)),
            }
        })
        .collect()
}
