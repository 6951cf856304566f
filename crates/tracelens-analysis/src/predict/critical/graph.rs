//! The dependency graph of one step: the host items (API calls and DataLoader waits of every
//! CPU thread, in start order) and the focus device's GPU ops, with the edges the critical path
//! and the replay follow — launch call → GPU op, stream order, host-blocking call → the GPU
//! op it waited for — and the latencies recorded on them.
//!
//! A GPU op starts at `max(launch start + launch_ns, previous op on its stream end +
//! queue_ns) + wait_ns`: `launch_ns` and `queue_ns` are what the trace shows for the binding
//! edge and the step's median for the other (never more than recorded), and `wait_ns` is the
//! rest. When an op of another stream ended inside that rest, the op waited for it (an event,
//! a collective): the wait becomes an edge from that op's end, `after`, with `wait_ns` the
//! delay past it. So does a binding edge that held the op more than the launch overhead
//! ([`LAUNCH_OVERHEAD_BOUND_NS`], the idle attribution's bound) when an op of another stream
//! ended within that bound of its start: the edge keeps the bound, the rest is the wait.
//! The recorded start is exactly reproduced. Graphs are built one step at a time, so memory
//! follows the largest step, not the trace.

use crate::attribute::idle::LAUNCH_OVERHEAD_BOUND_NS;
use crate::measure::seek::partition_point_from;
use crate::measure::threads::ThreadIndex;
use crate::vocabulary::api::BlockingKind;
use tracelens_model::{Interval, LaneId, SpanId, SpanKind, TimeNs, Trace};

/// The edge that set an op's start: its launch, or the previous op on its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BindingEdge {
    Launch,
    Stream,
}

/// "No node" in the index fields below.
pub(crate) const NONE: u32 = u32::MAX;

/// What a host item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostKind {
    /// An API call that does not block (a launch, an event record, an allocation).
    Call,
    /// An API call that blocks until GPU work completes.
    Blocking(BlockingKind),
    /// A DataLoader `__next__` range (the API calls inside it belong to it).
    DataLoader,
}

/// One host item: a top-level API call or a DataLoader wait of one CPU thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostItem {
    pub(crate) start_ns: TimeNs,
    pub(crate) end_ns: TimeNs,
    pub(crate) kind: HostKind,
    /// The API call ([`NONE`] for a DataLoader wait).
    pub(crate) span: u32,
    /// The thread.
    pub(crate) lane: LaneId,
    /// For a blocking call: the GPU op of this step whose end returned it ([`NONE`] when the
    /// call did not wait, or waited for work of an earlier step).
    pub(crate) awaited: u32,
}

/// One GPU op of the focus device and the edges into it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GpuNode {
    pub(crate) start_ns: TimeNs,
    pub(crate) end_ns: TimeNs,
    pub(crate) span: SpanId,
    pub(crate) kind: SpanKind,
    /// A collective kernel (NCCL/RCCL).
    pub(crate) communication: bool,
    /// Its stream's lane.
    pub(crate) lane: LaneId,
    /// The host item that launched it ([`NONE`] when launched outside the window).
    pub(crate) launch: u32,
    /// The previous op on its stream in this step ([`NONE`]: see `prev_end_ns`).
    pub(crate) stream_prev: u32,
    /// End of the previous op on its stream when that op belongs to an earlier step.
    pub(crate) prev_end_ns: Option<TimeNs>,
    /// Launch call start → op start allowed by the launch edge.
    pub(crate) launch_ns: TimeNs,
    /// Previous op end → op start allowed by the stream edge.
    pub(crate) queue_ns: TimeNs,
    /// The recorded start's remainder past both edges, or past `after`'s end.
    pub(crate) wait_ns: TimeNs,
    /// The op of another stream this one waited for ([`NONE`]: none recorded).
    pub(crate) after: u32,
}

impl GpuNode {
    /// An op with its launch, before it is linked to its stream and waits.
    pub(crate) fn new(
        span: SpanId,
        kind: SpanKind,
        interval: Interval,
        lane: LaneId,
        launch: u32,
    ) -> Self {
        GpuNode {
            start_ns: interval.start_ns,
            end_ns: interval.end_ns,
            span,
            kind,
            communication: false,
            lane,
            launch,
            stream_prev: NONE,
            prev_end_ns: None,
            launch_ns: 0,
            queue_ns: 0,
            wait_ns: 0,
            after: NONE,
        }
    }

