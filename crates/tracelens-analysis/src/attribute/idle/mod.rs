//! Idle gaps per device and their causes.
//!
//! A gap is a stretch of the [analysis window](crate::measure::window) where no kernel, copy or fill
//! runs on the device, edges included (a DataLoader wait before a step's first kernel is idle
//! time of that step). The GPU op that ends the gap (for the gap after a step's last op: the
//! device's next op, even past the window) is followed back to the API call that launched it:
//!
//! - the CPU issued the launch only after the GPU went idle: the time from the gap start to the
//!   launch is *exposed CPU time*. Moments inside a DataLoader `__next__` are `data_loading`;
//!   when a host-blocking call on that thread returned inside the gap (it drained the queue),
//!   the rest is `sync_drain` for at most as long as the call blocked the host (the GPU work
//!   the CPU work after it could have overlapped) and `host_compute` beyond that; without such
//!   a call it is `host_compute`;
//! - from the launch to the op start, and for work already queued when the gap began:
//!   `launch_latency` for at most [`LAUNCH_OVERHEAD_BOUND_NS`] per gap; before that, time the
//!   launch call itself was still running is `host_compute`, and queued work that did not
//!   start is a GPU-side wait: `cross_stream_wait` (a stream-wait call or record),
//!   `collective_wait` (a communication kernel ends or starts the gap), `graph_replay` (inside
//!   a CUDA/HIP graph replay, whose kernels are often under-recorded: the op before the gap
//!   came from the same graph launch) or `gpu_wait` (no evidence of why);
//! - after the device's last op, the thread that launched the op before the gap launched
//!   nothing more: its time is exposed CPU time, split as above;
//! - no launch in the trace: `unattributed`.
//!
//! Each gap's segments sum exactly to its length (tested on every corpus trace).

mod gap;
mod host_ops;
mod records;

use gap::{last_op_ending_before, GapAttribution, Outcome};
pub(crate) use host_ops::{
    computes_on_cpu, credit_host_ops, credit_one_time_calls, credit_set_up_ops, host_parts,
    name_host_ops, HostTime, SpanContexts,
};
pub use host_ops::{HostPart, RegionShare, BETWEEN_CALLS, BETWEEN_OPS, NOT_RECORDED};
use records::{read_segments, stored_id, StoredSegment};
pub use records::{
    DeviceIdle, Gap, IdleCause, IdleSegment, UnattributedReason, WaitEvidence,
    LAUNCH_OVERHEAD_BOUND_NS, SYNC_RETURN_TOLERANCE_NS,
};

use crate::measure::environment::Framework;
use crate::measure::intervals::gaps;
use crate::measure::threads::ThreadIndex;
use crate::measure::utilization::{DeviceWork, GpuOp};
use crate::measure::window::AnalysisWindow;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use tracelens_model::{table_index, Interval, NameId, TimeNs, Trace};

/// Attributes every idle gap of one device inside the analysis window; `ops`: its work
/// clipped to the window ([`DeviceWork::ops_in`]).
#[must_use]
pub fn attribute_idle(
    trace: &Trace,
    work: &DeviceWork,
    ops: &[GpuOp],
    window: &AnalysisWindow,
    threads: &ThreadIndex,
    fw: &Framework,
) -> DeviceIdle {
    attribute_idle_in_chunks(trace, work, ops, window, threads, fw, GAP_CHUNK)
}

