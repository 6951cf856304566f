//! Joining graph evidence to a trace: the importer's notes (annotations, captured launches)
//! after linking, a capture trace's launches to a replay's GPU ops ([`attach_capture`]), and
//! the warning that says what the evidence gave. The evidence itself is [`crate::graph`].

use crate::graph::{CapturedOp, GraphAttribution, GraphNotes, OriginSource, MATCH_LOOKAHEAD};
use crate::names::NameId;
use crate::span::{SpanId, SpanKind, NO_DETAIL};
use crate::time::TimeNs;
use crate::trace::Trace;

/// Joins the importer's graph notes to the sorted, linked `trace`.
pub(crate) fn attach_notes(
    mut notes: GraphNotes,
    trace: &mut Trace,
    correlation_of: impl Fn(usize) -> Option<u64>,
) {
    // Launch calls that fed no recorded GPU op keep the kernel they name: a capture
    // trace's launches. Calls whose kernels ran are already linked to them.
    if !notes.launched_kernels.is_empty() {
        notes.launched_kernels.sort_unstable();
        notes.launched_kernels.dedup_by_key(|(c, _)| *c);
        let mut captured = Vec::new();
        for (i, s) in trace.spans.iter().enumerate() {
            if !s.kind.is_api_call() || !trace.launched_by(SpanId::at(i)).is_empty() {
                continue;
            }
            let Some(c) = correlation_of(i) else { continue };
            if let Ok(at) = notes.launched_kernels.binary_search_by_key(&c, |&(c, _)| c) {
                captured.push((SpanId::at(i), notes.launched_kernels[at].1));
            }
        }
        trace.launched_kernels = captured;
    }
    if notes.annotations.is_empty() {
        return;
    }
    notes.annotations.sort_unstable();
    let mut origins = Vec::new();
    let mut labels: Vec<NameId> = Vec::new();
    for (i, s) in trace.spans.iter().enumerate() {
        if !s.kind.is_gpu_work() {
            continue;
        }
        let key = (s.lane, s.start_ns, s.name);
        let Ok(at) = notes
            .annotations
            .binary_search_by_key(&key, |&(l, t, n, _)| (l, t, n))
        else {
            continue;
        };
        let label = notes.annotations[at].3;
        let op = match labels.iter().position(|&l| l == label) {
            Some(p) => p,
            None => {
                labels.push(label);
                labels.len() - 1
            }
        };
        origins.push((SpanId::at(i), crate::names::table_index(op)));
    }
    let replayed = replayed_op_count(trace);
    trace.captured_ops = labels
        .into_iter()
        .map(|l| CapturedOp {
            op: None,
            detail: NO_DETAIL,
            scope: Some(l),
            instance: 0,
        })
        .collect();
    trace.graph_attribution = Some(GraphAttribution {
        source: OriginSource::Annotation,
        capture_file: None,
        replayed_ops: replayed.max(origins.len() as u64),
        attributed_ops: origins.len() as u64,
        captured_launches: 0,
    });
    trace.graph_origins = origins;
}

/// Replaces the trace's graph-launch warning with one that says what the evidence gave:
/// replays with no origin are one unit each, and the idle around them is less certain.
pub fn refresh_warning(trace: &mut Trace) {
    use crate::diagnostics::{Warning, WarningKind};
    trace
        .warnings
        .retain(|w| w.kind != WarningKind::GraphLaunches);
    let l = &trace.links;
    if l.graph_launches == 0 {
        return;
    }
    let head = format!(
        "{} CUDA/HIP graph launches feed {} GPU ops",
        l.graph_launches, l.graph_launched_ops
    );
    let message = match &trace.graph_attribution {
        Some(a) => {
            let from = match (a.source, &a.capture_file) {
                (OriginSource::CaptureTrace, Some(f)) => format!("the capture trace {f}"),
                _ => "PyTorch's CUDA-graph annotations".to_string(),
            };
            format!(
                "{head}; {} of {} ({:.1} %) got the op or scope that launched them at capture, from {from}",
                a.attributed_ops,
                a.replayed_ops,
                a.match_percent()
            )
        }
        None => format!(
            "{head}; no capture trace or graph annotations say which op launched them, so each replay is one unit (a profile of the graphs' capture, given with --capture FILE, names them), and idle attribution inside replays is less certain"
        ),
    };
    trace.warnings.push(Warning {
        kind: WarningKind::GraphLaunches,
        message,
        count: l.graph_launches,
    });
}

