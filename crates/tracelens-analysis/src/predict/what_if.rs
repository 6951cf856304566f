//! The change a finding's fix makes: what a detector hands the critical path's replay, and
//! the assumption its prediction rests on.

use tracelens_model::{Interval, SpanId};

/// The change a finding's fix makes, as the replay applies it.
#[derive(Clone, Debug, PartialEq)]
pub enum WhatIf {
    /// The DataLoader waits take no time (enough workers to hide loading).
    NoDataLoaderWait,
    /// These host-blocking calls no longer wait for the GPU.
    AsyncCalls(Vec<SpanId>),
    /// These copy calls become pinned and non-blocking (copy time unchanged).
    PinnedCopies(Vec<SpanId>),
    /// The launch-bound stretches (GPU time) replay as CUDA graphs: their launches and the
    /// host work between them take no time, and their ops run back to back.
    GraphLaunches(Vec<Interval>),
    /// Collectives fully overlapped with compute.
    OverlapCommunication,
}

impl WhatIf {
    /// What the prediction assumes, in words.
    #[must_use]
    pub fn assumption(&self) -> &'static str {
        match self {
            WhatIf::NoDataLoaderWait => "assumes the DataLoader waits vanish (enough workers to prefetch every batch) and the host work after them is unchanged",
            WhatIf::AsyncCalls(_) => "assumes these calls no longer wait for the GPU and the host work after them is unchanged",
            WhatIf::PinnedCopies(_) => "assumes the copy calls return at once (pinned memory, non_blocking=True) and each copy takes as long on the GPU",
            WhatIf::GraphLaunches(_) => "assumes each launch-bound stretch is captured once and replayed as a CUDA graph: its launches and the host work between them vanish and its kernels run back to back",
            WhatIf::OverlapCommunication => "assumes every collective runs fully hidden under compute",
        }
    }
}
