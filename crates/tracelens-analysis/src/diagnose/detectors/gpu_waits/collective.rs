//! Queued work waits on a collective: this rank's GPU idles until the slowest rank joins.

use super::{wait_finding, Context};
use crate::attribute::idle::IdleCause;
use crate::diagnose::detectors::{Detector, Input};
use crate::diagnose::finding::{Confidence, Finding};
use crate::finding_kind::FindingKind;

/// Queued work waits on a collective.
pub struct CollectiveWait;

impl Detector for CollectiveWait {
    fn name(&self) -> &'static str {
        "collective_wait"
    }
    fn kind(&self) -> FindingKind {
        FindingKind::CollectiveWait
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Credit, Input::Framework, Input::Idle]
    }
    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let Some(wait) = wait_finding(cx, IdleCause::CollectiveWait, self.kind()) else {
            return Vec::new();
        };
        let mut f = wait.finding;
        f.confidence = Confidence::Medium;
        f.fix = if cx.framework().pytorch() {
            "Ranks reach the collective at different times or communication runs exposed: analyse every rank's trace together (tracelens analyze DIR/) to find the late one and what it did, and overlap communication with compute (DDP bucket_cap_mb, FSDP forward/backward prefetch).".into()
        } else {
            "Ranks reach the collective at different times or communication runs exposed: analyse every rank's trace together (tracelens analyze DIR/) to find the late one, and overlap the collectives with independent compute.".into()
        };
        f.advice = "A collective cannot finish before every rank joins it; this rank's GPU idles until the slowest one arrives.".into();
        f.snippet =
            "tracelens analyze traces/   # one trace per rank: which rank arrives late, and why"
                .into();
        vec![f]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{waiting_trace, Wait};
    use super::*;
    use crate::diagnose::detectors::testing::findings_of;

    #[test]
    fn a_collective_that_starts_late_is_reported() {
        let found = findings_of(&CollectiveWait, &waiting_trace(Wait::Collective));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].title.contains("waiting on a collective"),
            "{}",
            found[0].title
        );
        assert!(
            found[0].fix.contains("tracelens analyze DIR/"),
            "{}",
            found[0].fix
        );
    }

    #[test]
    fn no_finding_without_the_wait_or_for_another_cause() {
        for wait in [Wait::None, Wait::Unrecorded, Wait::StreamEvent] {
            assert!(findings_of(&CollectiveWait, &waiting_trace(wait)).is_empty());
        }
    }
}
