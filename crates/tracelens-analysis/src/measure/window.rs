//! The analysis window: the one stretch of time every figure of a report is measured over, and
//! the steps that divide it.
//!
//! With `ProfilerStep#N` ranges the window is the profiled steps, each step being the CPU
//! `ProfilerStep#N` range extended to the end of the GPU work launched inside it (the
//! TensorBoard profiler plugin's definition, so the step time equals its overview). Without
//! steps, a top-level range that repeats gives the iterations; a capture of the whole process
//! whose program marks one top-level range around part of its GPU work is that range;
//! else the window is the first to the last GPU op of the trace; without GPU work, the CPU extent;
//! with nothing but allocator samples (a memory snapshot), their extent.
//! Idle time, idle causes, findings, the verdict and the breakdown all use this window and its
//! one step figure.

use serde::Serialize;
use tracelens_model::{Interval, SpanId, TimeNs, Trace};

/// Where the window comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowKind {
    /// The profiled steps: first step start to last step end.
    ProfiledSteps,
    /// No profiler steps, but a top-level range repeats: its iterations, found by structure
    /// ([`crate::measure::iterations`]), are the steps.
    FoundIterations,
    /// No steps, but the capture records the whole process and the program marks one
    /// top-level range around part of its GPU work (an NVTX range around its timed loop):
    /// that range, extended to the end of the GPU work it launched.
    MarkedRange,
    /// No steps and no marked range, but one pause with no GPU work fills most of the GPU's
    /// extent (a program that waits between its first launches and its loop): the GPU's
    /// working phase on the side of the pause that holds its work.
    WorkingPhase,
    /// No steps: the first to the last GPU op of the trace.
    GpuExtent,
    /// No steps and no GPU work: the first to the last CPU event.
    CpuExtent,
    /// No event but the allocator's samples (a memory snapshot): the first to the last.
    MemoryExtent,
}

impl WindowKind {
    /// How the window reads in a sentence ("the profiled steps").
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            WindowKind::ProfiledSteps => "the profiled steps (CPU ProfilerStep#N ranges extended to the end of the GPU work they launched)",
            WindowKind::FoundIterations => "the iterations found by structure (the trace has no ProfilerStep#N ranges: a top-level range repeats), each extended to the end of the GPU work it launched",
            WindowKind::MarkedRange => "the one top-level range the program marks around its measured work, extended to the end of the GPU work it launched (the trace has no ProfilerStep#N ranges)",
            WindowKind::WorkingPhase => "the GPU's working phase: first to last GPU op on the side of the one long pause that holds the GPU's work (the trace has no ProfilerStep#N ranges)",
            WindowKind::GpuExtent => "first to last GPU op (the trace has no ProfilerStep#N ranges)",
            WindowKind::CpuExtent => "first to last CPU event (no steps, no GPU work)",
            WindowKind::MemoryExtent => "first to last allocator sample (the capture records memory only)",
        }
    }
}

/// One step of the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct WindowStep {
    /// N in `ProfilerStep#N`.
    pub number: i64,
    /// The step after extension to its GPU work.
    pub interval: Interval,
}

/// The step figure every renderer shows: mean, min and max of the same steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct StepStats {
    /// Number of steps (0 without steps).
    pub count: usize,
    /// Mean step: the sum of the steps over their count; the window length without steps.
    pub mean_ns: TimeNs,
    /// Shortest step (the window without steps).
    pub min_ns: TimeNs,
    /// Longest step (the window without steps).
    pub max_ns: TimeNs,
    /// Standard deviation of the step durations.
    pub stddev_ns: TimeNs,
}

/// The analysis window.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct AnalysisWindow {
    /// Where it comes from.
    pub kind: WindowKind,
    /// First step start (or op) to last step end (or op end).
    pub interval: Interval,
    /// The steps, in time order; empty without steps.
    pub steps: Vec<WindowStep>,
    /// Their durations.
    pub step: StepStats,
    /// Time covered by the steps (the window without steps); equals the window length when
    /// the steps are back to back.
    pub covered_ns: TimeNs,
    /// How the iterations were found, for [`WindowKind::FoundIterations`] ("304 iterations
    /// from the repeated top-level range `reader`"), or the range of a
    /// [`WindowKind::MarkedRange`] ("the range `resnet50_inference`").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_from: Option<String>,
    /// The pause a [`WindowKind::WorkingPhase`] sets aside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Interval>,
    /// GPU work queued before the capture began, left out of a window without steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_before: Option<QueuedBefore>,
}

