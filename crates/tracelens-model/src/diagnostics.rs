//! Warnings about the input: what was salvaged, skipped, clamped or could not be linked.

use serde::Serialize;

/// Why a warning was raised.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// The file ended mid-document; complete events before the cut were kept.
    Truncated,
    /// Events that could not be parsed were skipped.
    MalformedEvent,
    /// Negative durations were clamped to zero.
    NegativeDuration,
    /// Events with absurd durations (over a day) were dropped.
    AbsurdDuration,
    /// GPU ops whose launch call is not in the trace.
    UnlinkedGpuOp,
    /// Several API calls share one correlation id.
    DuplicateCorrelation,
    /// `External id` disagrees with time containment (2022-04 … 2024-02 Kineto bug).
    ExternalIdMismatch,
    /// The trace holds no GPU activity at all.
    NoGpuActivity,
    /// CUDA/HIP graph launches: one launch feeds many kernels; idle attribution is unreliable.
    GraphLaunches,
    /// A safety limit was reached (an oversized value skipped, a string cut, a list capped).
    LimitReached,
    /// The same event appears more than once; it is counted once.
    DuplicateEvent,
    /// Names could not be resolved (a damaged or missing string table).
    MissingNames,
    /// Anything else.
    Other,
}

/// One warning, aggregated: `count` occurrences, one message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Warning {
    /// Why.
    pub kind: WarningKind,
    /// Human-readable, one line.
    pub message: String,
    /// How many events it concerns (1 for whole-file warnings).
    pub count: u64,
}
