//! Per-thread facts the diagnoses query many times: DataLoader ranges, blocking syncs,
//! stream-wait calls. Built once per trace.

use crate::measure::intervals::union;
use crate::measure::one_time::FIRST_CALL_RATIO;
use crate::vocabulary::api::{
    blocking_kind, is_async_copy, is_stream_wait, launched_pageable_copy, BlockingKind,
};
use crate::vocabulary::memo::PerName;
use crate::vocabulary::ops::is_data_loader;
use rustc_hash::FxHashMap;
use tracelens_model::{Interval, LaneId, NameId, SpanId, SpanKind, TimeNs, Trace};

/// Facts about one CPU thread.
#[derive(Clone, Debug, Default)]
pub struct ThreadFacts {
    /// Union of the thread's DataLoader `__next__` ranges, sorted.
    pub data_loading: Vec<Interval>,
    /// Host-blocking API calls, sorted by end: `(end_ns, span, how it blocks)`.
    pub blocking_calls: Vec<(TimeNs, SpanId, BlockingKind)>,
    /// Start times of stream-wait calls, sorted.
    pub stream_waits: Vec<TimeNs>,
    /// OS waits (`pthread_cond_wait`, `poll`, …) of the thread, sorted by start.
    pub os_waits: Vec<(Interval, NameId)>,
    /// Stretches in which the thread was off the CPU, sorted by start.
    pub off_cpu: Vec<Interval>,
    /// One-time calls, sorted by start, with the call's name: the first launch of a kernel
    /// that took [`FIRST_LAUNCH_LOAD_NS`] or more and several times its later launches
    /// (module load, lazy init), the thread's first
    /// API call, or its first call of an API name, when it took as long (context creation,
    /// the first stream or pool), and calls whose name is one-time work (module and library
    /// loads, NVRTC, graph capture and instantiation).
    pub one_time_calls: Vec<(Interval, NameId)>,
}

/// A thread's first API call, or its first call of an API name, that takes this long creates
/// the context or sets up what the call uses: one-time work (calls take microseconds).
pub const ONE_TIME_LAUNCH_NS: TimeNs = tracelens_model::NS_PER_MS;

/// A kernel's first launch that takes this long, and [`FIRST_CALL_RATIO`] times its later
/// launches when it has any, loads the kernel's module (lazy loading): one-time work.
pub const FIRST_LAUNCH_LOAD_NS: TimeNs = 50 * tracelens_model::NS_PER_US;

/// The launch calls that launch a kernel name for the first time in the trace and cost at
/// least [`FIRST_CALL_RATIO`] times the mean of that kernel's later launch calls (all first
/// launches of a kernel launched once).
fn first_launches(trace: &Trace) -> rustc_hash::FxHashSet<SpanId> {
    // Per kernel name: the first launch (start, call), the launch calls seen and their time.
    let mut first: FxHashMap<NameId, ((TimeNs, SpanId), u64, TimeNs)> = FxHashMap::default();
    for (i, s) in trace.spans.iter().enumerate() {
        if s.kind != SpanKind::Kernel {
            continue;
        }
        let Some(launch) = trace.launch_of(SpanId::at(i)) else {
            continue;
        };
        let call = trace.span(launch);
        let at = call.start_ns;
        first
            .entry(s.name)
            .and_modify(|e| {
                if at < e.0 .0 {
                    e.0 = (at, launch);
                }
                e.1 += 1;
                e.2 = e.2.saturating_add(call.dur_ns);
            })
            .or_insert(((at, launch), 1, call.dur_ns));
    }
    first
        .into_values()
        .filter(|&((_, launch), calls, total_ns)| {
            let first_ns = trace.span(launch).dur_ns;
            let later = calls - 1;
            later == 0
                || first_ns.saturating_mul(i64::try_from(later).unwrap_or(i64::MAX))
                    >= FIRST_CALL_RATIO.saturating_mul(total_ns - first_ns)
        })
        .map(|((_, l), _, _)| l)
        .collect()
}

/// What an API name says about a call.
#[derive(Clone, Copy)]
enum NameClass {
    Blocking(BlockingKind),
    AsyncCopy,
    StreamWait,
    Other,
}

impl NameClass {
    fn of(name: &str) -> Self {
        if let Some(k) = blocking_kind(name) {
            NameClass::Blocking(k)
        } else if is_async_copy(name) {
            NameClass::AsyncCopy
        } else if is_stream_wait(name) {
            NameClass::StreamWait
        } else {
            NameClass::Other
        }
    }
}

/// [`ThreadFacts`] for every lane (empty for GPU lanes).
#[derive(Clone, Debug, Default)]
pub struct ThreadIndex {
    facts: Vec<ThreadFacts>,
    first_calls: crate::measure::one_time::FirstCalls,
}

