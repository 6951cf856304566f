//! Properties that hold for any input (proptest): the interval algebra against a
//! point-by-point model, and whole diagnoses of random traces against the invariants every
//! report must keep (busy + idle = window, wins within the idle, breakdowns that sum).

use proptest::prelude::*;
use tracelens_analysis::measure::intervals::{
    covered_ns, gaps, intersect, subtract, total_ns, union,
};
use tracelens_model::{
    Interval, LaneKey, SourceInfo, SpanInput, SpanKind, TraceBuilder, NO_DETAIL,
};
use tracelens_tests::consistency::consistency_errors;

/// Time is small so the point model (one bool per ns) stays cheap.
const SPAN: i64 = 400;

fn interval() -> impl Strategy<Value = Interval> {
    (0..SPAN, 0..SPAN / 4).prop_map(|(s, d)| Interval::new(s, s + d))
}

/// The point (one bool per ns) of time `t`, which the strategies keep in `0..2 * SPAN`.
fn at(t: i64) -> usize {
    usize::try_from(t).expect("strategy times are small and not negative")
}

fn points(ivs: &[Interval]) -> Vec<bool> {
    let mut p = vec![false; at(SPAN * 2)];
    for iv in ivs {
        for t in iv.start_ns..iv.end_ns {
            p[at(t)] = true;
        }
    }
    p
}

fn is_sorted_disjoint(ivs: &[Interval]) -> bool {
    ivs.iter().all(|iv| iv.end_ns > iv.start_ns)
        && ivs.windows(2).all(|w| w[0].end_ns < w[1].start_ns)
}

proptest! {
    #[test]
    fn union_is_sorted_disjoint_and_covers_the_same_points(ivs in prop::collection::vec(interval(), 0..40)) {
        let u = union(ivs.clone());
        prop_assert!(is_sorted_disjoint(&u));
        prop_assert_eq!(points(&u), points(&ivs));
    }

    #[test]
    fn busy_and_idle_add_up_to_the_window(
        ivs in prop::collection::vec(interval(), 0..40),
        w in interval(),
    ) {
        let u = union(ivs);
        let busy = covered_ns(&u, w);
        let idle: i64 = total_ns(&gaps(&u, w));
        prop_assert_eq!(busy + idle, w.dur_ns());
        let p = points(&u);
        let expect = i64::try_from((w.start_ns..w.end_ns).filter(|&t| p[at(t)]).count()).unwrap();
        prop_assert_eq!(busy, expect);
        for g in gaps(&u, w) {
            prop_assert!(g.clip(w) == Some(g));
            prop_assert_eq!(covered_ns(&u, g), 0);
        }
    }

    #[test]
    fn intersect_and_subtract_partition_the_first_operand(
        a in prop::collection::vec(interval(), 0..30),
        b in prop::collection::vec(interval(), 0..30),
    ) {
        let (a, b) = (union(a), union(b));
        let both = intersect(&a, &b);
        let only_a = subtract(&a, &b);
        prop_assert!(is_sorted_disjoint(&only_a));
        let (pa, pb) = (points(&a), points(&b));
        let pboth = points(&both);
        let ponly = points(&only_a);
        for t in 0..at(SPAN * 2) {
            prop_assert_eq!(pboth[t], pa[t] && pb[t]);
            prop_assert_eq!(ponly[t], pa[t] && !pb[t]);
        }
        prop_assert_eq!(total_ns(&both) + total_ns(&only_a), total_ns(&a));
    }

    #[test]
    fn clipping_stays_inside_both(a in interval(), w in interval()) {
        match a.clip(w) {
            Some(c) => {
                prop_assert!(c.start_ns >= a.start_ns.max(w.start_ns));
                prop_assert!(c.end_ns <= a.end_ns.min(w.end_ns));
                prop_assert!(c.dur_ns() > 0);
            }
            None => prop_assert!(a.end_ns.min(w.end_ns) <= a.start_ns.max(w.start_ns)),
        }
    }
}

/// One random op of a random trace: (CPU thread 0-2, kind choice, start µs, dur µs).
type OpSpec = (u8, u8, i64, i64);

/// Adds one span named `name`.
fn span(
    b: &mut TraceBuilder,
    kind: SpanKind,
    lane: tracelens_model::LaneId,
    (start_ns, dur_ns): (i64, i64),
    name: &str,
    correlation: Option<u64>,
) {
    let name = b.intern(name);
    b.add_span(SpanInput {
        kind,
        lane,
        start_ns,
        dur_ns,
        name,
        correlation,
        external_id: None,
        detail: NO_DETAIL,
    });
}

