//! The critical path of each step and the step time each fix would give, predicted by replay.
//!
//! Each step becomes a dependency graph (`graph.rs`): the host items of every CPU thread (API
//! calls, DataLoader waits), the focus device's GPU ops, launch edges, stream order and the
//! GPU work each host-blocking call waited for, with the latencies recorded on them. The
//! critical path (`walk.rs`) follows, back from the step's end, the edge that bound each start;
//! its segments tile the step, so the breakdown by kind sums to 100 %. A finding's change
//! ([`WhatIf`]) is replayed over the same graphs (`replay.rs`) to predict the step time after
//! the fix, beside the finding's upper bound.

mod graph;
mod kind;
mod replay;
#[cfg(test)]
mod tests;
mod walk;

use crate::finding_kind::FindingKind;
use crate::measure::threads::ThreadIndex;
use crate::measure::utilization::GpuOp;
use crate::measure::window::AnalysisWindow;
use crate::predict::what_if::WhatIf;
pub use kind::CriticalKind;
use replay::{Change, Replay};
use serde::Serialize;
use tracelens_model::{Interval, LaneId, SpanId, TimeNs, Trace};

/// Segments of the representative step kept in the output.
pub const MAX_SEGMENTS: usize = 1000;

/// One segment of the critical path.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CriticalSegment {
    /// Start, trace clock.
    pub start_ns: TimeNs,
    /// End, trace clock.
    pub end_ns: TimeNs,
    /// What it is.
    pub kind: CriticalKind,
    /// The op, call or kernel (empty for host work, gaps and waits).
    pub name: String,
    /// Consecutive segments of the same kind and name merged into this one.
    pub count: u32,
    /// The thread or stream it runs on (not serialized: it means something inside one
    /// import only).
    #[serde(skip)]
    pub lane: Option<LaneId>,
}

/// Time of one kind on the critical path.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CriticalShare {
    /// The kind.
    pub kind: CriticalKind,
    /// Its time, per step.
    pub ns: TimeNs,
    /// Its share of the path, in percent (the shares sum to 100).
    pub percent: f64,
}

/// Why a finding of `kind` has no predicted step time.
#[must_use]
pub fn no_prediction(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::HostCompute | FindingKind::CpuOversubscription => {
            "no prediction: the fix changes CPU work, whose new duration the trace cannot show"
        }
        FindingKind::CrossStreamWait | FindingKind::CollectiveWait | FindingKind::GpuWait => {
            "no prediction: what the GPU waits for is not recorded well enough to remove it"
        }
        FindingKind::CopyTime => "no prediction: fewer or smaller copies depend on the program",
        FindingKind::UnifiedMemory => {
            "no prediction: where the pages would live after prefetching is not in the trace"
        }
        FindingKind::SmallGrid => {
            "no prediction: how a kernel's time falls with a larger grid depends on the kernel"
        }
        FindingKind::KernelWork => {
            "no prediction: how much faster a kernel can run depends on how far it runs from the GPU's peak, which the trace does not measure"
        }
        FindingKind::DataLoaderStall
        | FindingKind::ImplicitSync
        | FindingKind::PageableCopies
        | FindingKind::LaunchBound
        | FindingKind::ExposedCommunication => {
            "no prediction: the change touches nothing the replay sees on the focus device"
        }
    }
}

/// A predicted step time.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct StepPrediction {
    /// The findings whose fixes are applied (one, or all with a prediction).
    pub findings: Vec<FindingKind>,
    /// The measured step (the window's mean step; the window without steps).
    pub measured_step_ns: TimeNs,
    /// The predicted step.
    pub predicted_step_ns: TimeNs,
    /// What the prediction assumes.
    pub assumption: String,
}

/// The critical path and the predictions of a trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CriticalPath {
    /// The step walked for `segments` (the median-length one), `None` without steps (then
    /// the whole window, walked in chunks of [`CHUNK_OPS`] GPU ops).
    pub step: Option<i64>,
    /// Its time (the window's without steps), trace clock.
    pub interval: Option<Interval>,
    /// Its segments in time order (at most [`MAX_SEGMENTS`]; they tile `interval` when none
    /// is omitted).
    pub segments: Vec<CriticalSegment>,
    /// Segments left out past [`MAX_SEGMENTS`].
    pub segments_omitted: usize,
    /// The representative step's path by kind, largest first.
    pub step_breakdown: Vec<CriticalShare>,
    /// Every step's path by kind, per step, largest first (the rule metrics read it).
    pub breakdown: Vec<CriticalShare>,
    /// All fixes with a prediction applied together (none when fewer than two).
    pub all_fixes: Option<StepPrediction>,
}