impl ThreadIndex {
    /// Each op name's first call and each thread's first API call
    /// ([`crate::measure::one_time`]).
    #[must_use]
    pub fn first_calls(&self) -> &crate::measure::one_time::FirstCalls {
        &self.first_calls
    }

    /// Scans every CPU lane once; API names are classified once per distinct name.
    #[must_use]
    pub fn build(trace: &Trace) -> Self {
        let mut classes = PerName::new(trace, NameClass::of);
        let mut loader = PerName::new(trace, is_data_loader);
        let mut one_time_name = PerName::new(trace, crate::vocabulary::activity::is_one_time);
        let mut os_wait = PerName::new(trace, crate::vocabulary::api::is_os_wait);
        let firsts = first_launches(trace);
        // The lane (plus one) each API name was last called on: a call whose name this lane
        // has not called before is that name's first call here.
        let mut called_on: Vec<u32> = vec![0; trace.names.len()];
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
                let mut os_waits = Vec::new();
                let mut off_cpu = Vec::new();
                let mut one_time = Vec::new();
                let mut seen_call = false;
                for id in trace.lane_span_ids(LaneId::at(i)) {
                    let s = trace.span(id);
                    let name = trace.names.get(s.name);
                    match s.kind {
                        SpanKind::CpuOp | SpanKind::UserAnnotation if loader.of(trace, s.name) => {
                            loads.push(s.interval())
                        }
                        SpanKind::Runtime | SpanKind::Driver => {
                            let first_call = !seen_call;
                            seen_call = true;
                            let lane_mark = u32::try_from(i + 1).unwrap_or(u32::MAX);
                            let first_of_name = called_on
                                .get_mut(s.name.0 as usize)
                                .is_some_and(|c| std::mem::replace(c, lane_mark) != lane_mark);
                            match classes.of(trace, s.name) {
                                NameClass::Blocking(kind) => blocking.push((s.end_ns(), id, kind)),
                                NameClass::AsyncCopy => {
                                    if launched_pageable_copy(trace, id) {
                                        blocking.push((
                                            s.end_ns(),
                                            id,
                                            BlockingKind::PageableAsyncCopy,
                                        ));
                                    }
                                }
                                NameClass::StreamWait => waits.push(s.start_ns),
                                NameClass::Other => {
                                    let slow_first_launch = s.dur_ns >= FIRST_LAUNCH_LOAD_NS
                                        && firsts.contains(&id)
                                        && crate::vocabulary::api::is_kernel_launch(name);
                                    // The thread's first slow call creates the context;
                                    // the first slow call of an API name sets up what it
                                    // uses (a stream pool, a memory pool, a module).
                                    let context_init = (first_call || first_of_name)
                                        && s.dur_ns >= ONE_TIME_LAUNCH_NS;
                                    let after_previous = one_time.last().is_none_or(
                                        |(p, _): &(Interval, NameId)| p.end_ns <= s.start_ns,
                                    );
                                    if after_previous
                                        && (slow_first_launch
                                            || context_init
                                            || one_time_name.of(trace, s.name))
                                    {
                                        one_time.push((s.interval(), s.name));
                                    }
                                }
                            }
                        }
                        // A wait nested in the previous one (OSRT nesting) is already
                        // counted by it.
                        SpanKind::OsRuntime if os_wait.of(trace, s.name) => {
                            let nested =
                                os_waits
                                    .last()
                                    .is_some_and(|(prev, _): &(Interval, NameId)| {
                                        s.end_ns() <= prev.end_ns
                                    });
                            if !nested {
                                os_waits.push((s.interval(), s.name));
                            }
                        }
                        SpanKind::OffCpu => off_cpu.push(s.interval()),
                        _ => {}
                    }
                }
                blocking.sort_unstable();
                ThreadFacts {
                    data_loading: union(loads),
                    blocking_calls: blocking,
                    stream_waits: waits,
                    os_waits,
                    off_cpu,
                    one_time_calls: one_time,
                }
            })
            .collect();
        ThreadIndex {
            facts,
            first_calls: crate::measure::one_time::FirstCalls::build(trace),
        }
    }

    /// Facts of one lane.
    #[must_use]
    pub fn lane(&self, lane: LaneId) -> &ThreadFacts {
        &self.facts[lane.0 as usize]
    }

    /// The parts of `window` inside DataLoader ranges of any thread, in order.
    #[must_use]
    pub fn data_loading_within(&self, window: Interval) -> Vec<Interval> {
        union(
            self.facts
                .iter()
                .flat_map(|f| f.data_loading_within(window))
                .collect(),
        )
    }

    /// Every host-blocking call of the trace, lane by lane.
    pub fn blocking_calls(&self) -> impl Iterator<Item = (SpanId, BlockingKind)> + '_ {
        self.facts
            .iter()
            .flat_map(|f| f.blocking_calls.iter().map(|&(_, id, kind)| (id, kind)))
    }
}

