//! One gap's attribution: its segments by cause, from the op that ends it back to the launch
//! that fed it and what the launching thread did meanwhile.

use crate::measure::threads::ThreadIndex;
use crate::measure::utilization::GpuOp;
use tracelens_model::{Interval, SpanId, SpanKind, TimeNs, Trace};

use super::host_ops::credit_host_ops;
use super::records::{
    stored_id, IdleCause, StoredSegment, UnattributedReason, WaitEvidence,
    LAUNCH_OVERHEAD_BOUND_NS, SYNC_RETURN_TOLERANCE_NS,
};
use crate::vocabulary::kernels::is_communication_kernel;

/// The op of `ops` (sorted by start) whose end is `t`, looking back a bounded number of ops
/// from `before`, the number of ops starting before `t`.
pub(super) fn last_op_ending_before(ops: &[GpuOp], before: usize, t: TimeNs) -> Option<SpanId> {
    ops[..before]
        .iter()
        .rev()
        .take(64)
        .find(|o| o.1.end_ns == t)
        .map(|o| o.2)
}

/// Pushes the part of `iv` inside `gap` as a segment; `tiled_to` is where the gap's segments
/// so far end, which the part must start at (segments tile their gap: only ends are stored).
pub(super) fn push(
    segments: &mut Vec<StoredSegment>,
    tiled_to: &mut TimeNs,
    gap: Interval,
    cause: IdleCause,
    iv: Interval,
    sync: Option<SpanId>,
) {
    if let Some(c) = iv.clip(gap) {
        if c.dur_ns() > 0 {
            debug_assert_eq!(c.start_ns, *tiled_to, "segments tile their gap");
            *tiled_to = c.end_ns;
            segments.push(StoredSegment {
                end_ns: c.end_ns,
                sync_at: stored_id(sync.map(|s| s.0)),
                cause,
            });
        }
    }
}

/// What one gap's attribution found.
pub(super) struct Outcome {
    pub(super) launch: Option<SpanId>,
    pub(super) lane: Option<tracelens_model::LaneId>,
    pub(super) unattributed: Option<UnattributedReason>,
    pub(super) wait: Option<WaitEvidence>,
}

/// The state of one gap's attribution.
pub(super) struct GapAttribution<'a, 'b> {
    pub(super) trace: &'a Trace,
    pub(super) threads: &'a ThreadIndex,
    /// The gap inside the window; segments are clipped to it.
    pub(super) gap: Interval,
    pub(super) segments: &'b mut Vec<StoredSegment>,
    /// Where the gap's segments so far end (its start before the first).
    pub(super) tiled_to: TimeNs,
    pub(super) host_ops: &'b mut super::HostTime,
    pub(super) contexts: &'b mut super::SpanContexts,
}

impl GapAttribution<'_, '_> {
    pub(super) fn push(&mut self, cause: IdleCause, iv: Interval, sync: Option<SpanId>) {
        push(self.segments, &mut self.tiled_to, self.gap, cause, iv, sync);
    }

    /// Host-compute time on `lane`, with the CPU ops that ran credited.
    fn host(&mut self, lane: tracelens_model::LaneId, iv: Interval) {
        if let Some(c) = iv.clip(self.gap) {
            let one_time = self.threads.lane(lane).one_time_calls_within(c);
            credit_host_ops(
                self.trace,
                lane,
                c,
                &one_time,
                self.threads.first_calls(),
                self.host_ops,
                self.contexts,
            );
        }
        self.push(IdleCause::HostCompute, iv, None);
    }

