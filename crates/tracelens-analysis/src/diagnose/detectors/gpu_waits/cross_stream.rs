//! Queued work waits for an event recorded on another stream, and the GPU idles meanwhile: the
//! awaited work was launched late.

use super::{wait_finding, Context};
use crate::attribute::idle::IdleCause;
use crate::diagnose::detectors::{Detector, Input};
use crate::diagnose::finding::{Confidence, Finding};
use crate::finding_kind::FindingKind;
use crate::measure::environment::Dialect;

/// Queued work waits for an event recorded on another stream.
pub struct CrossStreamWait;

impl Detector for CrossStreamWait {
    fn name(&self) -> &'static str {
        "cross_stream_wait"
    }
    fn kind(&self) -> FindingKind {
        FindingKind::CrossStreamWait
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Credit, Input::Framework, Input::Idle]
    }
    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let Some(wait) = wait_finding(cx, IdleCause::CrossStreamWait, self.kind()) else {
            return Vec::new();
        };
        let mut f = wait.finding;
        f.confidence = Confidence::Medium;
        f.fix = match wait.blocking_call {
            Some(call) => format!("No stream ran the awaited work during the waits: the event is recorded after work that the host launched only once {call} returned. Record the event right after the work it guards and move the blocking call after the launches (or make it asynchronous), so the consumer stream finds its event already queued."),
            None => "Record the event right after the work it guards, on a stream that is not itself waiting, and launch the producing work before the consumer's wait, so the consumer stream never waits on work not yet queued.".into(),
        };
        f.advice = "A stream wait holds queued work until an event on another stream completes. The GPU sat idle, so the awaited work was not running either: it was launched late, behind host work or a blocking call.".into();
        f.snippet = match cx.framework().dialect() {
            Dialect::PyTorch => "side = torch.cuda.Stream()\nwith torch.cuda.stream(side):\n    produced = producer(x)\n    done = torch.cuda.Event(); done.record(side)   # right after the work\ntorch.cuda.current_stream().wait_event(done)".into(),
            Dialect::CudaRuntime => "producer<<<g, b, 0, side>>>(...);\ncudaEventRecord(done, side);          // right after the work it guards\ncudaStreamWaitEvent(main, done, 0);".into(),
            _ => String::new(),
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
    fn a_stream_wait_before_each_late_kernel_is_reported() {
        let found = findings_of(&CrossStreamWait, &waiting_trace(Wait::StreamEvent));
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert!(
            f.title
                .contains("waiting for an event recorded on another stream"),
            "{}",
            f.title
        );
        assert!(f.title.contains("stream 7"), "{}", f.title);
        assert!(
            f.title.contains("gemm_kernel waited longest"),
            "{}",
            f.title
        );
        assert!(
            f.fix.starts_with("Record the event right after"),
            "{}",
            f.fix
        );
    }

    #[test]
    fn no_finding_without_the_wait_or_for_another_cause() {
        for wait in [Wait::None, Wait::Unrecorded, Wait::Collective] {
            assert!(findings_of(&CrossStreamWait, &waiting_trace(wait)).is_empty());
        }
    }
}
