//! The critical path of one step: a walk back from the step's end along the edge that bound
//! each start (the latest-arriving dependency), emitting segments that tile the step.
//!
//! On the GPU, an op's start is bound by its launch (→ the launch segment, then the host) or
//! by the op before it on its stream (→ that op); a recorded extra wait is its own segment.
//! On the host, the walk stays on one thread: an API call or DataLoader wait is a segment; a
//! blocking call that returned when GPU work ended hands the walk to that op; time between
//! items while the thread runs a CPU op is host work; a thread that was idle was waiting for
//! another thread, whose item that ended last takes the walk on.

use super::graph::{HostKind, StepGraph, NONE};
use super::kind::CriticalKind;
use rustc_hash::FxHashMap;
use tracelens_model::{Interval, LaneId, SpanId, SpanKind, TimeNs, Trace};

/// Where the walk is.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// On a host thread (any thread: the one whose item ended last).
    Host(Option<LaneId>),
    /// At the end of a GPU op.
    Gpu(u32),
}

/// Per thread: its items in start order and, for each prefix, the item that ends last.
struct ThreadItems {
    items: Vec<u32>,
    latest: Vec<u32>,
    /// The walk's times only go back: the prefix of the last query and its time, so the next
    /// query steps back from there instead of searching (a binary search per query over
    /// millions of items was most of the walk on a stepless export).
    cursor: std::cell::Cell<(usize, TimeNs)>,
}

impl ThreadItems {
    fn from(g: &StepGraph, items: Vec<u32>) -> Self {
        let mut latest = Vec::with_capacity(items.len());
        let mut best: Option<u32> = None;
        for &i in &items {
            if best.is_none_or(|b| g.host[i as usize].end_ns >= g.host[b as usize].end_ns) {
                best = Some(i);
            }
            latest.push(best.unwrap_or(i));
        }
        let cursor = std::cell::Cell::new((items.len(), TimeNs::MAX));
        ThreadItems {
            items,
            latest,
            cursor,
        }
    }

    /// The item that ends last among those starting before `t`.
    fn before(&self, g: &StepGraph, t: TimeNs) -> Option<u32> {
        let start = |k: usize| g.host[self.items[k] as usize].start_ns;
        let (mut p, last_t) = self.cursor.get();
        if t > last_t {
            p = self
                .items
                .partition_point(|&i| g.host[i as usize].start_ns < t);
        } else {
            while p > 0 && start(p - 1) >= t {
                p -= 1;
            }
        }
        self.cursor.set((p, t));
        (p > 0).then(|| self.latest[p - 1])
    }
}

/// The spans of CPU lanes around one step, to ask what a thread runs at a time.
struct LaneSpans<'t> {
    trace: &'t Trace,
    /// Per lane: the index range (in the lane's spans) of those starting in the step, and the
    /// last query's prefix and time (queries only go back in time: step back from there).
    step: FxHashMap<LaneId, (usize, usize, usize, TimeNs)>,
    from: TimeNs,
    until: TimeNs,
}

impl LaneSpans<'_> {
    /// When `lane` runs a CPU op just before `t`: the start of the outermost one (profiler
    /// steps aside), else `None` (the thread is idle or in Python between ops).
    fn busy_since(&mut self, lane: LaneId, t: TimeNs) -> Option<TimeNs> {
        let trace = self.trace;
        let range = trace.lanes.get(lane.0 as usize)?.spans.clone();
        let spans = &trace.spans[range.start as usize..range.end as usize];
        let (from, until) = (self.from, self.until);
        let entry = self.step.entry(lane).or_insert_with(|| {
            let (lo, hi) = (
                spans.partition_point(|s| s.start_ns < from),
                spans.partition_point(|s| s.start_ns < until),
            );
            (lo, hi, hi, until)
        });
        let (lo, hi, mut cursor, last_t) = *entry;
        // Inside the step, step back from the last query (or search the step's spans when
        // time went forward); before it, search all of them.
        let p = if t > from && t <= until {
            if t > last_t {
                cursor = lo + spans[lo..hi].partition_point(|s| s.start_ns < t);
            } else {
                while cursor > lo && spans[cursor - 1].start_ns >= t {
                    cursor -= 1;
                }
            }
            *entry = (lo, hi, cursor, t);
            cursor
        } else {
            spans.partition_point(|s| s.start_ns < t)
        };
        if p == 0 {
            return None;
        }
        let last = SpanId(range.start + crate::num::count_u32(p - 1));
        std::iter::once(last)
            .chain(trace.ancestors(last))
            .filter(|&id| {
                let s = trace.span(id);
                s.kind == SpanKind::CpuOp && s.end_ns() >= t && !trace.is_step_span(id)
            })
            .last()
            .map(|id| trace.span(id).start_ns)
    }
}

