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
    /// Kernel time on multiprocessors a small grid leaves empty, which a grid covering the
    /// GPU could save (busy time, not idle).
    KernelTime,
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
    /// rules and diffs compare, kept in the document so a stored result gives the same count.
    #[serde(
        default,
        rename = "occurrences_item",
        skip_serializing_if = "Option::is_none"
    )]
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

/// A per-step finding worth this share of the step ranks ahead of one-time work.
pub const PER_STEP_FIRST_PERCENT: f64 = 2.0;

/// A finding with a lever worth this share of the step or more ranks before CPU work the
/// capture did not record (whose fix is to record it).
pub const LEVER_FIRST_PERCENT: f64 = 10.0;

/// The words in a sub-warp-block finding's title after what it names (the verdict quotes
/// what comes before them).
pub const SUB_WARP_MARK: &str = "such blocks take";

/// One diagnosed problem.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Finding {
    /// Stable identity across runs: the kind plus the call site or subject, never a number
    /// (`implicit_sync:train.py:52 log_loss`), `#2`, `#3` on repeats; given by
    /// [`Finding::subject_key`] once the findings are ranked.
    #[serde(default)]
    pub key: String,
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
    /// The language the snippet is written in, for a code fence (`python`, `c`, `text`).
    #[serde(default = "python")]
    pub snippet_language: String,
    /// How sure.
    pub confidence: Confidence,
    /// The step time predicted by replaying the trace with the fix made (the window without
    /// steps), when the fix is one the replay can model.
    #[serde(default)]
    pub predicted_step_ns: Option<TimeNs>,
    /// What the prediction assumes, or why there is none.
    #[serde(default)]
    pub prediction: String,
    /// What one-time work the problem is (context creation, a library's first call, module
    /// loads, compilation), when it is: not a per-step cost, ranked after every per-step
    /// problem and given the warm-up fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_time: Option<String>,
    /// The lever the fix pulls, once [`crate::diagnose::lever::decide`] has checked it
    /// against the window's evidence (none for fixes outside the decision table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lever: Option<crate::finding_kind::Lever>,
    /// The evidence that chose the fix, in words (empty for fixes outside the table).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fix_chosen_by: String,
    /// The change the fix makes, for the replay (not serialized: it names spans of one
    /// import).
    #[serde(skip)]
    pub what_if: Option<crate::predict::what_if::WhatIf>,
}

fn python() -> String {
    "python".into()
}

impl Finding {
    /// The finding's kind and what it is about, without numbers: a sync is identified by
    /// where it is called, else by what triggers it (the title's opening words); host
    /// compute by its sub-cause, copy time by its direction; other kinds occur once per run.
    #[must_use]
    pub fn subject_key(&self) -> String {
        let subject = match (&self.call_site, self.kind) {
            (Some(site), _) => site.clone(),
            (None, FindingKind::HostCompute) => self
                .sub_cause
                .map(|s| s.label().to_string())
                .unwrap_or_default(),
            (None, FindingKind::CopyTime) => self
                .title
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase(),
            (None, FindingKind::ImplicitSync) => self
                .title
                .split_whitespace()
                .take_while(|w| !w.chars().any(|c| c.is_ascii_digit()))
                .collect::<Vec<_>>()
                .join(" "),
            (None, _) => String::new(),
        };
        if subject.is_empty() {
            self.kind.label().to_string()
        } else {
            format!("{}:{subject}", self.kind.label())
        }
    }

    /// Gives each finding its [`key`](Finding::key), in order: the subject key, with `#2`,
    /// `#3` for a second and third finding of the same subject.
    pub fn assign_keys(findings: &mut [Finding]) {
        let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for f in findings {
            let key = f.subject_key();
            let n = seen.entry(key.clone()).or_insert(0);
            *n += 1;
            f.key = if *n > 1 { format!("{key}#{n}") } else { key };
        }
    }