/// GPU ops the capture recorded without their launches (ops that carry a correlation id for
/// one, not unified-memory migrations), all ending before its first recorded launch: work
/// queued before the capture began (the tail of an unprofiled step), whose
/// launches and host side the trace cannot show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct QueuedBefore {
    /// How many ops.
    pub ops: u64,
    /// Their GPU time.
    pub busy_ns: TimeNs,
    /// First op start to last op end.
    pub interval: Interval,
}

/// The GPU work queued before the capture began, and the extent of the rest, when the trace
/// has both.
fn queued_before_capture(trace: &Trace) -> Option<(QueuedBefore, Interval)> {
    let ops = || {
        trace
            .spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind.is_gpu_work())
            .map(|(i, s)| (SpanId(tracelens_model::table_index(i)), s))
    };
    let first_launch_ns = ops()
        .filter_map(|(id, _)| trace.launch_of(id))
        .map(|l| trace.span(l).start_ns)
        .min()?;
    let mut queued: Option<QueuedBefore> = None;
    let mut rest: Option<Interval> = None;
    for (id, s) in ops() {
        // A launched op whose launch is missing: it carries a correlation id for one (a
        // unified-memory migration is launched by nothing).
        let launch_missing =
            trace.launch_of(id).is_none() && s.has_correlation() && !trace.is_migration(id);
        if launch_missing && s.end_ns() <= first_launch_ns {
            let q = queued.get_or_insert(QueuedBefore {
                ops: 0,
                busy_ns: 0,
                interval: s.interval(),
            });
            q.ops += 1;
            q.busy_ns += s.dur_ns;
            q.interval = q.interval.hull(s.interval());
        } else {
            rest = Some(rest.map_or(s.interval(), |r| r.hull(s.interval())));
        }
    }
    queued.zip(rest)
}

impl AnalysisWindow {
    /// Whether the window is made of profiled steps.
    #[must_use]
    pub fn has_steps(&self) -> bool {
        !self.steps.is_empty()
    }

    /// The number of the step holding `t_ns` (the latest-starting one when steps overlap).
    #[must_use]
    pub fn step_at(&self, t_ns: TimeNs) -> Option<i64> {
        let after = self.steps.partition_point(|s| s.interval.start_ns <= t_ns);
        let step = self.steps[..after].last()?;
        (t_ns < step.interval.end_ns).then_some(step.number)
    }

    /// Number of steps, at least 1 (the whole window counts as one without steps).
    #[must_use]
    pub fn step_count(&self) -> usize {
        self.steps.len().max(1)
    }

    /// The step time shares are measured against: the mean step, or the window.
    #[must_use]
    pub fn step_ns(&self) -> TimeNs {
        self.step.mean_ns
    }

    /// A total over the window, per step.
    #[must_use]
    pub fn per_step(&self, total_ns: TimeNs) -> TimeNs {
        total_ns / crate::num::count_i64(self.step_count())
    }
}

