//! The replay and the walk on hand-made step graphs, where every time can be worked out by
//! hand.

use super::graph::{GpuNode, HostItem, HostKind, StepGraph, NONE};
use super::kind::CriticalKind;
use super::replay::{Change, Replay};
use super::walk::walk;
use crate::vocabulary::api::BlockingKind;
use tracelens_model::{Interval, LaneId, SpanId, SpanKind, TimeNs, Trace};

const HOST: LaneId = LaneId(0);
const STREAM: LaneId = LaneId(1);

fn item(start_ns: TimeNs, end_ns: TimeNs, kind: HostKind, span: u32) -> HostItem {
    HostItem {
        start_ns,
        end_ns,
        kind,
        span,
        lane: HOST,
        awaited: NONE,
    }
}

fn op(start_ns: TimeNs, end_ns: TimeNs, launch: u32) -> GpuNode {
    GpuNode::new(
        SpanId(launch.wrapping_add(100)),
        SpanKind::Kernel,
        Interval::new(start_ns, end_ns),
        STREAM,
        launch,
    )
}

/// Replayed step duration minus recorded, for one change.
fn delta(g: &StepGraph, change: &Change) -> TimeNs {
    let mut r = Replay::new(change, 2);
    r.step(g, true);
    r.step_deltas_ns[0]
}

/// A DataLoader wait of 100, then a launch whose kernel the host waits for with a sync, then
/// 5 of host work to the end of the step at 225.
fn loader_then_kernel() -> StepGraph {
    StepGraph::from_parts(
        vec![
            item(0, 100, HostKind::DataLoader, NONE),
            item(100, 110, HostKind::Call, 1),
            item(120, 220, HostKind::Blocking(BlockingKind::DeviceSync), 2),
        ],
        vec![op(115, 215, 1)],
        0,
        225,
        2,
    )
}

#[test]
fn a_replay_without_a_change_gives_back_the_recorded_step() {
    let g = loader_then_kernel();
    assert_eq!(delta(&g, &Change::default()), 0);
    // A GPU-bound graph too: the kernel queues behind one launched before the step.
    let g = queued_behind_earlier_work();
    assert_eq!(delta(&g, &Change::default()), 0);
}

#[test]
fn removing_the_dataloader_wait_moves_everything_after_it() {
    let g = loader_then_kernel();
    let mut c = Change::default();
    c.collapse([Interval::new(0, 100)]);
    // Launch at 0, kernel 15–115, the sync returns 5 after it (120), host end 125.
    assert_eq!(delta(&g, &c), -100);
}

/// A kernel launched at 100 queues behind 0–150 of earlier work (no launch in the step) and
/// runs 150–450; the sync at 460 finds it done and returns at 465; the step ends at 470.
fn queued_behind_earlier_work() -> StepGraph {
    let mut earlier = op(0, 150, NONE);
    earlier.span = SpanId(99);
    StepGraph::from_parts(
        vec![
            item(0, 100, HostKind::DataLoader, NONE),
            item(100, 110, HostKind::Call, 1),
            item(460, 465, HostKind::Blocking(BlockingKind::DeviceSync), 2),
        ],
        vec![earlier, op(150, 450, 1)],
        0,
        470,
        2,
    )
}

#[test]
fn a_gpu_bound_step_gains_only_what_the_gpu_did_not_need() {
    let g = queued_behind_earlier_work();
    // The sync waited for the kernel (launched before it, ended before it returned).
    assert_eq!(g.host[2].awaited, 1);
    let mut c = Change::default();
    c.collapse([Interval::new(0, 100)]);
    // The host reaches the sync at 360, now waits for the kernel (450) and returns at 455;
    // the 5 of host work after it end the step at 460: 10 saved, not 100.
    assert_eq!(delta(&g, &c), -10);
}

