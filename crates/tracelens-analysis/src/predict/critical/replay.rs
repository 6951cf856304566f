//! What-if by replay: the step graphs re-timed with one change made, step after step, the
//! host's lead and each stream's backlog carried from one step to the next.
//!
//! The host is one clock: every host item keeps its recorded distance to the work before it,
//! so an item moves by the time removed before it (collapsed ranges) and by what host-blocking
//! calls now wait more or less. A blocking call returns when the GPU work it waited for ends
//! (or right away when it is made asynchronous), then takes its recorded return time. A GPU op
//! starts when its launch edge and stream edge allow, plus its recorded extra wait
//! ([`super::graph`]). With no change, the replay gives back every recorded time.

use super::graph::{GpuNode, HostKind, StepGraph, NONE};
use tracelens_model::{Interval, TimeNs};

/// One change to replay.
#[derive(Clone, Debug, Default)]
pub(crate) struct Change {
    /// Host time ranges that take no time any more, sorted and disjoint.
    collapse: Vec<Interval>,
    /// `collapsed[k]`: total length of the ranges before range `k`.
    collapsed_before: Vec<TimeNs>,
    /// Blocking calls that no longer wait for the GPU (API span ids, sorted).
    async_calls: Vec<u32>,
    /// GPU ranges whose ops run back to back, no longer waiting for their launches (sorted,
    /// disjoint).
    free_ops: Vec<Interval>,
    /// GPU ops (span ids, sorted) that take this fraction of their recorded time.
    faster_ops: Vec<(u32, f64)>,
    /// Collective kernels hidden under compute (they take no time on their stream).
    hide_communication: bool,
    /// How much longer the host takes for the same work, as a fraction (CPU shared with
    /// other processes).
    host_slowdown: f64,
}

impl Change {
    /// Adds host ranges that take no time.
    pub(crate) fn collapse(&mut self, ranges: impl IntoIterator<Item = Interval>) {
        let mut all = std::mem::take(&mut self.collapse);
        all.extend(ranges);
        self.collapse = crate::measure::intervals::union(all);
        let mut before = 0;
        self.collapsed_before = self
            .collapse
            .iter()
            .map(|r| {
                let b = before;
                before += r.dur_ns();
                b
            })
            .collect();
    }

    /// Makes blocking calls asynchronous.
    pub(crate) fn make_async(&mut self, calls: impl IntoIterator<Item = u32>) {
        self.async_calls.extend(calls);
        self.async_calls.sort_unstable();
        self.async_calls.dedup();
    }

    /// Lets the ops starting in `ranges` run back to back.
    pub(crate) fn free_ops(&mut self, ranges: impl IntoIterator<Item = Interval>) {
        let mut all = std::mem::take(&mut self.free_ops);
        all.extend(ranges);
        self.free_ops = crate::measure::intervals::union(all);
    }

    /// Makes GPU ops (span id, fraction of their time) shorter; an op named twice keeps its
    /// shorter time.
    pub(crate) fn speed_up(&mut self, ops: impl IntoIterator<Item = (u32, f64)>) {
        self.faster_ops.extend(ops);
        self.faster_ops
            .sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        self.faster_ops.dedup_by_key(|o| o.0);
    }

    /// The fraction of its recorded time GPU op `span` takes.
    fn time_fraction(&self, span: u32) -> f64 {
        self.faster_ops
            .binary_search_by_key(&span, |o| o.0)
            .map_or(1.0, |k| self.faster_ops[k].1.clamp(0.0, 1.0))
    }

    /// Makes the host's work take `fraction` longer.
    pub(crate) fn slow_host(&mut self, fraction: f64) {
        self.host_slowdown = self.host_slowdown.max(fraction);
    }

    /// Hides collective kernels under compute.
    pub(crate) fn hide_communication(&mut self) {
        self.hide_communication = true;
    }

    /// Everything `other` changes, too.
    pub(crate) fn merge(&mut self, other: &Change) {
        self.collapse(other.collapse.iter().copied());
        self.make_async(other.async_calls.iter().copied());
        self.free_ops(other.free_ops.iter().copied());
        self.speed_up(other.faster_ops.iter().copied());
        self.hide_communication |= other.hide_communication;
        self.slow_host(other.host_slowdown);
    }

