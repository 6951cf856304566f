//! The CPU work of the launching thread during host-compute idle: which ops, inside which user
//! regions, for how long, and which [`HostWork`] sub-cause each piece is.

use crate::attribute::host_work::{api_call, classify, in_region, named, unnamed, HostWork};
use crate::measure::environment::Framework;
use crate::measure::one_time::FirstCalls;
use crate::measure::seek::partition_point_from;
use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{table_index, Interval, NameId, SpanId, SpanKind, TimeNs, Trace};

/// The name of host time under no op or frame, in a PyTorch program.
pub const BETWEEN_OPS: &str = "(Python between ops)";
/// The same in a program without PyTorch or Python.
pub const BETWEEN_CALLS: &str = "(CPU work between API calls)";
/// The same in a trace that records no CPU work at all.
pub const NOT_RECORDED: &str = "(CPU work the trace does not record)";

/// What one piece of host-compute time is credited to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct HostKey {
    /// The outermost CPU op running, or under no op the innermost user Python frame.
    op: Option<NameId>,
    /// The innermost user region (`record_function`, NVTX) around it: one range, so a
    /// region's recurrences can be counted.
    region: Option<SpanId>,
    /// The sub-cause an enclosing region or frame names (the optimizer, warm-up, logging).
    context: Option<HostWork>,
}

/// Host-compute time by what it is credited to.
pub(crate) type HostTime = FxHashMap<HostKey, TimeNs>;

/// One sub-cause of host-compute time, with the ops and regions it is made of.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct HostPart {
    /// The sub-cause.
    pub work: HostWork,
    /// Its time.
    pub ns: TimeNs,
    /// Its ops (or Python frames), largest first (four at most).
    pub ops: Vec<(String, TimeNs)>,
    /// The user regions its time falls in, largest first (three at most): numbered ranges
    /// of one family (`IO 0`, `IO 10`, …) as one.
    pub regions: Vec<RegionShare>,
}

/// A user region's share of a sub-cause's time: one name, or a family of ranges numbered
/// alike (`IO 0`, `IO 10`, … as `IO N`), with how many ranges the time fell in.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct RegionShare {
    /// The region's name, or the family's with its numbers as `N`.
    pub name: String,
    /// The time.
    pub ns: TimeNs,
    /// How many ranges (instances) the time fell in.
    pub ranges: usize,
}

impl RegionShare {
    /// The name as a reader sees it: the family's with its count of ranges.
    #[must_use]
    pub fn label(&self) -> String {
        if self.ranges > 1 {
            format!("{} ×{}", self.name, self.ranges)
        } else {
            self.name.clone()
        }
    }
}

/// The family of numbered names `name` belongs to: every run of digits that stands alone
/// (not inside a word such as `conv2d`) read as `N`; `None` when it holds no such run.
#[must_use]
pub fn numbered_family(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    let mut found = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let alone_before = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
            let alone_after = i == bytes.len() || !bytes[i].is_ascii_alphanumeric();
            if alone_before && alone_after {
                out.push('N');
                found = true;
            } else {
                out.push_str(&name[start..i]);
            }
        } else {
            let len = name[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&name[i..i + len]);
            i += len;
        }
    }
    found.then_some(out)
}

/// The display name of a credited op: the op or frame, or for time under neither, what the
/// trace says of it.
fn op_name(trace: &Trace, op: Option<NameId>, fw: &Framework) -> String {
    match op {
        Some(n) => trace.names.get(n).to_string(),
        None => match unnamed(fw) {
            HostWork::NotRecorded => NOT_RECORDED,
            HostWork::BetweenApiCalls => BETWEEN_CALLS,
            _ => BETWEEN_OPS,
        }
        .to_string(),
    }
}

/// Host-op totals by name, largest first (eight at most); time under no op or frame is named
/// for what the trace is ([`BETWEEN_OPS`], [`BETWEEN_CALLS`], [`NOT_RECORDED`]).
pub(crate) fn name_host_ops(
    trace: &Trace,
    time: &HostTime,
    fw: &Framework,
) -> Vec<(String, TimeNs)> {
    let mut by_op: FxHashMap<Option<NameId>, TimeNs> = FxHashMap::default();
    for (k, t) in time {
        *by_op.entry(k.op).or_default() += t;
    }
    let named = by_op
        .into_iter()
        .map(|(n, t)| (op_name(trace, n, fw), t))
        .collect();
    largest(named, 8)
}