/// The analysis window of a trace; `None` for a trace with no events.
#[must_use]
pub fn analysis_window(trace: &Trace) -> Option<AnalysisWindow> {
    let mut gpu_extent = trace
        .spans
        .iter()
        .filter(|s| s.kind.is_gpu_work())
        .map(|s| s.interval())
        .reduce(|a, b| a.hull(b));
    let host: Vec<(i64, Interval)> = trace
        .steps
        .iter()
        .filter_map(|s| s.cpu.map(|c| (s.number, c)))
        .collect();
    let (mut kind, mut iterations_from) = (WindowKind::ProfiledSteps, None);
    let mut steps = steps_from_host(trace, &host);
    if host.is_empty() {
        if let Some(found) = crate::measure::iterations::find(trace, gpu_extent) {
            let host: Vec<(i64, Interval)> = (1..).zip(found.host.iter().copied()).collect();
            steps = steps_from_host(trace, &host);
            kind = WindowKind::FoundIterations;
            iterations_from = Some(found.describe());
        }
    }
    if !steps.is_empty() {
        let first = steps[0].interval.start_ns;
        let last = steps
            .iter()
            .map(|s| s.interval.end_ns)
            .max()
            .unwrap_or(first);
        let durations: Vec<TimeNs> = steps.iter().map(|s| s.interval.dur_ns()).collect();
        let covered: TimeNs = durations.iter().sum();
        let n = crate::num::count_i64(durations.len());
        let mean = covered / n;
        let var = durations
            .iter()
            .map(|&d| ((d - mean) as f64).powi(2))
            .sum::<f64>()
            / n as f64;
        return Some(AnalysisWindow {
            kind,
            iterations_from,
            pause: None,
            queued_before: None,
            interval: Interval::new(first, last),
            step: StepStats {
                count: steps.len(),
                mean_ns: mean,
                min_ns: durations.iter().copied().min().unwrap_or(0),
                max_ns: durations.iter().copied().max().unwrap_or(0),
                stddev_ns: crate::num::float_ns(var.sqrt()),
            },
            steps,
            covered_ns: covered,
        });
    }
    // Without steps, GPU work queued before the capture began is not the program's to judge
    // here: its launches and host side are not in the trace.
    let queued_before = queued_before_capture(trace).map(|(q, rest)| {
        gpu_extent = Some(rest);
        q
    });
    let with_queued = |mut w: AnalysisWindow| {
        w.queued_before = queued_before;
        w
    };
    if let Some((name, marked)) = marked_window(trace) {
        iterations_from = Some(format!("the range `{name}`"));
        return Some(one_span(WindowKind::MarkedRange, marked, iterations_from));
    }
    if let Some(phase) = gpu_extent.and_then(|e| working_phase(trace, e)) {
        let from = format!(
            "past one pause of {} with no GPU work",
            tracelens_model::format_ms(phase.pause.dur_ns())
        );
        let mut w = one_span(WindowKind::WorkingPhase, phase.window, Some(from));
        w.pause = Some(phase.pause);
        return Some(with_queued(w));
    }
    let (kind, interval) = match gpu_extent {
        Some(e) => (WindowKind::GpuExtent, e),
        None => match trace
            .spans
            .iter()
            .map(|s| s.interval())
            .reduce(|a, b| a.hull(b))
        {
            Some(cpu) => (WindowKind::CpuExtent, cpu),
            None => {
                let (first, last) = (trace.memory.first()?, trace.memory.last()?);
                // End past the last sample: the window is half-open.
                (
                    WindowKind::MemoryExtent,
                    Interval::new(first.ts_ns, last.ts_ns.saturating_add(1)),
                )
            }
        },
    };
    Some(with_queued(one_span(kind, interval, None)))
}

/// GPU work a marked range must launch, and leave outside it, as a share of all the GPU
/// work's time, before the window narrows to it: under either, the range is the whole run or
/// a corner of it.
pub const MARKED_RANGE_MIN_PERCENT: f64 = 20.0;

/// The marked range of a capture of the whole process (Nsight Systems, not a profiler
/// window the program opened), extended to the end of the GPU work launched inside it,
/// when it holds at least [`MARKED_RANGE_MIN_PERCENT`] of the GPU work's time and leaves as
/// much outside.
fn marked_window(trace: &Trace) -> Option<(String, Interval)> {
    if trace.source.capture_tool == tracelens_model::CaptureTool::TorchProfiler {
        return None;
    }
    let (name, range) = crate::measure::iterations::marked_range(trace)?;
    let extended = steps_from_host(trace, &[(1, range)]).first()?.interval;
    let (mut inside, mut all) = (0, 0);
    for s in trace.spans.iter().filter(|s| s.kind.is_gpu_work()) {
        all += s.dur_ns;
        inside += s.interval().clip(extended).map_or(0, |c| c.dur_ns());
    }
    let share = crate::num::percent(inside, all);
    (MARKED_RANGE_MIN_PERCENT..=100.0 - MARKED_RANGE_MIN_PERCENT)
        .contains(&share)
        .then_some((name, extended))
}