/// [`attribute_idle`] with `gap_chunk` gaps per parallel chunk.
fn attribute_idle_in_chunks(
    trace: &Trace,
    work: &DeviceWork,
    ops: &[GpuOp],
    window: &AnalysisWindow,
    threads: &ThreadIndex,
    fw: &Framework,
    gap_chunk: usize,
) -> DeviceIdle {
    let w = window.interval;
    let mut idle = DeviceIdle {
        device: work.device,
        window: w,
        extent: None,
        idle_ns: 0,
        gaps: Vec::new(),
        segments: Vec::new(),
        by_cause: IdleCause::ALL.iter().map(|&c| (c, 0)).collect(),
        unattributed_by_reason: BTreeMap::new(),
        host_compute_ops: Vec::new(),
        os_waits: Vec::new(),
        descheduled_ns: 0,
        graph_replay_ops: 0,
    };
    let (Some(first), Some(last)) = (
        ops.iter().map(|o| o.1.start_ns).min(),
        ops.iter().map(|o| o.1.end_ns).max(),
    ) else {
        return idle;
    };
    idle.extent = Some(Interval::new(first, last));
    if trace.links.graph_launches > 0 {
        idle.graph_replay_ops = ops
            .iter()
            .filter(|&&(_, _, id)| {
                trace
                    .launch_of(id)
                    .is_some_and(|l| trace.launched_by(l).len() > 1)
                    && trace.graph_origin(id).is_none()
            })
            .count() as u64;
    }
    let busy = crate::measure::intervals::union_sorted(ops.iter().map(|o| o.1));
    let gaps = gaps(&busy, w);
    drop(busy);
    let mut host_ops = HostTime::default();
    let mut os_waits: FxHashMap<NameId, TimeNs> = FxHashMap::default();
    let cx = GapContext {
        trace,
        threads,
        work,
        ops,
        after_window: work.ops.partition_point(|o| o.1.start_ns < w.end_ns),
        window_end_ns: w.end_ns,
    };
    // Gaps are independent: chunks of them are attributed in parallel, a wave of one chunk
    // per thread at a time (so that at most a wave's partial lists sit beside the whole),
    // then appended in time order.
    let wave = gap_chunk.saturating_mul(rayon::current_num_threads().max(1));
    for wave in gaps.chunks(wave) {
        let parts: Vec<GapChunk> = if wave.len() <= gap_chunk {
            vec![cx.attribute(wave)]
        } else {
            wave.par_chunks(gap_chunk)
                .map(|c| cx.attribute(c))
                .collect()
        };
        for part in parts {
            part.append_to(&mut idle, &mut host_ops, &mut os_waits, gaps.len());
        }
    }
    let mut by_cause = std::mem::take(&mut idle.by_cause);
    for seg in idle.segments() {
        *by_cause.entry(seg.cause).or_default() += seg.interval.dur_ns();
    }
    idle.by_cause = by_cause;
    idle.idle_ns = idle.gaps.iter().map(|g| g.interval.dur_ns()).sum();
    idle.host_compute_ops = name_host_ops(trace, &host_ops, fw);
    let mut waits: Vec<(String, TimeNs)> = os_waits
        .into_iter()
        .map(|(n, t)| (trace.names.get(n).to_string(), t))
        .collect();
    waits.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    waits.truncate(8);
    idle.os_waits = waits;
    idle
}

/// Gaps attributed per chunk in parallel (a chunk is a few milliseconds of work).
const GAP_CHUNK: usize = 1 << 16;

/// What every gap of one device reads.
struct GapContext<'a> {
    trace: &'a Trace,
    threads: &'a ThreadIndex,
    work: &'a DeviceWork,
    /// The device's ops inside the window, clipped.
    ops: &'a [GpuOp],
    /// The first of the device's ops starting at or after the window's end.
    after_window: usize,
    window_end_ns: TimeNs,
}

/// The attribution of a run of consecutive gaps; segment ranges count from the run's first.
#[derive(Default)]
struct GapChunk {
    gaps: Vec<Gap>,
    segments: Vec<StoredSegment>,
    host_ops: HostTime,
    /// What surrounds each span the chunk's gaps cross, computed once (not merged).
    contexts: SpanContexts,
    os_waits: FxHashMap<NameId, TimeNs>,
    descheduled_ns: TimeNs,
    unattributed_by_reason: BTreeMap<UnattributedReason, TimeNs>,
}

