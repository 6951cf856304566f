//! Per-step time breakdown as the TensorBoard profiler plugin defined it: each moment of a
//! step is counted once, in the priority Kernel > Memcpy > Memset > Communication > Runtime >
//! DataLoader > CPU Exec > Other, and steps are stretched to cover the GPU work they launched.

use crate::api::is_data_loader;
use crate::dataloader::percent;
use crate::intervals::{covered_ns, intersect, subtract, union};
use serde::Serialize;
use tracelens_model::{profiler_step_number, Interval, SpanId, SpanKind, TimeNs, Trace};

/// Time per category in one step (or the average over steps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
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
    fn as_array(&self) -> [TimeNs; 8] {
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
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

/// One step's breakdown.
#[derive(Clone, Debug, Serialize)]
pub struct StepBreakdown {
    /// Step number (0 when the trace has no steps and the whole CPU span is one step).
    pub step: i64,
    /// Step window after stretching to its GPU work.
    pub window: Interval,
    /// Times per category; they sum to the window length.
    pub times: CategoryTimes,
    /// Kernel union over the window, in percent.
    pub gpu_utilization_percent: f64,
}

/// The breakdown over all steps.
#[derive(Clone, Debug, Serialize)]
pub struct Breakdown {
    /// Per step.
    pub steps: Vec<StepBreakdown>,
    /// Mean step duration.
    pub mean_step_ns: TimeNs,
    /// Mean time per category.
    pub mean: CategoryTimes,
    /// Mean time per category as a share of the mean step.
    pub percent: CategoryPercent,
    /// Kernel union over [first step start, last step end], in percent.
    pub gpu_utilization_percent: f64,
    /// Shortest step.
    pub min_step_ns: TimeNs,
    /// Longest step.
    pub max_step_ns: TimeNs,
    /// Standard deviation of step durations.
    pub stddev_step_ns: TimeNs,
}

fn is_comm_op(name: &str) -> bool {
    name.starts_with("nccl:") || name.starts_with("gloo:")
}

/// Computes the breakdown; `None` when the trace has no CPU activity at all.
pub fn breakdown(trace: &Trace) -> Option<Breakdown> {
    let mut roles: [Vec<Interval>; 7] = Default::default();
    let mut cpu_extent: Option<Interval> = None;
    for (i, s) in trace.spans.iter().enumerate() {
        let name = trace.names.get(s.name);
        let iv = s.interval();
        let role = match s.kind {
            SpanKind::Kernel => {
                let comm = name.starts_with("nccl")
                    || trace
                        .launch_of(SpanId(i as u32))
                        .is_some_and(|l| trace.ancestors(l).any(|a| is_comm_op(trace.name(a))));
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
                cpu_extent = Some(cpu_extent.map_or(iv, |e| e.hull(iv)));
                if profiler_step_number(name).is_some() {
                    continue;
                } else if is_data_loader(name) {
                    5
                } else if is_comm_op(name) {
                    3
                } else {
                    6
                }
            }
            _ => continue,
        };
        roles[role].push(iv);
    }
    let roles: Vec<Vec<Interval>> = roles.into_iter().map(union).collect();
    let windows = device_steps(trace, cpu_extent?);
    if windows.is_empty() {
        return None;
    }
    // Assign each moment to the first role that covers it, in priority order.
    let mut slots = union(windows.iter().map(|w| w.1).collect());
    let mut assigned: Vec<Vec<Interval>> = Vec::new();
    for role in &roles {
        let taken = intersect(&slots, role);
        slots = subtract(&slots, &taken);
        assigned.push(taken);
    }
    assigned.push(slots);
    let mut steps = Vec::new();
    for &(number, w) in &windows {
        let mut a = [0; 8];
        for (k, ranges) in assigned.iter().enumerate() {
            a[k] = covered_ns(ranges, w);
        }
        steps.push(StepBreakdown {
            step: number,
            window: w,
            times: CategoryTimes::from_array(a),
            gpu_utilization_percent: percent(covered_ns(&roles[0], w), w.dur_ns()),
        });
    }
    let n = steps.len() as TimeNs;
    let mut sums = [0; 8];
    for s in &steps {
        for (k, v) in s.times.as_array().into_iter().enumerate() {
            sums[k] += v;
        }
    }
    let durations: Vec<TimeNs> = steps.iter().map(|s| s.window.dur_ns()).collect();
    let total: TimeNs = durations.iter().sum();
    let mean_step_ns = total / n;
    let mean = CategoryTimes::from_array(sums.map(|v| v / n));
    let p = sums.map(|v| percent(v, total));
    let span = Interval::new(windows[0].1.start_ns, windows[windows.len() - 1].1.end_ns);
    let var = durations
        .iter()
        .map(|&d| ((d - mean_step_ns) as f64).powi(2))
        .sum::<f64>()
        / n as f64;
    Some(Breakdown {
        mean_step_ns,
        mean,
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
        gpu_utilization_percent: percent(covered_ns(&roles[0], span), span.dur_ns()),
        min_step_ns: durations.iter().copied().min().unwrap_or(0),
        max_step_ns: durations.iter().copied().max().unwrap_or(0),
        stddev_step_ns: var.sqrt() as TimeNs,
        steps,
    })
}

/// Host steps moved to the device view: step i spans from the end of step i−1 (or its own
/// host start, whichever is later) to the later of its host end and the end of the GPU work
/// launched by API calls inside it. Trailing steps with no GPU work are dropped, and so is the
/// last one if it matched under 80 % of the previous step's GPU ops (a capture cut short).
fn device_steps(trace: &Trace, cpu_extent: Interval) -> Vec<(i64, Interval)> {
    let host: Vec<(i64, Interval)> = if trace.steps.iter().any(|s| s.cpu.is_some()) {
        trace
            .steps
            .iter()
            .filter_map(|s| s.cpu.map(|c| (s.number, c)))
            .collect()
    } else {
        vec![(0, cpu_extent)]
    };
    let mut calls: Vec<(TimeNs, TimeNs, SpanId)> = trace
        .spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind.is_api_call())
        .map(|(i, s)| (s.start_ns, s.end_ns(), SpanId(i as u32)))
        .collect();
    calls.sort_unstable();
    let mut device: Vec<Option<Interval>> = vec![None; host.len()];
    let mut matched = vec![0usize; host.len()];
    let mut matched_any = false;
    let mut first_unmatched_end: Option<TimeNs> = None;
    let mut matched_ops = std::collections::HashSet::new();
    for (k, &(_, h)) in host.iter().enumerate() {
        let from = calls.partition_point(|c| c.0 < h.start_ns);
        for &(start, end, id) in &calls[from..] {
            if start >= h.end_ns {
                break;
            }
            if end > h.end_ns {
                continue;
            }
            for &op in trace.launched_by(id) {
                let iv = trace.span(op).interval();
                device[k] = Some(device[k].map_or(iv, |d| d.hull(iv)));
                matched[k] += 1;
                matched_any = true;
                matched_ops.insert(op);
            }
        }
    }
    if !matched_any {
        return host;
    }
    let mut prev_end = host[0].1.start_ns;
    if let Some(first_dev) = device[0] {
        for (i, s) in trace.spans.iter().enumerate() {
            if s.kind.is_gpu_work()
                && !matched_ops.contains(&SpanId(i as u32))
                && s.end_ns() < first_dev.start_ns
            {
                first_unmatched_end =
                    Some(first_unmatched_end.map_or(s.end_ns(), |e| e.max(s.end_ns())));
            }
        }
        if let Some(e) = first_unmatched_end {
            prev_end = prev_end.max(e);
        }
    }
    let mut out = Vec::new();
    for (k, &(n, h)) in host.iter().enumerate() {
        let start = prev_end.max(h.start_ns);
        let end = match device[k] {
            None => h.end_ns.max(start),
            Some(d) => h.end_ns.max(d.end_ns).max(start),
        };
        out.push((n, Interval::new(start, end)));
        prev_end = end;
    }
    if out.len() > 1 {
        if let Some(last) = matched.iter().rposition(|&m| m > 0) {
            let mut keep = last + 1;
            if last > 0 && (matched[last - 1] as f64) * 0.8 > matched[last] as f64 {
                keep = last;
            }
            out.truncate(keep);
        }
    }
    out
}