/// A pause with no GPU work fills this share of the GPU's extent or more before the window
/// narrows to the working phase beside it.
pub const PAUSE_MIN_PERCENT: f64 = 80.0;

/// The working phase holds this share of the GPU's busy time and of its ops or more.
pub const WORKING_PHASE_MIN_PERCENT: f64 = 90.0;

/// A pause shorter than this is no pause, whatever its share.
pub const PAUSE_MIN_NS: TimeNs = 100 * tracelens_model::NS_PER_MS;

/// The working phase holds at least this many GPU ops: a few ops either side are no phase.
pub const WORKING_PHASE_MIN_OPS: usize = 10;

/// The GPU's working phase beside one long pause, and the pause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WorkingPhase {
    /// First to last GPU op of the phase.
    window: Interval,
    /// The pause: no GPU work on any device.
    pause: Interval,
}

/// The working phase of a GPU extent that one pause with no GPU work mostly fills, when one
/// side of the pause holds nearly all of the GPU's work (its busy time and its ops): the
/// program waited (for input, a prompt, host work done once) between launches that check or
/// warm up and the loop it runs.
#[must_use]
fn working_phase(trace: &Trace, extent: Interval) -> Option<WorkingPhase> {
    // Each GPU op with its launching call's start.
    let mut launched: Vec<(Interval, Option<TimeNs>)> = trace
        .spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind.is_gpu_work())
        .map(|(i, s)| {
            let call = trace
                .launch_of(SpanId::at(i))
                .map(|c| trace.span(c).start_ns);
            (s.interval(), call)
        })
        .collect();
    if launched.len() < WORKING_PHASE_MIN_OPS {
        return None;
    }
    launched.sort_unstable_by_key(|(i, _)| (i.start_ns, i.end_ns));
    let ops: Vec<Interval> = launched.iter().map(|(i, _)| *i).collect();
    // The longest stretch with no GPU op running, and how many ops start before it.
    let (mut reach, mut pause, mut before) = (ops[0].end_ns, None::<Interval>, 0);
    for (k, op) in ops.iter().enumerate().skip(1) {
        if op.start_ns > reach && pause.is_none_or(|p| op.start_ns - reach > p.dur_ns()) {
            pause = Some(Interval::new(reach, op.start_ns));
            before = k;
        }
        reach = reach.max(op.end_ns);
    }
    let pause = pause?;
    // Work queued through the pause (launched in its first half) makes it a wait on the
    // GPU's side, not a pause of the program.
    let queued = launched[before]
        .1
        .is_some_and(|call| call < pause.start_ns + pause.dur_ns() / 2);
    if queued
        || pause.dur_ns() < PAUSE_MIN_NS
        || crate::num::percent(pause.dur_ns(), extent.dur_ns()) < PAUSE_MIN_PERCENT
    {
        return None;
    }
    let busy = |side: &[Interval]| -> TimeNs { side.iter().map(Interval::dur_ns).sum() };
    let (head, tail) = ops.split_at(before);
    let all_ns = busy(&ops);
    let (side, window) = if busy(tail) >= busy(head) {
        (tail, Interval::new(pause.end_ns, extent.end_ns))
    } else {
        (head, Interval::new(extent.start_ns, pause.start_ns))
    };
    let holds = |part: f64, whole: f64| part * 100.0 >= whole * WORKING_PHASE_MIN_PERCENT;
    (side.len() >= WORKING_PHASE_MIN_OPS
        && holds(side.len() as f64, ops.len() as f64)
        && holds(busy(side) as f64, all_ns as f64))
    .then_some(WorkingPhase { window, pause })
}