    /// When the op before it on its stream ended, as recorded: that op's end, or, for the
    /// step's first op of the stream, the stream's end before the step.
    pub(crate) fn recorded_prev_end_ns(&self, nodes: &[GpuNode]) -> Option<TimeNs> {
        match self.stream_prev {
            NONE => self.prev_end_ns,
            p => Some(nodes[p as usize].end_ns),
        }
    }
}

/// One step's graph.
#[derive(Debug, Default)]
pub(crate) struct StepGraph {
    /// Host items, sorted by start (then end).
    pub(crate) host: Vec<HostItem>,
    /// Host item indices sorted by end (then index).
    pub(crate) host_by_end: Vec<u32>,
    /// GPU ops, sorted by start (then end).
    pub(crate) gpu: Vec<GpuNode>,
    /// The step's host range start (`ProfilerStep#N`; the window start without steps).
    pub(crate) host_start_ns: TimeNs,
    /// The step's host range end (the window start without steps: no host bound).
    pub(crate) host_end_ns: TimeNs,
}

/// Builds step graphs in time order, carrying each stream's last op across steps.
pub(crate) struct GraphBuilder<'t> {
    trace: &'t Trace,
    threads: &'t ThreadIndex,
    /// Blocking calls, sorted by span id.
    blocking: Vec<(u32, BlockingKind)>,
    /// CPU threads that take part: they launch work on the focus device, block on the GPU or
    /// wait for the DataLoader (a thread polling `cudaEventQuery` does none of these).
    host_lane: Vec<bool>,
    /// Focus device ops sorted by start.
    ops: &'t [crate::measure::utilization::GpuOp],
    /// End of the last op seen on each lane.
    lane_end: Vec<Option<TimeNs>>,
    /// No step built yet.
    first: bool,
    /// Whether a kernel name is a collective's, per name.
    communication: rustc_hash::FxHashMap<tracelens_model::NameId, bool>,
}

/// Host items in time order and the item that owns each API call.
struct HostItems {
    items: Vec<HostItem>,
    /// (API span, item) for every call in the step, top-level or inside an item.
    owner: Vec<(u32, u32)>,
}

impl<'t> GraphBuilder<'t> {
    pub(crate) fn new(
        trace: &'t Trace,
        threads: &'t ThreadIndex,
        ops: &'t [crate::measure::utilization::GpuOp],
    ) -> Self {
        let mut blocking: Vec<(u32, BlockingKind)> =
            threads.blocking_calls().map(|(id, k)| (id.0, k)).collect();
        blocking.sort_unstable_by_key(|&(id, _)| id);
        let mut host_lane: Vec<bool> = (0..trace.lanes.len())
            .map(|i| !threads.lane(LaneId::at(i)).data_loading.is_empty())
            .collect();
        for &(_, _, op) in ops {
            if let Some(call) = trace.launch_of(op) {
                host_lane[trace.span(call).lane.0 as usize] = true;
            }
        }
        for &(call, _) in &blocking {
            host_lane[trace.span(SpanId(call)).lane.0 as usize] = true;
        }
        GraphBuilder {
            trace,
            threads,
            blocking,
            host_lane,
            ops,
            lane_end: vec![None; trace.lanes.len()],
            communication: rustc_hash::FxHashMap::default(),
            first: true,
        }
    }

    /// `at` is where the last search ended: calls asked in id order cost a few steps each.
    fn blocking_kind(&self, span: u32, at: &mut usize) -> Option<BlockingKind> {
        *at = partition_point_from(&self.blocking, *at, |&(id, _)| id < span);
        self.blocking
            .get(*at)
            .filter(|&&(id, _)| id == span)
            .map(|&(_, kind)| kind)
    }

