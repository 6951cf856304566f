//! Per-step time breakdown as the TensorBoard profiler plugin defined it: each moment of a
//! step is counted once, in the priority Kernel > Memcpy > Memset > Communication > Runtime >
//! DataLoader > CPU Exec > Other. The steps are the analysis window's (stretched to cover the
//! GPU work they launched, as tb_plugin does); without steps, the window is one block.

use crate::measure::intervals::merge_into_last;
use crate::measure::window::AnalysisWindow;
use crate::num::percent;
use crate::vocabulary::kernels::is_communication_kernel;
use crate::vocabulary::memo::PerName;
use crate::vocabulary::ops::{is_communication_op, is_data_loader};
use serde::Serialize;
use std::collections::VecDeque;
use tracelens_model::{Interval, LaneId, SpanKind, TimeNs, Trace};

/// Time per category in one step (or the average over steps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CategoryTimes {
    /// Kernels (communication kernels excluded).
    pub kernel_ns: TimeNs,
    /// Copies.
    pub memcpy_ns: TimeNs,
    /// Fills.
    pub memset_ns: TimeNs,
    /// NCCL/Gloo collectives.
    pub communication_ns: TimeNs,
    /// Runtime API calls.
    pub runtime_ns: TimeNs,
    /// DataLoader `__next__`.
    pub dataloader_ns: TimeNs,
    /// Other CPU ops and annotations.
    pub cpu_exec_ns: TimeNs,
    /// Everything else.
    pub other_ns: TimeNs,
}

impl CategoryTimes {
    /// The eight times in priority order.
    #[must_use]
    pub fn as_array(&self) -> [TimeNs; 8] {
        [
            self.kernel_ns,
            self.memcpy_ns,
            self.memset_ns,
            self.communication_ns,
            self.runtime_ns,
            self.dataloader_ns,
            self.cpu_exec_ns,
            self.other_ns,
        ]
    }

    fn from_array(a: [TimeNs; 8]) -> Self {
        CategoryTimes {
            kernel_ns: a[0],
            memcpy_ns: a[1],
            memset_ns: a[2],
            communication_ns: a[3],
            runtime_ns: a[4],
            dataloader_ns: a[5],
            cpu_exec_ns: a[6],
            other_ns: a[7],
        }
    }
}

/// Percent of step time per category.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CategoryPercent {
    /// Kernels.
    pub kernel: f64,
    /// Copies.
    pub memcpy: f64,
    /// Fills.
    pub memset: f64,
    /// Collectives.
    pub communication: f64,
    /// Runtime calls.
    pub runtime: f64,
    /// DataLoader.
    pub dataloader: f64,
    /// CPU execution.
    pub cpu_exec: f64,
    /// Other.
    pub other: f64,
}

impl CategoryPercent {
    /// The eight shares in priority order (as [`CategoryTimes::as_array`]).
    #[must_use]
    pub fn as_array(&self) -> [f64; 8] {
        [
            self.kernel,
            self.memcpy,
            self.memset,
            self.communication,
            self.runtime,
            self.dataloader,
            self.cpu_exec,
            self.other,
        ]
    }
}

/// One step's breakdown.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct StepBreakdown {
    /// Step number.
    pub step: i64,
    /// The step, as the analysis window has it.
    pub window: Interval,
    /// Times per category; they sum to the step length.
    pub times: CategoryTimes,
    /// Kernel union over the step, in percent.
    pub gpu_utilization_percent: f64,
}

/// The breakdown of the analysis window, step by step when it has steps.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Breakdown {
    /// Per step; empty when the window has no steps.
    pub steps: Vec<StepBreakdown>,
    /// Time per category over the window (over the steps when it has them).
    pub total: CategoryTimes,
    /// Mean time per category per step (the total without steps).
    pub mean: CategoryTimes,
    /// Time per category as a share of the window's step time.
    pub percent: CategoryPercent,
    /// Kernel union over the steps (or the window), in percent.
    pub gpu_utilization_percent: f64,
}