/// A window of one span, without steps.
fn one_span(
    kind: WindowKind,
    interval: Interval,
    iterations_from: Option<String>,
) -> AnalysisWindow {
    let d = interval.dur_ns();
    AnalysisWindow {
        kind,
        iterations_from,
        pause: None,
        queued_before: None,
        interval,
        steps: Vec::new(),
        step: StepStats {
            count: 0,
            mean_ns: d,
            min_ns: d,
            max_ns: d,
            stddev_ns: 0,
        },
        covered_ns: d,
    }
}

/// Host steps moved to the device view (tb_plugin): step i spans from the end of step i−1 (or
/// its own host start, whichever is later) to the later of its host end and the end of the GPU
/// work launched by API calls inside it. Trailing steps with no GPU work are dropped, and so is
/// the last one if it matched under 80 % of the previous step's GPU ops (a capture cut short).
fn steps_from_host(trace: &Trace, host: &[(i64, Interval)]) -> Vec<WindowStep> {
    let host = host.to_vec();
    if host.is_empty() {
        return Vec::new();
    }
    let (inside, matched_ops) = if disjoint(&host) {
        launched_inside_by_scan(trace, &host)
    } else {
        let calls = launch_calls(trace);
        let matched_ops = calls_inside_a_step(&host, &calls)
            .flat_map(|c| trace.launched_by(c.id).iter().copied())
            .collect();
        (launched_inside(&host, &calls), matched_ops)
    };
    let as_steps = |v: Vec<(i64, Interval)>| {
        v.into_iter()
            .map(|(number, interval)| WindowStep { number, interval })
            .collect()
    };
    if matched_ops.is_empty() {
        return as_steps(host);
    }
    let mut prev_end = host[0].1.start_ns;
    if let Some(first_dev) = inside[0].hull {
        // GPU work from before the first step that is still running delays its start.
        let unmatched_end = trace
            .spans
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                s.kind.is_gpu_work()
                    && s.end_ns() < first_dev.start_ns
                    && !matched_ops.contains(&SpanId::at(*i))
            })
            .map(|(_, s)| s.end_ns())
            .max();
        if let Some(e) = unmatched_end {
            prev_end = prev_end.max(e);
        }
    }
    let mut out = Vec::new();
    for (k, &(n, h)) in host.iter().enumerate() {
        let start = prev_end.max(h.start_ns);
        let end = match inside[k].hull {
            None => h.end_ns.max(start),
            Some(d) => h.end_ns.max(d.end_ns).max(start),
        };
        out.push((n, Interval::new(start, end)));
        prev_end = end;
    }
    if out.len() > 1 {
        if let Some(last) = inside.iter().rposition(|l| l.count > 0) {
            let mut keep = last + 1;
            if last > 0 && (inside[last - 1].count as f64) * 0.8 > inside[last].count as f64 {
                keep = last;
            }
            out.truncate(keep);
        }
    }
    as_steps(out)
}

/// What the API calls inside one step launched: the hull of the GPU ops and their count.
#[derive(Clone, Copy, Default)]
struct Launched {
    hull: Option<Interval>,
    count: usize,
}

impl Launched {
    fn join(self, other: Launched) -> Launched {
        Launched {
            hull: match (self.hull, other.hull) {
                (Some(a), Some(b)) => Some(a.hull(b)),
                (a, b) => a.or(b),
            },
            count: self.count + other.count,
        }
    }
}

/// An API call that launched GPU work.
struct LaunchCall {
    id: SpanId,
    call: Interval,
    launched: Launched,
}

impl LaunchCall {
    /// The step end the call needs to be inside a step: its end, or one past it for a call
    /// of no duration (one that starts as the step ends is not inside it).
    fn reach_ns(&self) -> TimeNs {
        self.call.end_ns + TimeNs::from(self.call.dur_ns() == 0)
    }
}

/// Whether the host steps follow one another without overlapping (every real capture).
fn disjoint(host: &[(i64, Interval)]) -> bool {
    host.windows(2).all(|w| w[1].1.start_ns >= w[0].1.end_ns)
}

