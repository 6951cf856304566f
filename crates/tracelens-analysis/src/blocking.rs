//! Whether an API call blocks the host: one entry point for renderers and analyses.

use crate::api::call_blocking_kind;
use tracelens_model::{SpanId, Trace};

/// Whether API call `id` blocks its CPU thread until GPU work completes.
pub fn is_blocking_call(trace: &Trace, id: SpanId) -> bool {
    call_blocking_kind(trace, id).is_some()
}