impl GapChunk {
    /// Appends the chunk after the gaps already in `idle`; the first chunk's lists become
    /// the device's, sized for all `gap_count` gaps (one segment or more each) at once
    /// instead of doubled (a doubling holds both buffers at its peak).
    fn append_to(
        self,
        idle: &mut DeviceIdle,
        host_ops: &mut HostTime,
        os_waits: &mut FxHashMap<NameId, TimeNs>,
        gap_count: usize,
    ) {
        if idle.gaps.is_empty() {
            idle.gaps = self.gaps;
            idle.segments = self.segments;
            let rest = gap_count - idle.gaps.len();
            idle.gaps.reserve_exact(rest);
            idle.segments.reserve(rest);
        } else {
            let offset = idle.segments.len();
            idle.gaps.extend(self.gaps.into_iter().map(|mut g| {
                g.segments = table_index(offset + g.segments.start as usize)
                    ..table_index(offset + g.segments.end as usize);
                g
            }));
            idle.segments.extend_from_slice(&self.segments);
        }
        for (k, t) in self.host_ops {
            *host_ops.entry(k).or_default() += t;
        }
        for (n, t) in self.os_waits {
            *os_waits.entry(n).or_default() += t;
        }
        idle.descheduled_ns += self.descheduled_ns;
        for (reason, t) in self.unattributed_by_reason {
            *idle.unattributed_by_reason.entry(reason).or_default() += t;
        }
    }
}

impl GapContext<'_> {
    fn attribute(&self, gaps: &[Interval]) -> GapChunk {
        let mut out = GapChunk {
            gaps: Vec::with_capacity(gaps.len()),
            segments: Vec::with_capacity(gaps.len()),
            ..GapChunk::default()
        };
        // Gaps come in time order: where each gap starts and ends in the op list is found
        // from the previous gap's place, not by a search over the whole list per gap.
        let mut before_start = OpCursor::new(self.ops);
        let mut before_end = OpCursor::new(self.ops);
        for &gap in gaps {
            let before_gap = before_start.count_starting_before(gap.start_ns);
            let op_before = last_op_ending_before(self.ops, before_gap, gap.start_ns);
            // The op that ends the gap: prefer one with a launch among those starting there; after
            // the last op of the window, the device's next op.
            let (pool, at) = if gap.end_ns < self.window_end_ns {
                (self.ops, before_end.count_starting_before(gap.end_ns))
            } else {
                (&self.work.ops[..], self.after_window)
            };
            let next_start = pool.get(at).map(|o| o.1.start_ns);
            let candidates = pool[at..]
                .iter()
                .take_while(|o| Some(o.1.start_ns) == next_start);
            let ender = candidates
                .clone()
                .find(|o| self.trace.launch_of(o.2).is_some())
                .or_else(|| candidates.clone().next())
                .map(|o| o.2);
            let seg_start = out.segments.len();
            let mut g = GapAttribution {
                trace: self.trace,
                threads: self.threads,
                gap,
                segments: &mut out.segments,
                tiled_to: gap.start_ns,
                host_ops: &mut out.host_ops,
                contexts: &mut out.contexts,
            };
            let outcome = match ender {
                Some(ender) => {
                    let full = Interval::new(
                        gap.start_ns,
                        self.trace.span(ender).start_ns.max(gap.end_ns),
                    );
                    g.attribute(full, ender, op_before)
                }
                None => {
                    // After the device's last op: the thread that launched the work before the gap
                    // launched nothing more; what it did instead explains the gap.
                    let lane = op_before
                        .and_then(|b| self.trace.launch_of(b))
                        .map(|l| self.trace.span(l).lane);
                    match lane {
                        Some(lane) => {
                            g.exposed(gap, lane);
                            Outcome {
                                launch: None,
                                lane: Some(lane),
                                unattributed: None,
                                wait: None,
                            }
                        }
                        None => {
                            g.push(IdleCause::Unattributed, gap, None);
                            Outcome {
                                launch: None,
                                lane: None,
                                unattributed: Some(UnattributedReason::NoLaterWork),
                                wait: None,
                            }
                        }
                    }
                }
            };
            debug_assert_eq!(g.tiled_to, gap.end_ns, "segments cover their gap");
            if let Some(lane) = outcome.lane {
                let facts = self.threads.lane(lane);
                if !facts.os_waits.is_empty() || !facts.off_cpu.is_empty() {
                    for seg in read_segments(&out.segments[seg_start..], gap.start_ns) {
                        if matches!(seg.cause, IdleCause::HostCompute | IdleCause::DataLoading) {
                            for (name, ns) in facts.os_waits_within(seg.interval) {
                                *out.os_waits.entry(name).or_default() += ns;
                            }
                        }
                        // Off the CPU while runnable only when the capture says why
                        // threads left it; otherwise the thread may have been waiting.
                        if seg.cause == IdleCause::HostCompute
                            && self.trace.source.records_thread_states
                        {
                            out.descheduled_ns += facts.unexplained_off_cpu_within(seg.interval);
                        }
                    }
                }
            }
            if let Some(reason) = outcome.unattributed {
                *out.unattributed_by_reason.entry(reason).or_default() += gap.dur_ns();
            }
            out.gaps.push(Gap {
                interval: gap,
                ended_by_at: stored_id(ender.map(|s| s.0)),
                launch_at: stored_id(outcome.launch.map(|s| s.0)),
                lane_at: stored_id(outcome.lane.map(|l| l.0)),
                segments: table_index(seg_start)..table_index(out.segments.len()),
                unattributed: outcome.unattributed,
                wait: outcome.wait,
            });
        }
        out
    }
}

