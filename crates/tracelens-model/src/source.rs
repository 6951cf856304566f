//! Where a trace came from and how it was read, in terms every format shares; what only one
//! format has goes into [`SourceInfo::details`]. Importers fill it, so analyses and renderers
//! never match a format's own strings.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A framework `major.minor` version (PyTorch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
}

impl Version {
    /// `major.minor`.
    #[must_use]
    pub const fn new(major: u32, minor: u32) -> Self {
        Version { major, minor }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The PyTorch versions a file can come from, as far as its format shows (either end open).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameworkRange {
    /// Oldest possible version.
    pub min: Option<Version>,
    /// Newest possible version.
    pub max: Option<Version>,
}

/// One format-specific fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Detail {
    /// A number.
    Count(u64),
    /// A word or a sentence.
    Text(String),
    /// Counts by name.
    Counts(BTreeMap<String, u64>),
}

/// The tool that recorded the trace, as its importer knows it: advice on how to profile
/// again names this tool's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureTool {
    /// PyTorch's profiler (Kineto).
    TorchProfiler,
    /// NVIDIA Nsight Systems.
    NsightSystems,
    /// PyTorch's memory snapshot (`torch.cuda.memory._dump_snapshot`): the caching
    /// allocator's history and state, no timeline of work.
    MemorySnapshot,
    /// Not known.
    #[default]
    Other,
}

/// Where the trace came from and how it was read.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SourceInfo {
    /// Path as given by the user.
    pub path: String,
    /// The importer's id of the format (`kineto_json`, `nsys_sqlite`).
    pub format: String,
    /// Its name for people (`Kineto JSON`).
    pub format_name: String,
    /// What its bytes are (`JSON`, `SQLite`).
    pub content: String,
    /// What its records are called (`events`, `rows`).
    pub records: String,
    /// Whether `tracelens annotate` can write tracks back into it (Chrome-trace JSON).
    pub annotatable: bool,
    /// Compression detected from magic bytes (`gzip`), if any.
    pub compression: Option<String>,
    /// The format's version or generation as the file shows it (`kineto_base_ns`,
    /// `nsys_schema_3.1.2`).
    pub version: String,
    /// One line on what that version means.
    pub version_note: String,
    /// The PyTorch versions the file can come from, as far as the format shows.
    pub framework: FrameworkRange,
    /// Size of the file on disk.
    pub file_bytes: u64,
    /// Bytes of trace content after decompression.
    pub decoded_bytes: u64,
    /// Records read (events, rows).
    pub records_read: u64,
    /// Records kept as spans.
    pub records_kept: u64,
    /// Records of kinds the model does not keep, per kind.
    pub ignored: BTreeMap<String, u64>,
    /// Byte offset (in decoded content) where a truncated file stopped making sense.
    pub truncated_at_byte: Option<u64>,
    /// What only this format has (Kineto: `container`, `events_by_phase`; Nsight Systems:
    /// `rows_by_table`).
    pub details: BTreeMap<String, Detail>,
    /// Whether the format can carry operator input shapes and dtypes (Kineto's `Input Dims`
    /// and `Input type`; Nsight Systems exports cannot): analyses that need them say why
    /// they are missing.
    #[serde(default)]
    pub records_op_inputs: bool,
    /// Whether the capture says why a thread left the CPU (Nsight Systems 2024.6+ records a
    /// `threadState` with each switch-out, when it knows it): only then is an off-CPU
    /// stretch known to be runnable-but-not-running, which a CPU-oversubscription claim needs.
    #[serde(default)]
    pub records_thread_states: bool,
    /// CPU samples the capture holds and the model does not read (Nsight Systems
    /// `-s cpu`: `COMPOSITE_EVENTS` rows): advice must not ask to record them again.
    #[serde(default)]
    pub cpu_samples: u64,
    /// The tool that recorded the trace.
    #[serde(default)]
    pub capture_tool: CaptureTool,
    /// Device records of accelerators the model does not analyse (MTIA, NPU, …), per
    /// accelerator: the importer names them, so a trace of one is not "no GPU activity".
    #[serde(default)]
    pub accelerators_not_analysed: BTreeMap<String, u64>,
}