    /// The host items that start in `[from_ns, until_ns)` and end after `min_end_ns`.
    fn host_items(&self, from_ns: TimeNs, until_ns: TimeNs, min_end_ns: TimeNs) -> HostItems {
        let trace = self.trace;
        // Provisional ids (push order) until the items are sorted.
        let mut items: Vec<HostItem> = Vec::new();
        let mut owner: Vec<(u32, u32)> = Vec::new();
        let mut blocking_at = 0;
        for (li, lane) in trace.lanes.iter().enumerate() {
            if lane.key.is_gpu() || !self.host_lane[li] {
                continue;
            }
            let spans = &trace.spans[lane.spans.start as usize..lane.spans.end as usize];
            let lo = spans.partition_point(|s| s.start_ns < from_ns);
            let hi = spans.partition_point(|s| s.start_ns < until_ns);
            if lo == hi {
                continue;
            }
            // DataLoader waits that start in the range are items; the calls inside them
            // belong to them.
            let loads = &self.threads.lane(LaneId::at(li)).data_loading;
            let first_load = loads.partition_point(|d| d.start_ns < from_ns);
            let last_load = loads.partition_point(|d| d.start_ns < until_ns);
            let load_base = items.len();
            for d in &loads[first_load..last_load] {
                items.push(HostItem {
                    start_ns: d.start_ns,
                    end_ns: d.end_ns,
                    kind: HostKind::DataLoader,
                    span: NONE,
                    lane: LaneId::at(li),
                    awaited: NONE,
                });
            }
            let mut load = loads.partition_point(|d| d.end_ns <= from_ns);
            let mut last_call: Option<(u32, u32, TimeNs)> = None;
            for (k, s) in spans[lo..hi].iter().enumerate() {
                if !s.kind.is_api_call() {
                    continue;
                }
                let id = lane.spans.start + crate::num::count_u32(lo + k);
                while load < loads.len() && loads[load].end_ns <= s.start_ns {
                    load += 1;
                }
                if loads.get(load).is_some_and(|d| d.start_ns <= s.start_ns) {
                    // Inside a wait of this step (or of the step before, which owns it).
                    if (first_load..last_load).contains(&load) {
                        owner.push((id, crate::num::count_u32(load_base + load - first_load)));
                    }
                    continue;
                }
                // A call inside the previous one (a driver call under a runtime call) is
                // part of it.
                if let Some((outer, item, end)) = last_call {
                    if s.end_ns() <= end && trace.parent(SpanId(id)) == Some(SpanId(outer)) {
                        owner.push((id, item));
                        continue;
                    }
                }
                if s.end_ns() <= min_end_ns {
                    continue;
                }
                let kind = self
                    .blocking_kind(id, &mut blocking_at)
                    .map_or(HostKind::Call, HostKind::Blocking);
                items.push(HostItem {
                    start_ns: s.start_ns,
                    end_ns: s.end_ns(),
                    kind,
                    span: id,
                    lane: LaneId::at(li),
                    awaited: NONE,
                });
                let item = crate::num::count_u32(items.len() - 1);
                owner.push((id, item));
                last_call = Some((id, item, s.end_ns()));
            }
        }
        let mut order: Vec<u32> = (0..crate::num::count_u32(items.len())).collect();
        order.sort_unstable_by_key(|&i| {
            let it = &items[i as usize];
            (it.start_ns, it.end_ns, i)
        });
        let mut rank = vec![0u32; items.len()];
        for (new, &old) in order.iter().enumerate() {
            rank[old as usize] = crate::num::count_u32(new);
        }
        let sorted = order.iter().map(|&i| items[i as usize]).collect();
        for o in &mut owner {
            o.1 = rank[o.1 as usize];
        }
        // Pushed lane by lane in span order, and lanes hold consecutive span ranges: already
        // sorted by span id.
        debug_assert!(owner.windows(2).all(|w| w[0].0 < w[1].0));
        HostItems {
            items: sorted,
            owner,
        }
    }

