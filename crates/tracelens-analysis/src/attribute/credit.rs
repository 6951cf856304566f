//! Which finding owns each idle nanosecond: the idle segments of one device are credited to at
//! most one finding each, so the GPU-idle wins of all findings add up to at most the idle time.
//!
//! - `data_loading` → the DataLoader finding;
//! - `sync_drain` → the sync that drained the queue (already capped by the attribution at the
//!   time that sync blocked the host);
//! - `launch_latency` inside a launch-bound stretch, and `host_compute` there up to
//!   [`DISPATCH_BOUND_NS`] per gap → the launch-bound finding (the CPU cannot issue kernels
//!   fast enough there); host compute beyond that bound is CPU work of its own;
//! - `host_compute` inside a kernel's slow first launch (module load) → the host-compute
//!   finding, as one-time warm-up (never launch-bound);
//! - other `host_compute` → CPU oversubscription for the part in which the launching thread
//!   was runnable but off the CPU, the host-compute finding for the rest;
//! - GPU-side waits (`cross_stream_wait`, `collective_wait`, `gpu_wait`) → the finding of that
//!   wait, when it is big enough to report;
//! - launch latency outside stretches, graph replays and unattributed time → no finding (the
//!   verdict reports them).

use crate::attribute::idle::{
    credit_host_ops, credit_one_time_calls, credit_set_up_ops, host_parts, name_host_ops,
    DeviceIdle, Gap, HostPart, HostTime, IdleCause, SpanContexts,
};
use crate::measure::environment::Framework;
use crate::measure::threads::ThreadIndex;
use rustc_hash::FxHashMap;
use tracelens_model::{Interval, SpanId, TimeNs, Trace};

/// The idle time of one device, credited to findings.
#[derive(Clone, Debug, Default)]
pub struct IdleCredit {
    /// To the DataLoader finding.
    pub data_loader_ns: TimeNs,
    /// To each draining sync call.
    pub by_sync: FxHashMap<SpanId, TimeNs>,
    /// To the launch-bound finding.
    pub launch_bound_ns: TimeNs,
    /// To the host-compute finding.
    pub host_compute_ns: TimeNs,
    /// The CPU ops that ran in the host-compute finding's time, largest first.
    pub host_compute_ops: Vec<(String, TimeNs)>,
    /// The host-compute finding's time by sub-cause, largest first; sums to
    /// `host_compute_ns`.
    pub host_compute_parts: Vec<HostPart>,
    /// To the CPU-oversubscription finding.
    pub oversubscription_ns: TimeNs,
    /// To the GPU-side wait findings, by cause (cross-stream, collective, unexplained).
    pub gpu_waits: std::collections::BTreeMap<IdleCause, TimeNs>,
}

impl IdleCredit {
    /// Adds the credit of other gaps (before the ops are named).
    fn add(&mut self, other: IdleCredit) {
        self.data_loader_ns += other.data_loader_ns;
        for (s, t) in other.by_sync {
            *self.by_sync.entry(s).or_default() += t;
        }
        self.launch_bound_ns += other.launch_bound_ns;
        self.host_compute_ns += other.host_compute_ns;
        self.oversubscription_ns += other.oversubscription_ns;
        for (c, t) in other.gpu_waits {
            *self.gpu_waits.entry(c).or_default() += t;
        }
    }

    /// Everything credited to some finding.
    #[must_use]
    pub fn total_ns(&self) -> TimeNs {
        self.data_loader_ns
            + self.by_sync.values().sum::<TimeNs>()
            + self.launch_bound_ns
            + self.host_compute_ns
            + self.oversubscription_ns
            + self.gpu_waits.values().sum::<TimeNs>()
    }
}

/// Credits the idle of `idle`; `stretches` are the device's launch-bound stretches, sorted by
/// start and disjoint; host work before `set_up_end_ns` is the program's set-up (warm-up).
/// The gaps are credited in chunks on both cores (every figure is a sum, so the chunks'
/// credits add up to the serial one).
#[must_use]
pub fn credit_idle(
    trace: &Trace,
    idle: &DeviceIdle,
    stretches: &[Interval],
    threads: &ThreadIndex,
    fw: &Framework,
    set_up_end_ns: Option<TimeNs>,
) -> IdleCredit {
    use rayon::prelude::*;
    let chunk = (idle.gaps.len() / (rayon::current_num_threads().max(1) * 8)).max(256);
    let (mut credit, host_ops) = idle
        .gaps
        .par_chunks(chunk)
        .map(|gaps| {
            let mut credit = IdleCredit::default();
            let mut host_ops = HostTime::default();
            let mut contexts = SpanContexts::default();
            for gap in gaps {
                credit_gap(
                    trace,
                    idle,
                    gap,
                    (stretches, set_up_end_ns),
                    threads,
                    &mut credit,
                    &mut host_ops,
                    &mut contexts,
                );
            }
            (credit, host_ops)
        })
        .reduce(
            || (IdleCredit::default(), HostTime::default()),
            |(mut a, mut a_ops), (b, b_ops)| {
                a.add(b);
                for (k, t) in b_ops {
                    *a_ops.entry(k).or_default() += t;
                }
                (a, a_ops)
            },
        );
    credit.host_compute_ops = name_host_ops(trace, &host_ops, fw);
    credit.host_compute_parts = host_parts(trace, &host_ops, fw, credit.host_compute_ns);
    credit
}