fn build(steps: u8, ops: &[OpSpec]) -> tracelens_model::Trace {
    use tracelens_model::Ident::Num;
    let mut b = TraceBuilder::new();
    let main = b.lane(LaneKey::Cpu {
        pid: Num(1),
        tid: Num(0),
    });
    let step_len = 10_000_000 / i64::from(steps.max(1));
    for s in 0..i64::from(steps) {
        let name = format!("ProfilerStep#{s}");
        span(
            &mut b,
            SpanKind::UserAnnotation,
            main,
            (s * step_len, step_len - 1_000),
            &name,
            None,
        );
    }
    for (i, &(thread, choice, start_us, dur_us)) in ops.iter().enumerate() {
        let lane = b.lane(LaneKey::Cpu {
            pid: Num(1),
            tid: Num(i64::from(thread % 3)),
        });
        let (start_ns, dur_ns) = (start_us * 1_000, dur_us * 1_000);
        match choice % 4 {
            0 => {
                let op = [
                    "aten::mm",
                    "aten::item",
                    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                ][i % 3];
                span(&mut b, SpanKind::CpuOp, lane, (start_ns, dur_ns), op, None);
            }
            1 => span(
                &mut b,
                SpanKind::Runtime,
                lane,
                (start_ns, dur_ns),
                "cudaStreamSynchronize",
                None,
            ),
            _ => {
                let corr = Some(i as u64 + 1);
                span(
                    &mut b,
                    SpanKind::Runtime,
                    lane,
                    (start_ns, 5_000),
                    "cudaLaunchKernel",
                    corr,
                );
                let stream = b.lane(LaneKey::Gpu {
                    device: 0,
                    stream: 7 + i64::from(choice % 2),
                });
                let kernel = [
                    "volta_sgemm_128x64_nn",
                    "nccl:all_reduce",
                    "vectorized_elementwise_kernel",
                ][i % 3];
                span(
                    &mut b,
                    SpanKind::Kernel,
                    stream,
                    (start_ns + 6_000 + dur_ns / 3, dur_ns),
                    kernel,
                    corr,
                );
            }
        }
    }
    b.finish(SourceInfo::default())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_keep_every_report_invariant(
        steps in 0u8..5,
        ops in prop::collection::vec((0u8..3, 0u8..8, 0i64..10_000, 0i64..800), 1..60),
    ) {
        let trace = build(steps, &ops);
        let errors = consistency_errors(&trace, &tracelens_report::Report::build(&trace));
        prop_assert!(errors.is_empty(), "{:?}", errors);
    }
}

/// Pieces of event soup: good events of each kind, and the irregular things a crafted
/// file holds between or inside them (bare tokens, strings, stray brackets, quotes and
/// brackets inside bare values, escapes, a byte-order mark).
const SOUP: [&str; 16] = [
    r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2, "args": {"correlation": 5, "stream": 7, "device": 0}}"#,
    r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 9, "dur": 1, "args": {"correlation": 5}}"#,
    r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm \"q\"", "pid": 1, "tid": 1, "ts": 8, "dur": 4, "args": {"Call stack": "a.py(1): f;b.py(2): g"}}"#,
    r#"{"ph": "s", "id": 5, "pid": 1, "tid": 1, "ts": 9, "cat": "ac2g", "name": "ac2g"}"#,
    r#"{"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}}"#,
    r#"{"ph": "X", "cat": "kernel", "name": x"y}, {"ph": "X"}"#,
    r#"{"ph": "X", "cat": "cpu_op", "name": a{b, "ts": 1, "dur": 1}"#,
    r#"{"ph": "X", "ts": "oops", "cat": "kernel"}"#,
    r#"{"name": "C:\\dir\\", "ph": "X", "cat": "cpu_op", "ts": 3, "dur": 1, "pid": 1, "tid": 1}"#,
    r#"{"ph" "X"}"#,
    "12",
    r#""text""#,
    "}",
    "[1, {}]",
    "\u{feff}",
    r#"{"ph": "X", "cat": "kernel", "name": "unterminated"#,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The parallel reader (runs cut for worker threads, one pass per event) builds exactly
    /// the model of the one-event-at-a-time reader, whatever the file holds.
    #[test]
    fn event_soup_reads_the_same_on_any_thread_count(
        picks in prop::collection::vec((0..SOUP.len(), 0..3usize), 0..40),
        array in any::<bool>(),
    ) {
        let separators = [", ", ",\n", " "];
        let body: Vec<String> = picks
            .iter()
            .map(|&(p, s)| format!("{}{}", SOUP[p], separators[s]))
            .collect();
        let text = if array {
            format!("[{}]", body.concat())
        } else {
            format!("{{\"traceEvents\": [{}], \"traceName\": \"t\"}}", body.concat())
        };
        let read = |threads| {
            let path = std::path::Path::new("soup.json");
            tracelens_kineto::import_reader_with_threads(text.as_bytes(), path, 0, None, threads)
                .map(|t| tracelens_report::render_json(&tracelens_report::Report::build(&t)))
                .map_err(|e| e.to_string())
        };
        let serial = read(1);
        prop_assert_eq!(&serial, &read(2));
        prop_assert_eq!(&serial, &read(3));
    }
}