/// [`launched_inside`] for steps that do not overlap: one scan of the calls by start, each
/// call visited by one step at most, with no table beyond the calls' starts and ends (a
/// 1 GB trace holds millions of calls).
fn launched_inside_by_scan(
    trace: &Trace,
    host: &[(i64, Interval)],
) -> (Vec<Launched>, rustc_hash::FxHashSet<SpanId>) {
    let mut calls: Vec<(TimeNs, TimeNs, SpanId)> = trace
        .spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind.is_api_call())
        .map(|(i, s)| (s.start_ns, s.end_ns(), SpanId::at(i)))
        .collect();
    calls.sort_unstable();
    let mut out = vec![Launched::default(); host.len()];
    let mut matched_ops = rustc_hash::FxHashSet::default();
    for (k, &(_, h)) in host.iter().enumerate() {
        let from = calls.partition_point(|c| c.0 < h.start_ns);
        for &(start, end, id) in &calls[from..] {
            if start >= h.end_ns {
                break;
            }
            if end > h.end_ns {
                continue;
            }
            for &op in trace.launched_by(id) {
                let iv = trace.span(op).interval();
                out[k] = out[k].join(Launched {
                    hull: Some(iv),
                    count: 1,
                });
                matched_ops.insert(op);
            }
        }
    }
    (out, matched_ops)
}

/// The API calls that launched GPU work, with the hull and count of what each launched.
fn launch_calls(trace: &Trace) -> Vec<LaunchCall> {
    trace
        .spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind.is_api_call())
        .filter_map(|(i, s)| {
            let ops = trace.launched_by(SpanId::at(i));
            let hull = ops
                .iter()
                .map(|&op| trace.span(op).interval())
                .reduce(|a, b| a.hull(b))?;
            Some(LaunchCall {
                id: SpanId::at(i),
                call: s.interval(),
                launched: Launched {
                    hull: Some(hull),
                    count: ops.len(),
                },
            })
        })
        .collect()
}

/// For each host step, what the calls wholly inside it launched (a call starting at or after
/// the step's start and ending by its end, see [`LaunchCall::reach_ns`]), when steps
/// overlap (a crafted trace: [`launched_inside_by_scan`] serves real ones). Steps are taken from the latest start back, each
/// adding the calls that start at or after it to a Fenwick tree over call ends; a step's
/// answer is the tree's prefix up to its end. O((steps + calls) log calls): a scan of the
/// calls per step was quadratic when crafted steps overlap (10,000 overlapping steps took
/// seconds, 100,000 minutes).
fn launched_inside(host: &[(i64, Interval)], calls: &[LaunchCall]) -> Vec<Launched> {
    // Each call's slot in the tree: its rank by end.
    let mut by_end: Vec<usize> = (0..calls.len()).collect();
    by_end.sort_unstable_by_key(|&i| calls[i].reach_ns());
    let ends: Vec<TimeNs> = by_end.iter().map(|&i| calls[i].reach_ns()).collect();
    let mut slot = vec![0usize; calls.len()];
    for (rank, &i) in by_end.iter().enumerate() {
        slot[i] = rank;
    }
    let mut by_start: Vec<usize> = (0..calls.len()).collect();
    by_start.sort_unstable_by_key(|&i| std::cmp::Reverse(calls[i].call.start_ns));
    let mut steps: Vec<usize> = (0..host.len()).collect();
    steps.sort_unstable_by_key(|&k| std::cmp::Reverse(host[k].1.start_ns));
    let mut tree = vec![Launched::default(); calls.len() + 1];
    let mut out = vec![Launched::default(); host.len()];
    let mut next = by_start.iter().peekable();
    for k in steps {
        let h = host[k].1;
        while let Some(&&i) = next.peek() {
            if calls[i].call.start_ns < h.start_ns {
                break;
            }
            let mut at = slot[i] + 1;
            while at < tree.len() {
                tree[at] = tree[at].join(calls[i].launched);
                at += at & at.wrapping_neg();
            }
            next.next();
        }
        let mut at = ends.partition_point(|&e| e <= h.end_ns);
        let mut sum = Launched::default();
        while at > 0 {
            sum = sum.join(tree[at]);
            at -= at & at.wrapping_neg();
        }
        out[k] = sum;
    }
    out
}