/// Shares of `totals` (per step: divided by `steps`), largest first.
fn shares(totals: &[TimeNs; CriticalKind::ALL.len()], steps: i64) -> Vec<CriticalShare> {
    let sum: TimeNs = totals.iter().sum();
    let mut v: Vec<CriticalShare> = CriticalKind::ALL
        .iter()
        .zip(totals)
        .filter(|(_, &ns)| ns > 0)
        .map(|(&kind, &ns)| CriticalShare {
            kind,
            ns: ns / steps.max(1),
            percent: crate::num::percent(ns, sum),
        })
        .collect();
    v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.kind.cmp(&b.kind)));
    v
}

/// The position of `kind` in [`CriticalKind::ALL`] (its declaration order).
fn kind_index(kind: CriticalKind) -> usize {
    kind as usize
}

/// The host ranges a CUDA graph would replace: the hull of the launch calls of the ops that
/// start in each stretch.
fn stretch_host_ranges(trace: &Trace, ops: &[GpuOp], stretches: &[Interval]) -> Vec<Interval> {
    stretches
        .iter()
        .filter_map(|s| {
            let from = ops.partition_point(|&(_, iv, _)| iv.start_ns < s.start_ns);
            ops[from..]
                .iter()
                .take_while(|&&(_, iv, _)| iv.start_ns < s.end_ns)
                .filter_map(|&(_, _, id)| trace.launch_of(id))
                .map(|l| trace.span(l).interval())
                .reduce(|a, b| a.hull(b))
        })
        .collect()
}

/// The replay change of one finding.
fn change_of(
    trace: &Trace,
    window: &AnalysisWindow,
    threads: &ThreadIndex,
    ops: &[GpuOp],
    what: &WhatIf,
) -> Change {
    let mut c = Change::default();
    match what {
        WhatIf::NoDataLoaderWait { workers_added } => {
            c.collapse(threads.data_loading_within(window.interval));
            if *workers_added {
                c.slow_host(crate::predict::what_if::WORKER_CONTENTION_SLOWDOWN);
            }
        }
        WhatIf::RemovedCalls(ids) => c.collapse(ids.iter().map(|&id| trace.span(id).interval())),
        WhatIf::AsyncCalls(ids) => c.make_async(ids.iter().map(|id| id.0)),
        WhatIf::PinnedCopies { calls, faster } => {
            c.make_async(calls.iter().map(|id| id.0));
            c.speed_up(faster.iter().map(|&(id, fraction)| (id.0, fraction)));
        }
        WhatIf::GraphLaunches(stretches) => {
            c.free_ops(stretches.iter().copied());
            c.collapse(stretch_host_ranges(trace, ops, stretches));
        }
        WhatIf::OverlapCommunication => c.hide_communication(),
    }
    c
}

/// One step to walk and replay.
struct StepRange {
    number: Option<i64>,
    interval: Interval,
    host_start_ns: TimeNs,
    host_end_ns: TimeNs,
    next_host_ns: TimeNs,
}

fn step_ranges(trace: &Trace, window: &AnalysisWindow, ops: &[GpuOp]) -> Vec<StepRange> {
    if !window.has_steps() {
        return chunks(window.interval, ops)
            .into_iter()
            .map(|iv| StepRange {
                number: None,
                interval: iv,
                host_start_ns: iv.start_ns,
                host_end_ns: iv.start_ns,
                next_host_ns: iv.end_ns,
            })
            .collect();
    }
    let host: rustc_hash::FxHashMap<i64, Interval> = trace
        .steps
        .iter()
        .filter_map(|s| s.cpu.map(|c| (s.number, c)))
        .collect();
    let mut out: Vec<StepRange> = window
        .steps
        .iter()
        .map(|s| {
            let h = host.get(&s.number).copied().unwrap_or(s.interval);
            StepRange {
                number: Some(s.number),
                interval: s.interval,
                host_start_ns: h.start_ns,
                host_end_ns: h.end_ns,
                next_host_ns: window.interval.end_ns,
            }
        })
        .collect();
    for k in 1..out.len() {
        out[k - 1].next_host_ns = out[k].host_start_ns.max(out[k - 1].host_start_ns);
    }
    out
}

/// GPU ops per chunk of a window without steps: its graph, walk and replays stay this size
/// however many ops the window holds (a stepless Nsight Systems export of a few GB holds
/// millions).
pub const CHUNK_OPS: usize = 1 << 18;