    /// The graph of the step whose host range starts at `host_start_ns` and ends at
    /// `host_end_ns`: the host items that start before `next_host_ns`, and the GPU ops that
    /// start inside `interval` (an op launched outside those items has no launch edge).
    pub(crate) fn step(
        &mut self,
        host_start_ns: TimeNs,
        host_end_ns: TimeNs,
        next_host_ns: TimeNs,
        interval: Interval,
    ) -> StepGraph {
        let trace = self.trace;
        // The first step also takes the calls that started before it and end inside it (a
        // long launch the window opens in).
        let (from, min_end) = if std::mem::take(&mut self.first) {
            (TimeNs::MIN, interval.start_ns)
        } else {
            (host_start_ns, TimeNs::MIN)
        };
        let HostItems { items, owner } = self.host_items(from, next_host_ns, min_end);
        // The step's ops: those that start inside it, already in start order; each keeps
        // its launch when the call is one of the step's host items.
        let from = self
            .ops
            .partition_point(|&(_, iv, _)| iv.start_ns < interval.start_ns);
        let mut gpu: Vec<GpuNode> = Vec::new();
        // Ops in start order mostly have their launches in call order: each call is found
        // from where the previous one was.
        let mut owner_at = 0;
        for &(kind, iv, id) in &self.ops[from..] {
            if iv.start_ns >= interval.end_ns {
                break;
            }
            let launch = trace.launch_of(id).map_or(NONE, |call| {
                owner_at = partition_point_from(&owner, owner_at, |&(s, _)| s < call.0);
                owner
                    .get(owner_at)
                    .filter(|&&(s, _)| s == call.0)
                    .map_or(NONE, |&(_, item)| item)
            });
            let name = trace.span(id).name;
            let communication = kind == SpanKind::Kernel
                && *self.communication.entry(name).or_insert_with(|| {
                    crate::vocabulary::kernels::is_communication_kernel(trace.names.get(name))
                });
            gpu.push(GpuNode {
                communication,
                ..GpuNode::new(id, kind, iv, trace.span(id).lane, launch)
            });
        }
        let mut nodes = gpu;
        link_nodes(&mut nodes, &items, &mut self.lane_end);
        let mut host = items;
        await_nodes(&mut host, &nodes);
        StepGraph {
            host_by_end: by_end(&host),
            host,
            gpu: nodes,
            host_start_ns,
            host_end_ns,
        }
    }
}

/// Host item indices sorted by end.
fn by_end(host: &[HostItem]) -> Vec<u32> {
    let mut v: Vec<u32> = (0..crate::num::count_u32(host.len())).collect();
    v.sort_unstable_by_key(|&i| (host[i as usize].end_ns, i));
    v
}

/// The median of `v` (0 when empty).
fn median(v: &mut [TimeNs]) -> TimeNs {
    if v.is_empty() {
        return 0;
    }
    let mid = v.len() / 2;
    *v.select_nth_unstable(mid).1
}

/// Sets each op's stream predecessor and the latencies of its edges.
fn link_nodes(nodes: &mut [GpuNode], host: &[HostItem], lane_end: &mut [Option<TimeNs>]) {
    let mut lane_last: Vec<u32> = vec![NONE; lane_end.len()];
    // Per op: launch start → op start, and the previous op's end on its stream.
    let mut edges: Vec<(Option<TimeNs>, Option<TimeNs>)> = Vec::with_capacity(nodes.len());
    for i in 0..nodes.len() {
        let lane = nodes[i].lane;
        let prev = Some(std::mem::replace(
            &mut lane_last[lane.0 as usize],
            crate::num::count_u32(i),
        ))
        .filter(|&p| p != NONE);
        let prev_end = match prev {
            Some(p) => Some(nodes[p as usize].end_ns),
            None => lane_end[lane.0 as usize],
        };
        let n = &mut nodes[i];
        n.stream_prev = prev.unwrap_or(NONE);
        n.prev_end_ns = if prev.is_none() { prev_end } else { None };
        // A launch recorded after its op started (clock skew) is no edge.
        let from_launch = (n.launch != NONE)
            .then(|| n.start_ns - host[n.launch as usize].start_ns)
            .filter(|&d| d >= 0);
        if from_launch.is_none() {
            n.launch = NONE;
        }
        edges.push((from_launch, prev_end));
    }
    for n in nodes.iter() {
        let e = &mut lane_end[n.lane.0 as usize];
        *e = Some(e.map_or(n.end_ns, |e| e.max(n.end_ns)));
    }
    let launch_binding =
        |n: &GpuNode, l: Option<TimeNs>, prev_end: Option<TimeNs>| match (l, prev_end) {
            (Some(l), Some(e)) => l <= (n.start_ns - e).max(0),
            (Some(_), None) => true,
            _ => false,
        };
    let mut launch_bound: Vec<TimeNs> = Vec::new();
    let mut queue_bound: Vec<TimeNs> = Vec::new();
    for (n, &(l, e)) in nodes.iter().zip(&edges) {
        match (l, e) {
            (Some(l), Some(_)) if launch_binding(n, Some(l), e) => launch_bound.push(l),
            (Some(_), Some(e)) => queue_bound.push((n.start_ns - e).max(0)),
            _ => {}
        }
    }
    let typical_launch = median(&mut launch_bound);
    let typical_queue = median(&mut queue_bound);
    // Ops whose binding edge held them past the launch overhead, and that edge.
    let mut held: Vec<(usize, BindingEdge)> = Vec::new();
    for (i, (n, &(l, e))) in nodes.iter_mut().zip(&edges).enumerate() {
        let binding = launch_binding(n, l, e);
        let mut bound: Option<TimeNs> = None;
        if let Some(l) = l {
            n.launch_ns = if binding { l } else { l.min(typical_launch) };
            bound = Some(host[n.launch as usize].start_ns + n.launch_ns);
            if binding && l > LAUNCH_OVERHEAD_BOUND_NS {
                held.push((i, BindingEdge::Launch));
            }
        }
        if let Some(e) = e {
            let q = (n.start_ns - e).max(0);
            n.queue_ns = if binding { q.min(typical_queue) } else { q };
            // Held on its stream past the launch overhead, and not by its launch.
            let launch_by = bound.unwrap_or(TimeNs::MIN);
            if !binding && q > LAUNCH_OVERHEAD_BOUND_NS && launch_by < e + LAUNCH_OVERHEAD_BOUND_NS
            {
                held.push((i, BindingEdge::Stream));
            }
            bound = Some(bound.map_or(e + n.queue_ns, |b| b.max(e + n.queue_ns)));
        }
        n.wait_ns = bound.map_or(0, |b| (n.start_ns - b).max(0));
    }
    wait_edges(nodes, &held);
}

