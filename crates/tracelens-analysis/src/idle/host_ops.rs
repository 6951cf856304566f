//! The CPU work of the launching thread during host-compute idle: which ops, for how long.

use rustc_hash::FxHashMap;
use tracelens_model::{table_index, Interval, NameId, SpanId, SpanKind, TimeNs, Trace};

/// The name of host time under no op or frame, in a PyTorch program.
pub const BETWEEN_OPS: &str = "(Python between ops)";
/// The same in a program without PyTorch or Python.
pub const BETWEEN_CALLS: &str = "(CPU work between API calls)";
/// The same in a trace that records no CPU work at all.
pub const NOT_RECORDED: &str = "(CPU work the trace does not record)";

/// Host-op totals by name, largest first (eight at most); time under no op or frame is
/// "(Python between ops)".
pub(crate) fn name_host_ops(
    trace: &Trace,
    host_ops: FxHashMap<Option<NameId>, TimeNs>,
) -> Vec<(String, TimeNs)> {
    let mut named: Vec<(String, TimeNs)> = host_ops
        .into_iter()
        .map(|(n, t)| {
            let name = n.map_or(BETWEEN_OPS.to_string(), |n| trace.names.get(n).to_string());
            (name, t)
        })
        .collect();
    named.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    named.truncate(8);
    named
}

/// Credits the CPU ops running on `lane` during `window` (outermost ops, not the step or the
/// DataLoader range) to `host_ops`; time under no op goes to `None`.
pub(crate) fn credit_host_ops(
    trace: &Trace,
    lane: tracelens_model::LaneId,
    window: Interval,
    host_ops: &mut FxHashMap<Option<NameId>, TimeNs>,
) {
    if window.dur_ns() <= 0 {
        return;
    }
    let op_like = |id: SpanId| {
        let s = trace.span(id);
        matches!(s.kind, SpanKind::CpuOp | SpanKind::UserAnnotation)
            && !trace.is_step_span(id)
            && !crate::api::is_data_loader(trace.names.get(s.name))
    };
    let range = trace.lane(lane).spans.clone();
    let spans = &trace.spans[range.start as usize..range.end as usize];
    let mut cursor = window.start_ns;
    let mut credited: TimeNs = 0;
    // The outermost op already running when the window opens.
    let before = spans.partition_point(|s| s.start_ns <= window.start_ns);
    if before > 0 {
        let innermost = SpanId(range.start + table_index(before) - 1);
        let outer = std::iter::once(innermost)
            .chain(trace.ancestors(innermost))
            .filter(|&id| trace.span(id).end_ns() > window.start_ns && op_like(id))
            .last();
        if let Some(op) = outer {
            let end = trace.span(op).end_ns().min(window.end_ns);
            *host_ops.entry(Some(trace.span(op).name)).or_default() += end - cursor;
            credited += end - cursor;
            cursor = end;
        }
    }
    for (offset, s) in spans[before..].iter().enumerate() {
        if s.start_ns >= window.end_ns {
            break;
        }
        let id = SpanId(range.start + table_index(before + offset));
        if s.start_ns >= cursor && op_like(id) {
            let end = s.end_ns().min(window.end_ns);
            *host_ops.entry(Some(s.name)).or_default() += end - s.start_ns;
            credited += end - s.start_ns;
            cursor = end;
        }
    }
    let rest = window.dur_ns() - credited;
    if rest > 0 {
        // Time under no op: name the innermost user Python frame running, when recorded.
        let frame = (before > 0)
            .then(|| SpanId(range.start + table_index(before) - 1))
            .and_then(|innermost| {
                std::iter::once(innermost)
                    .chain(trace.ancestors(innermost))
                    .find(|&id| {
                        let s = trace.span(id);
                        s.kind == SpanKind::PythonFunction
                            && s.end_ns() > window.start_ns
                            && tracelens_model::PyFrame::parse(trace.names.get(s.name))
                                .is_some_and(|f| !f.is_library())
                    })
            });
        *host_ops
            .entry(frame.map(|f| trace.span(f).name))
            .or_default() += rest;
    }
}