/// `window` cut before every [`CHUNK_OPS`]-th GPU op that starts in it (`ops` sorted by
/// start): consecutive intervals that tile it, one when it holds fewer ops. A chunk is walked
/// and replayed like a step; an op launched by a call of the chunk before has no launch edge,
/// as at a step's edge.
fn chunks(window: Interval, ops: &[GpuOp]) -> Vec<Interval> {
    let lo = ops.partition_point(|o| o.1.start_ns < window.start_ns);
    let hi = ops.partition_point(|o| o.1.start_ns < window.end_ns);
    let mut out = Vec::new();
    let mut start = window.start_ns;
    // No cut at or before the first op: every chunk holds ops.
    let mut last_cut = ops.get(lo).map_or(start, |o| o.1.start_ns.max(start));
    for o in ops[lo..hi].iter().skip(CHUNK_OPS).step_by(CHUNK_OPS) {
        if o.1.start_ns > last_cut {
            out.push(Interval::new(start, o.1.start_ns));
            start = o.1.start_ns;
            last_cut = start;
        }
    }
    out.push(Interval::new(start, window.end_ns));
    out
}

/// The step that stands for the window: the median-length one (the timeline's).
fn representative(ranges: &[StepRange]) -> usize {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&k| (ranges[k].interval.dur_ns(), ranges[k].number));
    order[order.len() / 2]
}

/// A fix to replay: the kind of its finding, the change it makes and the finding's upper
/// bound per step, which a prediction never exceeds.
pub struct FixToReplay<'a> {
    /// The finding's kind.
    pub kind: FindingKind,
    /// The change its fix makes (none: nothing to replay).
    pub what_if: Option<&'a WhatIf>,
    /// The finding's estimated win per step: the most the prediction may save.
    pub upper_bound_per_step_ns: TimeNs,
}

/// The step time one fix is predicted to give, and what the prediction assumes.
#[derive(Clone, Debug, PartialEq)]
pub struct FixPrediction {
    /// The predicted step (or window) time.
    pub predicted_step_ns: TimeNs,
    /// What it assumes, in words.
    pub assumption: String,
}

/// The critical path of every step of the window on the focus device (the representative
/// step's segments and the breakdown by kind of it and of all steps), and the predicted step
/// of each fix with a [`WhatIf`] (returned beside the path, one per fix, in order) and of all
/// of them together (`all_fixes`). One pass: each step's graph is built once, walked, then replayed under every
/// change, so one graph lives at a time. `ops`: the focus device's GPU work sorted by start.
///
/// A prediction never saves more than the findings' upper bounds (the replay can find a few
/// microseconds more at step edges) nor adds time.
#[must_use]
pub fn critical_path(
    trace: &Trace,
    window: &AnalysisWindow,
    threads: &ThreadIndex,
    ops: &[GpuOp],
    fixes: &[FixToReplay],
) -> (CriticalPath, Vec<Option<FixPrediction>>) {
    let ranges = step_ranges(trace, window, ops);
    let has_steps = window.has_steps();
    // Without steps, every chunk is the window's: all of them give its segments.
    let representative = representative(&ranges);
    let steps = if has_steps { ranges.len() } else { 1 };
    let changes = changes_of(trace, window, threads, ops, fixes);
    let mut replays: Vec<Replay> = changes
        .iter()
        .map(|(_, c)| Replay::new(c, trace.lanes.len()))
        .collect();
    let mut totals = [0; CriticalKind::ALL.len()];
    let mut step_totals = [0; CriticalKind::ALL.len()];
    let mut segments: Vec<CriticalSegment> = Vec::new();
    let mut segments_omitted = 0;
    // The graphs are built on a second thread while this one walks and replays the one
    // before: two graphs live at most (the channel holds none).
    std::thread::scope(|scope| {
        let (send, graphs) = std::sync::mpsc::sync_channel(0);
        let ranges = &ranges;
        scope.spawn(move || {
            let mut builder = graph::GraphBuilder::new(trace, threads, ops);
            for r in ranges {
                let g = builder.step(r.host_start_ns, r.host_end_ns, r.next_host_ns, r.interval);
                if send.send(g).is_err() {
                    break;
                }
            }
        });
        for (k, r) in ranges.iter().enumerate() {
            let Ok(g) = graphs.recv() else {
                break;
            };
            let rep = !has_steps || k == representative;
            let mut raw = Vec::new();
            walk::walk(
                trace,
                &g,
                r.interval.start_ns,
                r.interval.end_ns,
                |iv: Interval, kind, span, lane| {
                    totals[kind_index(kind)] += iv.dur_ns();
                    if rep {
                        step_totals[kind_index(kind)] += iv.dur_ns();
                        raw.push((iv, kind, span, lane));
                    }
                },
            );
            for replay in &mut replays {
                replay.step(&g, has_steps);
            }
            if rep {
                append_segments(trace, raw, &mut segments, &mut segments_omitted);
            }
        }
    });
    let rep = &ranges[representative];
    let (per_fix, all_fixes) = predictions(window, &ranges, steps, &changes, &replays, fixes);
    let path = CriticalPath {
        step: rep.number,
        interval: Some(if has_steps {
            rep.interval
        } else {
            window.interval
        }),
        segments,
        segments_omitted,
        step_breakdown: shares(&step_totals, 1),
        breakdown: shares(&totals, crate::num::count_i64(steps)),
        all_fixes,
    };
    (path, per_fix)
}