/// GPU ops fed by graph launches (a launch call that fed more than one op).
fn replayed_op_count(trace: &Trace) -> u64 {
    trace.links.graph_launched_ops
}

/// One launch the capture trace recorded, in capture order.
struct Captured {
    kernel: String,
    op: Option<(String, crate::inputs::OpDetail)>,
    scope: Option<String>,
    instance: u32,
}

/// The capture trace's launch calls in time order, each with the op and scope around it.
fn captured_launches(capture: &Trace) -> Vec<Captured> {
    let mut calls: Vec<(TimeNs, SpanId, NameId)> = capture
        .launched_kernels
        .iter()
        .map(|&(id, k)| (capture.span(id).start_ns, id, k))
        .collect();
    calls.sort_unstable();
    calls
        .into_iter()
        .map(|(_, id, kernel)| {
            let mut op = None;
            let mut scope = None;
            for a in capture.ancestors(id) {
                let s = capture.span(a);
                match s.kind {
                    SpanKind::CpuOp if op.is_none() => op = Some(a),
                    SpanKind::PythonFunction if scope.is_none() => {
                        let name = capture.name(a);
                        if let Some(module) = name.strip_prefix("nn.Module: ") {
                            scope = Some(module.to_string());
                        }
                    }
                    SpanKind::UserAnnotation if scope.is_none() && !capture.is_step_span(a) => {
                        scope = Some(capture.name(a).to_string());
                    }
                    _ => {}
                }
                if op.is_some() && scope.is_some() {
                    break;
                }
            }
            Captured {
                kernel: capture.names.get(kernel).to_string(),
                op: op.map(|o| {
                    (
                        capture.name(o).to_string(),
                        capture.op_detail(o).copied().unwrap_or_default(),
                    )
                }),
                scope,
                instance: op.map_or(u32::MAX, |o| o.0),
            }
        })
        .collect()
}