#[test]
fn an_async_sync_no_longer_waits() {
    let g = loader_then_kernel();
    let mut c = Change::default();
    c.make_async([2]);
    // The sync returns 5 after it starts (125); the kernel still ends at 215 and sets the
    // step's end.
    assert_eq!(delta(&g, &c), 215 - 225);
}

/// A launch (0–10), a free that blocks 50 on its own work with nothing queued (10–60), a
/// launch whose kernel runs 75–95 (60–70), host work to the step's end at 100.
fn free_between_launches() -> StepGraph {
    StepGraph::from_parts(
        vec![
            item(0, 10, HostKind::Call, 1),
            item(10, 60, HostKind::Blocking(BlockingKind::AllocatorFree), 2),
            item(60, 70, HostKind::Call, 3),
        ],
        vec![op(5, 8, 0), op(75, 95, 2)],
        0,
        100,
        2,
    )
}

#[test]
fn a_removed_call_takes_its_own_time_with_it() {
    let g = free_between_launches();
    let mut c = Change::default();
    c.collapse([Interval::new(10, 60)]);
    // The free's 50 vanish, though it is a blocking call (it would otherwise take its
    // recorded return time again).
    assert_eq!(delta(&g, &c), -50);
    // Made asynchronous instead, it keeps its own time: nothing is saved.
    let mut c = Change::default();
    c.make_async([2]);
    assert_eq!(delta(&g, &c), 0);
}

#[test]
fn a_slower_host_stretches_host_work_until_a_blocking_call_returns() {
    // Host-bound: every step's host work takes 10 % longer.
    let g = free_between_launches();
    let mut c = Change::default();
    c.slow_host(0.1);
    // The free starts at 11 (10 % of 10 later) and returns 50 later, at 61 (its time is its
    // own); from there the clock is set again: the 40 of host work to the step's end take
    // 44, and the step ends at 105.
    assert_eq!(delta(&g, &c), 5);
    // GPU-bound: the sync absorbs the slower host; the kernel still ends the step.
    let g = loader_then_kernel();
    let mut c = Change::default();
    c.collapse([Interval::new(0, 100)]);
    c.slow_host(0.1);
    assert_eq!(delta(&g, &c), -100);
}

#[test]
fn the_critical_path_tiles_the_step_and_follows_the_binding_edges() {
    let g = loader_then_kernel();
    let trace = Trace::default();
    let mut segs: Vec<(Interval, CriticalKind)> = Vec::new();
    walk(&trace, &g, 0, 225, |iv, kind, _, _| segs.push((iv, kind)));
    segs.reverse();
    let kinds: Vec<CriticalKind> = segs.iter().map(|s| s.1).collect();
    assert_eq!(
        kinds,
        [
            CriticalKind::DataLoader,
            CriticalKind::Launch,
            CriticalKind::Kernel,
            CriticalKind::Sync,
            CriticalKind::HostWork,
        ]
    );
    assert_eq!(segs[0].0, Interval::new(0, 100));
    assert_eq!(segs[2].0, Interval::new(115, 215));
    for w in segs.windows(2) {
        assert_eq!(
            w[0].0.end_ns, w[1].0.start_ns,
            "segments must tile the step"
        );
    }
    assert_eq!(segs.last().unwrap().0.end_ns, 225);
}

/// A window without steps: a launch at 100 (kernel 115–215), host work, a launch at 300
/// (kernel 315–415); as one graph, or as two chunks cut at the second kernel.
fn two_launches(chunked: bool) -> Vec<StepGraph> {
    let first = vec![
        item(0, 100, HostKind::DataLoader, NONE),
        item(100, 110, HostKind::Call, 1),
    ];
    let second = item(300, 310, HostKind::Call, 3);
    if chunked {
        vec![
            StepGraph::from_parts(first, vec![op(115, 215, 1)], 0, 0, 2),
            StepGraph::from_parts(vec![second], vec![op(315, 415, 0)], 315, 315, 2),
        ]
    } else {
        let mut host = first;
        host.push(second);
        vec![StepGraph::from_parts(
            host,
            vec![op(115, 215, 1), op(315, 415, 2)],
            0,
            0,
            2,
        )]
    }
}

