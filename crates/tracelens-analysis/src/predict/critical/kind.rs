//! What a critical-path segment is ([`CriticalKind`]): the vocabulary the walk, the replay
//! and the report share.

use serde::Serialize;

/// What a critical-path segment is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CriticalKind {
    /// A compute kernel.
    Kernel,
    /// A collective kernel (NCCL/RCCL).
    Communication,
    /// A GPU copy.
    Memcpy,
    /// A GPU fill.
    Memset,
    /// From a launch call's start to its GPU op's start: the call and the launch latency.
    Launch,
    /// An API call on the host (not a launch the GPU waited for).
    Runtime,
    /// A host-blocking call returning after the GPU work it waited for ended.
    Sync,
    /// The host waiting for the DataLoader.
    DataLoader,
    /// Host time between API calls: CPU ops, Python, the framework.
    HostWork,
    /// Between two ops of one stream.
    GpuQueue,
    /// A GPU op waiting past its launch and its stream (another stream, an event, a
    /// collective).
    GpuWait,
    /// Time no recorded work explains (after the step's last op, or a walk cut short).
    Untraced,
}

impl CriticalKind {
    /// Every kind, in report order (the declaration order: `kind as usize` indexes it).
    pub const ALL: [CriticalKind; 12] = [
        CriticalKind::Kernel,
        CriticalKind::Communication,
        CriticalKind::Memcpy,
        CriticalKind::Memset,
        CriticalKind::Launch,
        CriticalKind::Runtime,
        CriticalKind::Sync,
        CriticalKind::DataLoader,
        CriticalKind::HostWork,
        CriticalKind::GpuQueue,
        CriticalKind::GpuWait,
        CriticalKind::Untraced,
    ];

    /// Snake-case label (JSON, rule metrics).
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            CriticalKind::Kernel => "kernel",
            CriticalKind::Communication => "communication",
            CriticalKind::Memcpy => "memcpy",
            CriticalKind::Memset => "memset",
            CriticalKind::Launch => "launch",
            CriticalKind::Runtime => "runtime",
            CriticalKind::Sync => "sync",
            CriticalKind::DataLoader => "data_loader",
            CriticalKind::HostWork => "host_work",
            CriticalKind::GpuQueue => "gpu_queue",
            CriticalKind::GpuWait => "gpu_wait",
            CriticalKind::Untraced => "untraced",
        }
    }

    /// What it is, in words.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            CriticalKind::Kernel => "compute kernels",
            CriticalKind::Communication => "collective kernels",
            CriticalKind::Memcpy => "GPU copies",
            CriticalKind::Memset => "GPU fills",
            CriticalKind::Launch => "launch calls and launch latency",
            CriticalKind::Runtime => "other API calls on the host",
            CriticalKind::Sync => "host-blocking calls returning",
            CriticalKind::DataLoader => "waiting for the DataLoader",
            CriticalKind::HostWork => "host work between API calls (CPU ops, Python)",
            CriticalKind::GpuQueue => "gaps between ops of a stream",
            CriticalKind::GpuWait => "GPU waiting on another stream or event",
            CriticalKind::Untraced => "no recorded work",
        }
    }

    /// Whether the segment is time on the GPU.
    #[must_use]
    pub fn on_gpu(self) -> bool {
        matches!(
            self,
            CriticalKind::Kernel
                | CriticalKind::Communication
                | CriticalKind::Memcpy
                | CriticalKind::Memset
                | CriticalKind::GpuQueue
                | CriticalKind::GpuWait
        )
    }
}
