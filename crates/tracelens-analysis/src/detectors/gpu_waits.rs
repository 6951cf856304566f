//! Work is queued but the GPU waits on the device side: for an event on another stream, for a
//! collective, or for a reason the trace does not hold. Reported when the wait is a big share
//! of the step ([`BIG_SHARE_PERCENT`]), naming the waiting stream, the op that waited and what
//! the launching thread did meanwhile.

use super::{plural, Context, Detector};
use crate::finding::{Confidence, EvidenceValue, Finding, FindingKind, WinKind};
use crate::idle::IdleCause;
use rustc_hash::FxHashMap;
use tracelens_model::{format_ms, LaneKey, NameId, SpanKind, TimeNs};

/// Spans looked at before a wait for the call running when it began.
const MAX_LOOKBACK: usize = 64;

/// A cause or busy category this share of step time or more always gets a finding.
pub const BIG_SHARE_PERCENT: f64 = 10.0;

/// Queued work waits for an event recorded on another stream.
pub struct CrossStreamWait;
/// Queued work waits on a collective.
pub struct CollectiveWait;
/// Queued work waits and the trace shows no reason.
pub struct UnexplainedGpuWait;

impl Detector for CrossStreamWait {
    fn name(&self) -> &'static str {
        "cross_stream_wait"
    }
    fn kind(&self) -> FindingKind {
        FindingKind::CrossStreamWait
    }
    fn detect(&self, cx: &Context) -> Vec<Finding> {
        wait_finding(cx, IdleCause::CrossStreamWait, FindingKind::CrossStreamWait)
            .into_iter()
            .collect()
    }
}

impl Detector for CollectiveWait {
    fn name(&self) -> &'static str {
        "collective_wait"
    }
    fn kind(&self) -> FindingKind {
        FindingKind::CollectiveWait
    }
    fn detect(&self, cx: &Context) -> Vec<Finding> {
        wait_finding(cx, IdleCause::CollectiveWait, FindingKind::CollectiveWait)
            .into_iter()
            .collect()
    }
}

impl Detector for UnexplainedGpuWait {
    fn name(&self) -> &'static str {
        "gpu_wait"
    }
    fn kind(&self) -> FindingKind {
        FindingKind::GpuWait
    }
    fn detect(&self, cx: &Context) -> Vec<Finding> {
        wait_finding(cx, IdleCause::GpuWait, FindingKind::GpuWait)
            .into_iter()
            .collect()
    }
}

/// What the idle segments of one wait cause show.
#[derive(Default)]
struct WaitFacts {
    gaps: u64,
    by_stream: FxHashMap<i64, TimeNs>,
    by_op: FxHashMap<String, TimeNs>,
    /// Runtime, driver and OS calls of the launching thread that overlap the waits.
    host_calls: FxHashMap<NameId, TimeNs>,
}