/// Host-compute time split by sub-cause, largest first; `total_ns` is shared out in proportion
/// so the parts sum to it exactly.
pub(crate) fn host_parts(
    trace: &Trace,
    time: &HostTime,
    fw: &Framework,
    total_ns: TimeNs,
) -> Vec<HostPart> {
    struct Acc {
        ns: TimeNs,
        ops: FxHashMap<Option<NameId>, TimeNs>,
        regions: FxHashMap<SpanId, TimeNs>,
    }
    let mut by_work: FxHashMap<HostWork, Acc> = FxHashMap::default();
    for (k, &t) in time {
        let work = sub_cause(trace, *k, fw);
        let acc = by_work.entry(work).or_insert_with(|| Acc {
            ns: 0,
            ops: FxHashMap::default(),
            regions: FxHashMap::default(),
        });
        acc.ns += t;
        *acc.ops.entry(k.op).or_default() += t;
        if let Some(r) = k.region {
            *acc.regions.entry(r).or_default() += t;
        }
    }
    let raw_total: TimeNs = by_work.values().map(|a| a.ns).sum();
    let mut parts: Vec<HostPart> = by_work
        .into_iter()
        .map(|(work, a)| HostPart {
            work,
            ns: a.ns,
            ops: largest(
                a.ops
                    .into_iter()
                    .map(|(n, t)| (op_name(trace, n, fw), t))
                    .collect(),
                4,
            ),
            regions: region_shares(trace, a.regions),
        })
        .collect();
    parts.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.work.cmp(&b.work)));
    // Share the credited total out in proportion; the largest part takes the rounding.
    if raw_total > 0 {
        let mut given: TimeNs = 0;
        for p in parts.iter_mut().skip(1) {
            p.ns = crate::num::scale_ns(p.ns, total_ns, raw_total);
            given += p.ns;
        }
        if let Some(first) = parts.first_mut() {
            first.ns = total_ns - given;
        }
    }
    parts.retain(|p| p.ns > 0);
    parts
}

/// The regions' time by name, numbered ranges of one family together, largest first (three
/// at most). A family one range of which holds half its time or more is that range alone:
/// its work is in one place, not in every iteration.
fn region_shares(trace: &Trace, by_range: FxHashMap<SpanId, TimeNs>) -> Vec<RegionShare> {
    #[derive(Default)]
    struct Family {
        ns: TimeNs,
        ranges: usize,
        names: rustc_hash::FxHashSet<NameId>,
        largest: Option<(TimeNs, SpanId)>,
    }
    let mut family_of: FxHashMap<NameId, String> = FxHashMap::default();
    let mut families: FxHashMap<String, Family> = FxHashMap::default();
    for (id, t) in by_range {
        let name = trace.span(id).name;
        let key = family_of
            .entry(name)
            .or_insert_with(|| {
                let n = trace.names.get(name);
                numbered_family(n).unwrap_or_else(|| n.to_string())
            })
            .clone();
        let f = families.entry(key).or_default();
        f.ns += t;
        f.ranges += 1;
        f.names.insert(name);
        if f.largest
            .is_none_or(|(lt, lid)| t > lt || (t == lt && id.0 < lid.0))
        {
            f.largest = Some((t, id));
        }
    }
    let mut shares: Vec<RegionShare> = families
        .into_iter()
        .map(|(family, f)| match f.largest {
            Some((t, id)) if f.ranges > 1 && t * 2 >= f.ns => RegionShare {
                name: trace.name(id).to_string(),
                ns: t,
                ranges: 1,
            },
            _ => RegionShare {
                // One name repeated is that name, not a family.
                name: match f.names.iter().next() {
                    Some(&only) if f.names.len() == 1 => trace.names.get(only).to_string(),
                    _ => family,
                },
                ns: f.ns,
                ranges: f.ranges,
            },
        })
        .collect();
    shares.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
    shares.truncate(3);
    shares
}

/// The sub-cause of one credited piece.
fn sub_cause(trace: &Trace, k: HostKey, fw: &Framework) -> HostWork {
    if let Some(work) = k.context {
        return work;
    }
    match (k.op, k.region) {
        (None, Some(region)) => in_region(trace.name(region)),
        (op, _) => classify(op.map(|n| trace.names.get(n)), [], fw),
    }
}