    /// Points a fix that repeats an earlier finding's, word for word or as its closing
    /// clause, at that finding: one change, said once (`findings` in report order; a
    /// finding's number is its place).
    pub fn refer_repeated_fixes(findings: &mut [Finding]) {
        for i in 1..findings.len() {
            let fix = &findings[i].fix;
            let earlier = findings[..i].iter().enumerate().find_map(|(j, e)| {
                if e.fix.is_empty() {
                    return None;
                }
                if *fix == e.fix {
                    return Some((j, None));
                }
                let tail = crate::num::lower_first(&e.fix);
                fix.strip_suffix(tail.as_str())
                    // text, not a trace name
                    .filter(|lead| lead.ends_with(": "))
                    .map(|lead| (j, Some(lead.to_string())))
            });
            if let Some((j, lead)) = earlier {
                let f = &mut findings[i];
                f.fix = match lead {
                    None => format!(
                        "The same change as finding {}'s fix, which removes this time too.",
                        j + 1
                    ),
                    Some(lead) => format!("{lead}the same change as finding {}'s fix.", j + 1),
                };
                f.snippet.clear();
            }
        }
    }

    /// Whether the finding ranks ahead of one-time work where the window's work repeats: a
    /// per-step problem worth [`PER_STEP_FIRST_PERCENT`] of the step or more (a smaller one
    /// keeps its place by gain among the one-time work).
    #[must_use]
    pub fn ranks_before_one_time_work(&self) -> bool {
        self.one_time.is_none() && self.estimated_win_percent >= PER_STEP_FIRST_PERCENT
    }

    /// Whether the finding is CPU work the capture did not record: its fix (record it)
    /// changes nothing yet.
    #[must_use]
    pub fn is_unrecorded_host_work(&self) -> bool {
        self.sub_cause == Some(crate::attribute::host_work::HostWork::NotRecorded)
    }

    /// Whether the finding is a per-step lever the trace supports, worth
    /// [`LEVER_FIRST_PERCENT`] of the step or more: it ranks before CPU work the capture did
    /// not record whatever their gains.
    #[must_use]
    pub fn ranks_before_unrecorded_work(&self) -> bool {
        !self.is_unrecorded_host_work()
            && self.kind != FindingKind::GpuWait
            && self.one_time.is_none()
            && self.estimated_win_percent >= LEVER_FIRST_PERCENT
    }

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
        // The document keeps which item it is, so a stored result counts the same.
        let back: Evidence = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back.occurrences(), Some(3));
        // A crafted index past the items, or at an item that is no count, gives none.
        let crafted = r#"{"time_ranges":[],"items":[{"label":"x","value":{"percent":1.0}}],"occurrences_item":0}"#;
        assert_eq!(
            serde_json::from_str::<Evidence>(crafted)
                .unwrap()
                .occurrences(),
            None
        );
        let past = crafted.replace("\"occurrences_item\":0", "\"occurrences_item\":9");
        assert_eq!(
            serde_json::from_str::<Evidence>(&past)
                .unwrap()
                .occurrences(),
            None
        );
    }

    fn finding(kind: FindingKind, title: &str, call_site: Option<&str>) -> Finding {
        Finding {
            key: String::new(),
            kind,
            sub_cause: None,
            title: title.into(),
            severity: Severity::Low,
            win_kind: WinKind::GpuIdle,
            estimated_win_ns: 0,
            estimated_win_per_step_ns: 0,
            estimated_win_percent: 0.0,
            win_basis: String::new(),
            cpu_cost_per_step_ns: None,
            evidence: Evidence::default(),
            call_site: call_site.map(Into::into),
            fix: String::new(),
            advice: String::new(),
            snippet: String::new(),
            snippet_language: String::new(),
            confidence: Confidence::Medium,
            predicted_step_ns: None,
            one_time: None,
            lever: None,
            fix_chosen_by: String::new(),
            prediction: String::new(),
            what_if: None,
        }
    }

    #[test]
    fn keys_name_the_subject_never_a_number_and_number_repeats() {
        let mut f = vec![
            finding(FindingKind::ImplicitSync, "x", Some("train.py:52 log_loss")),
            finding(FindingKind::ImplicitSync, "aten::item 12 calls", None),
            finding(FindingKind::CopyTime, "Host-to-device copies 3 ms", None),
            finding(FindingKind::DataLoaderStall, "DataLoader 40 %", None),
            finding(FindingKind::ImplicitSync, "y", Some("train.py:52 log_loss")),
            finding(FindingKind::ImplicitSync, "z", Some("train.py:52 log_loss")),
        ];
        Finding::assign_keys(&mut f);
        let keys: Vec<&str> = f.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "implicit_sync:train.py:52 log_loss",
                "implicit_sync:aten::item",
                "copy_time:host-to-device",
                "data_loader_stall",
                "implicit_sync:train.py:52 log_loss#2",
                "implicit_sync:train.py:52 log_loss#3",
            ]
        );
    }
}
