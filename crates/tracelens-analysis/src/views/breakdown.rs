//! Per-step time breakdown as the TensorBoard profiler plugin defined it: each moment of a
//! step is counted once, in the priority Kernel > Memcpy > Memset > Communication > Runtime >
//! DataLoader > CPU Exec > Other. The steps are the analysis window's (stretched to cover the
//! GPU work they launched, as tb_plugin does); without steps, the window is one block.

use crate::measure::intervals::{covered_ns, union};
use crate::measure::window::AnalysisWindow;
use crate::num::percent;
use crate::vocabulary::kernels::is_communication_kernel;
use crate::vocabulary::memo::PerName;
use crate::vocabulary::ops::{is_communication_op, is_data_loader};
use serde::Serialize;
use tracelens_model::{Interval, SpanId, SpanKind, TimeNs, Trace};

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
    let mut roles: [Vec<Interval>; 7] = Default::default();
    let mut comm_kernel = PerName::new(trace, is_communication_kernel);
    let mut comm_op = PerName::new(trace, is_communication_op);
    let mut loader = PerName::new(trace, is_data_loader);
    for (i, s) in trace.spans.iter().enumerate() {
        let iv = s.interval();
        let role = match s.kind {
            SpanKind::Kernel => {
                let comm = comm_kernel.of(trace, s.name)
                    || trace.launch_of(SpanId::at(i)).is_some_and(|l| {
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
            roles[role].push(iv);
        }
    }
    let roles: Vec<Vec<Interval>> = roles.into_iter().map(union).collect();
    let windows: Vec<(Option<i64>, Interval)> = if window.has_steps() {
        window
            .steps
            .iter()
            .map(|s| (Some(s.number), s.interval))
            .collect()
    } else {
        vec![(None, window.interval)]
    };
    let mut steps = Vec::new();
    let mut sums = [0; 8];
    let mut kernel_ns = 0;
    for &(number, w) in &windows {
        let a = first_role_times(&roles, w);
        for (sum, v) in sums.iter_mut().zip(a) {
            *sum += v;
        }
        let kernels = covered_ns(&roles[0], w);
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