/// The calls wholly inside at least one host step.
fn calls_inside_a_step<'a>(
    host: &[(i64, Interval)],
    calls: &'a [LaunchCall],
) -> impl Iterator<Item = &'a LaunchCall> {
    // By start, with the latest end among the steps started so far.
    let mut by_start: Vec<Interval> = host.iter().map(|h| h.1).collect();
    by_start.sort_unstable_by_key(|h| h.start_ns);
    let mut latest_end = Vec::with_capacity(by_start.len());
    let mut end = TimeNs::MIN;
    for h in &by_start {
        end = end.max(h.end_ns);
        latest_end.push(end);
    }
    calls.iter().filter(move |c| {
        let started = by_start.partition_point(|h| h.start_ns <= c.call.start_ns);
        started > 0 && latest_end[started - 1] >= c.reach_ns()
    })
}

#[cfg(test)]
mod marked_range_tests {
    use super::{analysis_window, WindowKind};
    use crate::diagnose::detectors::testing::{launch_call, span_us, thread_and_stream};
    use tracelens_model::{CaptureTool, Interval, SourceInfo, SpanKind, Trace};

    /// A whole-process capture: 10 warm-up launches, then one NVTX range around 10 more,
    /// each kernel 1 ms; `ranges` top-level ranges (the second around the warm-up).
    fn warm_up_then_marked(capture_tool: CaptureTool, ranges: usize) -> Trace {
        let (mut b, cpu, gpu) = thread_and_stream();
        for k in 0..20u64 {
            let t = i64::try_from(k).unwrap() * 2_000;
            launch_call(&mut b, cpu, t, Some(k + 1));
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                "k",
                (t + 100, 1_000),
                Some(k + 1),
            );
        }
        span_us(
            &mut b,
            SpanKind::UserAnnotation,
            cpu,
            "timed",
            (19_900, 20_000),
            None,
        );
        if ranges > 1 {
            span_us(
                &mut b,
                SpanKind::UserAnnotation,
                cpu,
                "warm_up",
                (0, 19_800),
                None,
            );
        }
        b.finish(SourceInfo {
            capture_tool,
            ..SourceInfo::default()
        })
    }

    /// The one range is the window, from its start to the later of its end and the end of
    /// the last kernel it launched; a profiler window, or two ranges, keep the GPU extent.
    #[test]
    fn one_marked_range_of_a_whole_process_capture_is_the_window_and_twins_are_not() {
        let w = analysis_window(&warm_up_then_marked(CaptureTool::NsightSystems, 1)).unwrap();
        assert_eq!(w.kind, WindowKind::MarkedRange);
        assert_eq!(w.interval, Interval::new(19_900_000, 39_900_000));
        assert_eq!(w.iterations_from.as_deref(), Some("the range `timed`"));
        assert!(!w.has_steps());
        for (tool, ranges) in [
            (CaptureTool::TorchProfiler, 1),
            (CaptureTool::NsightSystems, 2),
        ] {
            let w = analysis_window(&warm_up_then_marked(tool, ranges)).unwrap();
            assert_eq!(w.kind, WindowKind::GpuExtent, "{tool:?} {ranges}");
        }
    }

    /// Three kernels whose launches the capture missed (`launched`: false), a 5 ms pause,
    /// then one launched step of two 1 ms kernels.
    fn tail_then_step(launched: bool) -> Trace {
        let (mut b, cpu, gpu) = thread_and_stream();
        for k in 0..3u64 {
            let t = i64::try_from(k).unwrap() * 100;
            if launched {
                launch_call(&mut b, cpu, t, Some(k + 1));
            }
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                "tail",
                (t + 10, 90),
                Some(k + 1),
            );
        }
        for k in 0..2u64 {
            let t = 5_000 + i64::try_from(k).unwrap() * 1_000;
            launch_call(&mut b, cpu, t, Some(k + 10));
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                "step",
                (t + 10, 1_000),
                Some(k + 10),
            );
        }
        b.finish(SourceInfo::default())
    }

    /// GPU work queued before the capture began (its launches are not in the trace, and it
    /// ends before the first launch that is) is left out of a window without steps, and
    /// said; the same ops with their launches stay in.
    #[test]
    fn gpu_work_queued_before_the_capture_is_left_out_of_a_window_without_steps() {
        let w = analysis_window(&tail_then_step(false)).unwrap();
        assert_eq!(w.interval, Interval::new(5_010_000, 7_010_000));
        let q = w.queued_before.expect("the tail is set apart");
        assert_eq!((q.ops, q.busy_ns), (3, 270_000));
        let twin = analysis_window(&tail_then_step(true)).unwrap();
        assert_eq!(twin.interval, Interval::new(10_000, 7_010_000));
        assert!(twin.queued_before.is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::{
        calls_inside_a_step, launched_inside, AnalysisWindow, LaunchCall, Launched, StepStats,
        WindowKind, WindowStep,
    };
    use tracelens_model::SpanId;

    #[test]
    fn overlapping_steps_get_what_a_scan_of_every_call_gives() {
        // Pseudo-random overlapping steps and calls (zero-length ones at step ends included),
        // checked against the definition: a call starting in the step and ending by its end.
        let mut seed = 7u64;
        let mut next = |m: i64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            i64::try_from(seed >> 33).unwrap() % m
        };
        let host: Vec<(i64, Interval)> = (0..60)
            .map(|k| {
                let start = next(1_000);
                (k, Interval::new(start, start + next(300)))
            })
            .collect();
        let calls: Vec<LaunchCall> = (0..400)
            .map(|i| {
                let start = next(1_300);
                let end = start + if i % 5 == 0 { 0 } else { next(40) };
                let op_start = end + next(50);
                LaunchCall {
                    id: SpanId(i),
                    call: Interval::new(start, end),
                    launched: Launched {
                        hull: Some(Interval::new(op_start, op_start + 1 + next(20))),
                        count: 1 + usize::try_from(next(3)).unwrap(),
                    },
                }
            })
            .collect();
        let inside = |h: Interval, c: &LaunchCall| {
            c.call.start_ns >= h.start_ns && c.call.start_ns < h.end_ns && c.call.end_ns <= h.end_ns
        };
        let fast = launched_inside(&host, &calls);
        for (k, &(_, h)) in host.iter().enumerate() {
            let slow = calls
                .iter()
                .filter(|c| inside(h, c))
                .fold(Launched::default(), |a, c| a.join(c.launched));
            assert_eq!(
                (fast[k].hull, fast[k].count),
                (slow.hull, slow.count),
                "step {k}"
            );
        }
        let fast: Vec<u32> = calls_inside_a_step(&host, &calls).map(|c| c.id.0).collect();
        let slow: Vec<u32> = calls
            .iter()
            .filter(|c| host.iter().any(|&(_, h)| inside(h, c)))
            .map(|c| c.id.0)
            .collect();
        assert_eq!(fast, slow);
    }
    use tracelens_model::Interval;

    #[test]
    fn a_moment_belongs_to_the_latest_step_started_before_it_that_has_not_ended() {
        let step = |number, start_ns, end_ns| WindowStep {
            number,
            interval: Interval::new(start_ns, end_ns),
        };
        let window = AnalysisWindow {
            kind: WindowKind::ProfiledSteps,
            interval: Interval::new(0, 100),
            // Step 2 overlaps step 1's tail; a hole between steps 2 and 3.
            steps: vec![step(1, 0, 40), step(2, 30, 60), step(3, 70, 100)],
            step: StepStats::default(),
            covered_ns: 90,
            iterations_from: None,
            pause: None,
            queued_before: None,
        };
        let at: Vec<Option<i64>> = [0, 29, 30, 59, 60, 65, 70, 99, 100]
            .iter()
            .map(|&t| window.step_at(t))
            .collect();
        assert_eq!(
            at,
            [
                Some(1),
                Some(1),
                Some(2),
                Some(2),
                None,
                None,
                Some(3),
                Some(3),
                None
            ]
        );
    }
}