#[test]
fn the_chunks_of_a_window_replay_to_the_same_window() {
    // The host work between the launches (200–290) goes: the second kernel runs 225–325.
    let mut c = Change::default();
    c.collapse([Interval::new(200, 290)]);
    for chunked in [false, true] {
        let mut r = Replay::new(&c, 2);
        for g in &two_launches(chunked) {
            r.step(g, false);
        }
        let total: TimeNs = r.step_deltas_ns.iter().sum();
        // First op start to last op end: 300 recorded, 210 replayed.
        assert_eq!(total, -90, "chunked: {chunked}");
    }
}

#[test]
fn a_window_is_cut_every_chunk_of_ops_into_intervals_that_tile_it() {
    use super::{chunks, CHUNK_OPS};
    let n = 2 * CHUNK_OPS + 5;
    let ops: Vec<crate::measure::utilization::GpuOp> = (0..n)
        .map(|i| {
            let t = TimeNs::try_from(i).unwrap() * 10;
            (SpanKind::Kernel, Interval::new(t, t + 5), SpanId(0))
        })
        .collect();
    let window = Interval::new(-5, 10 * TimeNs::try_from(n).unwrap() + 100);
    let cut = chunks(window, &ops);
    assert_eq!(cut.len(), 3);
    assert_eq!(cut[0].start_ns, window.start_ns);
    assert_eq!(cut[0].end_ns, ops[CHUNK_OPS].1.start_ns);
    assert_eq!(cut[2].end_ns, window.end_ns);
    assert!(cut.windows(2).all(|w| w[0].end_ns == w[1].start_ns));
    // Fewer ops than a chunk, or ops that all start together: one interval.
    assert_eq!(chunks(window, &ops[..10]), vec![window]);
    let same: Vec<_> = ops.iter().map(|o| (o.0, ops[0].1, o.2)).collect();
    assert_eq!(chunks(window, &same), vec![window]);
}

/// One microsecond.
const US: TimeNs = 1_000;

/// A kernel (10–20 µs) and a collective on another stream (21–1000 µs) launched early, then a
/// copy launched at 8 µs behind the kernel that starts only 10 µs after the collective ends
/// (1010–1100 µs): held on its stream far past the launch overhead, it waited for the
/// collective (DDP copying a reduced bucket back).
fn waits_for_a_collective() -> StepGraph {
    const COMM: LaneId = LaneId(2);
    let mut collective = op(21 * US, 1000 * US, 1);
    collective.lane = COMM;
    collective.communication = true;
    let mut copy = op(1010 * US, 1100 * US, 2);
    copy.kind = SpanKind::Memcpy;
    StepGraph::from_parts(
        vec![
            item(0, 5 * US, HostKind::Call, 1),
            item(5 * US, 8 * US, HostKind::Call, 2),
            item(8 * US, 11 * US, HostKind::Call, 3),
        ],
        vec![op(10 * US, 20 * US, 0), collective, copy],
        0,
        12 * US,
        3,
    )
}

#[test]
fn an_op_held_on_its_stream_until_a_collective_ends_waits_for_it() {
    let g = waits_for_a_collective();
    let copy = &g.gpu[2];
    assert_eq!(copy.after, 1, "the copy waited for the collective");
    assert_eq!(copy.wait_ns, 10 * US);
    let delta = |change: &Change| {
        let mut r = Replay::new(change, 3);
        r.step(&g, true);
        r.step_deltas_ns[0]
    };
    assert_eq!(delta(&Change::default()), 0);
    // Hidden, the collective takes no time: the copy queues behind the kernel (20 µs) for
    // the launch overhead and runs 50–140 µs.
    let mut c = Change::default();
    c.hide_communication();
    assert_eq!(delta(&c), 140 * US - 1100 * US);
    // The path runs through the collective, not a queue on the copy's stream.
    let trace = Trace::default();
    let mut kinds: Vec<CriticalKind> = Vec::new();
    walk(&trace, &g, 0, 1100 * US, |_, kind, _, _| kinds.push(kind));
    assert!(kinds.contains(&CriticalKind::Communication), "{kinds:?}");
    assert!(!kinds.contains(&CriticalKind::GpuQueue), "{kinds:?}");
}

