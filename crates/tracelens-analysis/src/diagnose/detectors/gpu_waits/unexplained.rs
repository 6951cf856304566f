//! Queued work waits and the trace shows no reason (no stream wait, no collective): a
//! dependency the capture did not record.

use super::{wait_finding, Context};
use crate::attribute::idle::IdleCause;
use crate::diagnose::detectors::{Detector, Input};
use crate::diagnose::finding::{Confidence, Finding};
use crate::finding_kind::FindingKind;

/// Queued work waits and the trace shows no reason.
pub struct UnexplainedGpuWait;

impl Detector for UnexplainedGpuWait {
    fn name(&self) -> &'static str {
        "gpu_wait"
    }
    fn kind(&self) -> FindingKind {
        FindingKind::GpuWait
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Credit, Input::Framework, Input::Idle]
    }
    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let Some(wait) = wait_finding(cx, IdleCause::GpuWait, self.kind()) else {
            return Vec::new();
        };
        let mut f = wait.finding;
        f.confidence = Confidence::Low;
        // Only a capture without stream-wait records gains from Nsight Systems; in a job,
        // every rank's trace read together shows whether another rank held this one.
        let fw = cx.framework();
        let job = cx
            .trace
            .metadata
            .distributed
            .as_ref()
            .and_then(|d| d.world_size)
            .is_some_and(|w| w > 1);
        f.fix = if !job {
            // One process: no other rank to blame.
            if fw.nsight() {
                "The trace does not say what the queued work waited for: a dependency it does not record (an event on another stream or device, another process sharing the GPU). Check what else runs on the GPU (nvidia-smi) and mark the waits with NVTX ranges to find them.".into()
            } else {
                "The trace does not say what the queued work waited for: profile the step with Nsight Systems (nsys -t cuda,nvtx,osrt), which records stream waits and events, and check what else runs on the GPU (nvidia-smi).".into()
            }
        } else if fw.nsight() {
            "The trace does not say what the queued work waited for: in a distributed job, analyse every rank's trace together (tracelens analyze DIR/ with one trace per rank) to see whether another rank held this one.".into()
        } else {
            "The trace does not say what the queued work waited for: profile the step with Nsight Systems (nsys -t cuda,nvtx,osrt), which records stream waits and events, and in a distributed job analyse every rank's trace together (tracelens analyze DIR/).".into()
        };
        f.advice = "Launched work did not start although the GPU was idle and no stream wait or collective explains it: a dependency the trace does not record (an event, another device, a semaphore).".into();
        f.snippet = match (fw.nsight(), fw.pytorch()) {
            (true, _) if !job => String::new(),
            (true, _) => "tracelens analyze traces/   # one trace per rank".into(),
            (false, true) => "nsys profile -t cuda,nvtx,osrt python train.py".into(),
            (false, false) => "nsys profile -t cuda,nvtx,osrt ./program".into(),
        };
        vec![f]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{waiting_trace, Wait};
    use super::*;
    use crate::diagnose::detectors::testing::findings_of;

    #[test]
    fn a_wait_the_trace_does_not_explain_is_reported_with_low_confidence() {
        let found = findings_of(&UnexplainedGpuWait, &waiting_trace(Wait::Unrecorded));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].title.contains("with no reason the trace records"),
            "{}",
            found[0].title
        );
        assert_eq!(found[0].confidence, Confidence::Low);
    }

    #[test]
    fn no_finding_without_the_wait_or_when_the_trace_explains_it() {
        for wait in [Wait::None, Wait::StreamEvent, Wait::Collective] {
            assert!(findings_of(&UnexplainedGpuWait, &waiting_trace(wait)).is_empty());
        }
    }
}