    /// Attributes `full` (the gap, extended to the ender's start for a step's tail), ended by
    /// `ender`; `before` is the op whose end opened the gap.
    pub(super) fn attribute(
        &mut self,
        full: Interval,
        ender: SpanId,
        before: Option<SpanId>,
    ) -> Outcome {
        let trace = self.trace;
        let Some(launch) = trace.launch_of(ender) else {
            let requested = trace
                .copy_info(ender)
                .and_then(|c| c.migration)
                .is_some_and(tracelens_model::MigrationCause::requested);
            let reason = if trace.is_migration(ender) && requested {
                UnattributedReason::Prefetch
            } else if trace.is_migration(ender) {
                UnattributedReason::UnifiedMemory
            } else if trace.span(ender).has_correlation() {
                UnattributedReason::LaunchNotInTrace
            } else {
                UnattributedReason::NoCorrelation
            };
            self.push(IdleCause::Unattributed, full, None);
            return Outcome {
                launch: None,
                lane: None,
                unattributed: Some(reason),
                wait: None,
            };
        };
        let api = trace.span(launch);
        let launch_start = api.start_ns.clamp(full.start_ns, full.end_ns);
        // Inside a replay: the op before the gap came from the same graph launch. A gap before
        // a replay's first op is not inside one and is attributed like any launch.
        let inside_replay = trace.launched_by(launch).len() > 1
            && before.is_some_and(|b| trace.launch_of(b) == Some(launch));
        if api.start_ns <= full.start_ns && inside_replay {
            self.push(IdleCause::GraphReplay, full, None);
            return Outcome {
                launch: Some(launch),
                lane: Some(api.lane),
                unattributed: None,
                wait: Some(WaitEvidence::GraphLaunch),
            };
        }
        // The CPU issued the launch only after the GPU went idle: what was it doing?
        let drained = (launch_start > full.start_ns)
            .then(|| self.exposed(Interval::new(full.start_ns, launch_start), api.lane))
            .flatten();
        // From the launch (or the GPU going idle) to the op's start.
        let overhead_from = (full.end_ns - LAUNCH_OVERHEAD_BOUND_NS).max(launch_start);
        let call_end = api.end_ns().clamp(launch_start, overhead_from);
        let call = Interval::new(launch_start, call_end);
        // A sync drained the queue and the CPU went straight on to this launch: the launch's
        // round trip is exposed only because the queue was empty, so it is the sync's too;
        // not a slow first launch (a module load), which is one-time work of its own.
        let drained = drained.filter(|_| {
            self.threads
                .lane(api.lane)
                .one_time_calls_within(call)
                .is_empty()
        });
        match drained {
            Some(sync) => self.push(IdleCause::SyncDrain, call, Some(sync)),
            None => self.host(api.lane, call),
        }
        let mut wait = None;
        if overhead_from > call_end {
            let evidence = self.wait_evidence(
                ender,
                launch,
                before,
                Interval::new(call_end, overhead_from),
            );
            let cause = match evidence {
                Some(WaitEvidence::CollectiveBefore | WaitEvidence::CollectiveKernel) => {
                    IdleCause::CollectiveWait
                }
                Some(_) => IdleCause::CrossStreamWait,
                None => IdleCause::GpuWait,
            };
            self.push(cause, Interval::new(call_end, overhead_from), None);
            wait = evidence;
        }
        let overhead = Interval::new(overhead_from, full.end_ns);
        match drained {
            Some(sync) => self.push(IdleCause::SyncDrain, overhead, Some(sync)),
            None => self.push(IdleCause::LaunchLatency, overhead, None),
        }
        Outcome {
            launch: Some(launch),
            lane: Some(api.lane),
            unattributed: None,
            wait,
        }
    }

    /// Splits exposed CPU time on the launching thread: DataLoader, then a drain charged to
    /// the sync for at most as long as it blocked, then host compute. Returns the sync when
    /// its drain covers all of it (the CPU went from the sync straight to the next launch).
    pub(super) fn exposed(
        &mut self,
        exposed: Interval,
        lane: tracelens_model::LaneId,
    ) -> Option<SpanId> {
        let facts = self.threads.lane(lane);
        let drain = facts
            .blocking_call_ending_in(exposed.start_ns - SYNC_RETURN_TOLERANCE_NS, exposed.end_ns);
        let mut budget = drain.map_or(0, |d| self.trace.span(d).dur_ns);
        let mut cursor = exposed.start_ns;
        let loading = facts.data_loading_within(exposed);
        let mut rest = |me: &mut Self, piece: Interval| {
            if piece.dur_ns() <= 0 {
                return;
            }
            let drained = budget.min(piece.dur_ns());
            budget -= drained;
            let split = piece.start_ns + drained;
            me.push(
                IdleCause::SyncDrain,
                Interval::new(piece.start_ns, split),
                drain,
            );
            me.host(lane, Interval::new(split, piece.end_ns));
        };
        let mut loaded = false;
        for dl in loading {
            rest(self, Interval::new(cursor, dl.start_ns));
            self.push(IdleCause::DataLoading, dl, None);
            cursor = dl.end_ns;
            loaded = true;
        }
        rest(self, Interval::new(cursor, exposed.end_ns));
        let covered = drain.is_some_and(|d| self.trace.span(d).dur_ns >= exposed.dur_ns());
        drain.filter(|_| covered && !loaded)
    }