impl ThreadFacts {
    /// The latest blocking call that returned inside `[from_ns, until_ns]`.
    #[must_use]
    pub fn blocking_call_ending_in(&self, from_ns: TimeNs, until_ns: TimeNs) -> Option<SpanId> {
        let upto = self
            .blocking_calls
            .partition_point(|&(end, _, _)| end <= until_ns);
        let &(end, id, _) = self.blocking_calls[..upto].last()?;
        (end >= from_ns).then_some(id)
    }

    /// The parts of `window` inside DataLoader ranges, in order.
    #[must_use]
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

    /// Time inside `window` the thread spent in OS waits, per call name.
    pub fn os_waits_within(&self, window: Interval) -> impl Iterator<Item = (NameId, TimeNs)> + '_ {
        // Waits of one thread are kept disjoint (see `build`), so their ends are sorted too.
        let first = self
            .os_waits
            .partition_point(|(iv, _)| iv.end_ns <= window.start_ns);
        self.os_waits[first..]
            .iter()
            .take_while(move |(iv, _)| iv.start_ns < window.end_ns)
            .filter_map(move |&(iv, name)| iv.clip(window).map(|c| (name, c.dur_ns())))
    }

    /// Time inside `window` the thread was off the CPU outside any traced OS wait: it was not
    /// blocked on anything we can see, so most likely runnable and waiting for a core.
    #[must_use]
    pub fn unexplained_off_cpu_within(&self, window: Interval) -> TimeNs {
        let first = self
            .off_cpu
            .partition_point(|iv| iv.end_ns <= window.start_ns);
        self.off_cpu[first..]
            .iter()
            .take_while(|iv| iv.start_ns < window.end_ns)
            .filter_map(|iv| iv.clip(window))
            .map(|off| {
                let waited: TimeNs = self.os_waits_within(off).map(|(_, ns)| ns).sum();
                (off.dur_ns() - waited).max(0)
            })
            .sum()
    }

    /// The one-time launch calls overlapping `window`, clipped to it, in order.
    #[must_use]
    pub fn one_time_calls_within(&self, window: Interval) -> Vec<(Interval, NameId)> {
        let first = self
            .one_time_calls
            .partition_point(|(iv, _)| iv.end_ns <= window.start_ns);
        self.one_time_calls[first..]
            .iter()
            .take_while(|(iv, _)| iv.start_ns < window.end_ns)
            .filter_map(|&(iv, n)| iv.clip(window).map(|c| (c, n)))
            .collect()
    }

    /// Whether a stream-wait call started inside `[from_ns, until_ns]`.
    #[must_use]
    pub fn stream_wait_between(&self, from_ns: TimeNs, until_ns: TimeNs) -> bool {
        let i = self.stream_waits.partition_point(|&t| t < from_ns);
        self.stream_waits.get(i).is_some_and(|&t| t <= until_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five launches of one kernel, 1 ms apart: the first call takes `first_us`, the later
    /// ones `later_us`.
    fn launches(first_us: i64, later_us: i64) -> Trace {
        let events: Vec<String> = (0..5i64)
            .flat_map(|i| {
                let t = i * 1_000;
                let dur = if i == 0 { first_us } else { later_us };
                [
                    format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{t},"dur":{dur},"args":{{"correlation":{}}}}}"#, i + 1),
                    format!(r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{},"dur":50,"args":{{"correlation":{},"device":0,"stream":7}}}}"#, t + dur + 5, i + 1),
                ]
            })
            .collect();
        let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
        tracelens_kineto::import_reader(
            std::io::Cursor::new(text),
            std::path::Path::new("launches.json"),
            0,
            None,
        )
        .unwrap()
    }

    fn one_time_calls(trace: &Trace) -> usize {
        let index = ThreadIndex::build(trace);
        (0..trace.lanes.len())
            .map(|l| index.lane(LaneId::at(l)).one_time_calls.len())
            .sum()
    }

    #[test]
    fn a_slow_first_launch_is_a_module_load_and_steadily_slow_launches_are_not() {
        // 120 µs against 5 µs later: the first launch loaded the module.
        assert_eq!(one_time_calls(&launches(120, 5)), 1);
        // Every launch takes 120 µs: the first is no different from the rest.
        assert_eq!(one_time_calls(&launches(120, 120)), 0);
        // A fast first launch is a launch.
        assert_eq!(one_time_calls(&launches(20, 5)), 0);
    }
}