    /// Whether the change changes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.collapse.is_empty()
            && self.async_calls.is_empty()
            && self.free_ops.is_empty()
            && self.faster_ops.is_empty()
            && !self.hide_communication
            && self.host_slowdown <= 0.0
    }

    /// Host time removed before `t`.
    fn collapsed_at(&self, t: TimeNs) -> TimeNs {
        let k = self.collapse.partition_point(|r| r.start_ns <= t);
        if k == 0 {
            return 0;
        }
        let r = self.collapse[k - 1];
        self.collapsed_before[k - 1] + (t.min(r.end_ns) - r.start_ns)
    }

    /// Whether `iv` lies inside one collapsed range (the call is removed with it).
    fn removes(&self, iv: Interval) -> bool {
        let k = self.collapse.partition_point(|r| r.start_ns <= iv.start_ns);
        k > 0 && iv.end_ns <= self.collapse[k - 1].end_ns
    }

    fn is_async(&self, span: u32) -> bool {
        span != NONE && self.async_calls.binary_search(&span).is_ok()
    }

    fn is_free(&self, start_ns: TimeNs) -> bool {
        let k = self.free_ops.partition_point(|r| r.start_ns <= start_ns);
        k > 0 && start_ns < self.free_ops[k - 1].end_ns
    }
}

/// A change being replayed over the steps.
pub(crate) struct Replay<'c> {
    change: &'c Change,
    /// How far the host runs behind its recorded clock, past the collapsed ranges, at
    /// `anchor_ns`.
    behind_ns: TimeNs,
    /// Where the host clock was last set (a blocking call's return, or the first step's
    /// start): host work after it takes longer by the change's slowdown.
    anchor_ns: Option<TimeNs>,
    /// New end of the last op of each lane.
    lane_end: Vec<Option<TimeNs>>,
    /// Recorded and replayed end of the previous step.
    prev_end: Option<(TimeNs, TimeNs)>,
    /// Replayed minus recorded duration, per step.
    pub(crate) step_deltas_ns: Vec<TimeNs>,
}

const UNSET: TimeNs = TimeNs::MIN;

impl<'c> Replay<'c> {
    pub(crate) fn new(change: &'c Change, lanes: usize) -> Self {
        Replay {
            change,
            behind_ns: 0,
            anchor_ns: None,
            lane_end: vec![None; lanes],
            prev_end: None,
            step_deltas_ns: Vec::new(),
        }
    }

