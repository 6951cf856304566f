//! The serving view of an LLM-inference trace: the engine's iterations (from its batch
//! annotations, else its step functions), each told prefill, decode or mixed by its batch, and
//! its time split into GPU work (graph replays apart), host time blocked in syncs, and host
//! time between iterations (scheduling, request handling). What the names mean is
//! [`crate::vocabulary::serving`]'s.

use crate::measure::intervals::{total_ns, union};
use crate::measure::window::AnalysisWindow;
use crate::vocabulary::serving::{self, Engine, IterationLabel};
use serde::Serialize;
use tracelens_model::{Interval, LaneId, NameId, SpanId, SpanKind, TimeNs, Trace};

/// At most this many iterations are listed (the phase totals cover all).
pub const MAX_LISTED: usize = 50;

/// What an iteration's batch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Prompts only.
    Prefill,
    /// One new token per request only.
    Decode,
    /// Prompts (or prompt chunks) and decodes in one batch.
    Mixed,
    /// The trace does not record the batch.
    Unlabelled,
}

impl Phase {
    /// Every phase, in report order.
    pub const ALL: [Phase; 4] = [
        Phase::Prefill,
        Phase::Decode,
        Phase::Mixed,
        Phase::Unlabelled,
    ];

    /// Lower-case label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Mixed => "mixed",
            Phase::Unlabelled => "unlabelled",
        }
    }

    fn of(label: Option<&IterationLabel>) -> Phase {
        match label {
            None => Phase::Unlabelled,
            Some(l) if l.prefill.requests > 0 && l.decode.requests > 0 => Phase::Mixed,
            Some(l) if l.prefill.requests > 0 => Phase::Prefill,
            Some(_) => Phase::Decode,
        }
    }
}

/// One engine iteration.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Iteration {
    /// Host start, trace ns.
    pub start_ns: TimeNs,
    /// Host time of the iteration's range.
    pub host_ns: TimeNs,
    /// What its batch runs.
    pub phase: Phase,
    /// Tokens scheduled, when labelled.
    pub tokens: Option<u64>,
    /// Requests in the batch (prefill and decode), when labelled.
    pub requests: Option<u64>,
    /// Key/value tokens the batch attends over, when labelled.
    pub kv_tokens: Option<u64>,
    /// GPU time of the work it launched (union).
    pub gpu_busy_ns: TimeNs,
    /// The part of it replayed from CUDA/HIP graphs.
    pub graph_replay_ns: TimeNs,
    /// Host time inside blocking syncs (a result read back, a synchronous copy).
    pub host_blocked_ns: TimeNs,
    /// Host time since the previous iteration on the same thread ended.
    pub gap_before_ns: Option<TimeNs>,
}

/// The iterations of one phase, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct PhaseTotals {
    /// Which phase.
    pub phase: Option<Phase>,
    /// Iterations.
    pub iterations: u64,
    /// Host time.
    pub host_ns: TimeNs,
    /// GPU time of their work.
    pub gpu_busy_ns: TimeNs,
    /// Of which graph replays.
    pub graph_replay_ns: TimeNs,
    /// Host time blocked in syncs.
    pub host_blocked_ns: TimeNs,
    /// Tokens scheduled.
    pub tokens: u64,
    /// Requests, summed over the iterations (their mean is the mean batch).
    pub requests: u64,
    /// Key/value tokens attended over, summed.
    pub kv_tokens: u64,
}

impl PhaseTotals {
    /// The mean batch (requests per iteration), when the batch is labelled.
    #[must_use]
    pub fn mean_batch(&self) -> Option<f64> {
        #[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
        let mean = (self.requests as f64) / (self.iterations.max(1) as f64);
        (self.requests > 0).then_some(mean)
    }
}

/// Where the iterations come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationSource {
    /// The engine's batch annotations (`execute_…_context_…_generation_…`).
    BatchAnnotations,
    /// The engine's step function (Python frames): no batch.
    StepFrames,
}

/// The serving view.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct InferenceRun {
    /// The engine, from its Python frames, when recorded.
    pub engine: Option<Engine>,
    /// Where the iterations come from.
    pub source: IterationSource,
    /// Per phase, in [`Phase::ALL`] order, phases with iterations only.
    pub phases: Vec<PhaseTotals>,
    /// Host time between consecutive iterations (scheduling and request handling), summed.
    pub between_iterations_ns: TimeNs,
    /// Gaps counted in it.
    pub gaps: u64,
    /// First iteration start to last iteration end: the serving window.
    pub extent: Interval,
    /// The first iterations (at most [`MAX_LISTED`]).
    pub listed: Vec<Iteration>,
}

impl InferenceRun {
    /// The totals of `phase`, when it has iterations.
    #[must_use]
    pub fn phase(&self, phase: Phase) -> Option<&PhaseTotals> {
        self.phases.iter().find(|p| p.phase == Some(phase))
    }

    /// Iterations in all.
    #[must_use]
    pub fn iterations(&self) -> u64 {
        self.phases.iter().map(|p| p.iterations).sum()
    }
}

