//! GPU idle ready to be written back into a trace as tracks (`tracelens annotate`): each
//! device's idle segments by cause, and for sync drains the thread and time of the blocking
//! call that caused them, so the writer needs nothing but this data.

use crate::idle::{DeviceIdle, IdleCause};
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

/// The idle tracks of every device of an analysis.
#[must_use]
pub fn idle_tracks(trace: &Trace, device_idle: &[DeviceIdle]) -> Vec<IdleTrack> {
    let id = |i: Ident| match i {
        Ident::Num(n) => TraceId::Num(n),
        Ident::Text(t) => TraceId::Text(trace.names.get(t).to_string()),
    };
    device_idle
        .iter()
        .map(|d| IdleTrack {
            device: d.device,
            marks: d
                .segments
                .iter()
                .map(|seg| IdleMark {
                    cause: seg.cause,
                    interval: seg.interval,
                    sync: seg.sync.and_then(|sync| {
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