/// Walks the critical path of `g` back from `until` to `from`, calling `emit` for each
/// segment (latest first); the segments tile `[from, until]`.
pub(crate) fn walk(
    trace: &Trace,
    g: &StepGraph,
    from: TimeNs,
    until: TimeNs,
    mut emit: impl FnMut(Interval, CriticalKind, Option<SpanId>, Option<LaneId>),
) {
    let mut seg = |start: TimeNs,
                   end: TimeNs,
                   kind: CriticalKind,
                   span: Option<SpanId>,
                   lane: Option<LaneId>| {
        let start = start.max(from);
        if end > start {
            emit(Interval::new(start, end), kind, span, lane);
        }
    };
    let mut per_lane: FxHashMap<LaneId, Vec<u32>> = FxHashMap::default();
    for (i, h) in g.host.iter().enumerate() {
        per_lane
            .entry(h.lane)
            .or_default()
            .push(crate::num::count_u32(i));
    }
    let all = ThreadItems::from(g, (0..crate::num::count_u32(g.host.len())).collect());
    let threads: FxHashMap<LaneId, ThreadItems> = per_lane
        .into_iter()
        .map(|(l, v)| (l, ThreadItems::from(g, v)))
        .collect();
    let mut lanes = LaneSpans {
        trace,
        step: FxHashMap::default(),
        from,
        until,
    };
    let host_last = g.host.iter().map(|h| h.end_ns).max().unwrap_or(TimeNs::MIN);
    let gpu_last = (0..g.gpu.len()).max_by_key(|&j| (g.gpu[j].end_ns, g.gpu[j].start_ns));
    let mut t = until;
    let mut place = Place::Host(None);
    if let Some(j) = gpu_last {
        let e = g.gpu[j].end_ns.min(until);
        if e >= host_last.max(g.host_end_ns.min(until)) {
            seg(e, t, CriticalKind::Untraced, None, None);
            t = e;
            place = Place::Gpu(crate::num::count_u32(j));
        }
    }
    let mut budget = 4 * (g.host.len() + g.gpu.len()) + 16;
    while t > from {
        if budget == 0 {
            seg(from, t, CriticalKind::Untraced, None, None);
            break;
        }
        budget -= 1;
        match place {
            Place::Host(lane) => {
                let thread = lane.and_then(|l| threads.get(&l)).unwrap_or(&all);
                let item = thread.before(g, t).map(|i| (i, g.host[i as usize]));
                if item.is_none_or(|(_, h)| h.end_ns < t) {
                    // A gap on the thread: its own CPU op, else a wait for another thread.
                    let after = item.map_or(from, |(_, h)| h.end_ns);
                    match lane.and_then(|l| lanes.busy_since(l, t)) {
                        Some(b) => {
                            let to = b.max(after);
                            seg(to, t, CriticalKind::HostWork, None, lane);
                            t = to;
                            if b > after {
                                place = Place::Host(None);
                            }
                        }
                        None if lane.is_some() => place = Place::Host(None),
                        None => {
                            seg(
                                after,
                                t,
                                CriticalKind::HostWork,
                                None,
                                item.map(|(_, h)| h.lane),
                            );
                            t = after;
                            place = Place::Host(item.map(|(_, h)| h.lane));
                        }
                    }
                    continue;
                }
                let Some((_, h)) = item else { break };
                let span = (h.span != NONE).then_some(SpanId(h.span));
                if let HostKind::Blocking(_) = h.kind {
                    if h.awaited != NONE {
                        let c = g.gpu[h.awaited as usize].end_ns;
                        if c > h.start_ns {
                            seg(c.min(t), t, CriticalKind::Sync, span, Some(h.lane));
                            t = t.min(c);
                            place = Place::Gpu(h.awaited);
                            continue;
                        }
                    }
                }
                let kind = match h.kind {
                    HostKind::DataLoader => CriticalKind::DataLoader,
                    HostKind::Call | HostKind::Blocking(_) => CriticalKind::Runtime,
                };
                seg(h.start_ns, t, kind, span, Some(h.lane));
                t = h.start_ns;
                place = Place::Host(Some(h.lane));
            }
            Place::Gpu(j) => {
                let n = g.gpu[j as usize];
                let end = n.end_ns.min(t);
                seg(end, t, CriticalKind::Untraced, None, None);
                let kind = match n.kind {
                    SpanKind::Memcpy => CriticalKind::Memcpy,
                    SpanKind::Memset => CriticalKind::Memset,
                    _ if n.communication => CriticalKind::Communication,
                    _ => CriticalKind::Kernel,
                };
                seg(n.start_ns, end, kind, Some(n.span), Some(n.lane));
                t = t.min(n.start_ns);
                if t <= from {
                    break;
                }
                let launch_at =
                    (n.launch != NONE).then(|| g.host[n.launch as usize].start_ns + n.launch_ns);
                let prev_end = n.recorded_prev_end_ns(&g.gpu);
                let queue_at = prev_end.map(|e| e + n.queue_ns);
                if n.after != NONE {
                    // Released by an op of another stream: follow it.
                    let e = g.gpu[n.after as usize].end_ns;
                    seg(e, t, CriticalKind::GpuWait, None, Some(n.lane));
                    t = t.min(e);
                    place = Place::Gpu(n.after);
                    continue;
                }
                if launch_at.is_none() && queue_at.is_none() {
                    place = Place::Host(None);
                    continue;
                }
                if n.wait_ns > 0 {
                    seg(t - n.wait_ns, t, CriticalKind::GpuWait, None, Some(n.lane));
                    t -= n.wait_ns;
                }
                match (launch_at, queue_at) {
                    (Some(l), q) if q.is_none_or(|q| l >= q) => {
                        let h = g.host[n.launch as usize];
                        let span = (h.span != NONE).then_some(SpanId(h.span));
                        seg(h.start_ns, t, CriticalKind::Launch, span, Some(h.lane));
                        t = t.min(h.start_ns);
                        place = Place::Host(Some(h.lane));
                    }
                    _ => {
                        let e = prev_end.unwrap_or(from);
                        seg(e, t, CriticalKind::GpuQueue, None, Some(n.lane));
                        t = t.min(e);
                        place = if n.stream_prev != NONE {
                            Place::Gpu(n.stream_prev)
                        } else {
                            Place::Host(None)
                        };
                    }
                }
            }
        }
    }
}
