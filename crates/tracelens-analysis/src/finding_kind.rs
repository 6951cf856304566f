//! The kinds of problem a finding can describe: the vocabulary the detectors, the predictions,
//! the results, the rules and every output share. Reads no stage.

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
}

impl FindingKind {
    /// Every kind, in report order. Metrics, documentation and labels are checked against it.
    pub const ALL: [FindingKind; 11] = [
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
        }
    }
}