/// The largest `n`, largest first (ties by name).
fn largest(mut v: Vec<(String, TimeNs)>, n: usize) -> Vec<(String, TimeNs)> {
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// A runtime or driver call, or an OS wait, that no CPU op and no user Python frame encloses
/// (an enclosing API call is the one credited).
fn bare_api_call(trace: &Trace, contexts: &mut SpanContexts, id: SpanId) -> bool {
    if !creditable_call(trace, id) {
        return false;
    }
    if trace
        .parent(id)
        .is_some_and(|p| trace.span(p).kind.is_api_call())
    {
        return false;
    }
    let around = contexts.around(trace, id);
    around.outermost_op.is_none() && around.user_frame.is_none()
}

/// A span host time can be credited to by its own name: a runtime or driver call, or an OS
/// wait.
fn creditable_call(trace: &Trace, id: SpanId) -> bool {
    let s = trace.span(id);
    s.kind.is_api_call()
        || s.kind == SpanKind::OsRuntime
            && crate::vocabulary::api::is_os_wait(trace.names.get(s.name))
}

/// What the spans around one span say of it, that span included: the innermost user region,
/// the innermost overriding sub-cause, the innermost user Python frame and the outermost op.
#[derive(Clone, Copy, Default)]
struct Around {
    region: Option<SpanId>,
    context: Option<HostWork>,
    user_frame: Option<NameId>,
    outermost_op: Option<SpanId>,
}

/// [`Around`] of every span asked about, each computed once from its parent's: every idle
/// gap asks about the spans running in it, and a walk up the enclosing chain per gap made
/// 1,100 nested ranges around 16,000 launches take minutes.
///
/// Beside them, where the last search in each lane's spans ended: a chunk's gaps come in
/// time order, so the next search starts there.
#[derive(Default)]
pub(crate) struct SpanContexts {
    arounds: FxHashMap<SpanId, Around>,
    places: FxHashMap<tracelens_model::LaneId, usize>,
    /// What each name says, read once per name: a gap read frame by frame asks about
    /// thousands of frames of a few hundred names.
    names: FxHashMap<NameId, NameFacts>,
}

/// What a region's, frame's or op's name says of the time inside it.
#[derive(Clone, Copy)]
struct NameFacts {
    /// The sub-cause it gives everything inside it.
    overriding: Option<HostWork>,
    /// A Python frame of the user's code (not a library's).
    user_frame: bool,
    /// The DataLoader's range or op.
    data_loader: bool,
}

impl NameFacts {
    fn of(name: &str) -> NameFacts {
        NameFacts {
            overriding: crate::attribute::host_work::overriding(name),
            user_frame: tracelens_model::PyFrame::parse(name).is_some_and(|f| !f.is_library()),
            data_loader: crate::vocabulary::ops::is_data_loader(name),
        }
    }
}

impl SpanContexts {
    /// [`Around`] of `id`, itself included.
    fn around(&mut self, trace: &Trace, id: SpanId) -> Around {
        // A span that says nothing of itself (a runtime call, a kernel launch) has its nearest
        // telling ancestor's answer: no memo entry, no hashing. An export's CPU lanes are
        // almost all such spans, most without a parent.
        let mut id = id;
        while !Self::tells(trace, id) {
            match trace.parent(id) {
                Some(p) => id = p,
                None => return Around::default(),
            }
        }
        if let Some(&known) = self.arounds.get(&id) {
            return known;
        }
        // Up to the nearest span already known (or the outermost), then down, filling in.
        let mut chain = vec![id];
        let mut outer = Around::default();
        let mut at = id;
        while let Some(p) = trace.parent(at) {
            if let Some(&known) = self.arounds.get(&p) {
                outer = known;
                break;
            }
            chain.push(p);
            at = p;
        }
        for &a in chain.iter().rev() {
            outer = self.inside(trace, a, outer);
            self.arounds.insert(a, outer);
        }
        outer
    }

    /// Whether `id` is an op the host time is credited to, or a user region: a CPU op or an
    /// annotation that is not the step or the DataLoader's range.
    fn is_op_or_region(&mut self, trace: &Trace, id: SpanId, kind: SpanKind) -> bool {
        trace.span(id).kind == kind && !self.facts(trace, id).data_loader && !trace.is_step_span(id)
    }

    /// What span `id`'s name says.
    fn facts(&mut self, trace: &Trace, id: SpanId) -> NameFacts {
        let name = trace.span(id).name;
        *self
            .names
            .entry(name)
            .or_insert_with(|| NameFacts::of(trace.names.get(name)))
    }

    /// Whether [`Self::inside`] can differ from its parent's answer for `id`: only a user
    /// region, a Python frame or a CPU op says anything.
    fn tells(trace: &Trace, id: SpanId) -> bool {
        matches!(
            trace.span(id).kind,
            SpanKind::UserAnnotation | SpanKind::PythonFunction | SpanKind::CpuOp
        )
    }

    /// [`Around`] of `id` from its parent's.
    fn inside(&mut self, trace: &Trace, id: SpanId, outer: Around) -> Around {
        // The one place that says which spans matter: `around` skips the same ones.
        if !Self::tells(trace, id) {
            return outer;
        }
        let s = trace.span(id);
        let facts = self.facts(trace, id);
        let framed = matches!(s.kind, SpanKind::UserAnnotation | SpanKind::PythonFunction);
        Around {
            region: if self.is_op_or_region(trace, id, SpanKind::UserAnnotation) {
                Some(id)
            } else {
                outer.region
            },
            context: framed
                .then_some(facts.overriding)
                .flatten()
                .or(outer.context),
            user_frame: if s.kind == SpanKind::PythonFunction && facts.user_frame {
                Some(s.name)
            } else {
                outer.user_frame
            },
            outermost_op: outer.outermost_op.or_else(|| {
                self.is_op_or_region(trace, id, SpanKind::CpuOp)
                    .then_some(id)
            }),
        }
    }

    /// The region and the overriding sub-cause around `id`, itself left out.
    fn outside(&mut self, trace: &Trace, id: SpanId) -> (Option<SpanId>, Option<HostWork>) {
        let a = trace
            .parent(id)
            .map(|p| self.around(trace, p))
            .unwrap_or_default();
        (a.region, a.context)
    }
}

/// Credits the CPU work running on `lane` during `window` to `time`: one-time launch calls
/// (`one_time`, the lane's, clipped to `window`) as warm-up, then the outermost CPU ops (user
/// regions are looked through, the step and the DataLoader range are not ops), and time under
/// no op to the innermost user Python frame running, when recorded.
pub(crate) fn credit_host_ops(
    trace: &Trace,
    lane: tracelens_model::LaneId,
    window: Interval,
    one_time: &[(Interval, NameId)],
    firsts: &FirstCalls,
    time: &mut HostTime,
    contexts: &mut SpanContexts,
) {
    let mut cursor = window.start_ns;
    for &(launch, _) in one_time {
        let before = Interval::new(cursor, launch.start_ns);
        credit_ops_in(trace, lane, before, firsts, time, contexts, false);
        cursor = launch.end_ns;
    }
    credit_one_time_calls(one_time, time);
    let rest = Interval::new(cursor, window.end_ns);
    credit_ops_in(trace, lane, rest, firsts, time, contexts, false);
}

/// Credits the CPU work on `lane` during `window` as warm-up, whatever it is: the program's
/// set-up before its first kernel in a cold window (uploading weights, building the model).
pub(crate) fn credit_set_up_ops(
    trace: &Trace,
    lane: tracelens_model::LaneId,
    window: Interval,
    firsts: &FirstCalls,
    time: &mut HostTime,
    contexts: &mut SpanContexts,
) {
    credit_ops_in(trace, lane, window, firsts, time, contexts, true);
}

/// Credits one-time launch calls (clipped) to `time` as warm-up, under the call's name.
pub(crate) fn credit_one_time_calls(one_time: &[(Interval, NameId)], time: &mut HostTime) {
    for &(launch, name) in one_time {
        let key = HostKey {
            op: Some(name),
            region: None,
            context: Some(HostWork::WarmUp),
        };
        *time.entry(key).or_default() += launch.dur_ns();
    }
}

/// A framework op at least this long that launches no GPU work computes on CPU tensors.
pub const CPU_TENSOR_OP_NS: TimeNs = tracelens_model::NS_PER_MS;

/// Whether CPU op `id` computes on CPU tensors: a framework op of [`CPU_TENSOR_OP_NS`] or more
/// with no call inside it that submits GPU work (a kernel, copy or fill).
pub(crate) fn computes_on_cpu(trace: &Trace, id: SpanId) -> bool {
    let s = trace.span(id);
    if s.kind != SpanKind::CpuOp || s.dur_ns < CPU_TENSOR_OP_NS {
        return false;
    }
    let end = s.end_ns();
    let lane_end = trace.lane(s.lane).spans.end;
    !(id.0 + 1..lane_end)
        .map(|j| &trace.spans[j as usize])
        .take_while(|c| c.start_ns < end)
        .any(|c| {
            c.kind.is_api_call()
                && crate::vocabulary::api::submits_gpu_work(trace.names.get(c.name))
        })
}

/// [`credit_host_ops`] for a window without one-time launches. An op's first call that costs
/// many times its later ones ([`FirstCalls::is_costly_first_call`]) is warm-up, and so is
/// everything when `set_up` says the window is the program's set-up.
fn credit_ops_in(
    trace: &Trace,
    lane: tracelens_model::LaneId,
    window: Interval,
    firsts: &FirstCalls,
    time: &mut HostTime,
    contexts: &mut SpanContexts,
    set_up: bool,
) {
    if window.dur_ns() <= 0 {
        return;
    }
    let add = |contexts: &mut SpanContexts, id: SpanId, ns: TimeNs, time: &mut HostTime| {
        let (region, context) = contexts.outside(trace, id);
        let context = if set_up || firsts.is_costly_first_call(trace, id) {
            Some(HostWork::WarmUp)
        } else if context.is_none()
            && named(trace.names.get(trace.span(id).name)).is_none()
            && computes_on_cpu(trace, id)
        {
            Some(HostWork::CpuTensorOps)
        } else {
            context
        };
        let key = HostKey {
            op: Some(trace.span(id).name),
            region,
            context,
        };
        *time.entry(key).or_default() += ns;
    };
    // A recorded API call that no op or user Python frame encloses is credited to itself:
    // in a program whose CPU work is not recorded, that is all the trace knows of the
    // thread, and an allocation or a query is not "work the trace does not record".
    let add_api = |contexts: &mut SpanContexts, id: SpanId, ns: TimeNs, time: &mut HostTime| {
        let (region, context) = contexts.outside(trace, id);
        let name = trace.span(id).name;
        let context = if set_up {
            HostWork::WarmUp
        } else {
            context.unwrap_or_else(|| {
                if trace.span(id).kind == SpanKind::OsRuntime {
                    HostWork::OsWait
                } else {
                    api_call(trace.names.get(name))
                }
            })
        };
        let key = HostKey {
            op: Some(name),
            region,
            context: Some(context),
        };
        *time.entry(key).or_default() += ns;
    };
    let range = trace.lane(lane).spans.clone();
    let spans = &trace.spans[range.start as usize..range.end as usize];
    let mut cursor = window.start_ns;
    // The stretches no op or credited call covers.
    let mut unclaimed: Vec<Interval> = Vec::new();
    // The outermost op already running when the window opens (enclosing ops end no earlier
    // than the ops inside them, so the outermost one is running if any is), else the
    // outermost bare API call running.
    let place = contexts.places.entry(lane).or_default();
    let before = partition_point_from(spans, *place, |s| s.start_ns <= window.start_ns);
    *place = before;
    let innermost = (before > 0).then(|| SpanId(range.start + table_index(before) - 1));
    if let Some(innermost) = innermost {
        let outer = contexts
            .around(trace, innermost)
            .outermost_op
            .filter(|&op| trace.span(op).end_ns() > window.start_ns);
        if let Some(op) = outer {
            let end = trace.span(op).end_ns().min(window.end_ns);
            add(contexts, op, end - cursor, time);
            cursor = end;
        } else if let Some(call) = std::iter::once(innermost)
            .chain(trace.ancestors(innermost))
            .filter(|&id| creditable_call(trace, id) && trace.span(id).end_ns() > window.start_ns)
            .last()
            .filter(|&id| bare_api_call(trace, contexts, id))
        {
            let end = trace.span(call).end_ns().min(window.end_ns);
            add_api(contexts, call, end - cursor, time);
            cursor = end;
        }
    }
    for (offset, s) in spans[before..].iter().enumerate() {
        if s.start_ns >= window.end_ns {
            break;
        }
        if s.start_ns < cursor {
            continue;
        }
        let id = SpanId(range.start + table_index(before + offset));
        let end = s.end_ns().min(window.end_ns);
        if contexts.is_op_or_region(trace, id, SpanKind::CpuOp) {
            add(contexts, id, end - s.start_ns, time);
        } else if bare_api_call(trace, contexts, id) {
            add_api(contexts, id, end - s.start_ns, time);
        } else {
            continue;
        }
        if s.start_ns > cursor {
            unclaimed.push(Interval::new(cursor, s.start_ns));
        }
        cursor = end;
    }
    if window.end_ns > cursor {
        unclaimed.push(Interval::new(cursor, window.end_ns));
    }
    // Time under no op: each stretch is the innermost frame's and region's running then.
    let mut from = before;
    for piece in unclaimed {
        from = credit_unclaimed(trace, lane, piece, from, set_up, time, contexts);
    }
}

/// Credits `piece` of `lane`'s time, under no op or credited call, to the user frame and
/// region running through each part of it: a region entered inside the piece takes the time
/// from its start to its end, not the region the piece began in. `from` is where the lane's
/// spans starting at or after `piece` may begin; returns the same for the next piece.
fn credit_unclaimed(
    trace: &Trace,
    lane: tracelens_model::LaneId,
    piece: Interval,
    from: usize,
    set_up: bool,
    time: &mut HostTime,
    contexts: &mut SpanContexts,
) -> usize {
    let range = trace.lane(lane).spans.clone();
    let spans = &trace.spans[range.start as usize..range.end as usize];
    let id_of = |i: usize| SpanId(range.start + table_index(i));
    let key_of = |contexts: &mut SpanContexts, running: Option<SpanId>| {
        let around = running
            .map(|id| contexts.around(trace, id))
            .unwrap_or_default();
        HostKey {
            op: around.user_frame,
            region: around.region,
            context: if set_up {
                Some(HostWork::WarmUp)
            } else {
                around.context
            },
        }
    };
    // The innermost span running when the piece starts; its parents follow as it ends.
    let first = partition_point_from(spans, from, |s| s.start_ns <= piece.start_ns);
    let running_after = |id: SpanId, t: TimeNs| {
        std::iter::once(id)
            .chain(trace.ancestors(id))
            .find(|&a| trace.span(a).end_ns() > t)
    };
    let mut running = (first > 0)
        .then(|| id_of(first - 1))
        .and_then(|innermost| running_after(innermost, piece.start_ns));
    let mut at = piece.start_ns;
    let mut credit = |contexts: &mut SpanContexts, running: Option<SpanId>, until: TimeNs| {
        if until > at {
            *time.entry(key_of(contexts, running)).or_default() += until - at;
            at = until;
        }
    };
    // Hands the time up to `t` to the spans running, each until it ends, then to its parent.
    let mut close_until = |contexts: &mut SpanContexts, running: &mut Option<SpanId>, t: TimeNs| {
        while let Some(top) = *running {
            let end = trace.span(top).end_ns();
            if end > t {
                break;
            }
            credit(contexts, *running, end);
            *running = trace.ancestors(top).find(|&a| trace.span(a).end_ns() > end);
        }
        credit(contexts, *running, t);
    };
    let mut next = first;
    while next < spans.len() && spans[next].start_ns < piece.end_ns {
        let id = id_of(next);
        next += 1;
        // Only a region, a frame or an op changes whose time it is.
        if !SpanContexts::tells(trace, id) {
            continue;
        }
        close_until(contexts, &mut running, spans[next - 1].start_ns);
        running = Some(id);
    }
    close_until(contexts, &mut running, piece.end_ns);
    next
}

#[cfg(test)]
mod tests {
    use super::numbered_family;

    #[test]
    fn numbers_that_stand_alone_make_a_family_and_numbers_in_words_do_not() {
        assert_eq!(numbered_family("IO 190").as_deref(), Some("IO N"));
        assert_eq!(
            numbered_family("Step 190 to 200").as_deref(),
            Some("Step N to N")
        );
        assert_eq!(
            numbered_family("ProfilerStep#3").as_deref(),
            Some("ProfilerStep#N")
        );
        assert_eq!(numbered_family("layer_12.é").as_deref(), Some("layer_N.é"));
        assert_eq!(numbered_family("conv2d"), None);
        assert_eq!(numbered_family("fp16 gemm"), None);
        assert_eq!(numbered_family("forward"), None);
    }
}