/// A kernel launched at 30–35 µs, after the kernel before it on its stream ended (20 µs),
/// that starts only at 500 µs with no op of another stream ending near: it waited for
/// something the trace does not show (an event no traced stream recorded).
fn waits_for_an_untraced_event() -> StepGraph {
    StepGraph::from_parts(
        vec![
            item(0, 2 * US, HostKind::Call, 1),
            item(30 * US, 35 * US, HostKind::Call, 2),
        ],
        vec![op(10 * US, 20 * US, 0), op(500 * US, 600 * US, 1)],
        0,
        36 * US,
        2,
    )
}

#[test]
fn a_launch_held_past_the_overhead_with_nothing_to_follow_is_a_gpu_wait() {
    let g = waits_for_an_untraced_event();
    let held = &g.gpu[1];
    assert_eq!(held.after, NONE);
    assert_eq!(
        held.launch_ns,
        30 * US,
        "the launch keeps the launch overhead"
    );
    // Launched at 30 µs: the launch takes it to 60 µs, then it waits until 500 µs.
    assert_eq!(held.wait_ns, 440 * US);
    // The op starts when it did: no change replays to the recorded step.
    assert_eq!(delta(&g, &Change::default()), 0);
    let trace = Trace::default();
    let mut on_path: Vec<(CriticalKind, TimeNs)> = Vec::new();
    walk(&trace, &g, 0, 600 * US, |iv, kind, _, _| {
        on_path.push((kind, iv.dur_ns()));
    });
    let time_of = |k: CriticalKind| -> TimeNs {
        on_path
            .iter()
            .filter(|(kind, _)| *kind == k)
            .map(|(_, d)| d)
            .sum()
    };
    assert_eq!(time_of(CriticalKind::GpuWait), 440 * US, "{on_path:?}");
    assert_eq!(time_of(CriticalKind::Launch), 30 * US, "{on_path:?}");
    assert_eq!(time_of(CriticalKind::Kernel), 100 * US, "{on_path:?}");
}

/// A pageable copy's call blocks 0–100 while its copy runs 5–102 (the driver returns once it
/// has handed over the last staged chunk, just before the copy ends); then a launch 100–110
/// of a kernel that runs 110–160, the step's end.
fn pageable_copy_then_kernel() -> StepGraph {
    StepGraph::from_parts(
        vec![
            item(
                0,
                100,
                HostKind::Blocking(BlockingKind::PageableAsyncCopy),
                1,
            ),
            item(100, 110, HostKind::Call, 2),
        ],
        vec![op(5, 102, 0), op(110, 160, 1)],
        0,
        160,
        2,
    )
}

#[test]
fn a_pinned_copy_frees_the_host_its_pageable_call_held() {
    let g = pageable_copy_then_kernel();
    // The call waited for its own copy, though it returned 2 before the copy ended.
    assert_eq!(g.host[0].awaited, 0);
    assert_eq!(delta(&g, &Change::default()), 0);
    // Pinned and non-blocking at the same rate: the kernel's launch no longer waits for the
    // copy, but the kernel still queues behind it on the stream.
    let mut c = Change::default();
    c.make_async([1]);
    let same_rate = delta(&g, &c);
    assert!(same_rate <= 0, "{same_rate}");
    // At a fifth of its time (the link's pinned rate), the copy ends near 24 and the kernel
    // follows it: most of the copy's 97 is saved.
    c.speed_up([(100, 0.2)]);
    let faster = delta(&g, &c);
    assert!(faster <= -60, "{faster}");
}