fn largest<K: Clone + Ord>(m: &FxHashMap<K, TimeNs>, n: usize) -> Vec<(K, TimeNs)> {
    let mut v: Vec<(K, TimeNs)> = m.iter().map(|(k, t)| (k.clone(), *t)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

fn facts(cx: &Context, cause: IdleCause) -> WaitFacts {
    let mut f = WaitFacts::default();
    let Some(idle) = cx.idle else {
        return f;
    };
    let trace = cx.trace;
    for gap in &idle.gaps {
        let waited: TimeNs = idle
            .segments_of(gap)
            .iter()
            .filter(|s| s.cause == cause)
            .map(|s| s.interval.dur_ns())
            .sum();
        if waited == 0 {
            continue;
        }
        f.gaps += 1;
        if let Some(ender) = gap.ended_by() {
            let s = trace.span(ender);
            if let LaneKey::Gpu { stream, .. } = trace.lane(s.lane).key {
                *f.by_stream.entry(stream).or_default() += waited;
            }
            *f.by_op
                .entry(trace.names.get(s.name).to_string())
                .or_default() += waited;
        }
        let Some(lane) = gap.lane() else { continue };
        let range = trace.lane(lane).spans.clone();
        let spans = &trace.spans[range.start as usize..range.end as usize];
        let is_call = |k: SpanKind| {
            matches!(
                k,
                SpanKind::Runtime | SpanKind::Driver | SpanKind::OsRuntime
            )
        };
        for seg in idle.segments_of(gap).iter().filter(|s| s.cause == cause) {
            let w = seg.interval;
            // The calls starting inside the segment, and the last one before it (calls of one
            // thread do not overlap one another, so only that one can reach into it).
            let from = spans.partition_point(|s| s.start_ns < w.start_ns);
            let to = spans.partition_point(|s| s.start_ns < w.end_ns);
            let before = spans[..from]
                .iter()
                .rev()
                .take(MAX_LOOKBACK)
                .find(|s| is_call(s.kind));
            for s in before
                .into_iter()
                .chain(spans[from..to].iter().filter(|s| is_call(s.kind)))
            {
                if let Some(c) = s.interval().clip(w) {
                    *f.host_calls.entry(s.name).or_default() += c.dur_ns();
                }
            }
        }
    }
    f
}

fn wait_finding(cx: &Context, cause: IdleCause, kind: FindingKind) -> Option<Finding> {
    let ns = cx.credit.gpu_waits.get(&cause).copied().unwrap_or(0);
    let win = cx.win(ns);
    if ns == 0 || win.percent < BIG_SHARE_PERCENT {
        return None;
    }
    let facts = facts(cx, cause);
    let mut f = cx.finding(kind, WinKind::GpuIdle, &win);
    let streams = largest(&facts.by_stream, 2);
    let ops = largest(&facts.by_op, 2);
    let calls: Vec<(String, TimeNs)> = largest(&facts.host_calls, 2)
        .into_iter()
        .map(|(n, t)| (cx.trace.names.get(n).to_string(), t))
        .collect();
    let stream_text = match streams.as_slice() {
        [] => "queued work".to_string(),
        [(s, _)] => format!("work queued on stream {s}"),
        more => format!(
            "work queued on streams {}",
            more.iter()
                .map(|(s, _)| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let op_text = ops
        .first()
        .map(|(n, _)| format!(" ({} waited longest)", short(n)))
        .unwrap_or_default();
    // A host call that covers most of the wait: what the launching thread was doing.
    let blocking = calls.first().filter(|(_, t)| *t * 2 >= ns);
    let meanwhile = blocking
        .map(|(n, t)| {
            format!(
                "; meanwhile the launching thread was in {n} for {}",
                format_ms(cx.window.per_step(*t))
            )
        })
        .unwrap_or_default();
    let what = match cause {
        IdleCause::CrossStreamWait => "for an event recorded on another stream",
        IdleCause::CollectiveWait => "on a collective",
        _ => "with no reason the trace records (no stream wait, no collective)",
    };
    f.title = format!(
        "GPU idle {} {} ({:.1} %) with {stream_text} waiting {what}{op_text}, in {}{meanwhile}",
        format_ms(win.per_step_ns),
        cx.per(),
        win.percent,
        plural(facts.gaps, "gap"),
    );
    f.evidence.add("gaps", EvidenceValue::Count(facts.gaps));
    for (s, t) in &streams {
        f.evidence
            .add(format!("waiting stream {s}"), EvidenceValue::DurationNs(*t));
    }
    for (n, t) in &ops {
        f.evidence.add(
            format!("waited: {}", short(n)),
            EvidenceValue::DurationNs(*t),
        );
    }
    for (n, t) in &calls {
        f.evidence.add(
            format!("host call meanwhile: {n}"),
            EvidenceValue::DurationNs(*t),
        );
    }
    f.win_basis = "GPU idle while launched work waited on the device side (upper bound)".into();
    f.confidence = if cause == IdleCause::GpuWait {
        Confidence::Low
    } else {
        Confidence::Medium
    };
    let pytorch = cx.framework.pytorch();
    (f.fix, f.advice, f.snippet) = match cause {
        IdleCause::CrossStreamWait => (
            match blocking {
                Some((call, _)) => format!("No stream ran the awaited work during the waits: the event is recorded after work that the host launched only once {call} returned. Record the event right after the work it guards and move the blocking call after the launches (or make it asynchronous), so the consumer stream finds its event already queued."),
                None => "Record the event right after the work it guards, on a stream that is not itself waiting, and launch the producing work before the consumer's wait, so the consumer stream never waits on work not yet queued.".into(),
            },
            "A stream wait holds queued work until an event on another stream completes. The GPU sat idle, so the awaited work was not running either: it was launched late, behind host work or a blocking call.".into(),
            if pytorch {
                "side = torch.cuda.Stream()\nwith torch.cuda.stream(side):\n    produced = producer(x)\n    done = torch.cuda.Event(); done.record(side)   # right after the work\ntorch.cuda.current_stream().wait_event(done)".into()
            } else {
                "producer<<<g, b, 0, side>>>(...);\ncudaEventRecord(done, side);          // right after the work it guards\ncudaStreamWaitEvent(main, done, 0);".into()
            },
        ),
        IdleCause::CollectiveWait => (
            if pytorch {
                "Ranks reach the collective at different times or communication runs exposed: compare the ranks with `tracelens job` to find the late one and what it did, and overlap communication with compute (DDP bucket_cap_mb, FSDP forward/backward prefetch).".into()
            } else {
                "Ranks reach the collective at different times or communication runs exposed: compare the ranks with `tracelens job` to find the late one, and issue collectives on their own stream overlapped with independent compute.".into()
            },
            "A collective cannot finish before every rank joins it; this rank's GPU idles until the slowest one arrives.".into(),
            "tracelens job rank0.json rank1.json ...   # which rank arrives late, and why".into(),
        ),
        _ => (
            if pytorch {
                "The trace does not say what the queued work waited for: profile the step with Nsight Systems (nsys -t cuda,nvtx,osrt), which records stream waits and events, and in a distributed job compare ranks with `tracelens job`.".into()
            } else {
                "The trace does not say what the queued work waited for: profile with nsys -t cuda (stream waits and events) and, in a distributed job, compare ranks with `tracelens job`.".into()
            },
            "Launched work did not start although the GPU was idle and no stream wait or collective explains it: a dependency the trace does not record (an event, another device, a semaphore).".into(),
            "nsys profile -t cuda,nvtx,osrt python train.py".into(),
        ),
    };
    Some(f)
}

/// A kernel name short enough for a title.
pub(super) fn short(name: &str) -> String {
    const MAX: usize = 80;
    if name.chars().count() <= MAX {
        name.to_string()
    } else {
        let cut: String = name.chars().take(MAX).collect();
        format!("{cut}…")
    }
}