/// Computes the breakdown of `window`.
pub fn breakdown(trace: &Trace, window: &AnalysisWindow) -> Breakdown {
    // Steps lie inside the window: nothing outside it is counted.
    let hull = window.interval;
    let windows: Vec<(Option<i64>, Interval)> = if window.has_steps() {
        window
            .steps
            .iter()
            .map(|s| (Some(s.number), s.interval))
            .collect()
    } else {
        vec![(None, window.interval)]
    };
    // Each role's union grows as its spans arrive in start order (the lanes merged), so no
    // list of every span's interval is collected and sorted. Windows that follow one another
    // (the rule) are swept as the unions grow, and what lies behind the sweep is dropped;
    // overlapping steps are measured over the whole unions.
    let sweep_while_reading = windows.windows(2).all(|p| p[0].1.end_ns <= p[1].1.start_ns);
    let mut sweep = RoleSweep::new(&windows);
    let mut roles: [VecDeque<Interval>; 7] = Default::default();
    let mut comm_kernel = PerName::new(trace, is_communication_kernel);
    let mut comm_op = PerName::new(trace, is_communication_op);
    let mut loader = PerName::new(trace, is_data_loader);
    for id in trace.spans_by_start((0..trace.lanes.len()).map(LaneId::at)) {
        let s = trace.span(id);
        if sweep_while_reading {
            // Every span starting before this one is in the unions.
            sweep.advance(&mut roles, s.start_ns);
        }
        let iv = s.interval();
        let role = match s.kind {
            SpanKind::Kernel => {
                let comm = comm_kernel.of(trace, s.name)
                    || trace.launch_of(id).is_some_and(|l| {
                        trace
                            .ancestors(l)
                            .any(|a| comm_op.of(trace, trace.span(a).name))
                    });
                if comm {
                    3
                } else {
                    0
                }
            }
            SpanKind::Memcpy => 1,
            SpanKind::Memset => 2,
            SpanKind::Runtime | SpanKind::Driver => 4,
            SpanKind::CpuOp | SpanKind::UserAnnotation => {
                if trace.step_of_name(s.name).is_some() {
                    continue;
                } else if loader.of(trace, s.name) {
                    5
                } else if comm_op.of(trace, s.name) {
                    3
                } else {
                    6
                }
            }
            _ => continue,
        };
        if iv.end_ns > hull.start_ns && iv.start_ns < hull.end_ns {
            let union = &mut roles[role];
            if let Some(iv) = merge_into_last(union.back_mut(), iv) {
                union.push_back(iv);
            }
        }
    }
    let times: Vec<[TimeNs; 8]> = if sweep_while_reading {
        sweep.advance(&mut roles, TimeNs::MAX);
        sweep.times
    } else {
        let roles: Vec<Vec<Interval>> = roles.into_iter().map(Vec::from).collect();
        windows
            .iter()
            .map(|&(_, w)| first_role_times(&roles, w))
            .collect()
    };
    let mut steps = Vec::new();
    let mut sums = [0; 8];
    let mut kernel_ns = 0;
    for (&(number, w), a) in windows.iter().zip(times) {
        for (sum, v) in sums.iter_mut().zip(a) {
            *sum += v;
        }
        // Kernels come first: the time they cover is theirs.
        let kernels = a[0];
        kernel_ns += kernels;
        if let Some(step) = number {
            steps.push(StepBreakdown {
                step,
                window: w,
                times: CategoryTimes::from_array(a),
                gpu_utilization_percent: percent(kernels, w.dur_ns()),
            });
        }
    }
    let n = crate::num::count_i64(window.step_count());
    let total: TimeNs = sums.iter().sum();
    let p = sums.map(|v| percent(v, total));
    Breakdown {
        total: CategoryTimes::from_array(sums),
        mean: CategoryTimes::from_array(sums.map(|v| v / n)),
        percent: CategoryPercent {
            kernel: p[0],
            memcpy: p[1],
            memset: p[2],
            communication: p[3],
            runtime: p[4],
            dataloader: p[5],
            cpu_exec: p[6],
            other: p[7],
        },
        gpu_utilization_percent: percent(kernel_ns, total),
        steps,
    }
}

/// The time each role covers first in each window (as [`first_role_times`]), swept once
/// forward over windows that follow one another while the roles' unions grow.
struct RoleSweep<'w> {
    windows: &'w [(Option<i64>, Interval)],
    /// The window being swept.
    at: usize,
    /// Swept up to here.
    t: TimeNs,
    /// Per window: the time of each role, then of none.
    times: Vec<[TimeNs; 8]>,
}

impl<'w> RoleSweep<'w> {
    fn new(windows: &'w [(Option<i64>, Interval)]) -> Self {
        RoleSweep {
            windows,
            at: 0,
            t: TimeNs::MIN,
            times: vec![[0; 8]; windows.len()],
        }
    }