/// Ops of other streams scanned back for the one a waiting op waited for.
const WAIT_SCAN: usize = 16;

/// For each op that waited past its launch and stream edges: the op of another stream that
/// ended last inside the wait (its release), scanning back at most [`WAIT_SCAN`] ends.
fn wait_edges(nodes: &mut [GpuNode], held: &[(usize, BindingEdge)]) {
    if held.is_empty() && !nodes.iter().any(|n| n.wait_ns > 0) {
        return;
    }
    let mut by_end: Vec<u32> = (0..crate::num::count_u32(nodes.len())).collect();
    by_end.sort_unstable_by_key(|&i| (nodes[i as usize].end_ns, i));
    // The op of another stream that ended last inside (bound, start of `n`].
    let release = |n: &GpuNode, bound: TimeNs| {
        let k = by_end.partition_point(|&j| nodes[j as usize].end_ns <= n.start_ns);
        by_end[..k]
            .iter()
            .rev()
            .take(WAIT_SCAN)
            .map(|&j| (j, nodes[j as usize]))
            .take_while(|(_, d)| d.end_ns > bound)
            .find(|(_, d)| d.lane != n.lane && d.start_ns < n.start_ns)
    };
    // (op, the op it waited for, that op's end, the binding edge to cut back to the bound)
    let mut released: Vec<(usize, u32, TimeNs, Option<BindingEdge>)> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if n.wait_ns > 0 {
            if let Some((j, d)) = release(n, n.start_ns - n.wait_ns) {
                released.push((i, j, d.end_ns, None));
            }
        }
    }
    // An op its binding edge held past the launch overhead that started within the launch
    // overhead of another stream's op's end waited for that op (an event, a collective): the
    // edge keeps the launch overhead and the wait follows the other op, as the idle
    // attribution has it.
    for &(i, edge) in held {
        let n = &nodes[i];
        if n.after == NONE && n.wait_ns == 0 {
            if let Some((j, d)) = release(n, n.start_ns - LAUNCH_OVERHEAD_BOUND_NS) {
                released.push((i, j, d.end_ns, Some(edge)));
            }
        }
    }
    for (i, j, end_ns, cut) in released {
        let n = &mut nodes[i];
        n.after = j;
        n.wait_ns = n.start_ns - end_ns;
        match cut {
            Some(BindingEdge::Launch) => n.launch_ns = n.launch_ns.min(LAUNCH_OVERHEAD_BOUND_NS),
            Some(BindingEdge::Stream) => n.queue_ns = n.queue_ns.min(LAUNCH_OVERHEAD_BOUND_NS),
            None => {}
        }
    }
    // A launch that held its op past the launch overhead with no other stream's op to follow:
    // the op waited for something the trace does not show (an event no traced stream
    // recorded). The launch keeps the overhead and the rest is a GPU wait after the later of
    // the launch and the stream, as the idle attribution has it; the op starts when it did.
    for &(i, edge) in held {
        let n = nodes[i];
        if edge != BindingEdge::Launch || n.after != NONE || n.wait_ns != 0 {
            continue;
        }
        let launch_at = n.start_ns - n.launch_ns + LAUNCH_OVERHEAD_BOUND_NS;
        let bound = n
            .recorded_prev_end_ns(nodes)
            .map_or(launch_at, |e| launch_at.max(e + n.queue_ns));
        let n = &mut nodes[i];
        n.launch_ns = LAUNCH_OVERHEAD_BOUND_NS;
        n.wait_ns = n.start_ns - bound;
    }
}

