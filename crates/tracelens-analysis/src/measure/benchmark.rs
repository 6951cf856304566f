//! The loops a benchmark times: kernel launches between two event records on one thread
//! (`cudaEventRecord(start)`, N launches, `cudaEventRecord(stop)`). What lies between such
//! loops (set-up, copies, result checks) is the harness, outside every timing the program
//! reports.

use rustc_hash::FxHashMap;
use tracelens_model::{Interval, NameId, SpanKind, TimeNs, Trace};

/// Launches between two event records from which they are a timed loop.
pub const MIN_TIMED_LAUNCHES: u64 = 10;

/// One loop a benchmark times.
#[derive(Clone, Debug, PartialEq)]
pub struct TimedLoop {
    /// Kernel launches between its two event records.
    pub launches: u64,
    /// First to last GPU op those launches ran.
    pub gpu: Interval,
    /// The kernel launched most in it.
    pub kernel: NameId,
    /// That kernel's mean time per launch in the loop.
    pub kernel_mean_ns: TimeNs,
    /// GPU time of the loop's ops (their sum).
    pub busy_ns: TimeNs,
    /// Event pairs that time it: 1 for a loop between two records, one per launch (or few)
    /// for a loop timed launch by launch.
    pub timings: u64,
}

impl TimedLoop {
    /// Whether the loop is timed launch by launch: each timing holds fewer than
    /// [`MIN_TIMED_LAUNCHES`] launches.
    #[must_use]
    pub fn timed_per_launch(&self) -> bool {
        self.timings > 1
    }
}

/// What one thread launched since its last event record.
#[derive(Default)]
struct SinceRecord {
    launches: u64,
    /// First to last kernel those launches ran.
    gpu: Option<Interval>,
    /// Launches and GPU time per kernel name.
    kernels: FxHashMap<NameId, (u64, TimeNs)>,
}

/// The timed loops whose GPU work starts inside `window`, in time order: launches between two
/// event records, or a run of timings of one launch each of the same kernel (a benchmark that
/// times every launch on its own).
#[must_use]
pub fn timed_loops(trace: &Trace, window: Interval) -> Vec<TimedLoop> {
    let mut names: FxHashMap<NameId, (bool, bool)> = FxHashMap::default();
    let mut out = Vec::new();
    for lane in (0..trace.lanes.len()).map(tracelens_model::LaneId::at) {
        if trace.lane(lane).key.is_gpu() {
            continue;
        }
        // What this thread launched since its last event record.
        let mut since: Option<SinceRecord> = None;
        // Consecutive short timings of one kernel.
        let mut run: Option<TimedLoop> = None;
        for id in trace.lane_span_ids(lane) {
            let s = trace.span(id);
            if !s.kind.is_api_call() {
                continue;
            }
            let (record, launch) = *names.entry(s.name).or_insert_with(|| {
                let n = trace.names.get(s.name);
                (
                    crate::vocabulary::api::is_event_record(n),
                    crate::vocabulary::api::is_kernel_launch(n),
                )
            });
            if record {
                if let Some(timing) = since.take().and_then(SinceRecord::into_loop) {
                    if timing.launches >= MIN_TIMED_LAUNCHES {
                        flush(&mut run, &mut out);
                        out.push(timing);
                    } else {
                        extend_run(&mut run, timing, &mut out);
                    }
                }
                since = Some(SinceRecord::default());
            } else if let (true, Some(open)) = (launch, since.as_mut()) {
                open.launches += 1;
                for &op in trace.launched_by(id) {
                    let o = trace.span(op);
                    if o.kind != SpanKind::Kernel {
                        continue;
                    }
                    open.gpu = Some(open.gpu.map_or(o.interval(), |g| g.hull(o.interval())));
                    let k = open.kernels.entry(o.name).or_default();
                    k.0 += 1;
                    k.1 += o.dur_ns;
                }
            }
        }
        flush(&mut run, &mut out);
    }
    out.retain(|l| window.start_ns <= l.gpu.start_ns && l.gpu.start_ns < window.end_ns);
    out.sort_by_key(|l| (l.gpu.start_ns, l.gpu.end_ns));
    out
}

impl SinceRecord {
    /// The launches since the last record as a timing, when they ran a kernel.
    fn into_loop(self) -> Option<TimedLoop> {
        let gpu = self.gpu?;
        let (&kernel, &(count, ns)) = self
            .kernels
            .iter()
            .max_by_key(|(n, (count, ns))| (*count, *ns, std::cmp::Reverse(**n)))?;
        Some(TimedLoop {
            launches: self.launches,
            gpu,
            kernel,
            kernel_mean_ns: ns / i64::try_from(count.max(1)).unwrap_or(1),
            busy_ns: self.kernels.values().map(|k| k.1).sum(),
            timings: 1,
        })
    }
}

/// Adds a short timing to the run of timings of its kernel, or ends the run and starts one.
fn extend_run(run: &mut Option<TimedLoop>, timing: TimedLoop, out: &mut Vec<TimedLoop>) {
    match run {
        Some(r) if r.kernel == timing.kernel => {
            let total_ns =
                r.kernel_mean_ns * crate::num::count_i64(r.timings) + timing.kernel_mean_ns;
            r.timings += 1;
            r.kernel_mean_ns = total_ns / crate::num::count_i64(r.timings);
            r.launches += timing.launches;
            r.busy_ns += timing.busy_ns;
            r.gpu = r.gpu.hull(timing.gpu);
        }
        _ => {
            flush(run, out);
            *run = Some(timing);
        }
    }
}

