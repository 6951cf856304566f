//! Findings: what a detector reports — a problem with evidence, an estimated win and advice.

use crate::finding_kind::FindingKind;
use serde::Serialize;
use tracelens_model::{Interval, TimeNs};

/// What a finding's win counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WinKind {
    /// GPU idle time of the analysis window; every idle nanosecond is credited to at most one
    /// finding, so these wins add up to at most the idle time.
    GpuIdle,
    /// GPU copy time not overlapped by compute, which pinned non-blocking copies could hide
    /// (busy time, not idle: it does not add to the idle wins).
    ExposedCopy,
    /// None on the GPU: the problem costs host time only (see `cpu_cost_per_step_ns`).
    HostOnly,
    /// GPU time in which only communication kernels run, which overlap with compute could
    /// hide (busy time, not idle).
    ExposedCommunication,
}

/// How much it matters, from the estimated win's share of step time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
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
    #[must_use]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Indirect evidence or under-recorded regions.
    Low,
    /// Clear pattern, some inference.
    Medium,
    /// Direct evidence in the trace.
    High,
}

/// One typed value of evidence.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceValue {
    /// A number of things.
    Count(u64),
    /// A duration in ns.
    DurationNs(TimeNs),
    /// A percent, 0–100.
    Percent(f64),
    /// A size in bytes.
    Bytes(u64),
    /// A plain number (a mean, a ratio).
    Number(f64),
}

/// One named piece of evidence.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct EvidenceItem {
    /// What it is (`calls`, `host blocked`, an op name).
    pub label: String,
    /// Its value.
    pub value: EvidenceValue,
}

/// The trace evidence behind a finding (sampled, never a dump).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Evidence {
    /// Up to five example time ranges (trace ns).
    pub time_ranges: Vec<Interval>,
    /// Named counts, durations, percents and sizes, in a fixed order.
    pub items: Vec<EvidenceItem>,
    /// Up to ten span ids, for renderers that link into the timeline (not serialized: they
    /// mean something inside one import only).
    #[serde(skip)]
    pub span_ids: Vec<u32>,
    /// Which item counts the problem's occurrences ([`Evidence::add_occurrences`]): the count
    /// rules and diffs compare. Not serialized: results are made from a live diagnosis.
    #[serde(skip)]
    occurrences_at: Option<usize>,
}

impl Evidence {
    /// Adds an item.
    pub fn add(&mut self, label: impl Into<String>, value: EvidenceValue) {
        self.items.push(EvidenceItem {
            label: label.into(),
            value,
        });
    }

    /// Adds the count of the problem's occurrences (calls, gaps, copies, short kernels): the
    /// figure `finding.<kind>.count` and the diff compare. A detector names at most one.
    pub fn add_occurrences(&mut self, label: impl Into<String>, count: u64) {
        self.occurrences_at = Some(self.items.len());
        self.add(label, EvidenceValue::Count(count));
    }

    /// The count of the problem's occurrences, when the detector gave one.
    #[must_use]
    pub fn occurrences(&self) -> Option<u64> {
        match self.items.get(self.occurrences_at?)?.value {
            EvidenceValue::Count(n) => Some(n),
            _ => None,
        }
    }

    /// The value labelled `label`, if any.
    #[must_use]
    pub fn get(&self, label: &str) -> Option<EvidenceValue> {
        self.items
            .iter()
            .find(|i| i.label == label)
            .map(|i| i.value)
    }
}

/// One diagnosed problem.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// For host-compute findings, which CPU work it is (each sub-cause has its own fix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_cause: Option<crate::attribute::host_work::HostWork>,
    /// One line, with the numbers.
    pub title: String,
    /// From the win's share of step time.
    pub severity: Severity,
    /// What the win counts.
    pub win_kind: WinKind,
    /// GPU idle (or exposed copy time) this problem explains over the analysis window: an
    /// upper bound of what fixing it recovers.
    pub estimated_win_ns: TimeNs,
    /// The same per step (the whole window without steps).
    pub estimated_win_per_step_ns: TimeNs,
    /// Per-step win / the verdict's step time, in percent (0–100).
    pub estimated_win_percent: f64,
    /// What the win counts, in words.
    pub win_basis: String,
    /// CPU time per step the problem costs on the host side (blocked threads), when it does.
    pub cpu_cost_per_step_ns: Option<TimeNs>,
    /// Evidence.
    pub evidence: Evidence,
    /// Python call site (`file:line function`), when known.
    pub call_site: Option<String>,
    /// The one actionable sentence: what to change.
    pub fix: String,
    /// Why, and the fix in full.
    pub advice: String,
    /// A short code example of the fix.
    pub snippet: String,
    /// How sure.
    pub confidence: Confidence,
    /// The step time predicted by replaying the trace with the fix made (the window without
    /// steps), when the fix is one the replay can model.
    #[serde(default)]
    pub predicted_step_ns: Option<TimeNs>,
    /// What the prediction assumes, or why there is none.
    #[serde(default)]
    pub prediction: String,
    /// The change the fix makes, for the replay (not serialized: it names spans of one
    /// import).
    #[serde(skip)]
    pub what_if: Option<crate::predict::what_if::WhatIf>,
}

impl Finding {
    /// Step time the fix saves by the best estimate: the predicted saving when the replay
    /// predicts one, else the upper bound per step.
    #[must_use]
    pub fn expected_gain_ns(&self, measured_step_ns: TimeNs) -> TimeNs {
        self.predicted_step_ns
            .map_or(self.estimated_win_per_step_ns, |p| {
                (measured_step_ns - p).max(0)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_occurrence_count_is_the_item_the_detector_named() {
        let mut e = Evidence::default();
        assert_eq!(e.occurrences(), None);
        e.add("blocking API calls", EvidenceValue::Count(7));
        assert_eq!(
            e.occurrences(),
            None,
            "a count is not the occurrences unless named"
        );
        e.add_occurrences("calls", 3);
        e.add("copies", EvidenceValue::Count(9));
        assert_eq!(e.occurrences(), Some(3));
        assert_eq!(e.get("calls"), Some(EvidenceValue::Count(3)));
    }
}
