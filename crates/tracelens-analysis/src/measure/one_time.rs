//! What a program does once, told by comparison with its own later work rather than by name:
//! a thread's first API call when it takes milliseconds (the driver creates the context
//! inside it, whatever the call is), and a call made inside the first call of an op (with the
//! same recorded inputs, when shapes are recorded) that is called again later at a fraction of
//! its cost (the library behind the op creating its handle or workspace, or tuning for a new
//! shape: cuBLAS, cuDNN and cuFFT free and allocate inside their first call).
//! Such calls are no per-step cost, so the fixes made for per-step costs do not apply.

use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{LaneId, NameId, SpanId, SpanKind, TimeNs, Trace, NS_PER_MS};

/// A first call is one-time work when it costs at least this many times the mean of its
/// op's later calls.
pub const FIRST_CALL_RATIO: i64 = 4;

/// A thread's first API call that takes this long creates the context.
pub const CONTEXT_CREATION_NS: TimeNs = NS_PER_MS;

/// Whether the capture holds the program's start on the GPU: the trace's first runtime call
/// (CUDA runtime or HIP; the first driver call where the program calls only the driver) takes
/// [`CONTEXT_CREATION_NS`] or more, the context being created inside it (driver look-ups
/// such as `cuGetProcAddress` come before it). Such a capture holds the whole run from
/// there, so what it does not repeat, the program does not.
#[must_use]
pub fn capture_holds_context_creation(trace: &Trace) -> bool {
    context_creating_call(trace).is_some()
}

/// The call that creates the context, where the capture holds it: the trace's first runtime
/// call (the first call where the program calls only the driver), when it takes
/// [`CONTEXT_CREATION_NS`] or more and is not a call that waits for the GPU (a
/// synchronize that long waits for work queued before the capture).
#[must_use]
pub fn context_creating_call(trace: &Trace) -> Option<&tracelens_model::Span> {
    use crate::vocabulary::api::{api_family, blocking_kind, BlockingKind, GpuApi};
    // One pass; a name's family is asked only of a call earlier than the earliest runtime
    // call so far (a few calls), not of every call of a multi-million-row export.
    let mut first_any: Option<&tracelens_model::Span> = None;
    let mut first_runtime: Option<&tracelens_model::Span> = None;
    for s in trace.spans.iter().filter(|s| s.kind.is_api_call()) {
        if first_any.is_none_or(|f| s.start_ns < f.start_ns) {
            first_any = Some(s);
        }
        if first_runtime.is_none_or(|f| s.start_ns < f.start_ns)
            && matches!(
                api_family(trace.names.get(s.name)),
                Some(GpuApi::CudaRuntime | GpuApi::Hip)
            )
        {
            first_runtime = Some(s);
        }
    }
    first_runtime.or(first_any).filter(|s| {
        s.dur_ns >= CONTEXT_CREATION_NS
            && !matches!(
                blocking_kind(trace.names.get(s.name)),
                Some(BlockingKind::StreamSync | BlockingKind::DeviceSync | BlockingKind::EventSync)
            )
    })
}

/// Why a call happens once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "op")]
pub enum OneTimeWork {
    /// The thread's first API call, milliseconds long: the driver creates the context.
    ContextCreation,
    /// Inside the first call of this op, which later calls make at a fraction of its cost:
    /// the library behind it sets itself up (handles, workspaces, algorithm search).
    FirstCallOf(String),
}

impl OneTimeWork {
    /// In words, for a title or a verdict ("the first aten::addmm's library setup").
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            OneTimeWork::ContextCreation => "context creation".into(),
            OneTimeWork::FirstCallOf(op) => format!("the first {op} call's library setup"),
        }
    }
}

/// Calls and durations of one op name.
#[derive(Clone, Copy, Debug)]
struct OpCalls {
    first: SpanId,
    first_start_ns: TimeNs,
    count: u64,
    total_ns: TimeNs,
}

impl OpCalls {
    /// No call yet; [`OpCalls::add`] counts the first.
    fn new(id: SpanId, s: &tracelens_model::Span) -> Self {
        OpCalls {
            first: id,
            first_start_ns: s.start_ns,
            count: 0,
            total_ns: 0,
        }
    }

    /// One more call; the earliest is the first.
    fn add(&mut self, id: SpanId, s: &tracelens_model::Span) {
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(s.dur_ns);
        if s.start_ns < self.first_start_ns {
            self.first = id;
            self.first_start_ns = s.start_ns;
        }
    }
}

