//! The collective kernels of one device, in start order: what the multi-rank job analysis
//! matches across ranks.

use crate::idle::is_communication_kernel;
use serde::{Deserialize, Serialize};
use tracelens_model::{LaneKey, SpanKind, TimeNs, Trace};

/// One collective kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Collective {
    /// Kernel name, cut at its first `(`.
    pub name: String,
    /// Start, trace clock.
    pub start_ns: TimeNs,
    /// Duration.
    pub dur_ns: TimeNs,
}

/// The collective kernels on `device` (every device when `None`), by start.
#[must_use]
pub fn collectives_on(trace: &Trace, device: Option<i64>) -> Vec<Collective> {
    let mut out: Vec<Collective> = trace
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Kernel)
        .filter(|s| {
            device.is_none_or(|dev| {
                matches!(trace.lane(s.lane).key, LaneKey::Gpu { device, .. } if device == dev)
            })
        })
        .filter(|s| is_communication_kernel(trace.names.get(s.name)))
        .map(|s| Collective {
            name: trace
                .names
                .get(s.name)
                .split('(')
                .next()
                .unwrap_or("")
                .to_string(),
            start_ns: s.start_ns,
            dur_ns: s.dur_ns,
        })
        .collect();
    out.sort_by_key(|c| c.start_ns);
    out
}