    /// Host time `t` on the replayed clock.
    fn host(&self, t: TimeNs) -> TimeNs {
        let collapsed = self.change.collapsed_at(t);
        let mut new = t - collapsed - self.behind_ns;
        if self.change.host_slowdown > 0.0 {
            if let Some(a) = self.anchor_ns.filter(|&a| a < t) {
                let worked_ns = (t - a) - (collapsed - self.change.collapsed_at(a));
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_precision_loss,
                    reason = "a fraction of a step's host time"
                )]
                let extra_ns = (worked_ns as f64 * self.change.host_slowdown) as TimeNs;
                new += extra_ns;
            }
        }
        new
    }

    /// Replays one step; `has_steps` false: the step is a chunk of the window, the window
    /// running from its first to its last GPU op.
    pub(crate) fn step(&mut self, g: &StepGraph, has_steps: bool) {
        if self.anchor_ns.is_none() {
            self.anchor_ns = Some(g.host_start_ns);
        }
        let mut host_start = vec![UNSET; g.host.len()];
        let mut gpu_end = vec![UNSET; g.gpu.len()];
        let mut gpu_start = vec![UNSET; g.gpu.len()];
        let by_end = &g.host_by_end;
        let new_host_start = self.host(g.host_start_ns);
        let mut new_host_end = None;
        let (mut hs, mut he, mut gs) = (0usize, 0usize, 0usize);
        let mut marker_done = !has_steps;
        loop {
            // Next event: host end (0), host-range end (1), host start (2), GPU start (3).
            let mut next: Option<(TimeNs, u8)> = None;
            let mut consider = |t: TimeNs, class: u8| {
                if next.is_none_or(|n| (t, class) < n) {
                    next = Some((t, class));
                }
            };
            if let Some(&i) = by_end.get(he) {
                consider(g.host[i as usize].end_ns, 0);
            }
            if !marker_done {
                consider(g.host_end_ns, 1);
            }
            if let Some(h) = g.host.get(hs) {
                consider(h.start_ns, 2);
            }
            if let Some(n) = g.gpu.get(gs) {
                consider(n.start_ns, 3);
            }
            let Some((_, class)) = next else { break };
            match class {
                0 => {
                    let i = by_end[he] as usize;
                    he += 1;
                    self.host_end(g, i, &host_start, &gpu_end);
                }
                1 => {
                    marker_done = true;
                    new_host_end = Some(self.host(g.host_end_ns));
                }
                2 => {
                    host_start[hs] = self.host(g.host[hs].start_ns);
                    hs += 1;
                }
                _ => {
                    let (s, e) = self.gpu_op(&g.gpu[gs], &host_start, &gpu_end);
                    gpu_start[gs] = s;
                    gpu_end[gs] = e;
                    let last = &mut self.lane_end[g.gpu[gs].lane.0 as usize];
                    *last = Some(last.map_or(e, |l| l.max(e)));
                    gs += 1;
                }
            }
        }
        let recorded_gpu_end = g.gpu.iter().map(|n| n.end_ns).max();
        let replayed_gpu_end = gpu_end.iter().copied().max();
        let (recorded, replayed) = if has_steps {
            let rec_end = recorded_gpu_end.map_or(g.host_end_ns, |e| e.max(g.host_end_ns));
            let new_end = new_host_end.unwrap_or(new_host_start);
            let new_end = replayed_gpu_end.map_or(new_end, |e| e.max(new_end));
            let (rec_start, new_start) = match self.prev_end {
                Some((r, n)) => (r.max(g.host_start_ns), n.max(new_host_start)),
                None => (g.host_start_ns, new_host_start),
            };
            self.prev_end = Some((rec_end, new_end));
            (rec_end - rec_start, new_end - new_start)
        } else {
            // A chunk of the window: from the first op's start, or from where the chunks
            // before it ended, to the last end so far, so the chunks' deltas add up to the
            // window's.
            let rec = g.gpu.iter().map(|n| n.start_ns).min().zip(recorded_gpu_end);
            let new = gpu_start.iter().copied().min().zip(replayed_gpu_end);
            match (rec, new) {
                (Some((rs, re)), Some((ns, ne))) => {
                    let ((rs, re), (ns, ne)) = match self.prev_end {
                        Some((r, n)) => ((r, re.max(r)), (n, ne.max(n))),
                        None => ((rs, re), (ns, ne)),
                    };
                    self.prev_end = Some((re, ne));
                    (re - rs, ne - ns)
                }
                _ => (0, 0),
            }
        };
        self.step_deltas_ns.push(replayed - recorded);
    }

    fn host_end(&mut self, g: &StepGraph, i: usize, host_start: &[TimeNs], gpu_end: &[TimeNs]) {
        let h = &g.host[i];
        let HostKind::Blocking(_) = h.kind else {
            return;
        };
        let new_start = host_start[i];
        if new_start == UNSET || self.change.removes(Interval::new(h.start_ns, h.end_ns)) {
            // A removed call neither waits nor returns: the collapse already took its time.
            return;
        }
        let (waited_until, new_waited) = if h.awaited == NONE {
            (h.start_ns, UNSET)
        } else {
            let j = h.awaited as usize;
            (g.gpu[j].end_ns.max(h.start_ns), gpu_end[j])
        };
        // Negative where a copy's call returned just before its own copy ended.
        let ret = h.end_ns - waited_until;
        let new_end = if self.change.is_async(h.span) || new_waited == UNSET {
            new_start + ret.max(0)
        } else {
            (new_start.max(new_waited) + ret).max(new_start)
        };
        // The host now runs this far behind its recorded clock.
        self.behind_ns = h.end_ns - self.change.collapsed_at(h.end_ns) - new_end;
        self.anchor_ns = Some(h.end_ns);
    }

    fn gpu_op(&self, n: &GpuNode, host_start: &[TimeNs], gpu_end: &[TimeNs]) -> (TimeNs, TimeNs) {
        let change = self.change;
        let launch_at = (n.launch != NONE)
            .then(|| host_start[n.launch as usize])
            .filter(|&s| s != UNSET)
            .map(|s| s + n.launch_ns);
        let prev_end = if n.stream_prev != NONE {
            Some(gpu_end[n.stream_prev as usize]).filter(|&e| e != UNSET)
        } else if n.prev_end_ns.is_some() {
            self.lane_end[n.lane.0 as usize]
        } else {
            None
        };
        let queue_at = prev_end.map(|e| e + n.queue_ns);
        let free = change.is_free(n.start_ns);
        let start = match (launch_at, queue_at) {
            (Some(_), Some(q)) if free => Some(q),
            (Some(l), Some(q)) => Some(l.max(q)),
            (l, q) => l.or(q),
        };
        let released = (n.after != NONE)
            .then(|| gpu_end[n.after as usize])
            .filter(|&e| e != UNSET);
        let start = match (start, released) {
            // Released by another stream's op: the wait follows it.
            (s, Some(e)) => s.map_or(e + n.wait_ns, |s| s.max(e + n.wait_ns)),
            (Some(s), None) => s + n.wait_ns,
            (None, None) => n.start_ns,
        };
        let dur = if change.hide_communication && n.communication {
            0
        } else if change.faster_ops.is_empty() {
            n.end_ns - n.start_ns
        } else {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_precision_loss,
                reason = "a fraction of one op's duration"
            )]
            let shorter =
                ((n.end_ns - n.start_ns) as f64 * change.time_fraction(n.span.0)) as TimeNs;
            shorter
        };
        (start, start + dur)
    }
}