/// A run of at least [`MIN_TIMED_LAUNCHES`] short timings is a loop timed launch by launch.
fn flush(run: &mut Option<TimedLoop>, out: &mut Vec<TimedLoop>) {
    if let Some(r) = run.take().filter(|r| r.timings >= MIN_TIMED_LAUNCHES) {
        out.push(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::detectors::testing::{launch_call, span_us, thread_and_stream};
    use tracelens_model::SourceInfo;

    /// Two loops of 20 launches between event records, a set-up launch before the first
    /// record and 5 launches between two records: two timed loops, of their kernels.
    #[test]
    fn launches_between_two_event_records_are_a_timed_loop() {
        let (mut b, cpu, gpu) = thread_and_stream();
        let mut corr = 0u64;
        let mut launch = |b: &mut tracelens_model::TraceBuilder, t: i64, name: &str, us: i64| {
            corr += 1;
            launch_call(b, cpu, t, Some(corr));
            span_us(b, SpanKind::Kernel, gpu, name, (t + 10, us), Some(corr));
        };
        launch(&mut b, 0, "warm_up", 5);
        let mut t = 100;
        for (name, us, n) in [("naive", 40, 20), ("tiled", 7, 20), ("few", 7, 5)] {
            span_us(
                &mut b,
                SpanKind::Runtime,
                cpu,
                "cudaEventRecord",
                (t, 2),
                None,
            );
            for _ in 0..n {
                t += 50;
                launch(&mut b, t, name, us);
            }
            t += 100;
            span_us(
                &mut b,
                SpanKind::Runtime,
                cpu,
                "cudaEventRecord_v3020",
                (t, 2),
                None,
            );
            t += 1_000;
        }
        let trace = b.finish(SourceInfo::default());
        let loops = timed_loops(&trace, Interval::new(0, 1_000_000_000));
        assert_eq!(loops.len(), 2, "{loops:#?}");
        assert_eq!(trace.names.get(loops[0].kernel), "naive");
        assert_eq!((loops[0].launches, loops[0].kernel_mean_ns), (20, 40_000));
        assert_eq!(trace.names.get(loops[1].kernel), "tiled");
        assert_eq!(loops[1].busy_ns, 20 * 7_000);
    }

    /// Forty launches each between their own event pair: one loop timed launch by launch, of
    /// forty timings; nine such timings are no loop.
    #[test]
    fn launches_each_timed_on_their_own_are_one_loop() {
        for (timed, loops) in [(40, 1), (9, 0)] {
            let (mut b, cpu, gpu) = thread_and_stream();
            let mut t = 0;
            for corr in 1..=timed {
                span_us(
                    &mut b,
                    SpanKind::Runtime,
                    cpu,
                    "cudaEventRecord",
                    (t, 2),
                    None,
                );
                launch_call(&mut b, cpu, t + 5, Some(corr));
                span_us(
                    &mut b,
                    SpanKind::Kernel,
                    gpu,
                    "gemm",
                    (t + 10, 50),
                    Some(corr),
                );
                span_us(
                    &mut b,
                    SpanKind::Runtime,
                    cpu,
                    "cudaEventRecord",
                    (t + 8, 2),
                    None,
                );
                t += 100;
            }
            let trace = b.finish(SourceInfo::default());
            let found = timed_loops(&trace, Interval::new(0, 1_000_000_000));
            assert_eq!(found.len(), loops, "{found:#?}");
            if let Some(l) = found.first() {
                assert!(l.timed_per_launch());
                assert_eq!((l.timings, l.launches, l.kernel_mean_ns), (40, 40, 50_000));
            }
        }
    }

    /// Two loops of 20 back-to-back 100 µs kernels, 5 ms of host checks between them: with
    /// event records around each loop the idle is the harness (no GPU-idle finding, the
    /// kernels' time per launch in the verdict); without them, a host-work finding.
    #[test]
    fn idle_between_event_timed_loops_is_the_harness_and_without_events_it_is_not() {
        let diagnosed = |timed: bool| {
            let (mut b, cpu, gpu) = thread_and_stream();
            let record = |b: &mut tracelens_model::TraceBuilder, t: i64| {
                span_us(b, SpanKind::Runtime, cpu, "cudaEventRecord", (t, 2), None);
            };
            let mut corr = 0u64;
            let mut t = 0;
            for name in ["naive", "tiled"] {
                if timed {
                    record(&mut b, t);
                }
                for k in 0..20 {
                    corr += 1;
                    launch_call(&mut b, cpu, t + 5 + k * 10, Some(corr));
                    span_us(
                        &mut b,
                        SpanKind::Kernel,
                        gpu,
                        name,
                        (t + 20 + k * 100, 100),
                        Some(corr),
                    );
                }
                t += 2_100;
                if timed {
                    record(&mut b, t);
                }
                t += 5_000;
            }
            crate::diagnose(&b.finish(SourceInfo::default()))
        };
        let timed = diagnosed(true);
        assert!(
            timed
                .verdict
                .text
                .contains("This is a benchmark: its 2 loops timed with CUDA events (40 launches)")
                && timed.verdict.text.contains("per launch: naive 0.100 ms"),
            "{}",
            timed.verdict.text
        );
        assert!(
            timed
                .findings
                .iter()
                .all(|f| f.win_kind != crate::WinKind::GpuIdle),
            "{:#?}",
            timed.findings
        );
        let untimed = diagnosed(false);
        assert!(
            !untimed.verdict.text.contains("benchmark"),
            "{}",
            untimed.verdict.text
        );
        assert!(
            untimed
                .findings
                .iter()
                .any(|f| f.win_kind == crate::WinKind::GpuIdle),
            "{:#?}",
            untimed.findings
        );
    }
}
