//! Findings: what a detector reports — a problem with evidence, an estimated win and advice.

use serde::Serialize;
use std::collections::BTreeMap;
use tracelens_model::{Interval, TimeNs};

/// What kind of problem a finding describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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
}

/// How much it matters, from the estimated win's share of step time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Under 3 % of step time.
    Low,
    /// 3 % to 10 %.
    Medium,
    /// 10 % or more.
    High,
}

impl Severity {
    /// Severity of a win worth `share_percent` of step time.
    pub fn from_share(share_percent: f64) -> Self {
        if share_percent >= 10.0 {
            Severity::High
        } else if share_percent >= 3.0 {
            Severity::Medium
        } else {
            Severity::Low
        }
    }
}

/// How sure the attribution is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Indirect evidence or under-recorded regions.
    Low,
    /// Clear pattern, some inference.
    Medium,
    /// Direct evidence in the trace.
    High,
}

/// The trace evidence behind a finding (sampled, never a dump).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Evidence {
    /// Up to five example time ranges (trace ns).
    pub time_ranges: Vec<Interval>,
    /// Named counts and durations (`calls`, `host_blocked_ns`, …).
    pub counts: BTreeMap<String, i64>,
    /// Up to ten span ids, for renderers that link into the timeline.
    pub span_ids: Vec<u32>,
}

/// One diagnosed problem.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// One line, with the numbers.
    pub title: String,
    /// From the win's share of step time.
    pub severity: Severity,
    /// GPU idle (or exposed GPU time) this problem explains over the analysed window: an
    /// upper bound of what fixing it recovers.
    pub estimated_win_ns: TimeNs,
    /// The same per profiled step.
    pub estimated_win_per_step_ns: TimeNs,
    /// The same as a share of the analysed step time.
    pub estimated_win_percent: f64,
    /// What the win counts.
    pub win_basis: String,
    /// CPU time per step the problem costs on the host side (blocked threads), when it does.
    pub cpu_cost_per_step_ns: Option<TimeNs>,
    /// Evidence.
    pub evidence: Evidence,
    /// Python call site (`file:line function`), when known.
    pub call_site: Option<String>,
    /// What to do.
    pub advice: String,
    /// A short code example of the fix.
    pub snippet: String,
    /// How sure.
    pub confidence: Confidence,
}
