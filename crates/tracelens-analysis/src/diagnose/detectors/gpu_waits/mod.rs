//! Work is queued but the GPU waits on the device side: what the three wait detectors share.
//! Each wait cause of the idle attribution has its detector ([`cross_stream`]: an event on
//! another stream; [`collective`]: a collective; [`unexplained`]: a reason the trace does not
//! hold), reported when the wait is a big share of the step ([`BIG_SHARE_PERCENT`]), naming
//! the waiting stream, the op that waited and what the launching thread did meanwhile; each
//! detector words its own fix.

mod collective;
mod cross_stream;
mod unexplained;

pub use collective::CollectiveWait;
pub use cross_stream::CrossStreamWait;
pub use unexplained::UnexplainedGpuWait;

use super::{plural, Context};
use crate::attribute::idle::IdleCause;
use crate::diagnose::finding::{EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use rustc_hash::FxHashMap;
use tracelens_model::{format_ms, LaneKey, NameId, SpanKind, TimeNs};

/// Spans looked at before a wait for the call running when it began.
const MAX_LOOKBACK: usize = 64;

/// A cause or busy category this share of step time or more always gets a finding.
pub const BIG_SHARE_PERCENT: f64 = 10.0;

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
    let Some(idle) = cx.idle() else {
        return f;
    };
    let trace = cx.trace;
    for gap in &idle.gaps {
        let waited: TimeNs = idle
            .segments_of(gap)
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
        for seg in idle.segments_of(gap).filter(|s| s.cause == cause) {
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

/// A wait finding with its title and evidence, before its detector words the fix.
struct WaitFinding {
    finding: Finding,
    /// The host call that covers most of the wait, if one does: what the launching thread
    /// was doing meanwhile.
    blocking_call: Option<String>,
}

/// The finding for the GPU time credited to wait `cause`, when it is a big share of the step.
fn wait_finding(cx: &Context, cause: IdleCause, kind: FindingKind) -> Option<WaitFinding> {
    let ns = cx.credit().gpu_waits.get(&cause).copied().unwrap_or(0);
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
    f.evidence.add_occurrences("gaps", facts.gaps);
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
    Some(WaitFinding {
        blocking_call: blocking.map(|(n, _)| n.clone()),
        finding: f,
    })
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

#[cfg(test)]
pub(super) mod testing {
    //! A trace whose GPU waits after every launch, and its fixed twin.
    use crate::diagnose::detectors::testing::span_us;
    use tracelens_model::{SourceInfo, SpanKind, Trace};

    /// What the GPU waits on after each launch.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Wait {
        /// Nothing: each kernel starts right after its launch (the fixed twin).
        None,
        /// The launching thread queued a `cudaStreamWaitEvent` before each launch.
        StreamEvent,
        /// The kernel is a collective.
        Collective,
        /// Nothing the trace records.
        Unrecorded,
    }

    /// Five 1 ms steps: a launch at the start of each, its kernel 600 µs later (or 10 µs
    /// later with [`Wait::None`]).
    pub(crate) fn waiting_trace(wait: Wait) -> Trace {
        let (mut b, cpu, gpu) = crate::diagnose::detectors::testing::thread_and_stream();
        let kernel = if wait == Wait::Collective {
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
        } else {
            "gemm_kernel"
        };
        for step in 0..5u64 {
            let t = i64::try_from(step).unwrap() * 1000;
            if wait == Wait::StreamEvent {
                span_us(
                    &mut b,
                    SpanKind::Runtime,
                    cpu,
                    "cudaStreamWaitEvent",
                    (t + 1, 2),
                    None,
                );
            }
            span_us(
                &mut b,
                SpanKind::Runtime,
                cpu,
                "cudaLaunchKernel",
                (t + 5, 5),
                Some(step + 1),
            );
            let start = if wait == Wait::None { t + 15 } else { t + 600 };
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                kernel,
                (start, 390),
                Some(step + 1),
            );
        }
        b.finish(SourceInfo::default())
    }
}