    /// Sweeps up to `upto` (the unions hold every interval starting before it), dropping
    /// the intervals that end behind the sweep.
    fn advance(&mut self, roles: &mut [VecDeque<Interval>; 7], upto: TimeNs) {
        while let Some(&(_, w)) = self.windows.get(self.at) {
            self.t = self.t.max(w.start_ns);
            let stop = w.end_ns.min(upto);
            let out = &mut self.times[self.at];
            while self.t < stop {
                let t = self.t;
                // The first role covering t, and the next moment the answer can change.
                let mut owner = roles.len();
                let mut until = stop;
                for (k, r) in roles.iter_mut().enumerate() {
                    while r.front().is_some_and(|iv| iv.end_ns <= t) {
                        r.pop_front();
                    }
                    let Some(iv) = r.front() else { continue };
                    if iv.start_ns <= t {
                        owner = k;
                        until = until.min(iv.end_ns);
                        break;
                    }
                    until = until.min(iv.start_ns);
                }
                out[owner.min(7)] += until - t;
                self.t = until;
            }
            if self.t < w.end_ns {
                return;
            }
            self.at += 1;
        }
    }
}

/// The time of `w` each role covers first, in priority order (role `k` takes what the roles
/// before it leave), and what none covers, last: one sweep over the roles' unions (each
/// sorted and disjoint), with no intermediate interval lists.
fn first_role_times(roles: &[Vec<Interval>], w: Interval) -> [TimeNs; 8] {
    let mut out = [0; 8];
    let mut at: Vec<usize> = roles
        .iter()
        .map(|r| r.partition_point(|iv| iv.end_ns <= w.start_ns))
        .collect();
    let mut t = w.start_ns;
    while t < w.end_ns {
        // The first role covering t, and the next moment the answer can change.
        let mut owner = roles.len();
        let mut until = w.end_ns;
        for (k, r) in roles.iter().enumerate() {
            let Some(iv) = r.get(at[k]) else { continue };
            if iv.start_ns <= t {
                owner = k;
                until = until.min(iv.end_ns);
                break;
            }
            until = until.min(iv.start_ns);
        }
        out[owner.min(7)] += until - t;
        t = until;
        for (k, r) in roles.iter().enumerate() {
            while r.get(at[k]).is_some_and(|iv| iv.end_ns <= t) {
                at[k] += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep that runs while the unions grow gives every window the times the search over
    /// the whole unions gives, for windows that touch, leave gaps, or start before any span.
    #[test]
    fn the_sweep_agrees_with_the_search_over_whole_unions() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: i64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            i64::try_from(seed % u64::try_from(n).unwrap()).unwrap()
        };
        for _ in 0..200 {
            // Spans of random roles in start order, as the lanes' merge yields them.
            let mut spans: Vec<(usize, Interval)> = (0..60)
                .map(|_| {
                    let start = next(1_000);
                    (
                        next(7).try_into().unwrap(),
                        Interval::new(start, start + next(60)),
                    )
                })
                .collect();
            spans.sort_by_key(|&(_, iv)| iv.start_ns);
            let mut edge = next(50) - 20;
            let windows: Vec<(Option<i64>, Interval)> = (0..next(5) + 1)
                .map(|k| {
                    let start = edge + next(3) * next(40);
                    edge = start + next(300);
                    (Some(k), Interval::new(start, edge))
                })
                .collect();
            let mut whole: [Vec<Interval>; 7] = Default::default();
            let mut sweep = RoleSweep::new(&windows);
            let mut growing: [VecDeque<Interval>; 7] = Default::default();
            for &(role, iv) in &spans {
                sweep.advance(&mut growing, iv.start_ns);
                if let Some(iv) = merge_into_last(growing[role].back_mut(), iv) {
                    growing[role].push_back(iv);
                }
                if let Some(iv) = merge_into_last(whole[role].last_mut(), iv) {
                    whole[role].push(iv);
                }
            }
            sweep.advance(&mut growing, TimeNs::MAX);
            let searched: Vec<[TimeNs; 8]> = windows
                .iter()
                .map(|&(_, w)| first_role_times(&whole, w))
                .collect();
            assert_eq!(sweep.times, searched, "{windows:?} {spans:?}");
            for (a, &(_, w)) in searched.iter().zip(&windows) {
                assert_eq!(a.iter().sum::<TimeNs>(), w.dur_ns());
            }
        }
    }
}