/// Credits one gap's segments to `credit` (and its host-compute ops to `host_ops`).
#[allow(clippy::too_many_arguments)]
fn credit_gap(
    trace: &Trace,
    idle: &DeviceIdle,
    gap: &Gap,
    (stretches, set_up_end_ns): (&[Interval], Option<TimeNs>),
    threads: &ThreadIndex,
    credit: &mut IdleCredit,
    host_ops: &mut HostTime,
    contexts: &mut SpanContexts,
) {
    let lane = gap.lane();
    let mut budget = DISPATCH_BOUND_NS;
    for seg in idle.segments_of(gap) {
        let iv = seg.interval;
        match seg.cause {
            IdleCause::DataLoading => credit.data_loader_ns += iv.dur_ns(),
            IdleCause::SyncDrain => {
                if let Some(s) = seg.sync() {
                    *credit.by_sync.entry(s).or_default() += iv.dur_ns();
                }
            }
            IdleCause::LaunchLatency => {
                credit.launch_bound_ns += inside(stretches, iv);
            }
            IdleCause::HostCompute => {
                // Before the first kernel of a cold window the program sets itself up
                // (uploads weights, builds the model): one-time work, whatever the ops.
                let set_up = set_up_end_ns
                    .and_then(|end| Interval::new(iv.start_ns, end.min(iv.end_ns)).clip(iv))
                    .filter(|p| p.dur_ns() > 0);
                let iv = match set_up {
                    Some(p) => {
                        credit.host_compute_ns += p.dur_ns();
                        if let Some(l) = lane {
                            credit_set_up_ops(
                                trace,
                                l,
                                p,
                                threads.first_calls(),
                                host_ops,
                                contexts,
                            );
                        }
                        if p.end_ns >= iv.end_ns {
                            continue;
                        }
                        Interval::new(p.end_ns, iv.end_ns)
                    }
                    None => iv,
                };
                // A kernel's slow first launch (module load) is one-time host work, not
                // launch overhead: the host-compute finding's warm-up part.
                let one_time =
                    lane.map_or_else(Vec::new, |l| threads.lane(l).one_time_calls_within(iv));
                let mut cursor = iv.start_ns;
                let mut rest = Vec::new();
                for &(launch, _) in &one_time {
                    rest.push(Interval::new(cursor, launch.start_ns));
                    credit.host_compute_ns += launch.dur_ns();
                    cursor = launch.end_ns;
                }
                rest.push(Interval::new(cursor, iv.end_ns));
                credit_one_time_calls(&one_time, host_ops);
                for part in rest.into_iter().filter(|p| p.dur_ns() > 0) {
                    // Inside a stretch, CPU work up to the gap's dispatch budget is launch
                    // overhead; beyond it the CPU is doing work of its own.
                    let mut own = outside(stretches, part);
                    for piece in inside_pieces(stretches, part) {
                        let overhead = budget.min(piece.dur_ns());
                        budget -= overhead;
                        credit.launch_bound_ns += overhead;
                        if overhead < piece.dur_ns() {
                            own.push(Interval::new(piece.start_ns + overhead, piece.end_ns));
                        }
                    }
                    for piece in own {
                        // Runnable but not running only when the capture says why
                        // threads left the CPU; otherwise it may have been a wait.
                        let off_cpu = lane
                            .filter(|_| trace.source.records_thread_states)
                            .map_or(0, |l| threads.lane(l).unexplained_off_cpu_within(piece));
                        credit.oversubscription_ns += off_cpu;
                        credit.host_compute_ns += piece.dur_ns() - off_cpu;
                        if let Some(l) = lane {
                            credit_host_ops(
                                trace,
                                l,
                                piece,
                                &[],
                                threads.first_calls(),
                                host_ops,
                                contexts,
                            );
                        }
                    }
                }
            }
            cause if cause.is_gpu_side_wait() && cause != IdleCause::GraphReplay => {
                *credit.gpu_waits.entry(cause).or_default() += iv.dur_ns();
            }
            _ => {}
        }
    }
}

/// The most CPU work per gap inside a launch-bound stretch that counts as launch overhead
/// (framework dispatch and the launch call); beyond it, the CPU is doing work of its own and
/// the time goes to the host-compute finding. Launch-bound steps spend microseconds per op.
pub const DISPATCH_BOUND_NS: TimeNs = tracelens_model::NS_PER_MS;

/// The pieces of `iv` inside the stretches, in order.
fn inside_pieces(stretches: &[Interval], iv: Interval) -> Vec<Interval> {
    near(stretches, iv)
        .iter()
        .filter_map(|s| s.clip(iv))
        .collect()
}