/// Appends the representative step's walk (`raw`, from the step's end back) to `segments` in
/// time order, merging a piece into the one before when it continues it (same kind, name and
/// lane); past [`MAX_SEGMENTS`], pieces are counted in `omitted`.
fn append_segments(
    trace: &Trace,
    raw: Vec<(Interval, CriticalKind, Option<SpanId>, Option<LaneId>)>,
    segments: &mut Vec<CriticalSegment>,
    omitted: &mut usize,
) {
    for (iv, kind, span, lane) in raw.into_iter().rev() {
        let name = span.map_or("", |s| trace.name(s));
        if let Some(last) = segments.last_mut() {
            if last.kind == kind
                && last.name == name
                && last.lane == lane
                && last.end_ns == iv.start_ns
            {
                last.end_ns = iv.end_ns;
                last.count += 1;
                continue;
            }
        }
        if segments.len() == MAX_SEGMENTS {
            *omitted += 1;
            continue;
        }
        segments.push(CriticalSegment {
            start_ns: iv.start_ns,
            end_ns: iv.end_ns,
            kind,
            name: name.to_string(),
            count: 1,
            lane,
        });
    }
}

/// One change per fix with a what-if, then all of them together (with two or more).
fn changes_of(
    trace: &Trace,
    window: &AnalysisWindow,
    threads: &ThreadIndex,
    ops: &[GpuOp],
    fixes: &[FixToReplay],
) -> Vec<(Vec<usize>, Change)> {
    let mut changes: Vec<(Vec<usize>, Change)> = fixes
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let what = f.what_if?;
            let c = change_of(trace, window, threads, ops, what);
            (!c.is_empty()).then_some((vec![i], c))
        })
        .collect();
    if changes.len() > 1 {
        let mut all = Change::default();
        let mut who = Vec::new();
        for (i, c) in &changes {
            all.merge(c);
            who.extend(i.iter().copied());
        }
        changes.push((who, all));
    }
    changes
}

/// Each fix's predicted step from its replay (in the order of `fixes`), and the prediction of
/// all fixes together, when there is one.
fn predictions(
    window: &AnalysisWindow,
    ranges: &[StepRange],
    steps: usize,
    changes: &[(Vec<usize>, Change)],
    replays: &[Replay],
    fixes: &[FixToReplay],
) -> (Vec<Option<FixPrediction>>, Option<StepPrediction>) {
    let measured = window.step_ns();
    let mut per_fix = vec![None; fixes.len()];
    let mut all_fixes = None;
    for ((who, _), replay) in changes.iter().zip(replays) {
        let predicted_total: TimeNs = ranges
            .iter()
            .zip(&replay.step_deltas_ns)
            .map(|(r, d)| (r.interval.dur_ns() + d).max(0))
            .sum();
        // Never past the upper bounds: the wins stay what they say they are.
        let bound: TimeNs = who.iter().map(|&i| fixes[i].upper_bound_per_step_ns).sum();
        let predicted = (predicted_total / crate::num::count_i64(steps))
            .max(measured - bound)
            .min(measured);
        if let [i] = who[..] {
            per_fix[i] = Some(FixPrediction {
                predicted_step_ns: predicted,
                assumption: fixes[i]
                    .what_if
                    .map(|w| w.assumption().to_string())
                    .unwrap_or_default(),
            });
        } else {
            all_fixes = Some(StepPrediction {
                findings: who.iter().map(|&i| fixes[i].kind).collect(),
                measured_step_ns: measured,
                predicted_step_ns: predicted,
                assumption: "assumes the fixes with a prediction are made, each holding as stated on its finding, leaving out any that would lengthen the step once the others are made".into(),
            });
        }
    }
    // A fix with a cost (new DataLoader workers slow the host) can cost more once the others
    // have made the host the bottleneck: then it is left out, and all fixes together predict
    // no worse than the best one alone.
    if let Some(all) = &mut all_fixes {
        let best = per_fix
            .iter()
            .flatten()
            .map(|p| p.predicted_step_ns)
            .min()
            .unwrap_or(measured);
        all.predicted_step_ns = all.predicted_step_ns.min(best);
    }
    (per_fix, all_fixes)
}