/// The first call of each op name and the cost of its later calls, and each thread's first
/// API call: built once per trace, with the per-thread facts.
#[derive(Clone, Debug, Default)]
pub struct FirstCalls {
    /// Per op name, and per op name and recorded inputs (the span's detail: its shapes when
    /// recorded), so a new input shape's first call is compared with that shape's later calls
    /// too (cuDNN sets up each convolution shape on its first call).
    by_name: FxHashMap<NameId, OpCalls>,
    by_inputs: FxHashMap<(NameId, u32), OpCalls>,
    first_api: FxHashMap<LaneId, SpanId>,
}

impl FirstCalls {
    /// Scans the trace's CPU ops once.
    #[must_use]
    pub fn build(trace: &Trace) -> Self {
        let mut by_name: FxHashMap<NameId, OpCalls> = FxHashMap::default();
        let mut by_inputs: FxHashMap<(NameId, u32), OpCalls> = FxHashMap::default();
        for (i, s) in trace.spans.iter().enumerate() {
            if s.kind != SpanKind::CpuOp || trace.step_of_name(s.name).is_some() {
                continue;
            }
            let id = SpanId::at(i);
            by_name
                .entry(s.name)
                .or_insert_with(|| OpCalls::new(id, s))
                .add(id, s);
            by_inputs
                .entry((s.name, s.detail))
                .or_insert_with(|| OpCalls::new(id, s))
                .add(id, s);
        }
        let first_api = (0..trace.lanes.len())
            .map(LaneId::at)
            .filter(|&l| !trace.lane(l).key.is_gpu())
            .filter_map(|l| {
                trace
                    .lane_span_ids(l)
                    .find(|&id| trace.span(id).kind.is_api_call())
                    .map(|id| (l, id))
            })
            .collect();
        FirstCalls {
            by_name,
            by_inputs,
            first_api,
        }
    }

    /// Why API call `id` is one-time work, when it is.
    #[must_use]
    pub fn of_call(&self, trace: &Trace, id: SpanId) -> Option<OneTimeWork> {
        let s = trace.span(id);
        if s.dur_ns >= CONTEXT_CREATION_NS && self.first_api.get(&s.lane) == Some(&id) {
            return Some(OneTimeWork::ContextCreation);
        }
        trace
            .ancestors(id)
            .find(|&a| self.is_costly_first_call(trace, a))
            .map(|a| OneTimeWork::FirstCallOf(trace.name(a).to_string()))
    }

