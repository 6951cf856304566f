//! The change a finding's fix makes: what a detector hands the critical path's replay, and
//! the assumption its prediction rests on.

use tracelens_model::{Interval, SpanId};

/// The change a finding's fix makes, as the replay applies it.
#[derive(Clone, Debug, PartialEq)]
pub enum WhatIf {
    /// The DataLoader waits take no time (enough workers to hide loading);
    /// `workers_added`: the fix starts worker processes where there were none, which share
    /// the CPU with the training process ([`WORKER_CONTENTION_SLOWDOWN`]).
    NoDataLoaderWait {
        /// The fix starts worker processes where there were none.
        workers_added: bool,
    },
    /// These host-blocking calls no longer wait for the GPU.
    AsyncCalls(Vec<SpanId>),
    /// These calls vanish: the host time inside them is the cost (a free that memory kept
    /// and reused would not make), not a wait for the GPU.
    RemovedCalls(Vec<SpanId>),
    /// These copy calls become pinned and non-blocking; the copies in `faster` take the given
    /// fraction of their time (their device's fastest large host copy's rate, or pinned
    /// copies' over its host link where faster), the rest as
    /// long as recorded.
    PinnedCopies {
        /// The copy calls that no longer block the host.
        calls: Vec<SpanId>,
        /// Copies (GPU spans) that move their bytes faster, with the fraction of their time.
        faster: Vec<(SpanId, f64)>,
    },
    /// The launch-bound stretches (GPU time) replay as CUDA graphs: their launches and the
    /// host work between them take no time, and their ops run back to back.
    GraphLaunches(Vec<Interval>),
    /// Collectives fully overlapped with compute.
    OverlapCommunication,
}

/// How much longer the training process's CPU work takes once DataLoader worker processes
/// share its CPU, as a fraction. Fitted to the corpus's two public `num_workers=0` → `4` step
/// pairs, recorded on different machines and days (`kineto/tb_plugin/samples` and
/// `kineto/plugin/samples`): 4.3 % and 7.0 % make each replayed prediction exact, and the
/// GPU's wait for CPU work between launches grew 17.5 % and 14.2 % (`tracelens diff`).
pub const WORKER_CONTENTION_SLOWDOWN: f64 = 0.05;

impl WhatIf {
    /// What the prediction assumes, in words.
    #[must_use]
    pub fn assumption(&self) -> &'static str {
        match self {
            WhatIf::NoDataLoaderWait { workers_added: true } => "assumes the DataLoader waits vanish (enough workers to prefetch every batch) and the training process's CPU work takes 5 % longer while the new worker processes share its CPU (4-7 % on two public num_workers=0 → 4 pairs)",
            WhatIf::NoDataLoaderWait { workers_added: false } => "assumes the DataLoader waits vanish (enough workers to prefetch every batch) and the host work after them is unchanged",
            WhatIf::AsyncCalls(_) => "assumes these calls no longer wait for the GPU and the host work after them is unchanged",
            WhatIf::RemovedCalls(_) => "assumes these frees are not made (the memory is kept and reused, so neither they nor the allocations they force happen) and the host work around them is unchanged",
            WhatIf::PinnedCopies { .. } => "assumes the copy calls return at once (pinned memory, non_blocking=True) and each copy of 1 MB or more moves its bytes at least as fast as the device's fastest large host copy in the trace, or as pinned copies run over its host link (75 % of the PCIe generation's nominal rate) where that is faster (smaller ones take as long on the GPU)",
            WhatIf::GraphLaunches(_) => "assumes each launch-bound stretch is captured once and replayed as a CUDA graph: its launches and the host work between them vanish and its kernels run back to back",
            WhatIf::OverlapCommunication => "assumes every collective runs fully hidden under compute",
        }
    }
}