/// The serving view of `trace`; `None` when it shows no engine iteration in the window.
#[must_use]
pub fn inference_run(trace: &Trace, window: &AnalysisWindow) -> Option<InferenceRun> {
    let labels: Vec<Option<IterationLabel>> = (0..trace.names.len())
        .map(|k| serving::iteration_label(trace.names.get(NameId::at(k))))
        .collect();
    let has_labels = labels.iter().any(Option::is_some);
    // Without batch labels, the engines' step frames mark the iterations.
    let step_frames: Vec<bool> = if has_labels {
        Vec::new()
    } else {
        (0..trace.names.len())
            .map(|k| serving::is_engine_step_frame(trace.names.get(NameId::at(k))))
            .collect()
    };
    if !has_labels && !step_frames.contains(&true) {
        return None;
    }
    let engine = (0..trace.names.len())
        .find_map(|k| serving::engine_of_frame(trace.names.get(NameId::at(k))));
    let mut steps = Vec::new();
    let w = window.interval;
    for (i, s) in trace.spans.iter().enumerate() {
        match s.kind {
            SpanKind::UserAnnotation if has_labels => {
                if let Some(l) = labels[s.name.0 as usize] {
                    steps.push((i, Some(l)));
                }
            }
            SpanKind::PythonFunction if !has_labels && step_frames[s.name.0 as usize] => {
                steps.push((i, None));
            }
            _ => {}
        }
    }
    steps.sort_by_key(|&(i, _)| trace.spans[i].start_ns);
    let mut listed = Vec::with_capacity(steps.len());
    let mut previous_end: Option<(LaneId, TimeNs)> = None;
    // Where the last iteration taken on each lane ends: a range inside it is not another
    // iteration (and each lane's ranges are scanned once).
    let mut taken_until: rustc_hash::FxHashMap<LaneId, TimeNs> = rustc_hash::FxHashMap::default();
    for &(i, label) in &steps {
        let s = &trace.spans[i];
        if taken_until
            .get(&s.lane)
            .is_some_and(|&end| s.start_ns < end)
        {
            continue;
        }
        taken_until.insert(s.lane, s.end_ns());
        let work = work_inside(trace, s.lane, s.interval());
        // An iteration counts when its host range or the GPU work it launched is in the
        // window (the GPU runs behind the host).
        let reach = work.hull.map_or(s.interval(), |h| h.hull(s.interval()));
        if reach.start_ns >= w.end_ns || reach.end_ns <= w.start_ns {
            continue;
        }
        let (gpu_busy_ns, graph_replay_ns, host_blocked_ns) =
            (work.busy_ns, work.replayed_ns, work.blocked_ns);
        let gap_before_ns = previous_end
            .filter(|&(lane, end)| lane == s.lane && end <= s.start_ns)
            .map(|(_, end)| s.start_ns - end);
        previous_end = Some((s.lane, s.end_ns()));
        listed.push(Iteration {
            start_ns: s.start_ns,
            host_ns: s.dur_ns,
            phase: Phase::of(label.as_ref()),
            tokens: label.map(|l| l.tokens),
            requests: label.map(|l| l.prefill.requests + l.decode.requests),
            kv_tokens: label.and_then(|l| Some(l.prefill.kv_tokens? + l.decode.kv_tokens?)),
            gpu_busy_ns,
            graph_replay_ns,
            host_blocked_ns,
            gap_before_ns,
        });
    }
    let phases = Phase::ALL
        .iter()
        .filter_map(|&phase| {
            let mut t = PhaseTotals {
                phase: Some(phase),
                ..PhaseTotals::default()
            };
            for it in listed.iter().filter(|it| it.phase == phase) {
                t.iterations += 1;
                t.host_ns += it.host_ns;
                t.gpu_busy_ns += it.gpu_busy_ns;
                t.graph_replay_ns += it.graph_replay_ns;
                t.host_blocked_ns += it.host_blocked_ns;
                t.tokens += it.tokens.unwrap_or(0);
                t.requests += it.requests.unwrap_or(0);
                t.kv_tokens += it.kv_tokens.unwrap_or(0);
            }
            (t.iterations > 0).then_some(t)
        })
        .collect();
    let gaps: Vec<TimeNs> = listed.iter().filter_map(|it| it.gap_before_ns).collect();
    let extent = listed
        .iter()
        .map(|it| Interval::new(it.start_ns, it.start_ns + it.host_ns))
        .reduce(|a, b| a.hull(b))?;
    listed.truncate(MAX_LISTED);
    Some(InferenceRun {
        engine,
        source: if has_labels {
            IterationSource::BatchAnnotations
        } else {
            IterationSource::StepFrames
        },
        phases,
        between_iterations_ns: gaps.iter().sum(),
        gaps: gaps.len() as u64,
        extent,
        listed,
    })
}

/// What an iteration's host range launched and waited for.
struct Work {
    /// GPU time (union) of the work launched.
    busy_ns: TimeNs,
    /// The part of it replayed from graphs.
    replayed_ns: TimeNs,
    /// Host time blocked in syncs.
    blocked_ns: TimeNs,
    /// First start to last end of the work launched.
    hull: Option<Interval>,
}

/// The work launched from `lane` inside `host`.
fn work_inside(trace: &Trace, lane: LaneId, host: Interval) -> Work {
    let range = trace.lane(lane).spans.clone();
    let spans = &trace.spans[range.start as usize..range.end as usize];
    let from = spans.partition_point(|s| s.start_ns < host.start_ns);
    let (mut all, mut replayed, mut blocked) = (Vec::new(), Vec::new(), 0);
    for (k, s) in spans[from..].iter().enumerate() {
        if s.start_ns >= host.end_ns {
            break;
        }
        if !s.kind.is_api_call() {
            continue;
        }
        let id = SpanId::at(range.start as usize + from + k);
        let name = trace.name(id);
        if crate::vocabulary::api::blocking_kind(name).is_some() {
            blocked += s.dur_ns.min(host.end_ns - s.start_ns);
        }
        let graph = crate::vocabulary::ops::is_graph_launch(name);
        for &op in trace.launched_by(id) {
            let iv = trace.span(op).interval();
            all.push(iv);
            if graph {
                replayed.push(iv);
            }
        }
    }
    let hull = all.iter().copied().reduce(|a, b| a.hull(b));
    Work {
        busy_ns: total_ns(&union(all)),
        replayed_ns: total_ns(&union(replayed)),
        blocked_ns: blocked,
        hull,
    }
}
