//! The kinds of problem a finding can describe, and the levers a fix can pull: the vocabulary
//! the detectors, the predictions, the results, the rules and every output share. Reads no
//! stage (which lever a finding gets is decided in `diagnose::lever`).

use serde::Serialize;

/// What kind of problem a finding describes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The GPU waits for the DataLoader.
    DataLoaderStall,
    /// A host-blocking sync drains the GPU queue.
    ImplicitSync,
    /// Copies from/to pageable memory cannot overlap compute.
    PageableCopies,
    /// Kernels shorter than their launches: the GPU starves between them.
    LaunchBound,
    /// The GPU waits while the CPU runs other work (optimizer, Python, CPU ops).
    HostCompute,
    /// The launching thread is runnable but not running: too many threads for the cores.
    CpuOversubscription,
    /// Queued work waits for an event recorded on another stream.
    CrossStreamWait,
    /// Queued work waits on a collective.
    CollectiveWait,
    /// Queued work waits and the trace shows no reason.
    GpuWait,
    /// Copies of one direction take a big share of the step.
    CopyTime,
    /// Collectives run with no compute beside them.
    ExposedCommunication,
    /// Kernels launched with fewer blocks than the GPU has multiprocessors.
    SmallGrid,
    /// Managed memory migrating on page faults.
    UnifiedMemory,
    /// The GPU is busy with compute kernels most of the window: the kernels are the cost.
    KernelWork,
}

impl FindingKind {
    /// Every kind, in report order. Metrics, documentation and labels are checked against it.
    pub const ALL: [FindingKind; 14] = [
        FindingKind::DataLoaderStall,
        FindingKind::ImplicitSync,
        FindingKind::PageableCopies,
        FindingKind::LaunchBound,
        FindingKind::HostCompute,
        FindingKind::CpuOversubscription,
        FindingKind::CrossStreamWait,
        FindingKind::CollectiveWait,
        FindingKind::GpuWait,
        FindingKind::CopyTime,
        FindingKind::ExposedCommunication,
        FindingKind::SmallGrid,
        FindingKind::UnifiedMemory,
        FindingKind::KernelWork,
    ];

    /// Snake-case label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            FindingKind::DataLoaderStall => "data_loader_stall",
            FindingKind::ImplicitSync => "implicit_sync",
            FindingKind::PageableCopies => "pageable_copies",
            FindingKind::LaunchBound => "launch_bound",
            FindingKind::HostCompute => "host_compute",
            FindingKind::CpuOversubscription => "cpu_oversubscription",
            FindingKind::CrossStreamWait => "cross_stream_wait",
            FindingKind::CollectiveWait => "collective_wait",
            FindingKind::GpuWait => "gpu_wait",
            FindingKind::CopyTime => "copy_time",
            FindingKind::ExposedCommunication => "exposed_communication",
            FindingKind::SmallGrid => "small_grid",
            FindingKind::UnifiedMemory => "unified_memory",
            FindingKind::KernelWork => "kernel_work",
        }
    }
}

/// What a fix changes, in the program's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lever {
    /// Fewer, larger launches: compile the step, replay CUDA graphs, fuse, raise the batch.
    FewerLaunches,
    /// Keep values on the GPU and read them rarely.
    KeepValuesOnGpu,
    /// Copy from pinned memory, asynchronously.
    PinnedAsyncCopies,
    /// Keep memory cached instead of freeing it back to the device.
    CachingAllocator,
    /// Allocate device memory once, outside the loop (a directive program: a data region).
    AllocateOnce,
    /// Measure after the one-time work: capture later iterations.
    CaptureAfterWarmUp,
    /// One-time work of a program that runs its GPU work once: the run's fixed cost.
    StartUpCost,
    /// Faster kernels, or less kernel work: the GPU is busy with them.
    FasterKernels,
}

impl Lever {
    /// Every lever, in table order.
    pub const ALL: [Lever; 8] = [
        Lever::FewerLaunches,
        Lever::KeepValuesOnGpu,
        Lever::PinnedAsyncCopies,
        Lever::CachingAllocator,
        Lever::AllocateOnce,
        Lever::CaptureAfterWarmUp,
        Lever::StartUpCost,
        Lever::FasterKernels,
    ];

    /// What the lever needs the trace to show, in words (the table's preconditions).
    #[must_use]
    pub fn needs(self) -> &'static str {
        match self {
            Lever::FewerLaunches => "per-launch CPU cost over a sequence of launches with no host read of a GPU value inside it",
            Lever::KeepValuesOnGpu => "host-blocking reads of values the GPU computes",
            Lever::PinnedAsyncCopies => "copies between pageable host memory and the GPU that block the host",
            Lever::CachingAllocator => "frees that wait for the device, made again and again",
            Lever::AllocateOnce => "device allocations made again and again, about one per kernel launch, outside a caching allocator",
            Lever::CaptureAfterWarmUp => "one-time work, in a program whose later iterations can be captured",
            Lever::StartUpCost => "one-time work, in a program that runs its GPU work once",
            Lever::FasterKernels => "a GPU busy with compute kernels nearly all the window, so little idle is left to recover",
        }
    }

    /// Whether the lever is a per-step change (every lever but the one-time ones).
    #[must_use]
    pub fn per_step(self) -> bool {
        !matches!(self, Lever::CaptureAfterWarmUp | Lever::StartUpCost)
    }
}
