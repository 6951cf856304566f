//! Per-thread facts the diagnoses query many times: DataLoader ranges, blocking syncs,
//! stream-wait calls. Built once per trace.

use crate::api::{call_blocking_kind, is_data_loader, is_stream_wait};
use crate::intervals::union;
use tracelens_model::{Interval, LaneId, SpanId, SpanKind, TimeNs, Trace};

/// Facts about one CPU thread.
#[derive(Clone, Debug, Default)]
pub struct ThreadFacts {
    /// Union of the thread's DataLoader `__next__` ranges, sorted.
    pub data_loading: Vec<Interval>,
    /// Host-blocking API calls, sorted by end: `(end_ns, span)`.
    pub blocking_calls: Vec<(TimeNs, SpanId)>,
    /// Start times of stream-wait calls, sorted.
    pub stream_waits: Vec<TimeNs>,
}

/// [`ThreadFacts`] for every lane (empty for GPU lanes).
#[derive(Clone, Debug, Default)]
pub struct ThreadIndex {
    facts: Vec<ThreadFacts>,
}

impl ThreadIndex {
    /// Scans every CPU lane once.
    pub fn build(trace: &Trace) -> Self {
        let facts = trace
            .lanes
            .iter()
            .enumerate()
            .map(|(i, lane)| {
                if lane.key.is_gpu() {
                    return ThreadFacts::default();
                }
                let mut loads = Vec::new();
                let mut blocking = Vec::new();
                let mut waits = Vec::new();
                for id in trace.lane_span_ids(LaneId(i as u32)) {
                    let s = trace.span(id);
                    let name = trace.names.get(s.name);
                    match s.kind {
                        SpanKind::CpuOp | SpanKind::UserAnnotation if is_data_loader(name) => {
                            loads.push(s.interval())
                        }
                        SpanKind::Runtime | SpanKind::Driver => {
                            if call_blocking_kind(trace, id).is_some() {
                                blocking.push((s.end_ns(), id));
                            } else if is_stream_wait(name) {
                                waits.push(s.start_ns);
                            }
                        }
                        _ => {}
                    }
                }
                blocking.sort_unstable();
                ThreadFacts {
                    data_loading: union(loads),
                    blocking_calls: blocking,
                    stream_waits: waits,
                }
            })
            .collect();
        ThreadIndex { facts }
    }

    /// Facts of one lane.
    pub fn lane(&self, lane: LaneId) -> &ThreadFacts {
        &self.facts[lane.0 as usize]
    }
}

impl ThreadFacts {
    /// The latest blocking call that returned inside `[from_ns, until_ns]`.
    pub fn blocking_call_ending_in(&self, from_ns: TimeNs, until_ns: TimeNs) -> Option<SpanId> {
        let upto = self
            .blocking_calls
            .partition_point(|&(end, _)| end <= until_ns);
        let &(end, id) = self.blocking_calls[..upto].last()?;
        (end >= from_ns).then_some(id)
    }

    /// The parts of `window` inside DataLoader ranges, in order.
    pub fn data_loading_within(&self, window: Interval) -> Vec<Interval> {
        let first = self
            .data_loading
            .partition_point(|iv| iv.end_ns <= window.start_ns);
        self.data_loading[first..]
            .iter()
            .take_while(|iv| iv.start_ns < window.end_ns)
            .filter_map(|iv| iv.clip(window))
            .collect()
    }

    /// Whether a stream-wait call started inside `[from_ns, until_ns]`.
    pub fn stream_wait_between(&self, from_ns: TimeNs, until_ns: TimeNs) -> bool {
        let i = self.stream_waits.partition_point(|&t| t < from_ns);
        self.stream_waits.get(i).is_some_and(|&t| t <= until_ns)
    }
}
