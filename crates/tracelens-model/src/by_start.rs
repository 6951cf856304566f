//! The spans of several lanes in one start-time order, merged from the lanes' own orders
//! (each lane is already sorted by start): a heap of one cursor per lane, so a pass over a
//! device or the whole trace in time order costs `log(lanes)` per span, with no list of the
//! spans built or sorted.

use crate::lane::LaneId;
use crate::span::SpanId;
use crate::time::TimeNs;
use crate::trace::Trace;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Spans of the chosen lanes by start time (ties in lane order, then in the lane's own
/// order); see [`Trace::spans_by_start`].
pub struct SpansByStart<'a> {
    trace: &'a Trace,
    /// `(start of the lane's next span, lane's place among the chosen, next span's index)`.
    heads: BinaryHeap<Reverse<(TimeNs, usize, u32)>>,
    /// Where each chosen lane's spans end.
    ends: Vec<u32>,
}

impl Iterator for SpansByStart<'_> {
    type Item = SpanId;

    fn next(&mut self) -> Option<SpanId> {
        let mut head = self.heads.peek_mut()?;
        let Reverse((_, lane, at)) = *head;
        let next = at + 1;
        if next < self.ends[lane] {
            *head = Reverse((self.trace.spans[next as usize].start_ns, lane, next));
        } else {
            std::collections::binary_heap::PeekMut::pop(head);
        }
        Some(SpanId(at))
    }
}

impl Trace {
    /// The spans of `lanes` in start order (ties: the lane listed first, then the lane's own
    /// order): one merge of the lanes' sorted lists.
    pub fn spans_by_start(&self, lanes: impl IntoIterator<Item = LaneId>) -> SpansByStart<'_> {
        let mut heads = BinaryHeap::new();
        let mut ends = Vec::new();
        for lane in lanes {
            let range = self.lane(lane).spans.clone();
            if range.start < range.end {
                heads.push(Reverse((
                    self.spans[range.start as usize].start_ns,
                    ends.len(),
                    range.start,
                )));
            }
            ends.push(range.end);
        }
        SpansByStart {
            trace: self,
            heads,
            ends,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Ident, LaneKey, SpanInput, SpanKind, TraceBuilder, NO_DETAIL};

    /// The merge visits every span of the chosen lanes once, in start order, and none of the
    /// lanes left out.
    #[test]
    fn lanes_merge_into_one_start_order() {
        let mut b = TraceBuilder::new();
        let name = b.intern("k");
        let lanes = [
            LaneKey::Gpu {
                device: 0,
                stream: 7,
            },
            LaneKey::Gpu {
                device: 0,
                stream: 8,
            },
            LaneKey::Cpu {
                pid: Ident::Num(1),
                tid: Ident::Num(1),
            },
        ];
        let starts: [&[i64]; 3] = [&[5, 10, 10, 40], &[1, 10, 30], &[0, 2, 3]];
        for (key, starts) in lanes.iter().zip(starts) {
            let lane = b.lane(*key);
            for (k, &s) in starts.iter().enumerate() {
                b.add_span(SpanInput {
                    kind: SpanKind::Kernel,
                    lane,
                    start_ns: s,
                    dur_ns: 1 + i64::try_from(k).unwrap(),
                    name,
                    correlation: None,
                    external_id: None,
                    detail: NO_DETAIL,
                });
            }
        }
        let t = b.finish(crate::SourceInfo::default());
        let gpu: Vec<_> = t
            .lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| l.key.is_gpu())
            .map(|(i, _)| crate::LaneId::at(i))
            .collect();
        let merged: Vec<i64> = t
            .spans_by_start(gpu.iter().copied())
            .map(|id| t.span(id).start_ns)
            .collect();
        assert_eq!(merged, [1, 5, 10, 10, 10, 30, 40]);
        let all = t.spans_by_start((0..t.lanes.len()).map(crate::LaneId::at));
        let mut ids: Vec<u32> = all.map(|id| id.0).collect();
        assert_eq!(ids.len(), t.spans.len());
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), t.spans.len(), "each span once");
        assert_eq!(t.spans_by_start([]).count(), 0);
    }
}