    /// Why queued `ender` waited during `wait`, if the trace shows it.
    fn wait_evidence(
        &self,
        ender: SpanId,
        launch: SpanId,
        before: Option<SpanId>,
        wait: Interval,
    ) -> Option<WaitEvidence> {
        let trace = self.trace;
        if trace.span(ender).kind == SpanKind::Kernel && is_communication_kernel(trace.name(ender))
        {
            return Some(WaitEvidence::CollectiveKernel);
        }
        if let Some(b) = before {
            if trace.span(b).lane != trace.span(ender).lane
                && trace.span(b).kind == SpanKind::Kernel
                && is_communication_kernel(trace.name(b))
            {
                return Some(WaitEvidence::CollectiveBefore);
            }
        }
        waited_on_other_stream(trace, self.threads, ender, launch, wait)
            .then_some(WaitEvidence::StreamWait)
    }
}

/// Records looked at before a queued op by [`waited_on_other_stream`].
const MAX_STREAM_LOOKBACK: u32 = 4096;

/// Whether queued op `ender` waited for another stream: a stream-wait call on the launching
/// thread since the previous op of its stream was launched, or a CUPTI "Stream Wait Event"
/// record on its stream during the gap.
pub(super) fn waited_on_other_stream(
    trace: &Trace,
    threads: &ThreadIndex,
    ender: SpanId,
    launch: SpanId,
    gap: Interval,
) -> bool {
    let lane = trace.lane(trace.span(ender).lane);
    // The look-back stops after MAX_STREAM_LOOKBACK records: a real stream has a handful of
    // sync records between two ops; a crafted one must not make every gap walk the lane.
    let lane_start = lane
        .spans
        .start
        .max(ender.0.saturating_sub(MAX_STREAM_LOOKBACK));
    let mut prev_launch_ns = None;
    let mut i = ender.0;
    while i > lane_start {
        i -= 1;
        let s = trace.span(SpanId(i));
        if s.kind == SpanKind::CudaSync
            && crate::vocabulary::api::is_stream_wait_record(trace.names.get(s.name))
            && s.interval().clip(gap).is_some()
        {
            return true;
        }
        if s.kind.is_gpu_work() {
            prev_launch_ns = trace.launch_of(SpanId(i)).map(|l| trace.span(l).start_ns);
            break;
        }
    }
    let api = trace.span(launch);
    let from = prev_launch_ns.unwrap_or(api.start_ns - gap.dur_ns());
    threads
        .lane(api.lane)
        .stream_wait_between(from, api.start_ns)
}

#[cfg(test)]
mod tests {
    use crate::attribute::idle::IdleCause;
    use crate::diagnose::detectors::testing::span_us;
    use tracelens_model::{SpanKind, Trace, NS_PER_US};

    /// Two graph replays of two kernels each; the second replay is launched before the first
    /// one ends, so the gap before its first kernel has its launch already issued.
    fn two_replays() -> Trace {
        let (mut b, cpu, gpu) = crate::diagnose::detectors::testing::thread_and_stream();
        let mut span = |kind, lane, name: &str, start_us: i64, end_us: i64, corr: u64| {
            span_us(
                &mut b,
                kind,
                lane,
                name,
                (start_us, end_us - start_us),
                Some(corr),
            );
        };
        span(SpanKind::Runtime, cpu, "cudaGraphLaunch", 0, 5, 1);
        span(SpanKind::Runtime, cpu, "cudaGraphLaunch", 50, 55, 2);
        for (corr, first_us) in [(1, 100), (2, 1000)] {
            span(SpanKind::Kernel, gpu, "k", first_us, first_us + 100, corr);
            span(
                SpanKind::Kernel,
                gpu,
                "k",
                first_us + 400,
                first_us + 500,
                corr,
            );
        }
        b.finish(tracelens_model::SourceInfo::default())
    }

    #[test]
    fn only_gaps_inside_a_replay_are_graph_replay() {
        let d = crate::diagnose(&two_replays());
        let idle = &d.idle[0];
        let ns = |cause| {
            idle.by_cause
                .iter()
                .find(|c| c.cause == cause)
                .map_or(0, |c| c.ns)
        };
        // Inside the replays: 300 µs each. Before the second replay's first kernel: 400 µs
        // that are not inside a replay.
        assert_eq!(ns(IdleCause::GraphReplay), 600 * NS_PER_US, "{idle:#?}");
        assert_eq!(
            ns(IdleCause::GpuWait) + ns(IdleCause::LaunchLatency),
            400 * NS_PER_US,
            "{idle:#?}"
        );
    }
}
