//! Per-step time breakdown as the TensorBoard profiler plugin defined it: each moment of a
//! step is counted once, in the priority Kernel > Memcpy > Memset > Communication > Runtime >
//! DataLoader > CPU Exec > Other. The steps are the analysis window's (stretched to cover the
//! GPU work they launched, as tb_plugin does); without steps, the window is one block.

use crate::measure::priority::PrioritySplit;
use crate::measure::window::AnalysisWindow;
use crate::num::percent;
use crate::vocabulary::kernels::is_communication_kernel;
use crate::vocabulary::memo::PerName;
use crate::vocabulary::ops::{is_communication_op, is_data_loader};
use serde::Serialize;
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
    // Each role's union grows as its spans arrive in start order (the lanes merged), split
    // among the roles as it grows: no list of every span's interval is collected or sorted.
    let mut split = PrioritySplit::<7>::new(windows.iter().map(|&(_, w)| w).collect());
    let mut comm_kernel = PerName::new(trace, is_communication_kernel);
    let mut comm_op = PerName::new(trace, is_communication_op);
    let mut loader = PerName::new(trace, is_data_loader);
    for id in trace.spans_by_start((0..trace.lanes.len()).map(LaneId::at)) {
        let s = trace.span(id);
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
            split.add(role, iv);
        }
    }
    // Each role's time, then the time of none.
    let times = split.finish().into_iter().map(|(roles, none)| {
        let mut a = [none; 8];
        a[..7].copy_from_slice(&roles);
        a
    });
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