/// The stretches that may overlap `iv`.
fn near(stretches: &[Interval], iv: Interval) -> &[Interval] {
    let from = stretches.partition_point(|s| s.end_ns <= iv.start_ns);
    let to = stretches.partition_point(|s| s.start_ns < iv.end_ns);
    &stretches[from..to.max(from)]
}

/// Time of `iv` inside the stretches.
fn inside(stretches: &[Interval], iv: Interval) -> TimeNs {
    near(stretches, iv)
        .iter()
        .filter_map(|s| s.clip(iv))
        .map(|c| c.dur_ns())
        .sum()
}

/// The pieces of `iv` outside the stretches, in order.
fn outside(stretches: &[Interval], iv: Interval) -> Vec<Interval> {
    let mut out = Vec::new();
    let mut cursor = iv.start_ns;
    for s in near(stretches, iv) {
        if s.start_ns > cursor {
            out.push(Interval::new(cursor, s.start_ns.min(iv.end_ns)));
        }
        cursor = cursor.max(s.end_ns);
    }
    if cursor < iv.end_ns {
        out.push(Interval::new(cursor, iv.end_ns));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::host_work::HostWork;
    use crate::diagnose::detectors::testing::span_us;
    use crate::finding_kind::FindingKind;
    use tracelens_model::{SourceInfo, SpanKind, NS_PER_US};

    /// Ten rounds of Python work, a launch and a 2 µs kernel (five kernels, each launched
    /// twice); the launch numbered `slow` takes 5 ms instead of 10 µs.
    fn tiny_kernels(python_us: i64, slow: u64) -> tracelens_model::Trace {
        let (mut b, cpu, gpu) = crate::diagnose::detectors::testing::thread_and_stream();
        let mut span = |kind, lane, name: &str, start_us: i64, dur_us: i64, corr: Option<u64>| {
            span_us(&mut b, kind, lane, name, (start_us, dur_us), corr);
        };
        let mut t = 100;
        for i in 0..10_u64 {
            span(
                SpanKind::PythonFunction,
                cpu,
                "train.py(10): step",
                t,
                python_us,
                None,
            );
            let launch = if i == slow { 5_000 } else { 10 };
            let at = t + python_us;
            span(
                SpanKind::Runtime,
                cpu,
                "cudaLaunchKernel",
                at,
                launch,
                Some(i + 1),
            );
            let kernel = format!("k{}", i % 5);
            span(
                SpanKind::Kernel,
                gpu,
                &kernel,
                at + launch + 5,
                2,
                Some(i + 1),
            );
            t = at + launch + 7;
        }
        b.finish(SourceInfo::default())
    }

    #[test]
    fn a_kernels_slow_first_launch_is_warm_up_and_a_later_slow_launch_is_not() {
        let warm = |slow| {
            crate::diagnose(&tiny_kernels(20, slow))
                .findings
                .into_iter()
                .find(|f| f.sub_cause == Some(HostWork::WarmUp))
        };
        // Launch 2 is kernel k2's first; launch 7 launches k2 again.
        let first = warm(2).expect("the first launch is warm-up");
        assert!(first.title.contains("cudaLaunchKernel"), "{}", first.title);
        assert!(first.estimated_win_ns >= 4_900 * NS_PER_US, "{first:#?}");
        assert!(warm(7).is_none(), "a later slow launch is not one-time");
    }

    #[test]
    fn long_cpu_work_between_tiny_kernels_is_host_compute_not_launch_overhead() {
        let win = |python_us, kind| {
            crate::diagnose(&tiny_kernels(python_us, 99))
                .findings
                .iter()
                .filter(|f| f.kind == kind)
                .map(|f| f.estimated_win_ns)
                .sum::<TimeNs>()
        };
        // 20 µs of Python per launch: the launches cannot keep up, launch-bound.
        assert!(win(20, FindingKind::LaunchBound) > 0);
        // 5 ms of Python per launch: at most the dispatch bound per gap is launch overhead.
        let bound = win(5_000, FindingKind::LaunchBound);
        assert!(bound <= 10 * DISPATCH_BOUND_NS, "{bound}");
        assert!(win(5_000, FindingKind::HostCompute) >= 30 * tracelens_model::NS_PER_MS);
    }

    #[test]
    fn pieces_inside_and_outside_the_stretches_tile_the_interval() {
        let stretches = [Interval::new(10, 20), Interval::new(30, 40)];
        let iv = Interval::new(15, 35);
        assert_eq!(inside(&stretches, iv), 10);
        assert_eq!(outside(&stretches, iv), vec![Interval::new(20, 30)]);
        let all = Interval::new(0, 50);
        let out: TimeNs = outside(&stretches, all).iter().map(|p| p.dur_ns()).sum();
        assert_eq!(inside(&stretches, all) + out, 50);
        assert_eq!(outside(&[], iv), vec![iv]);
    }
}