/// A place in a time-sorted op list, kept between questions: right in any order, a few steps
/// each when the times come in increasing order.
struct OpCursor<'a> {
    ops: &'a [GpuOp],
    /// Ops known to start before every time asked so far.
    at: usize,
}

impl<'a> OpCursor<'a> {
    fn new(ops: &'a [GpuOp]) -> OpCursor<'a> {
        OpCursor { ops, at: 0 }
    }

    /// `ops.partition_point(|o| o.start < t)`, searched from the last answer (a few steps
    /// between neighbouring gaps).
    fn count_starting_before(&mut self, t: TimeNs) -> usize {
        self.at =
            crate::measure::seek::partition_point_from(self.ops, self.at, |o| o.1.start_ns < t);
        self.at
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnose::detectors::testing::scenario;

    /// The cursor answers as `partition_point` does, for times that repeat, step by one op
    /// or jump past many, before the first op and after the last.
    #[test]
    fn op_cursor_answers_as_a_search_over_the_whole_list() {
        use tracelens_model::{Interval, SpanId, SpanKind};
        let starts = [3, 3, 5, 9, 9, 9, 20, 21, 22, 40, 41, 100];
        let ops: Vec<super::GpuOp> = starts
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                (
                    SpanKind::Kernel,
                    Interval::new(s, s + 1),
                    SpanId(tracelens_model::table_index(i)),
                )
            })
            .collect();
        for times in [
            vec![0, 3, 3, 4, 9, 10, 21, 99, 100, 101, 500],
            vec![9, 9, 9],
            vec![41, 42],
            vec![1000],
            (0..120).collect(),
        ] {
            let mut cursor = super::OpCursor::new(&ops);
            for t in times {
                assert_eq!(
                    cursor.count_starting_before(t),
                    ops.partition_point(|o| o.1.start_ns < t),
                    "t = {t}"
                );
            }
        }
    }

    /// Chunks of two gaps (many waves, several chunks per wave, run in parallel) give the
    /// attribution of one chunk, field for field.
    #[test]
    fn gaps_attributed_in_parallel_chunks_match_one_pass() {
        for name in [
            "launch_bound_tiny_kernels",
            "dataloader_single_process",
            "device_sync_every_step",
            "item_every_step",
        ] {
            let trace = scenario(name);
            let works = crate::measure::utilization::device_work(&trace);
            let window = crate::measure::window::analysis_window(&trace).expect("a window");
            let threads = crate::measure::threads::ThreadIndex::build(&trace);
            let fw = crate::measure::environment::framework(&trace);
            let work = &works[0];
            let ops = work.ops_in(window.interval);
            let run = |chunk| {
                super::attribute_idle_in_chunks(&trace, work, &ops, &window, &threads, &fw, chunk)
            };
            let (one, many) = (run(usize::MAX), run(2));
            assert!(one.gaps.len() > 4, "{name}: {} gaps", one.gaps.len());
            assert_eq!(format!("{one:?}"), format!("{many:?}"), "{name}");
        }
    }

    /// One segment or more per gap, one gap or more per kernel: the sizes are the memory of
    /// the attribution (the step a segment falls in is looked up, not stored).
    #[test]
    fn an_idle_segment_takes_16_bytes_and_a_gap_40() {
        assert_eq!(std::mem::size_of::<super::records::StoredSegment>(), 16);
        assert_eq!(std::mem::size_of::<super::Gap>(), 40);
    }
}
