//! What each CPU span is, for pictures of the timeline: renderers draw these classes and never
//! classify spans themselves.

use crate::api::{call_blocking_kind, is_data_loader};
use serde::Serialize;
use tracelens_model::{profiler_step_number, SpanId, SpanKind, Trace};

/// The class of a CPU span, in drawing priority (later outranks earlier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuSpanClass {
    /// A Python frame.
    Python,
    /// An operator or user annotation.
    CpuOp,
    /// A runtime or driver call.
    Runtime,
    /// DataLoader `__next__`.
    DataLoader,
    /// A host-blocking call (sync, blocking copy).
    Sync,
}

/// The class of CPU span `id`, or `None` for spans not drawn (steps, OS waits, sync records).
pub fn cpu_span_class(trace: &Trace, id: SpanId) -> Option<CpuSpanClass> {
    match trace.span(id).kind {
        SpanKind::Runtime | SpanKind::Driver if call_blocking_kind(trace, id).is_some() => {
            Some(CpuSpanClass::Sync)
        }
        SpanKind::Runtime | SpanKind::Driver => Some(CpuSpanClass::Runtime),
        SpanKind::CpuOp | SpanKind::UserAnnotation => {
            let name = trace.name(id);
            if is_data_loader(name) {
                Some(CpuSpanClass::DataLoader)
            } else if profiler_step_number(name).is_none() {
                Some(CpuSpanClass::CpuOp)
            } else {
                None
            }
        }
        SpanKind::PythonFunction => Some(CpuSpanClass::Python),
        _ => None,
    }
}
