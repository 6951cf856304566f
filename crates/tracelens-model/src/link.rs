//! Linking a sorted trace: the `parent` column (nesting on each CPU thread), the launch join
//! (GPU op ↔ API call by correlation id, one launch → many ops for graphs) and the check of
//! `External id`s against the enclosing ops.

use crate::diagnostics::{Warning, WarningKind};
use crate::names::table_index;
use crate::span::{SpanId, SpanIds, SpanKind};
use crate::time::{TimeNs, NS_PER_US};
use crate::trace::{LinkStats, Trace, NO_SPAN};

/// A child may end this much after its parent and still nest (timestamp rounding).
pub const NESTING_TOLERANCE_NS: TimeNs = NS_PER_US;

/// Builds the `parent` column: on each CPU lane, the innermost span containing each span.
pub(crate) fn nest(trace: &mut Trace) {
    let mut parent = vec![NO_SPAN; trace.spans.len()];
    // (span index, end clamped to the parent's end): a child that overruns its parent by
    // rounding must not swallow the parent's next sibling.
    let mut stack: Vec<(u32, TimeNs)> = Vec::new();
    for lane in &trace.lanes {
        if lane.key.is_gpu() {
            continue;
        }
        stack.clear();
        for i in lane.spans.clone() {
            let s = trace.spans[i as usize];
            while let Some(&(top, top_end)) = stack.last() {
                let p = trace.spans[top as usize];
                let inside = s.start_ns < top_end || (s.start_ns == p.start_ns && p.dur_ns == 0);
                if inside && s.end_ns() <= top_end + NESTING_TOLERANCE_NS {
                    break;
                }
                stack.pop();
            }
            let end = match stack.last() {
                Some(&(top, top_end)) => {
                    parent[i as usize] = top;
                    s.end_ns().min(top_end)
                }
                None => s.end_ns(),
            };
            stack.push((i, end));
        }
    }
    trace.parent = parent;
}

/// Joins GPU-lane spans to the API call with the same correlation id (`ids`, by span).
pub(crate) fn link_launches(trace: &mut Trace, ids: &[SpanIds]) {
    // A sort-merge join on correlation id: cache-friendly where a hash join over millions of
    // calls is not. The calls and the GPU ops are collected and sorted on two threads.
    let mut stats = LinkStats {
        links_from_flows: trace.links.links_from_flows,
        ..LinkStats::default()
    };
    let spans = &trace.spans;
    let ((apis, duplicates), (ops, gpu_ops, without_correlation)) = rayon::join(
        || {
            let mut apis: Vec<(u64, u32)> = Vec::new();
            for (i, (s, ids)) in spans.iter().zip(ids).enumerate() {
                if let Some(c) = ids.correlation().filter(|_| s.kind.is_api_call()) {
                    apis.push((c, table_index(i)));
                }
            }
            apis.sort_unstable();
            // Several calls with one id: the last one (by span order) is linked.
            let mut duplicates = 0u64;
            apis.dedup_by(|later, earlier| {
                if later.0 == earlier.0 {
                    duplicates += 1;
                    earlier.1 = later.1;
                    true
                } else {
                    false
                }
            });
            (apis, duplicates)
        },
        || {
            let mut ops: Vec<(u64, u32)> = Vec::new();
            let (mut gpu_ops, mut without_correlation) = (0u64, 0u64);
            for (i, (s, ids)) in spans.iter().zip(ids).enumerate() {
                if !s.kind.is_gpu() || s.kind == SpanKind::GpuUserAnnotation {
                    continue;
                }
                gpu_ops += u64::from(s.kind.is_gpu_work());
                match ids.correlation() {
                    Some(c) => ops.push((c, table_index(i))),
                    None => without_correlation += u64::from(s.kind.is_gpu_work()),
                }
            }
            ops.sort_unstable();
            (ops, gpu_ops, without_correlation)
        },
    );
    stats.gpu_ops = gpu_ops;
    stats.gpu_ops_without_correlation = without_correlation;
    let mut launch = vec![NO_SPAN; trace.spans.len()];
    let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(ops.len());
    let mut a = 0;
    for &(corr, op) in &ops {
        while a < apis.len() && apis[a].0 < corr {
            a += 1;
        }
        let is_work = trace.spans[op as usize].kind.is_gpu_work();
        if a < apis.len() && apis[a].0 == corr {
            let api = apis[a].1;
            launch[op as usize] = api;
            if is_work {
                stats.gpu_ops_linked += 1;
                pairs.push((api, op));
            }
        } else if is_work {
            stats.gpu_ops_launch_missing += 1;
        }
    }
    pairs.sort_unstable();
    for run in pairs.chunk_by(|a, b| a.0 == b.0) {
        if run.len() > 1 {
            stats.graph_launches += 1;
            stats.graph_launched_ops += run.len() as u64;
        }
    }
    trace.launch = launch;
    (trace.launched_apis, trace.launched_ops) =
        pairs.into_iter().map(|(api, op)| (api, SpanId(op))).unzip();
    trace.links = stats;
    if duplicates > 0 {
        trace.warnings.push(Warning {
            kind: WarningKind::DuplicateCorrelation,
            message: format!(
                "{duplicates} API calls reuse a correlation id; the last one is linked"
            ),
            count: duplicates,
        });
    }
}

/// Compares each API call's `External id` (`ids`, by span) with that of its innermost
/// enclosing op.
pub(crate) fn check_external_ids(trace: &mut Trace, ids: &[SpanIds]) {
    let (mut checked, mut mismatched) = (0, 0);
    let external_id = |id: SpanId| ids[id.0 as usize].external_id();
    for (i, (s, own)) in trace.spans.iter().zip(ids).enumerate() {
        let Some(ext) = own.external_id().filter(|_| s.kind.is_api_call()) else {
            continue;
        };
        let op = trace.ancestors(SpanId::at(i)).find(|&p| {
            matches!(
                trace.span(p).kind,
                SpanKind::CpuOp | SpanKind::UserAnnotation
            ) && external_id(p).is_some()
        });
        if let Some(op) = op {
            checked += 1;
            if external_id(op) != Some(ext) {
                mismatched += 1;
            }
        }
    }
    trace.links.external_id_checked = checked;
    trace.links.external_id_mismatched = mismatched;
}