/// Gives the GPU ops that `replay`'s graph launches fed the op and scope their launches had
/// in `capture`, a profile of the same graphs' capture; `capture_file` names it in the
/// result. Each graph launch's ops, in start order, are matched to the captured launches of
/// the same kernel name in capture order, starting at the first captured launch of its first
/// kernel after the previous launch's match (or from the top, for a graph replayed again),
/// skipping at most [`MATCH_LOOKAHEAD`] captured launches per op. Returns the attribution,
/// also stored in `replay`; a replay with annotations keeps them (better evidence).
pub fn attach_capture(replay: &mut Trace, capture: &Trace, capture_file: &str) -> GraphAttribution {
    if let Some(a) = replay
        .graph_attribution
        .as_ref()
        .filter(|a| a.source == OriginSource::Annotation)
    {
        return a.clone();
    }
    let captured = captured_launches(capture);
    let kernel_ids: Vec<Option<NameId>> = captured
        .iter()
        .map(|c| replay.names.lookup(&c.kernel))
        .collect();
    // Each kernel name's captured launches, in capture order.
    let mut positions: rustc_hash::FxHashMap<NameId, Vec<usize>> = Default::default();
    for (j, k) in kernel_ids.iter().enumerate() {
        if let Some(k) = k {
            positions.entry(*k).or_default().push(j);
        }
    }
    let mut origins: Vec<(SpanId, u32)> = Vec::new();
    // Captured launch index → captured op index in `replay.captured_ops`.
    let mut op_index: rustc_hash::FxHashMap<u64, u32> = Default::default();
    let mut details: rustc_hash::FxHashMap<crate::inputs::OpDetail, u32> = replay
        .op_details
        .iter()
        .enumerate()
        .map(|(i, d)| (*d, crate::names::table_index(i)))
        .collect();
    let mut ops: Vec<CapturedOp> = Vec::new();
    let mut replayed = 0u64;
    let mut cursor = 0usize;
    let graph_launches: Vec<SpanId> = replay
        .launched_apis
        .chunk_by(|a, b| a == b)
        .filter(|run| run.len() > 1)
        .map(|run| SpanId(run[0]))
        .collect();
    let mut by_start: Vec<(TimeNs, SpanId)> = graph_launches
        .iter()
        .map(|&g| (replay.span(g).start_ns, g))
        .collect();
    by_start.sort_unstable();
    for (_, launch) in by_start {
        let mut fed: Vec<SpanId> = replay.launched_by(launch).to_vec();
        fed.sort_by_key(|&k| (replay.span(k).start_ns, k));
        replayed += fed.len() as u64;
        let Some(&first) = fed.first() else { continue };
        let first_name = replay.span(first).name;
        // The first captured launch of the replay's first kernel at or after `from`: a binary
        // search in that name's positions, so a crafted capture cannot make each launch scan
        // the whole capture.
        let find = |from: usize| {
            let at = positions.get(&first_name)?;
            at.get(at.partition_point(|&j| j < from)).copied()
        };
        let Some(mut at) = find(cursor).or_else(|| find(0)) else {
            continue;
        };
        for &k in &fed {
            let name = replay.span(k).name;
            let end = (at + MATCH_LOOKAHEAD).min(captured.len());
            let Some(j) = (at..end).find(|&j| kernel_ids[j] == Some(name)) else {
                continue;
            };
            at = j + 1;
            let c = &captured[j];
            if c.op.is_none() && c.scope.is_none() {
                continue;
            }
            let next = crate::names::table_index(ops.len());
            // One instance per captured op call; a launch with a scope but no op is its own.
            let key = if c.op.is_some() {
                u64::from(c.instance)
            } else {
                (1 << 32) | j as u64
            };
            let index = *op_index.entry(key).or_insert_with(|| {
                let (op, detail) = match &c.op {
                    Some((name, d)) => (
                        Some(replay.names.intern(name)),
                        copy_detail(replay, &mut details, capture, d),
                    ),
                    None => (None, NO_DETAIL),
                };
                ops.push(CapturedOp {
                    op,
                    detail,
                    scope: c.scope.as_deref().map(|s| replay.names.intern(s)),
                    instance: c.instance,
                });
                next
            });
            origins.push((k, index));
        }
        cursor = at;
    }
    origins.sort_unstable();
    let attribution = GraphAttribution {
        source: OriginSource::CaptureTrace,
        capture_file: Some(capture_file.to_string()),
        replayed_ops: replayed,
        attributed_ops: origins.len() as u64,
        captured_launches: captured.len() as u64,
    };
    replay.captured_ops = ops;
    replay.graph_origins = origins;
    replay.graph_attribution = Some(attribution.clone());
    refresh_warning(replay);
    attribution
}

/// `detail` of `capture` entered into `replay`'s op-detail table.
fn copy_detail(
    replay: &mut Trace,
    known: &mut rustc_hash::FxHashMap<crate::inputs::OpDetail, u32>,
    capture: &Trace,
    d: &crate::inputs::OpDetail,
) -> u32 {
    let mut text = |n: Option<NameId>| n.map(|n| replay.names.intern(capture.names.get(n)));
    let detail = crate::inputs::OpDetail {
        call_stack: text(d.call_stack),
        input_dims: text(d.input_dims),
        input_types: text(d.input_types),
        concrete_inputs: text(d.concrete_inputs),
    };
    if detail.is_empty() {
        return NO_DETAIL;
    }
    *known.entry(detail).or_insert_with(|| {
        replay.op_details.push(detail);
        crate::names::table_index(replay.op_details.len() - 1)
    })
}