    /// Whether op `id` is the first call of its name, called again later, and costs at least
    /// [`FIRST_CALL_RATIO`] times the mean of the later calls: its time beyond theirs is the
    /// library behind it setting itself up, done once.
    #[must_use]
    pub fn is_costly_first_call(&self, trace: &Trace, id: SpanId) -> bool {
        let s = trace.span(id);
        if s.kind != SpanKind::CpuOp {
            return false;
        }
        let costly = |calls: Option<&OpCalls>| {
            calls.is_some_and(|calls| {
                if calls.first != id || calls.count < 2 {
                    return false;
                }
                let later_ns = calls.total_ns.saturating_sub(s.dur_ns);
                let later_calls = i64::try_from(calls.count - 1).unwrap_or(i64::MAX);
                s.dur_ns.saturating_mul(later_calls) >= later_ns.saturating_mul(FIRST_CALL_RATIO)
            })
        };
        costly(self.by_name.get(&s.name)) || costly(self.by_inputs.get(&(s.name, s.detail)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::detectors::testing::span_us;
    use tracelens_model::{Ident, LaneKey, SourceInfo, TraceBuilder};

    fn cpu(b: &mut TraceBuilder, tid: i64) -> LaneId {
        b.lane(LaneKey::Cpu {
            pid: Ident::Num(1),
            tid: Ident::Num(tid),
        })
    }

    fn op(b: &mut TraceBuilder, lane: LaneId, name: &str, at_us: (i64, i64)) {
        span_us(b, SpanKind::CpuOp, lane, name, at_us, None);
    }

    fn api(b: &mut TraceBuilder, lane: LaneId, name: &str, at_us: (i64, i64)) {
        span_us(b, SpanKind::Runtime, lane, name, at_us, None);
    }

    fn runtime_calls(trace: &Trace, name: &str) -> Vec<SpanId> {
        trace
            .spans_of_kind(SpanKind::Runtime)
            .filter(|&id| trace.name(id) == name)
            .collect()
    }

    /// A first `aten::addmm` of 20 ms holding a cudaFree, then ten of 40 µs: the free is the
    /// first call's library setup; a free inside a later call is not, nor is one inside an op
    /// called once.
    #[test]
    fn a_call_inside_a_costly_first_op_call_is_one_time_and_a_later_one_is_not() {
        let mut b = TraceBuilder::new();
        let lane = cpu(&mut b, 1);
        api(&mut b, lane, "cudaGetDevice", (0, 1));
        op(&mut b, lane, "aten::addmm", (10, 20_000));
        api(&mut b, lane, "cudaFree", (11, 10_000));
        for i in 0..10 {
            op(&mut b, lane, "aten::addmm", (30_000 + i * 100, 40));
        }
        op(&mut b, lane, "aten::addmm", (40_000, 40));
        api(&mut b, lane, "cudaFree", (40_001, 30));
        op(&mut b, lane, "aten::once", (50_000, 5_000));
        api(&mut b, lane, "cudaFree", (50_001, 1_000));
        let trace = b.finish(SourceInfo::default());
        let firsts = FirstCalls::build(&trace);
        let frees = runtime_calls(&trace, "cudaFree");
        assert_eq!(
            firsts.of_call(&trace, frees[0]),
            Some(OneTimeWork::FirstCallOf("aten::addmm".into()))
        );
        assert_eq!(firsts.of_call(&trace, frees[1]), None);
        assert_eq!(firsts.of_call(&trace, frees[2]), None);
    }

    /// Shapes recorded: the first call of a new input shape, far costlier than that shape's
    /// later calls, is one-time (cuDNN setting up the shape) though the op ran before.
    #[test]
    fn a_new_shapes_costly_first_call_is_one_time() {
        let mut b = TraceBuilder::new();
        let lane = cpu(&mut b, 1);
        let name = b.intern("aten::conv2d");
        let small = b.add_op_detail(None, Some("[[8, 3, 32, 32]]"), None, None);
        let large = b.add_op_detail(None, Some("[[8, 64, 32, 32]]"), None, None);
        let conv = |b: &mut TraceBuilder, start_us: i64, dur_us: i64, detail: u32| {
            b.add_span(tracelens_model::SpanInput {
                kind: SpanKind::CpuOp,
                lane,
                start_ns: start_us * 1_000,
                dur_ns: dur_us * 1_000,
                name,
                correlation: None,
                external_id: None,
                detail,
            });
        };
        // The small shape first, many times; the large one's first call takes 40 ms, its
        // later ones 1 ms: by name alone that first call is no outlier among many.
        api(&mut b, lane, "cudaGetDevice", (0, 1));
        for k in 0..20 {
            conv(&mut b, 10 + k * 100, 50, small);
        }
        conv(&mut b, 10_000, 40_000, large);
        api(&mut b, lane, "cudaFree", (10_001, 5_000));
        for k in 0..5 {
            conv(&mut b, 60_000 + k * 2_000, 1_000, large);
        }
        let trace = b.finish(SourceInfo::default());
        let firsts = FirstCalls::build(&trace);
        let frees = runtime_calls(&trace, "cudaFree");
        assert_eq!(
            firsts.of_call(&trace, frees[0]),
            Some(OneTimeWork::FirstCallOf("aten::conv2d".into()))
        );
    }

    /// A thread's first API call of milliseconds creates the context; a short first call
    /// does not, and neither does a slow second one.
    #[test]
    fn a_slow_first_api_call_is_context_creation() {
        let mut b = TraceBuilder::new();
        let (one, two) = (cpu(&mut b, 1), cpu(&mut b, 2));
        api(&mut b, one, "cudaFree", (0, 200_000));
        api(&mut b, one, "cudaFree", (300_000, 5_000));
        api(&mut b, two, "cudaMalloc", (0, 10));
        let trace = b.finish(SourceInfo::default());
        let firsts = FirstCalls::build(&trace);
        let frees = runtime_calls(&trace, "cudaFree");
        assert_eq!(
            firsts.of_call(&trace, frees[0]),
            Some(OneTimeWork::ContextCreation)
        );
        assert_eq!(firsts.of_call(&trace, frees[1]), None);
        let malloc = runtime_calls(&trace, "cudaMalloc");
        assert_eq!(firsts.of_call(&trace, malloc[0]), None);
    }
}
