//! Lanes: the CPU threads and GPU streams that spans run on.

use crate::names::NameId;
use serde::Serialize;
use std::ops::Range;

/// Handle of a lane in a [`crate::Trace`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaneId(pub u32);

impl LaneId {
    /// The lane at position `i` of [`crate::Trace::lanes`].
    #[must_use]
    pub fn at(i: usize) -> LaneId {
        LaneId(crate::names::table_index(i))
    }
}

/// A process or thread identifier as traces write it: a number, or a text such as `"Spans"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ident {
    /// A numeric id (also a string that holds an integer, as 2021 traces write tids).
    Num(i64),
    /// A textual id.
    Text(NameId),
}

/// What a lane is: a CPU thread of a process, or a stream of a GPU device.
///
/// Lanes are decided by the event category, never by pid: Kineto writes Python events of
/// worker threads with pid 0 / tid 0, which would otherwise collide with GPU 0 stream 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LaneKey {
    /// A GPU stream (`device` is the device index, `stream` the stream id).
    Gpu {
        /// Device index as the trace numbers it.
        device: i64,
        /// Stream id on that device.
        stream: i64,
    },
    /// A CPU thread.
    Cpu {
        /// Process id.
        pid: Ident,
        /// Thread id.
        tid: Ident,
    },
}

impl LaneKey {
    /// Whether this lane is a GPU stream.
    #[must_use]
    pub fn is_gpu(&self) -> bool {
        matches!(self, LaneKey::Gpu { .. })
    }

    /// The GPU device index of a stream lane.
    #[must_use]
    pub fn device(&self) -> Option<i64> {
        match self {
            LaneKey::Gpu { device, .. } => Some(*device),
            LaneKey::Cpu { .. } => None,
        }
    }
}

/// One lane and the contiguous range of its spans in the trace's span table.
#[derive(Clone, Debug)]
pub struct Lane {
    /// What the lane is.
    pub key: LaneKey,
    /// Thread name (`thread 23232 (python3)`) or stream name, when the trace names it.
    pub name: Option<NameId>,
    /// Process name of a CPU lane, when the trace names it.
    pub process_name: Option<NameId>,
    /// Indices of this lane's spans in [`crate::Trace::spans`], sorted by start.
    pub spans: Range<u32>,
}

/// Lane kind as a short label for output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneClass {
    /// A GPU stream.
    GpuStream,
    /// A CPU thread.
    CpuThread,
}