/// Each blocking call's awaited op: a blocking copy's own copy; else the last to finish of
/// the ops launched before the call and by it (a device sync waits for all of them), when
/// it finished before the call returned; else the op that ended last inside the call (a
/// stream or event sync waited for less).
fn await_nodes(host: &mut [HostItem], nodes: &[GpuNode]) {
    if nodes.is_empty() {
        return;
    }
    let ends_later = |a: u32, b: u32| nodes[a as usize].end_ns > nodes[b as usize].end_ns;
    // The op that ends last among those each item launched.
    let mut launched_last: Vec<u32> = vec![NONE; host.len()];
    for (j, n) in nodes.iter().enumerate() {
        if n.launch != NONE {
            let j = crate::num::count_u32(j);
            let slot = &mut launched_last[n.launch as usize];
            if *slot == NONE || ends_later(j, *slot) {
                *slot = j;
            }
        }
    }
    let mut by_end: Option<Vec<u32>> = None;
    let mut latest: Option<u32> = None;
    for (h, &l) in host.iter_mut().zip(&launched_last) {
        if l != NONE && latest.is_none_or(|x| ends_later(l, x)) {
            latest = Some(l);
        }
        if !matches!(h.kind, HostKind::Blocking(_)) {
            continue;
        }
        // A copy that blocks its call waits for its own copy, which may end just after the
        // call returns (the driver returns once it has handed over the last staged chunk).
        if l != NONE
            && matches!(
                h.kind,
                HostKind::Blocking(BlockingKind::BlockingCopy | BlockingKind::PageableAsyncCopy)
            )
        {
            h.awaited = l;
            continue;
        }
        if let Some(j) = latest.filter(|&j| nodes[j as usize].end_ns <= h.end_ns) {
            h.awaited = j;
            continue;
        }
        let by_end = by_end.get_or_insert_with(|| {
            let mut v: Vec<u32> = (0..crate::num::count_u32(nodes.len())).collect();
            v.sort_unstable_by_key(|&i| (nodes[i as usize].end_ns, i));
            v
        });
        let e = by_end.partition_point(|&i| nodes[i as usize].end_ns <= h.end_ns);
        if e == 0 {
            continue;
        }
        let j = by_end[e - 1];
        if nodes[j as usize].end_ns > h.start_ns {
            h.awaited = j;
        }
    }
}

#[cfg(test)]
impl StepGraph {
    /// A graph from hand-made items and ops (sorted by start), linked as [`GraphBuilder`]
    /// links a step's.
    pub(crate) fn from_parts(
        host: Vec<HostItem>,
        mut gpu: Vec<GpuNode>,
        host_start_ns: TimeNs,
        host_end_ns: TimeNs,
        lanes: usize,
    ) -> StepGraph {
        let mut lane_end = vec![None; lanes];
        link_nodes(&mut gpu, &host, &mut lane_end);
        let mut host = host;
        await_nodes(&mut host, &gpu);
        StepGraph {
            host_by_end: by_end(&host),
            host,
            gpu,
            host_start_ns,
            host_end_ns,
        }
    }
}
