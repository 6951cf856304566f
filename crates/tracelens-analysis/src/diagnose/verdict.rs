//! The verdict: the one sentence every renderer leads with, and the figures behind it, all
//! measured over the analysis window on the focus device (the one with the most busy time).
//!
//! - `no_gpu_activity`: nothing ran on a GPU;
//! - `gpu_bound`: the GPU is idle under [`GPU_BOUND_IDLE_PERCENT`] of the window; the text names
//!   what it is busy with — copies, collectives, or the kernel class to work on next;
//! - `gpu_idle`: otherwise; the text names the largest idle cause, and says when the host runs
//!   far ahead of the GPU (the GPU waits on itself, not on the CPU).

use crate::attribute::idle::{DeviceIdle, IdleCause, UnattributedReason};
use crate::attribute::launch::StreamLaunchDelay;
use crate::diagnose::finding::Finding;
use crate::measure::environment::{Framework, Vendor};
use crate::measure::priority::PrioritySplit;
use crate::measure::utilization::GpuOp;
use crate::measure::window::{AnalysisWindow, WindowKind};
use crate::views::kernels::{kernel_class, KernelClass};
use crate::vocabulary::kernels::{is_communication_kernel, kernel_precision, Precision};
use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{format_ms, CopyDirection, Interval, SpanKind, TimeNs, Trace, NS_PER_MS};

/// Below this share of the idle time, host-side causes do not contradict "the host is not
/// the bottleneck".
const HOST_SIDE_MINOR_PERCENT: f64 = 10.0;

/// Below this idle share of the window the GPU is the bottleneck.
pub const GPU_BOUND_IDLE_PERCENT: f64 = 5.0;
/// A median launch-to-start delay above this means the host runs far ahead of the GPU.
pub const HOST_AHEAD_NS: TimeNs = NS_PER_MS;

/// What the verdict says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// The GPU is busy nearly all the window.
    GpuBound,
    /// The GPU sits idle a noticeable part of the window.
    GpuIdle,
    /// No kernel, copy or fill in the trace.
    NoGpuActivity,
    /// The window is too short to judge (a cycle the run's end cut short, one tiny kernel):
    /// no findings.
    TooShort,
    /// The GPU is busy most of the window and no finding is worth fixing.
    NothingWorthFixing,
}

/// Shares of busy time, in percent (they add up to 100 when the GPU was busy), each moment
/// counted once in the order compute kernels > copies > fills > collectives: a collective
/// hidden under compute is not what the GPU waits for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct BusyBy {
    /// Compute kernels.
    pub kernel: f64,
    /// Copies.
    pub memcpy: f64,
    /// Fills.
    pub memset: f64,
    /// Communication kernels not hidden under compute.
    pub communication: f64,
}

/// One class of kernels and its share of compute-kernel time.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct KernelClassShare {
    /// The class.
    pub class: KernelClass,
    /// Its share of compute-kernel time, in percent.
    pub percent: f64,
    /// The precision most of its time runs in, where the kernel names show it (for the
    /// advice only: not stored).
    #[serde(skip)]
    pub precision: Option<Precision>,
    /// Its compute-kernel time in the window (for the kernel-work finding only: not stored).
    #[serde(skip)]
    pub total_ns: TimeNs,
}

/// The window a verdict covers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct VerdictWindow {
    /// Where it comes from.
    pub kind: WindowKind,
    /// When.
    pub interval: Interval,
    /// Its length.
    pub duration_ns: TimeNs,
    /// Steps in it (0 without steps).
    pub steps: usize,
}

/// The verdict and its figures.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Verdict {
    /// What it says.
    pub kind: VerdictKind,
    /// The sentence every renderer shows.
    pub text: String,
    /// The analysis window.
    pub window: Option<VerdictWindow>,
    /// The device the figures describe (the one with the most busy time).
    pub device: Option<i64>,
    /// Devices with work in the window.
    pub devices_measured: usize,
    /// The step every share is measured against: mean step, or the window without steps.
    pub step_ns: TimeNs,
    /// Busy share of the window, in percent.
    pub gpu_busy_percent: f64,
    /// Idle time in the window.
    pub gpu_idle_ns: TimeNs,
    /// What the busy time is.
    pub busy_by: BusyBy,
    /// The largest compute-kernel classes, largest first (three at most).
    pub kernel_classes: Vec<KernelClassShare>,
    /// The largest idle cause.
    pub main_cause: Option<IdleCause>,
    /// Its share of the idle time, in percent.
    pub main_cause_percent: f64,
    /// Median launch-to-start delay of the device's busiest stream: how far the host runs
    /// ahead.
    pub host_ahead_ns: Option<TimeNs>,
    /// Set when the window is a cold run: mostly one-time work, no steady state.
    #[serde(default)]
    pub cold_run: Option<ColdRun>,
    /// Set when the window is a benchmark's: event-timed loops hold its GPU work and the
    /// idle lies outside them (decided before the detectors, which read it).
    #[serde(skip)]
    pub benchmark: Option<Benchmark>,
}

/// What makes a window a benchmark's (`verdict::benchmark` decides).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Benchmark {
    /// Busy share of the timed loops' time, in percent.
    pub busy_percent: f64,
    /// Share of the window's idle outside the timed loops, in percent.
    pub outside_percent: f64,
}

/// What makes a window a cold run (`diagnose::cold_run` decides).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ColdRun {
    /// Kernel launches in the window that are their kernel's first in the trace.
    pub first_launches: u64,
    /// Kernel launches in the window.
    pub launches: u64,
    /// Share of the step (or window) the GPU sits idle while the launching thread does
    /// one-time work, in percent (the host-compute finding's warm-up part).
    pub one_time_idle_percent: f64,
}

impl ColdRun {
    /// Share of the window's kernel launches that are first launches, in percent.
    #[must_use]
    pub fn first_launch_percent(&self) -> f64 {
        if self.launches == 0 {
            return 0.0;
        }
        (self.first_launches as f64 * 100.0 / self.launches as f64).clamp(0.0, 100.0)
    }
}

/// Everything the verdict reads.
pub struct VerdictInput<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// The window.
    pub window: Option<&'a AnalysisWindow>,
    /// The focus device's idle attribution.
    pub idle: Option<&'a DeviceIdle>,
    /// The focus device's ops clipped to the window.
    pub ops: &'a [GpuOp],
    /// Devices with work in the window.
    pub devices_measured: usize,
    /// Launch delays per stream.
    pub delays: &'a [StreamLaunchDelay],
    /// What the focus device can run (advice names only its precisions).
    pub hardware: &'a crate::measure::environment::Hardware,
    /// The software facts advice depends on (PyTorch range, program).
    pub framework: &'a crate::measure::environment::Framework,
}

/// Computes the verdict.
#[must_use]
pub fn verdict(input: &VerdictInput) -> Verdict {
    let trace = input.trace;
    let window = input.window.map(|w| VerdictWindow {
        kind: w.kind,
        interval: w.interval,
        duration_ns: w.interval.dur_ns(),
        steps: w.steps.len(),
    });
    let step_ns = input.window.map_or(0, |w| w.step_ns());
    let mut v = Verdict {
        kind: VerdictKind::NoGpuActivity,
        text: "No GPU activity in this trace: nothing to diagnose on the GPU side".into(),
        window,
        device: None,
        devices_measured: input.devices_measured,
        step_ns,
        gpu_busy_percent: 0.0,
        gpu_idle_ns: 0,
        busy_by: BusyBy::default(),
        kernel_classes: Vec::new(),
        cold_run: None,
        benchmark: None,
        main_cause: None,
        main_cause_percent: 0.0,
        host_ahead_ns: None,
    };
    let (Some(w), Some(idle)) = (input.window, input.idle) else {
        if trace.has_gpu_activity() {
            v.text = "The GPU ran nothing inside the analysis window".into();
            v.kind = VerdictKind::GpuIdle;
        } else if !trace.source.accelerators_not_analysed.is_empty() {
            let others: Vec<String> = trace
                .source
                .accelerators_not_analysed
                .iter()
                .map(|(a, n)| format!("{n} {a} device records"))
                .collect();
            v.text = format!(
                "No CUDA or ROCm GPU activity: the work ran on an accelerator tracelens does not analyse yet ({})",
                others.join(", ")
            );
        } else {
            v.text = no_gpu_activity(trace, input.framework);
        }
        return v;
    };
    let window_ns = w.interval.dur_ns();
    v.device = Some(idle.device);
    v.gpu_idle_ns = idle.idle_ns;
    let busy_ns = window_ns - idle.idle_ns;
    v.gpu_busy_percent = crate::num::percent(busy_ns, window_ns);
    v.busy_by = busy_by(trace, input.ops);
    v.kernel_classes = kernel_classes(trace, input.ops);
    v.host_ahead_ns = input
        .delays
        .iter()
        .filter(|d| d.device == idle.device)
        .max_by_key(|d| (d.ops, std::cmp::Reverse(d.stream)))
        .map(|d| d.median_ns);
    if let Some((cause, ns)) = idle
        .by_cause
        .iter()
        .filter(|(_, &ns)| ns > 0)
        .max_by_key(|(c, &ns)| (ns, std::cmp::Reverse(**c)))
    {
        v.main_cause = Some(*cause);
        v.main_cause_percent = crate::num::percent(*ns, idle.idle_ns);
    }
    let per = if w.has_steps() {
        "of each step"
    } else {
        "of the profiled time"
    };
    let on = if input.devices_measured > 1 {
        format!(
            "GPU {} (the busiest of {}) ",
            idle.device, input.devices_measured
        )
    } else {
        "GPU ".to_string()
    };
    let idle_pct = 100.0 - v.gpu_busy_percent;
    if idle_pct < GPU_BOUND_IDLE_PERCENT {
        v.kind = VerdictKind::GpuBound;
        v.text = format!(
            "{on}busy {:.0} % {per}: {}",
            v.gpu_busy_percent,
            bound_by(trace, &v, input.ops, input.hardware, input.framework)
        );
        return v;
    }
    v.kind = VerdictKind::GpuIdle;
    let cause = v.main_cause.unwrap_or(IdleCause::Unattributed);
    // Idle no launch explains, ended mostly by unified-memory migrations: the faults are why.
    let mut text = match fault_idle_ns(idle) {
        Some(faults_ns) if cause == IdleCause::Unattributed && faults_ns * 2 > idle.idle_ns => {
            let (to_gpu_ns, to_host_ns) = fault_gaps_by_direction(trace, idle);
            let what = if to_host_ns * 3 >= faults_ns * 2 {
                "managed pages moving back to the host on its faults (the host touching the results), with no launch behind them"
            } else if to_gpu_ns * 3 >= faults_ns * 2 {
                "managed pages moving to the GPU on faults, with no launch behind them"
            } else {
                "managed pages moving on faults, with no launch behind them"
            };
            format!(
                "{on}idle {idle_pct:.0} % {per}, mostly in {FAULT_GAPS_HEADLINE} ({:.0} % of the idle time): {what}{}",
                crate::num::percent(faults_ns, idle.idle_ns),
                faults_inside_kernels(trace, idle)
            )
        }
        Some(faults_ns) if cause == IdleCause::Unattributed => format!(
            "{on}idle {idle_pct:.0} % {per}, mostly {} ({:.0} % of the idle time), most of it in {FAULT_GAPS_HEADLINE} ({:.0} % of the idle time): managed pages moving on faults",
            cause.describe(),
            v.main_cause_percent,
            crate::num::percent(faults_ns, idle.idle_ns)
        ),
        _ => format!(
            "{on}idle {idle_pct:.0} % {per}, mostly {} ({:.0} % of the idle time)",
            cause.describe(),
            v.main_cause_percent
        ),
    };
    if let Some(ahead) = v.host_ahead_ns.filter(|&a| a >= HOST_AHEAD_NS) {
        if cause.is_gpu_side_wait() || cause == IdleCause::LaunchLatency {
            // The host runs ahead on the whole, but its own work may still be a large part
            // of the idle: then say so instead of clearing it.
            let host_ns: TimeNs = idle
                .by_cause
                .iter()
                .filter(|(c, _)| c.is_host_side())
                .map(|(_, &ns)| ns)
                .sum();
            let host_pct = crate::num::percent(host_ns, idle.idle_ns);
            if cause == IdleCause::CrossStreamWait {
                // The awaited work may itself be launched late (behind a blocking host call):
                // the launches being early does not clear the host.
                text.push_str(&format!(
                    "; launches reach the GPU {} after they are issued (median): the wait is on other streams' work, not on these launches",
                    format_ms(ahead)
                ));
            } else if host_pct < HOST_SIDE_MINOR_PERCENT {
                text.push_str(&format!(
                    "; launches reach the GPU {} after they are issued (median), so the host is not the bottleneck",
                    format_ms(ahead)
                ));
            } else {
                text.push_str(&format!(
                    "; launches reach the GPU {} after they are issued (median), yet CPU work on the launching thread still makes up {host_pct:.0} % of the idle time",
                    format_ms(ahead)
                ));
            }
        }
    }
    // Copies that fill most of the window bound it whatever the idle is.
    let copy_share = v.busy_by.memcpy * v.gpu_busy_percent / 100.0;
    if copy_share >= COPY_BOUND_WINDOW_PERCENT {
        let (label, bytes) = main_copy_direction(trace, input.ops);
        text.push_str(&format!(
            "; copies fill {copy_share:.0} % of the window (mostly {label}, {}), against {:.0} % for kernels: the run is transfer-bound, so keep data on the GPU between kernels and copy less before anything else",
            tracelens_model::format_bytes(i64::try_from(bytes).unwrap_or(i64::MAX)),
            v.busy_by.kernel * v.gpu_busy_percent / 100.0
        ));
    }
    if !idle.reliable() {
        text.push_str(" (graph replays no capture accounts for: attribution less certain)");
    }
    v.text = text;
    v
}

/// An idle verdict whose GPU is busy mostly with copies, many times the kernels' time, says
/// that moving the data costs more than the work it moves for (not in a cold run, whose
/// copies are the one-time upload).
pub(crate) fn mark_copies_outweigh_kernels(v: &mut Verdict, trace: &Trace, ops: &[GpuOp]) {
    let copy_share = v.busy_by.memcpy * v.gpu_busy_percent / 100.0;
    if v.kind != VerdictKind::GpuIdle
        || v.cold_run.is_some()
        || copy_share >= COPY_BOUND_WINDOW_PERCENT
        || v.busy_by.memcpy < COPY_BOUND_BUSY_PERCENT
        || v.busy_by.memcpy < v.busy_by.kernel * COPY_TO_KERNEL_RATIO
    {
        return;
    }
    let (label, bytes) = main_copy_direction(trace, ops);
    v.text.push_str(&format!(
        "; of the GPU's busy time, {:.0} % is copies (mostly {label}, {}), {:.0} times the kernels' time: the data crosses the link for far less GPU work than moving it costs, so keep the operands on the GPU across calls (or leave work this small on the CPU)",
        v.busy_by.memcpy,
        tracelens_model::format_bytes(i64::try_from(bytes).unwrap_or(i64::MAX)),
        v.busy_by.memcpy / v.busy_by.kernel.max(0.1)
    ));
}

/// An idle window whose copies fill this share of it or more is transfer-bound.
pub const COPY_BOUND_WINDOW_PERCENT: f64 = 50.0;

/// Copies that are this share of the GPU's busy time or more are its work: a busy GPU's
/// verdict names the transfers, and its copy findings stay.
pub const COPIES_ARE_THE_WORK_PERCENT: f64 = 50.0;

/// Copies that are this share of the busy time or more, and [`COPY_TO_KERNEL_RATIO`] times
/// the kernels' time, cost more than the work they move data for.
pub const COPY_BOUND_BUSY_PERCENT: f64 = 75.0;

/// See [`COPY_BOUND_BUSY_PERCENT`].
pub const COPY_TO_KERNEL_RATIO: f64 = 5.0;

/// Windows shorter than this are too short to judge: a profiling cycle cut short by the end
/// of the run, or one tiny kernel, says nothing about the program's steps.
pub const MIN_JUDGED_WINDOW_NS: TimeNs = 100_000;

/// A finding's win below this share of the step is not worth a fix on a GPU that is already
/// busy (the `low` severity's ceiling).
pub const WORTH_FIXING_PERCENT: f64 = 3.0;

/// Idle above this share is worth a look however small each finding's win.
const NOTHING_TO_FIX_IDLE_PERCENT: f64 = 15.0;

/// Marks a window too short to judge: its verdict says so and how to capture a longer one;
/// returns whether it did (the caller then drops the findings, which mean nothing on it).
pub(crate) fn mark_too_short(
    v: &mut Verdict,
    trace: &Trace,
    gpu_ops: usize,
    fw: &Framework,
) -> bool {
    let Some(w) = &v.window else {
        return false;
    };
    if v.kind == VerdictKind::NoGpuActivity || w.duration_ns >= MIN_JUDGED_WINDOW_NS {
        return false;
    }
    let steps = match w.steps {
        0 => String::new(),
        1 => ", 1 step".to_string(),
        n => format!(", {n} steps"),
    };
    v.kind = VerdictKind::TooShort;
    let window_end = w.interval.end_ns;
    let (tail_ns, later_call) = after_window(trace, window_end);
    let whole_run = fw.capture != tracelens_model::CaptureTool::TorchProfiler
        && crate::measure::one_time::capture_holds_context_creation(trace);
    let advice = if !later_call && tail_ns >= IDLE_TAIL_NS {
        // The program ran on without calling the GPU: a longer capture holds no more work.
        format!(
            "the program made no GPU call in the {} the capture holds after it, so a longer capture of this run would show no more GPU work: make the run reach its GPU work (without waiting for input) and capture that",
            format_ms(tail_ns)
        )
    } else if whole_run && tail_ns < IDLE_TAIL_NS {
        // From the context's creation to just after this: the run's whole GPU work.
        format!(
            "the capture holds the run from its context creation to {} after this, so this is all the GPU work the run did, too little to measure: run it at a realistic input size and time repeated launches after an untimed first one",
            format_ms(tail_ns)
        )
    } else {
        crate::diagnose::advice::longer_capture(fw.dialect(), fw.capture).to_string()
    };
    v.text = format!(
        "Too short to judge: the analysis window is {} ({gpu_ops} GPU op{}{steps}); {advice}",
        if w.duration_ns < 1_000 {
            format!("{} ns", w.duration_ns)
        } else {
            format_ms(w.duration_ns)
        },
        if gpu_ops == 1 { "" } else { "s" },
    );
    true
}

/// A program that runs on this long after its last GPU op without an API call did no more
/// GPU work in this run.
pub const IDLE_TAIL_NS: TimeNs = 1_000 * tracelens_model::NS_PER_MS;

/// How long the capture runs on after `window_end`, and whether an API call starts in that
/// time.
fn after_window(trace: &Trace, window_end: TimeNs) -> (TimeNs, bool) {
    let mut last = window_end;
    let mut later_call = false;
    for s in &trace.spans {
        later_call |= s.kind.is_api_call() && s.start_ns > window_end;
        last = last.max(s.end_ns());
    }
    (last - window_end, later_call)
}

/// A busy GPU whose findings each win under [`WORTH_FIXING_PERCENT`] of the step: the verdict
/// says there is nothing worth fixing instead of leading with the largest idle cause.
pub(crate) fn mark_nothing_worth_fixing(v: &mut Verdict, findings: &[Finding]) {
    let idle_pct = 100.0 - v.gpu_busy_percent;
    if v.kind != VerdictKind::GpuIdle
        || idle_pct >= NOTHING_TO_FIX_IDLE_PERCENT
        || v.cold_run.is_some()
        || idle_findings(findings).any(|f| f.estimated_win_percent >= WORTH_FIXING_PERCENT)
    {
        return;
    }
    let per = if v.window.as_ref().is_some_and(|w| w.steps > 0) {
        "of each step"
    } else {
        "of the profiled time"
    };
    let cause = v.main_cause.map_or_else(
        || " small".to_string(),
        |c| format!(" mostly {}", c.describe()),
    );
    let largest = idle_findings(findings)
        .map(|f| f.estimated_win_percent)
        .fold(0.0, f64::max);
    let wins = if idle_findings(findings).next().is_none() {
        "no finding".to_string()
    } else {
        // Rounded down: a win just under the bar never reads as the bar itself ("3.0 %
        // (under 3 %)").
        format!(
            "the largest expected win is {:.1} %",
            (largest * 10.0).floor() / 10.0
        )
    };
    v.kind = VerdictKind::NothingWorthFixing;
    v.text = format!(
        "GPU busy {:.0} % {per}: nothing worth fixing — the {idle_pct:.0} % idle is{cause}, and {wins} (under {WORTH_FIXING_PERCENT:.0} % of the time)",
        v.gpu_busy_percent
    );
}

/// The findings about the idle and the host: all but the kernels' own work, which is busy
/// time (it is said after, by [`mark_kernel_work`]).
fn idle_findings(findings: &[Finding]) -> impl Iterator<Item = &Finding> {
    findings
        .iter()
        .filter(|f| f.kind != crate::FindingKind::KernelWork)
}

/// What a GPU-bound device is busy with, and what to do next.
fn bound_by(
    trace: &Trace,
    v: &Verdict,
    ops: &[GpuOp],
    hardware: &crate::measure::environment::Hardware,
    framework: &crate::measure::environment::Framework,
) -> String {
    let b = v.busy_by;
    if b.memcpy >= COPIES_ARE_THE_WORK_PERCENT {
        let (label, bytes) = main_copy_direction(trace, ops);
        return format!(
            "{:.0} % of the busy time is {label} copies ({}): the transfers are the bottleneck, not compute; keep data on the GPU, copy less or overlap copies with compute",
            b.memcpy,
            tracelens_model::format_bytes(i64::try_from(bytes).unwrap_or(i64::MAX))
        );
    }
    if b.communication >= 50.0 {
        return format!(
            "{:.0} % of the busy time is collectives not hidden under compute: overlap or shrink communication",
            b.communication
        );
    }
    // The largest kernel in double precision on a GPU built for single: that first.
    let (largest, largest_percent) = largest_kernel(trace, ops);
    if crate::measure::peaks::double_on_slow_fp64(hardware, largest, largest_percent) {
        return format!(
            "the GPU itself is the bottleneck; {} takes {largest_percent:.0} % of kernel time in double precision, which {} runs at a small fraction of its FP32 rate: compute in single precision where the results allow",
            tracelens_model::kernel_display_name(largest),
            hardware.name.as_deref().unwrap_or("this GPU")
        );
    }
    match v.kernel_classes.first() {
        // Kernels no class names: the largest one by name is what to look at.
        Some(top) if top.class == KernelClass::Other => {
            let (name, percent) = largest_kernel(trace, ops);
            format!(
                "the GPU itself is the bottleneck; {} takes {percent:.0} % of kernel time: {}",
                tracelens_model::kernel_display_name(name),
                match hardware.vendor {
                    Vendor::Amd => "a kernel profiler (rocprofv3, Omniperf) on it shows whether it is compute- or memory-bound",
                    _ => "Nsight Compute (ncu) on it shows whether it is compute- or memory-bound",
                }
            )
        }
        Some(top) => format!(
            "the GPU itself is the bottleneck; {:.0} % of kernel time is {}: {}",
            top.percent,
            top.class.describe(),
            match (framework.pytorch(), hardware.vendor) {
                (true, _) => top.class.next_step(hardware, framework, top.precision),
                (false, Vendor::Nvidia) => "Nsight Compute (ncu) on the largest kernels shows whether each is compute- or memory-bound".into(),
                (false, _) => "a kernel profiler on the largest kernels shows whether each is compute- or memory-bound".into(),
            }
        ),
        None => "the GPU itself is the bottleneck".into(),
    }
}

/// The compute kernel with the most time in `ops`, and its share of compute-kernel time.
fn largest_kernel<'t>(trace: &'t Trace, ops: &[GpuOp]) -> (&'t str, f64) {
    let mut by: FxHashMap<tracelens_model::NameId, TimeNs> = FxHashMap::default();
    let mut total: TimeNs = 0;
    for &(kind, iv, id) in ops {
        let name = trace.span(id).name;
        if kind != SpanKind::Kernel || is_communication_kernel(trace.names.get(name)) {
            continue;
        }
        *by.entry(name).or_default() += iv.dur_ns();
        total += iv.dur_ns();
    }
    by.into_iter()
        .max_by_key(|&(n, ns)| (ns, std::cmp::Reverse(n)))
        .map_or(("", 0.0), |(n, ns)| {
            (trace.names.get(n), crate::num::percent(ns, total))
        })
}

/// `21 cudaLaunchKernel calls returned error 222 (cudaErrorUnsupportedPtxVersion)`.
fn failed_call_words(e: &tracelens_model::ApiError) -> String {
    let name = crate::vocabulary::api::cuda_error(e.code).map_or("an error", |(n, _)| n);
    format!(
        "{} {} {} returned error {} ({name})",
        e.count,
        e.call,
        if e.count == 1 { "call" } else { "calls" },
        e.code
    )
}

/// What a failed call's error code means, in words.
fn failed_call_why(e: &tracelens_model::ApiError) -> &'static str {
    crate::vocabulary::api::cuda_error(e.code).map_or("check the call's error code", |(_, why)| why)
}

/// Kernel launches that returned an error ran nothing: that leads the verdict. Where no
/// kernel ran at all, it is the verdict, and no finding about the copies and set-up around
/// the failed launches is worth a fix before them (returns whether the findings go).
pub fn mark_failed_launches(v: &mut Verdict, trace: &Trace) -> bool {
    let Some(e) = trace
        .metadata
        .api_errors
        .iter()
        .filter(|e| crate::vocabulary::api::is_kernel_launch(&e.call))
        .max_by_key(|e| e.count)
    else {
        return false;
    };
    // Without any GPU op the no-GPU-work verdict already names the failure.
    if !trace.spans.iter().any(|s| {
        matches!(
            s.kind,
            SpanKind::Kernel | SpanKind::Memcpy | SpanKind::Memset
        )
    }) {
        return false;
    }
    let ran = trace.spans.iter().any(|s| s.kind == SpanKind::Kernel);
    if ran {
        v.text = format!(
            "{}: those kernels never ran ({}). {}",
            failed_call_words(e),
            failed_call_why(e),
            v.text
        );
        return false;
    }
    v.text = format!(
        "No kernel ran: {}, so the GPU only copied data around launches that failed: {}. Fix that first; until the launches succeed there is no GPU work to judge",
        failed_call_words(e),
        failed_call_why(e)
    );
    true
}

/// Why a trace holds no GPU work, as far as it tells: launch calls without GPU records mean
/// the capture did not record GPU activity; an Nsight Systems capture without any CUDA call
/// was taken without its CUDA trace; otherwise the program ran nothing on a GPU.
fn no_gpu_activity(trace: &Trace, fw: &Framework) -> String {
    let launches = trace
        .spans
        .iter()
        .filter(|s| {
            s.kind.is_api_call()
                && crate::vocabulary::api::submits_gpu_work(trace.names.get(s.name))
        })
        .count();
    // Launches that returned an error ran nothing: the capture is not at fault.
    let failed = trace
        .metadata
        .api_errors
        .iter()
        .find(|e| crate::vocabulary::api::submits_gpu_work(&e.call));
    if let Some(e) = failed {
        return format!(
            "No GPU work ran: {}, so there was nothing for the GPU to do: {}",
            failed_call_words(e),
            failed_call_why(e)
        );
    }
    if launches > 0 && fw.nsight() {
        // The CUDA API was traced, so `-t cuda` was on: the activity records did not come.
        let wsl = trace
            .metadata
            .extra
            .get("system.kernel_release")
            .filter(|r| crate::vocabulary::devices::is_wsl(r));
        return match wsl {
            Some(release) => format!(
                "GPU activity not recorded: the CUDA API was traced ({launches} kernel launch, copy or fill calls) but no kernel or copy came back, and the capture ran under WSL2 (kernel {release}), where Nsight Systems gets GPU activity only with a recent Windows driver and Nsight Systems release: profile on native Linux, or update both; tracing again with -t cuda as it is will give the same result{}",
                dominant_cpu_op(trace).unwrap_or_default()
            ),
            None => format!(
                "GPU activity not recorded: the CUDA API was traced ({launches} kernel launch, copy or fill calls) but no kernel or copy came back, so the GPU side was not available to the profiler (a container without the profiling capability, a driver that restricts profiling to administrators, or a GPU the profiler does not support): fix that and profile again{}",
                dominant_cpu_op(trace).unwrap_or_default()
            ),
        };
    }
    if launches > 0 {
        let how = match fw.capture {
            tracelens_model::CaptureTool::TorchProfiler => {
                "torch.profiler with ProfilerActivity.CUDA"
            }
            tracelens_model::CaptureTool::NsightSystems => "nsys profile -t cuda",
            tracelens_model::CaptureTool::Other | tracelens_model::CaptureTool::MemorySnapshot => {
                "the profiler's GPU activity enabled"
            }
        };
        return format!(
            "GPU activity not recorded: the trace holds {launches} kernel launch, copy or fill calls but no GPU work to match them, so the capture missed the GPU side (CUPTI activity unavailable, as under WSL, or not enabled): profile again with {how}{}",
            dominant_cpu_op(trace).unwrap_or_default()
        );
    }
    if fw.capture == tracelens_model::CaptureTool::MemorySnapshot {
        return "A PyTorch memory snapshot: it records the caching allocator's history and segments, not the GPU's work, so there is no busy or idle time to diagnose; the memory section says where the memory went".into();
    }
    let api_calls = trace.spans.iter().filter(|s| s.kind.is_api_call()).count();
    if api_calls > 0 {
        return never_launched(trace, fw);
    }
    if fw.nsight() && api_calls == 0 {
        return "No GPU activity recorded: this Nsight Systems capture holds no CUDA trace at all (no API call, kernel or copy), so whether the program used a GPU is not in it: profile again with nsys profile -t cuda".into();
    }
    "No GPU activity in this trace: nothing to diagnose on the GPU side".into()
}

/// The verdict of a capture whose program made API calls but never submitted GPU work: the
/// calls (the runtime's, where there are any: the driver calls under them are its own
/// bookkeeping), the longest one (context creation when it is the first), and where to look.
fn never_launched(trace: &Trace, fw: &Framework) -> String {
    use crate::vocabulary::api::{api_family, normalize_api, GpuApi};
    let runtime = |s: &&tracelens_model::Span| {
        matches!(
            api_family(trace.names.get(s.name)),
            Some(GpuApi::CudaRuntime | GpuApi::Hip)
        )
    };
    let any_runtime = trace
        .spans
        .iter()
        .filter(|s| s.kind.is_api_call())
        .any(|s| runtime(&s));
    let calls: Vec<&tracelens_model::Span> = trace
        .spans
        .iter()
        .filter(|s| s.kind.is_api_call() && (!any_runtime || runtime(s)))
        .collect();
    let mut by_name: FxHashMap<&str, usize> = FxHashMap::default();
    for s in &calls {
        *by_name
            .entry(normalize_api(trace.names.get(s.name)))
            .or_default() += 1;
    }
    let mut names: Vec<(&str, usize)> = by_name.into_iter().collect();
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let listed: Vec<String> = names
        .iter()
        .take(3)
        .map(|&(n, c)| {
            if c == 1 {
                n.to_string()
            } else {
                format!("{n} ×{c}")
            }
        })
        .collect();
    let first = calls.iter().min_by_key(|s| s.start_ns).copied();
    let longest = calls
        .iter()
        .max_by_key(|s| s.dur_ns)
        .filter(|s| s.dur_ns >= tracelens_model::NS_PER_MS)
        .map_or(String::new(), |s| {
            let context = if first.is_some_and(|f| std::ptr::eq(f, *s)) {
                ", the first call: it creates the context"
            } else {
                ""
            };
            format!(
                "; the longest, {}, takes {}{context}",
                normalize_api(trace.names.get(s.name)),
                format_ms(s.dur_ns)
            )
        });
    // A profiler turned on around a region records that region; a whole-process capture
    // records the run.
    let next = if fw.capture == tracelens_model::CaptureTool::TorchProfiler {
        "The profiled region ran no GPU work: put the profiler around the code that runs the model on the GPU (model and inputs on the device)"
    } else {
        "It stopped before its GPU work (an early exit, an error path, or input it waited for): check why, then capture a run that reaches the kernels"
    };
    format!(
        "No GPU work in this capture: the program made {} CUDA API call{} ({}{}) but never launched a kernel, copy or fill{longest}. {next}",
        calls.len(),
        if calls.len() == 1 { "" } else { "s" },
        listed.join(", "),
        if names.len() > 3 { ", …" } else { "" }
    )
}

/// A framework op that takes this share of a capture without GPU records is named.
pub const DOMINANT_CPU_OP_PERCENT: f64 = 25.0;

/// What the host's time goes to in a capture whose GPU side was not recorded, when one
/// outermost framework op takes [`DOMINANT_CPU_OP_PERCENT`] of the capture or more: a clause
/// naming it, and the fix where it computes on CPU tensors.
fn dominant_cpu_op(trace: &Trace) -> Option<String> {
    let (mut first, mut last) = (TimeNs::MAX, TimeNs::MIN);
    let mut by: FxHashMap<tracelens_model::NameId, (TimeNs, bool)> = FxHashMap::default();
    for (i, s) in trace.spans.iter().enumerate() {
        if s.kind.is_gpu() {
            continue;
        }
        first = first.min(s.start_ns);
        last = last.max(s.end_ns());
        let id = tracelens_model::SpanId::at(i);
        let outermost = s.kind == SpanKind::CpuOp
            && !trace
                .ancestors(id)
                .any(|a| trace.span(a).kind == SpanKind::CpuOp);
        if outermost {
            let e = by.entry(s.name).or_insert((0, true));
            e.0 += s.dur_ns;
            e.1 &= crate::attribute::idle::computes_on_cpu(trace, id);
        }
    }
    let (name, (ns, on_cpu)) = by
        .into_iter()
        .max_by_key(|&(n, (ns, _))| (ns, std::cmp::Reverse(n)))?;
    let percent = crate::num::percent(ns, last - first);
    if percent < DOMINANT_CPU_OP_PERCENT {
        return None;
    }
    let name = trace.names.get(name);
    let fix = match (on_cpu, crate::vocabulary::ops::is_tensor_factory(name)) {
        (true, true) => {
            ": it builds its tensors on the CPU; create them on the GPU directly (device=\"cuda\")"
        }
        (true, false) => ": it computes on CPU tensors; move its inputs to the GPU first",
        _ => "",
    };
    Some(format!(
        ". What the capture does show: the host spends {percent:.0} % of it in {name} ({}){fix}",
        format_ms(ns)
    ))
}

/// The copy direction with the most copy time, and its bytes.
fn main_copy_direction(trace: &Trace, ops: &[GpuOp]) -> (String, u64) {
    let mut by: FxHashMap<u8, (TimeNs, u64)> = FxHashMap::default();
    for &(kind, iv, id) in ops {
        if kind != SpanKind::Memcpy {
            continue;
        }
        let info = trace.copy_info(id).copied().unwrap_or_default();
        let key = match info.direction {
            CopyDirection::HtoD => 0,
            CopyDirection::DtoH => 1,
            CopyDirection::DtoD | CopyDirection::PtoP => 2,
            _ => 3,
        };
        let e = by.entry(key).or_default();
        e.0 += iv.dur_ns();
        e.1 += info.bytes.unwrap_or(0);
    }
    let label = |key: u8| match key {
        0 => "host-to-device",
        1 => "device-to-host",
        2 => "device-to-device",
        _ => "memory",
    };
    let total_ns: TimeNs = by.values().map(|v| v.0).sum();
    let mut directions: Vec<(u8, (TimeNs, u64))> = by.into_iter().collect();
    directions.sort_by_key(|&(k, (ns, _))| (std::cmp::Reverse(ns), k));
    match directions.as_slice() {
        [] => (label(3).to_string(), 0),
        // One direction under this share of the copy time: the two largest are named.
        [(a, (a_ns, a_bytes)), (b, (_, b_bytes)), ..]
            if a_ns.saturating_mul(4) < total_ns.saturating_mul(3) =>
        {
            (
                format!("{} and {}", label(*a), label(*b)),
                a_bytes + b_bytes,
            )
        }
        [(a, (_, bytes)), ..] => (label(*a).to_string(), *bytes),
    }
}

/// Busy shares, each moment counted once: compute > copies > fills > collectives.
fn busy_by(trace: &Trace, ops: &[GpuOp]) -> BusyBy {
    // One pass, one name lookup per distinct kernel name.
    let mut names: FxHashMap<tracelens_model::NameId, bool> = FxHashMap::default();
    // `ops` is sorted by start: the classes' unions are split as they grow, over the ops'
    // extent, without a list per class.
    let (Some(first), Some(last)) = (
        ops.first().map(|o| o.1.start_ns),
        ops.iter().map(|o| o.1.end_ns).max(),
    ) else {
        return BusyBy::default();
    };
    let mut split = PrioritySplit::<4>::new(vec![Interval::new(first, last)]);
    for &(kind, iv, id) in ops {
        let class = match kind {
            SpanKind::Memcpy => 1,
            SpanKind::Memset => 2,
            _ => {
                let name = trace.span(id).name;
                let comm = *names
                    .entry(name)
                    .or_insert_with(|| is_communication_kernel(trace.names.get(name)));
                if comm {
                    3
                } else {
                    0
                }
            }
        };
        split.add(class, iv);
    }
    let shares = split.finish().first().map_or([0; 4], |&(shares, _)| shares);
    let busy: TimeNs = shares.iter().sum();
    let p = |x| crate::num::percent(x, busy);
    BusyBy {
        kernel: p(shares[0]),
        memcpy: p(shares[1]),
        memset: p(shares[2]),
        communication: p(shares[3]),
    }
}

/// Whether GPU op `id` was launched inside a convolution op (within the three CPU ops around
/// its launch call).
fn launched_by_convolution(trace: &Trace, id: tracelens_model::SpanId) -> bool {
    trace.launch_of(id).is_some_and(|launch| {
        trace
            .ancestors(launch)
            .filter(|&a| trace.span(a).kind == SpanKind::CpuOp)
            .take(3)
            .any(|a| crate::vocabulary::ops::is_convolution_op(trace.name(a)))
    })
}

/// Compute-kernel time per class, largest first (three at most), each with the precision
/// most of its named time runs in.
fn kernel_classes(trace: &Trace, ops: &[GpuOp]) -> Vec<KernelClassShare> {
    type Read = (KernelClass, Option<Precision>);
    let mut read: FxHashMap<tracelens_model::NameId, Read> = FxHashMap::default();
    let mut by: FxHashMap<KernelClass, TimeNs> = FxHashMap::default();
    let mut by_precision: FxHashMap<(KernelClass, Precision), TimeNs> = FxHashMap::default();
    let mut total: TimeNs = 0;
    for &(kind, iv, id) in ops {
        if kind != SpanKind::Kernel {
            continue;
        }
        let name = trace.span(id).name;
        let (mut class, precision) = *read.entry(name).or_insert_with(|| {
            let n = trace.names.get(name);
            (kernel_class(n), kernel_precision(n))
        });
        if class == KernelClass::Communication {
            continue;
        }
        // A GEMM a convolution launches (implicit GEMM, im2col) is convolution time.
        if matches!(class, KernelClass::Gemm | KernelClass::GemmFp32)
            && launched_by_convolution(trace, id)
        {
            class = KernelClass::Convolution;
        }
        *by.entry(class).or_default() += iv.dur_ns();
        if let Some(p) = precision {
            *by_precision.entry((class, p)).or_default() += iv.dur_ns();
        }
        total += iv.dur_ns();
    }
    let mut shares: Vec<KernelClassShare> = by
        .into_iter()
        .map(|(class, ns)| KernelClassShare {
            class,
            total_ns: ns,
            percent: crate::num::percent(ns, total),
            precision: by_precision
                .iter()
                .filter(|((c, _), _)| *c == class)
                .max_by_key(|&(&(_, p), &ns)| (ns, std::cmp::Reverse(p)))
                .map(|((_, p), _)| *p),
        })
        .collect();
    shares.sort_by(|a, b| b.percent.total_cmp(&a.percent).then(a.class.cmp(&b.class)));
    shares.truncate(3);
    shares
}

/// A finding under this share of the step is noise next to a GPU-bound window's kernels.
pub const TRIVIAL_ON_BUSY_GPU_PERCENT: f64 = 1.0;

/// One-time work under this share of a GPU-bound window is its fixed cost, not a fix.
pub const ONE_TIME_ON_BUSY_GPU_PERCENT: f64 = 5.0;

/// On a GPU-bound window the kernels are the lever: findings that cost under
/// [`TRIVIAL_ON_BUSY_GPU_PERCENT`] of the step both on the GPU and on the host are dropped, and
/// so are, in a window without steps, those whose replayed prediction saves under that share
/// (the busy GPU takes up what they free), and one-time work under [`ONE_TIME_ON_BUSY_GPU_PERCENT`], so the first fix a
/// reader sees is never a trivial change next to a busy GPU.
pub(crate) fn drop_trivial_on_busy_gpu(v: &Verdict, findings: &mut Vec<Finding>) {
    if v.kind == VerdictKind::GpuBound {
        let step_ns = v.step_ns.max(1) as f64;
        let share = |ns: TimeNs| ns as f64 * 100.0 / step_ns;
        // In a loop of steps the host a fix frees is free for the next step; in a run without
        // steps a fix the replay says saves nothing has no later step to help.
        let stepped = v.window.is_some_and(|w| w.steps > 0);
        findings.retain(|f| {
            let host_percent = share(f.cpu_cost_per_step_ns.unwrap_or(0));
            let costs = f.estimated_win_percent >= TRIVIAL_ON_BUSY_GPU_PERCENT
                || host_percent >= TRIVIAL_ON_BUSY_GPU_PERCENT;
            // Where the GPU's busy time is mostly copies, a copy finding is about its work.
            let copies_are_the_work = v.busy_by.memcpy >= COPIES_ARE_THE_WORK_PERCENT
                && f.win_kind == crate::diagnose::finding::WinKind::ExposedCopy;
            let saves = stepped
                || copies_are_the_work
                || f.predicted_step_ns
                    .is_none_or(|p| share(v.step_ns - p) >= TRIVIAL_ON_BUSY_GPU_PERCENT);
            let recurs =
                f.one_time.is_none() || f.estimated_win_percent >= ONE_TIME_ON_BUSY_GPU_PERCENT;
            costs && saves && recurs
        });
    }
}

/// A GPU-bound verdict whose kernels leave most multiprocessors empty says so: the busy
/// figure counts a one-block kernel as a busy GPU, and filling the GPU comes before tuning
/// the kernels.
/// An idle verdict names them too when they are a tenth of the time or more: the GPU's busy
/// time is then mostly one multiprocessor's.
pub(crate) fn mark_small_grids(v: &mut Verdict, findings: &[Finding]) {
    let Some(f) = findings
        .iter()
        .find(|f| f.kind == crate::FindingKind::SmallGrid)
    else {
        return;
    };
    let sub_warp_mark = format!(": {}", crate::diagnose::finding::SUB_WARP_MARK);
    if let Some((what, _)) = f.title.split_once(sub_warp_mark.as_str()) {
        match v.kind {
            VerdictKind::GpuBound => v.text.push_str(&format!(
                ". But busy is not full: {what}, so most of each warp's lanes sit idle while it runs; launch whole warps before tuning the kernels"
            )),
            VerdictKind::GpuIdle if f.estimated_win_percent >= 10.0 => v.text.push_str(
                &format!(". While it is busy, most of its lanes sit idle: {what}"),
            ),
            _ => {}
        }
        return;
    }
    let what = f.title.split(": small grids").next().unwrap_or(&f.title);
    match v.kind {
        VerdictKind::GpuBound => v.text.push_str(&format!(
            ". But busy is not full: {what}, so most of the GPU sits empty while it runs; size the grids to the GPU before tuning the kernels"
        )),
        VerdictKind::GpuIdle if f.estimated_win_percent >= 10.0 => v.text.push_str(&format!(
            ". While it is busy, most of it sits empty: {what}"
        )),
        _ => {}
    }
}

/// A window that spans the GPU's work holds this share of the capture or less before the
/// verdict says what lies outside it.
pub const WINDOW_SHARE_OF_CAPTURE_PERCENT: f64 = 75.0;

/// A GPU-extent window under this share of the capture leads the verdict with the capture.
pub const WINDOW_SLIVER_PERCENT: f64 = 10.0;

/// A kernel launch call before a GPU-extent window this long is named in the verdict (a
/// module load), when it is a tenth of the host time before the window as well.
pub const FIRST_LAUNCH_NAMED_NS: TimeNs = 10 * NS_PER_MS;

/// Host time outside a GPU-extent window under this is not worth a sentence.
pub const OUTSIDE_WINDOW_MIN_NS: TimeNs = 10 * NS_PER_MS;

/// A verdict over the first to the last GPU op says when that is a small part of the capture:
/// the host time before and after it (context creation, set-up, a CPU phase, an idle REPL) is
/// in none of the figures, and the longest call before the first GPU op names what it was.
pub(crate) fn mark_window_in_capture(
    v: &mut Verdict,
    trace: &Trace,
    window: Option<&AnalysisWindow>,
    fw: &Framework,
) {
    if let Some(q) = window.and_then(|w| w.queued_before) {
        v.text.push_str(&format!(
            ". The first {} GPU op{} ({} busy) ran before the capture's first recorded launch, with no launch of {} in the trace: work queued before the capture began, left out of every figure",
            q.ops,
            if q.ops == 1 { "" } else { "s" },
            format_ms(q.busy_ns),
            if q.ops == 1 { "its own" } else { "their own" },
        ));
    }
    if let Some(w) = v.window.filter(|w| w.kind == WindowKind::MarkedRange) {
        mark_marked_range(v, trace, w.interval);
        return;
    }
    if let Some(w) = window.filter(|w| w.kind == WindowKind::WorkingPhase) {
        mark_working_phase(v, trace, w, fw);
        return;
    }
    let Some(w) = v.window.filter(|w| w.kind == WindowKind::GpuExtent) else {
        return;
    };
    let (mut first, mut last) = (TimeNs::MAX, TimeNs::MIN);
    // (duration, name, start) of the longest API call before the window, and the first call's start.
    let mut longest_before: Option<(TimeNs, tracelens_model::NameId, TimeNs)> = None;
    // The longest kernel launch call before the window (a first launch loading its module).
    let mut longest_launch_before: Option<(TimeNs, tracelens_model::NameId)> = None;
    let mut first_call = TimeNs::MAX;
    for s in &trace.spans {
        first = first.min(s.start_ns);
        last = last.max(s.end_ns());
        if !s.kind.is_api_call() {
            continue;
        }
        first_call = first_call.min(s.start_ns);
        if s.end_ns() <= w.interval.start_ns
            && longest_before.is_none_or(|(ns, _, _)| s.dur_ns > ns)
        {
            longest_before = Some((s.dur_ns, s.name, s.start_ns));
        }
        if s.end_ns() <= w.interval.start_ns
            && longest_launch_before.is_none_or(|(ns, _)| s.dur_ns > ns)
            && crate::vocabulary::api::is_kernel_launch(trace.names.get(s.name))
        {
            longest_launch_before = Some((s.dur_ns, s.name));
        }
    }
    let capture_ns = last.saturating_sub(first);
    let (before, after) = (
        w.interval.start_ns.saturating_sub(first).max(0),
        last.saturating_sub(w.interval.end_ns).max(0),
    );
    if capture_ns <= 0
        || crate::num::percent(w.duration_ns, capture_ns) > WINDOW_SHARE_OF_CAPTURE_PERCENT
        || before + after < OUTSIDE_WINDOW_MIN_NS
    {
        return;
    }
    // (call, its time, whether it is the first API call), when one call is most of the time
    // before the window.
    let longest = longest_before
        .filter(|&(ns, _, _)| ns * 4 >= before && ns >= NS_PER_MS)
        .map(|(ns, name, start)| {
            let creates_context = crate::measure::one_time::context_creating_call(trace)
                .is_some_and(|c| c.start_ns == start && c.name == name);
            let why = if start == first_call {
                ", the first API call: it creates the context"
            } else if creates_context {
                ", the first runtime call: it creates the context"
            } else {
                ""
            };
            // A launch that is a tenth of the time as well: its module loads (said apart
            // from a longest call that is not itself that launch).
            let load = longest_launch_before
                .filter(|&(l_ns, l_name)| {
                    l_name != name && l_ns * 10 >= before && l_ns >= FIRST_LAUNCH_NAMED_NS
                })
                .map_or(String::new(), |(l_ns, l_name)| {
                    format!(
                        ", and one {} takes {}: a first launch that loads its module",
                        trace.names.get(l_name),
                        format_ms(l_ns)
                    )
                });
            format!(
                "one {} call takes {} of it{why}{load}",
                trace.names.get(name),
                format_ms(ns)
            )
        });
    // A sliver of the run: what the run is comes first, what the GPU did within it after.
    if crate::num::percent(w.duration_ns, capture_ns) < WINDOW_SLIVER_PERCENT {
        let named = longest.map_or(String::new(), |l| format!("; {l}"));
        v.text = format!(
            "Most of this capture is host time: the GPU's work spans {} of its {} ({} before the first GPU op{named}; {} after the last). Over the GPU's work: {}",
            format_ms(w.duration_ns),
            format_ms(capture_ns),
            format_ms(before),
            format_ms(after),
            v.text
        );
    } else {
        let named = longest.map_or(String::new(), |l| format!(" ({l})"));
        v.text.push_str(&format!(
            ". These figures cover the GPU's work only, {} of the {} capture: the {} of host time before its first op{named} and the {} after its last are outside them",
            format_ms(w.duration_ns),
            format_ms(capture_ns),
            format_ms(before),
            format_ms(after)
        ));
    }
    v.text.push_str(&sampled_outside(
        trace,
        Interval::new(first, w.interval.start_ns),
        Interval::new(w.interval.end_ns, last),
    ));
}

/// CPU samples outside a window from which the verdict says what they show.
pub const SAMPLES_WORTH_A_SENTENCE: u64 = 50;

/// What the launching threads' CPU samples show before and after a window, in a clause ("";
/// without samples): the JIT's lever named, as the work no figure counts.
fn sampled_outside(trace: &Trace, before: Interval, after: Interval) -> String {
    if trace.cpu_samples.samples.is_empty() {
        return String::new();
    }
    // The threads that made API calls: the ones whose time sets when the GPU gets work.
    let mut threads: Vec<tracelens_model::LaneKey> = Vec::new();
    for (i, lane) in trace.lanes.iter().enumerate() {
        let id = tracelens_model::LaneId::at(i);
        if !lane.key.is_gpu()
            && trace
                .lane_span_ids(id)
                .any(|s| trace.span(s).kind.is_api_call())
        {
            threads.push(lane.key);
        }
    }
    let mut parts = Vec::new();
    for (when, iv) in [
        ("before the first GPU op", before),
        ("after the last", after),
    ] {
        if iv.dur_ns() < OUTSIDE_WINDOW_MIN_NS {
            continue;
        }
        let stretches = threads.iter().map(|&t| (t, iv));
        if let Some(work) = crate::attribute::cpu_samples::sampled_in(trace, stretches)
            .filter(|w| w.samples >= SAMPLES_WORTH_A_SENTENCE)
        {
            let jit = work
                .dominant()
                .filter(|p| p.work == crate::vocabulary::samples::SampledWork::PtxJit)
                .map_or("", |_| {
                    " (the program's kernels are compiled for this GPU when it runs, not shipped for it)"
                });
            parts.push(format!("{when}, {}{jit}", work.describe()));
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(
            ". The launching thread's CPU samples outside the window: {}",
            parts.join("; ")
        )
    }
}

/// A window narrowed to the GPU's working phase says what lies outside it: the one pause, the
/// GPU work on its other side, the longest call the host made in it, and how to capture the
/// phase alone.
fn mark_working_phase(v: &mut Verdict, trace: &Trace, window: &AnalysisWindow, fw: &Framework) {
    let Some(pause) = window.pause else {
        return;
    };
    let window = window.interval;
    let (mut ops_outside, mut busy_outside) = (0u64, 0);
    for s in trace.spans.iter().filter(|s| s.kind.is_gpu_work()) {
        if s.interval().clip(window).is_none() {
            ops_outside += 1;
            busy_outside += s.dur_ns;
        }
    }
    // The longest API call inside the pause: what the host waited in, if it was a call.
    let longest = trace
        .spans
        .iter()
        .filter(|s| s.kind.is_api_call() && s.interval().clip(pause).is_some())
        .max_by_key(|s| s.dur_ns)
        .filter(|s| s.dur_ns * 4 >= pause.dur_ns())
        .map_or_else(
            || "; the host made no recorded call long enough to explain it: work the trace does not record (a CPU reference computation, file I/O, waiting for input)".to_string(),
            |s| format!("; one {} call takes {} of it", trace.names.get(s.name), format_ms(s.dur_ns)),
        );
    let side = if window.start_ns >= pause.end_ns {
        "before"
    } else {
        "after"
    };
    v.text.push_str(&format!(
        ". These figures cover the GPU's working phase ({}); the one pause of {} with no GPU work {side} it is outside them, with the {} GPU op{} ({} busy) on its far side{longest}. To profile only the phase: {}",
        format_ms(window.dur_ns()),
        format_ms(pause.dur_ns()),
        ops_outside,
        if ops_outside == 1 { "" } else { "s" },
        format_ms(busy_outside),
        crate::diagnose::advice::phase_capture(fw.dialect(), fw.capture)
    ));
}

/// A window narrowed to the range the program marks around its measured work says so, with
/// the GPU work outside it (set-up, warm-up) that no figure counts.
fn mark_marked_range(v: &mut Verdict, trace: &Trace, window: Interval) {
    let (mut before, mut after, mut ops_outside) = (0, 0, 0u64);
    for s in trace.spans.iter().filter(|s| s.kind.is_gpu_work()) {
        if s.start_ns < window.start_ns {
            before += s.dur_ns;
            ops_outside += 1;
        } else if s.start_ns >= window.end_ns {
            after += s.dur_ns;
            ops_outside += 1;
        }
    }
    let name = crate::measure::iterations::marked_range(trace).map_or_else(
        || "the marked range".to_string(),
        |(n, _)| format!("the range {n}"),
    );
    v.text.push_str(&format!(
        ". These figures cover {name}, which the program marks around its measured work ({}); the GPU work outside it ({} ops, {} busy before it and {} after: set-up and warm-up) is in none of them",
        format_ms(window.dur_ns()),
        ops_outside,
        format_ms(before),
        format_ms(after)
    ));
}

/// Timed loops must keep the GPU at least this busy, and this share of the idle must lie
/// outside them, before the idle is called the benchmark's harness.
pub const BENCHMARK_SHARE_PERCENT: f64 = 80.0;

/// Whether the window is a benchmark's: its event-timed loops hold most of the GPU's work and
/// keep it busy, while most of the idle lies between them (the harness's set-up, copies and
/// result checks, outside every timing).
#[must_use]
pub fn benchmark(
    v: &Verdict,
    loops: &[crate::measure::benchmark::TimedLoop],
    idle: Option<&crate::attribute::idle::DeviceIdle>,
) -> Option<Benchmark> {
    // Only where the idle is the verdict's subject: a busy GPU's few gaps need no words.
    let (Some(idle), false, VerdictKind::GpuIdle) = (idle, loops.is_empty(), v.kind) else {
        return None;
    };
    // A loop timed launch by launch times its kernels only: the idle between its timings is
    // the harness's, and its timed time is its kernels' busy time.
    let spans: Vec<Interval> = loops
        .iter()
        .filter(|l| !l.timed_per_launch())
        .map(|l| l.gpu)
        .collect();
    let timed = crate::measure::intervals::union(spans);
    let per_launch_ns: TimeNs = loops
        .iter()
        .filter(|l| l.timed_per_launch())
        .map(|l| l.busy_ns)
        .sum();
    let timed_ns: TimeNs = timed.iter().map(Interval::dur_ns).sum::<TimeNs>() + per_launch_ns;
    let busy_ns: TimeNs = loops.iter().map(|l| l.busy_ns).sum();
    // Idle inside the timed loops: both lists are in time order.
    let mut inside_ns = 0;
    let mut k = 0;
    for g in &idle.gaps {
        while k < timed.len() && timed[k].end_ns <= g.interval.start_ns {
            k += 1;
        }
        let mut j = k;
        while j < timed.len() && timed[j].start_ns < g.interval.end_ns {
            inside_ns += g.interval.clip(timed[j]).map_or(0, |c| c.dur_ns());
            j += 1;
        }
    }
    let outside_percent = crate::num::percent(idle.idle_ns - inside_ns, idle.idle_ns);
    let busy_percent = crate::num::percent(busy_ns.min(timed_ns), timed_ns);
    // The timed loops must be most of the GPU's work: a program that times a corner of its
    // work has idle of its own.
    let window_busy_ns = v.window.map_or(0, |w| {
        crate::num::float_ns(w.duration_ns as f64 * v.gpu_busy_percent / 100.0)
    });
    if idle.idle_ns <= 0
        || busy_ns * 2 < window_busy_ns
        || outside_percent < BENCHMARK_SHARE_PERCENT
        || busy_percent < BENCHMARK_SHARE_PERCENT
    {
        return None;
    }
    Some(Benchmark {
        busy_percent,
        outside_percent,
    })
}

/// A benchmark's verdict says so, with each timed kernel's time per launch: the idle is the
/// harness, and the kernels are what the program measures. Whether it holds: then the
/// GPU-idle findings, all of them about the harness, give way.
pub(crate) fn mark_benchmark(
    v: &mut Verdict,
    trace: &Trace,
    loops: &[crate::measure::benchmark::TimedLoop],
) -> bool {
    let Some(Benchmark {
        busy_percent,
        outside_percent,
    }) = v.benchmark
    else {
        return false;
    };
    // Each timed kernel once, slowest per launch first.
    let mut kernels: Vec<(tracelens_model::NameId, TimeNs)> = Vec::new();
    for l in loops {
        if !kernels.iter().any(|(n, _)| *n == l.kernel) {
            kernels.push((l.kernel, l.kernel_mean_ns));
        }
    }
    kernels.sort_by_key(|&(n, ns)| (std::cmp::Reverse(ns), n));
    let per_launch: Vec<String> = kernels
        .iter()
        .take(5)
        .map(|&(n, ns)| {
            format!(
                "{} {}",
                tracelens_model::kernel_display_name(trace.names.get(n)),
                format_ms(ns)
            )
        })
        .collect();
    let slowest = kernels.first().map_or_else(String::new, |&(n, _)| {
        format!(
            "; Nsight Compute (ncu) on {} shows what holds it back",
            tracelens_model::kernel_display_name(trace.names.get(n))
        )
    });
    let launches = loops.iter().map(|l| l.launches).sum::<u64>();
    let timed_alone = loops
        .iter()
        .filter(|l| l.timed_per_launch())
        .map(|l| l.launches)
        .sum::<u64>();
    let how = if timed_alone * 2 >= launches {
        format!(
            "it times its kernels launch by launch with CUDA events ({timed_alone} of its {launches} timed launches each between their own event pair and waited for on the host), so the GPU idles between launches in the harness's records, syncs and checks, in no timing ({outside_percent:.0} % of the idle); time a run of launches between one event pair and divide instead, so the harness stops draining the queue"
        )
    } else {
        format!(
            "its {} timed with CUDA events ({launches} launches) keep the GPU {busy_percent:.0} % busy, and {outside_percent:.0} % of the idle lies outside them, in the harness's set-up, copies and checks that no timing includes",
            if loops.len() == 1 {
                "one loop".to_string()
            } else {
                format!("{} loops", loops.len())
            },
        )
    };
    v.text.push_str(&format!(
        ". This is a benchmark: {how}. What it measures is the kernels, per launch: {}{slowest}",
        per_launch.join(", ")
    ));
    true
}

/// An idle verdict (or one with nothing worth fixing in the idle) whose first finding is the
/// kernels' own work says so: the GPU is busy most of the window, and its kernels weigh more
/// than the idle.
pub(crate) fn mark_kernel_work(v: &mut Verdict, findings: &[Finding]) {
    let Some(f) = findings
        .first()
        .filter(|f| f.kind == crate::FindingKind::KernelWork)
    else {
        return;
    };
    let what = f
        .title
        .split(": the GPU is busy")
        .next()
        .unwrap_or(&f.title);
    match v.kind {
        VerdictKind::GpuIdle => v.text.push_str(&format!(
            ". Still, the GPU is busy {:.0} % of the time and its kernels weigh more than the idle: {what}",
            v.gpu_busy_percent
        )),
        VerdictKind::NothingWorthFixing => {
            v.text.push_str(&format!(". What is left to work on is the kernels: {what}"));
        }
        _ => {}
    }
}

/// The headline cause of idle ended mostly by unified-memory migrations.
const FAULT_GAPS_HEADLINE: &str = "gaps that end in unified-memory migrations";

/// The idle of gaps ended by unified-memory migrations, where they hold most of `idle`'s
/// unattributed time.
fn fault_idle_ns(idle: &DeviceIdle) -> Option<TimeNs> {
    let faults: TimeNs = idle
        .unattributed_by_reason
        .iter()
        .filter(|(r, _)| **r == UnattributedReason::UnifiedMemory)
        .map(|(_, &ns)| ns)
        .sum();
    let unattributed = idle
        .by_cause
        .get(&IdleCause::Unattributed)
        .copied()
        .unwrap_or(0);
    (unattributed > 0 && faults * 2 > unattributed).then_some(faults)
}

/// The idle of gaps ended by unified-memory migrations, by the migration's direction: (to
/// the GPU, back to the host).
fn fault_gaps_by_direction(trace: &Trace, idle: &DeviceIdle) -> (TimeNs, TimeNs) {
    let (mut to_gpu, mut to_host) = (0, 0);
    for g in &idle.gaps {
        if g.unattributed != Some(UnattributedReason::UnifiedMemory) {
            continue;
        }
        match g
            .ended_by()
            .and_then(|e| trace.copy_info(e))
            .map(|c| c.direction)
        {
            Some(CopyDirection::HtoD) => to_gpu += g.interval.dur_ns(),
            Some(CopyDirection::DtoH) => to_host += g.interval.dur_ns(),
            _ => {}
        }
    }
    (to_gpu, to_host)
}

/// "; N migrations to the GPU start while a kernel runs, …" where page faults (not
/// prefetches) move pages to `idle`'s device inside its kernels: those kernels' times include
/// the faults' service.
fn faults_inside_kernels(trace: &Trace, idle: &DeviceIdle) -> String {
    let inside = crate::attribute::copies::fault_migrations_inside_kernels(
        trace,
        idle.device,
        idle.window,
        None,
    );
    match inside {
        0 => String::new(),
        1 => "; one migration to the GPU starts while a kernel runs, so that kernel's time includes its fault service".into(),
        n => format!("; {n} migrations to the GPU start while kernels run, so those kernels' times include their fault service"),
    }
}

/// An idle verdict whose idle ends mostly in unified-memory migrations names them: the
/// trace holds no launch for that idle, and the migrations are why (said once: not where the
/// headline cause already names them).
pub(crate) fn mark_unified_memory(v: &mut Verdict, findings: &[Finding]) {
    if v.kind != VerdictKind::GpuIdle || v.text.contains(FAULT_GAPS_HEADLINE) {
        return;
    }
    let Some(f) = findings
        .iter()
        .find(|f| f.kind == crate::FindingKind::UnifiedMemory && f.estimated_win_percent >= 10.0)
    else {
        return;
    };
    v.text.push_str(&format!(
        ". {:.0} % of the time the GPU idles in gaps that end in unified-memory migrations: managed pages moving on faults",
        f.estimated_win_percent
    ));
}

/// Rewrites a GPU-bound verdict's advice when matrix multiplies dominate and the efficiency
/// view counted them from their recorded shapes. Where most of their counted time runs below
/// the device's ridge point, they stream their operands (weights, KV cache) more than they
/// compute on them, as small batches do (LLM decode): more rows per multiply, fewer bits per
/// weight where the GPU runs them. Otherwise the shapes say whether their dimensions suit the
/// matrix units: the misaligned ones are named, aligned ones are not told to align.
/// Returns the class and the new advice, for the kernel-work finding to say the same.
pub(crate) fn refine_with_efficiency(
    v: &mut Verdict,
    efficiency: &crate::views::efficiency::Efficiency,
    hw: &crate::measure::environment::Hardware,
) -> Option<(KernelClass, String)> {
    use crate::views::efficiency::Bound;
    use crate::views::flops::OpClass;
    if v.kind != VerdictKind::GpuBound {
        return None;
    }
    let top = v.kernel_classes.first()?;
    if !matches!(top.class, KernelClass::Gemm | KernelClass::GemmFp32) {
        return None;
    }
    let gemm = efficiency
        .classes
        .iter()
        .filter(|c| c.class == OpClass::Gemm);
    let (mut all_ns, mut memory_ns, mut misaligned_ns, mut flops, mut bytes) = (0, 0, 0, 0.0, 0.0);
    for c in gemm {
        all_ns += c.throughput.gpu_ns;
        misaligned_ns += c.throughput.misaligned_gpu_ns;
        if c.throughput.bound == Some(Bound::Memory) {
            memory_ns += c.throughput.gpu_ns;
            flops += c.throughput.flops;
            bytes += c.throughput.bytes;
        }
    }
    if all_ns == 0 {
        return None;
    }
    let marker = format!("{}: ", top.class.describe());
    let at = v.text.rfind(&marker)?;
    let advice = if memory_ns * 2 > all_ns && bytes > 0.0 {
        memory_bound_gemm_advice(
            efficiency,
            top.precision,
            hw,
            (flops, bytes),
            memory_ns * 100 / all_ns,
        )
    } else {
        let given = v.text[at + marker.len()..].to_string();
        shaped_gemm_advice(
            efficiency,
            top.precision,
            hw,
            (top.class, &given),
            misaligned_ns * 100 / all_ns,
        )?
    };
    v.text.truncate(at + marker.len());
    v.text.push_str(&advice);
    Some((top.class, advice))
}

/// Matrix multiplies whose counted time is mostly below the ridge point (`(flops, bytes)`:
/// theirs; `memory_percent`: the share of their time): more rows per multiply.
fn memory_bound_gemm_advice(
    efficiency: &crate::views::efficiency::Efficiency,
    precision: Option<Precision>,
    hw: &crate::measure::environment::Hardware,
    (flops, bytes): (f64, f64),
    memory_percent: TimeNs,
) -> String {
    let ridge = match (efficiency.peak_tflops, efficiency.peak_tb_per_s) {
        (Some(f), Some(b)) if b > 0.0 => format!(", below this GPU's ridge point of {:.0}", f / b),
        _ => String::new(),
    };
    let fewer_bits = match (precision, hw.vendor, hw.has_fp8()) {
        (Some(Precision::Fp8 | Precision::Fp4), _, _) => {
            "; their kernels already run in FP8 or fewer bits, so more rows per multiply is the lever"
        }
        (_, Vendor::Amd, Some(true)) => {
            " and store weights in fewer bits: FP8 weights (this Instinct GPU runs FP8 on its Matrix Cores) or INT4 weight-only quantization"
        }
        (_, _, Some(true)) => {
            " and store weights in fewer bits: FP8 weights or INT4 weight-only quantization"
        }
        _ => " and store weights in fewer bits: INT8 or INT4 weight-only quantization",
    };
    format!(
        "they run memory-bound ({:.0} FLOP per byte moved{ridge}: {memory_percent} % of their counted time): each multiply reads its weights for few rows, as small batches and LLM decode do; put more rows through each multiply (a larger batch; in serving, more concurrent requests){fewer_bits}",
        flops / bytes,
    )
}

/// Share of the multiplies' counted time in misaligned shapes from which padding is advised.
const MISALIGNED_PERCENT: TimeNs = 10;

/// Matrix multiplies counted from their shapes and not memory-bound: pad the misaligned ones
/// (`misaligned_percent` of their counted time, the largest named), else the precision lever
/// alone, said with the evidence that the shapes are fine. FP32 multiplies keep the advice
/// the verdict `given` them (precision first: alignment matters once they run on the matrix
/// units), with the padding after it where it applies; `None` leaves that advice as it is.
fn shaped_gemm_advice(
    efficiency: &crate::views::efficiency::Efficiency,
    precision: Option<Precision>,
    hw: &crate::measure::environment::Hardware,
    (class, given): (KernelClass, &str),
    misaligned_percent: TimeNs,
) -> Option<String> {
    use crate::views::flops::OpClass;
    let pad = (misaligned_percent >= MISALIGNED_PERCENT).then(|| {
        let largest = efficiency
            .operators
            .iter()
            .filter(|o| o.class == OpClass::Gemm && o.throughput.misaligned_gpu_ns > 0)
            .max_by_key(|o| o.throughput.misaligned_gpu_ns)
            .map_or(String::new(), |o| format!(", the largest in {}", o.name));
        format!(
            "{misaligned_percent} % of their counted time is in multiplies whose inner or output dimension is not a multiple of 8{largest}: pad those dimensions (hidden and vocabulary sizes, head counts) to multiples of 8, or of 64 for the fastest tiles"
        )
    });
    if class == KernelClass::GemmFp32 {
        return pad.map(|pad| format!("{given}; {pad}"));
    }
    let narrowest = matches!(precision, Some(Precision::Fp8 | Precision::Fp4));
    let lower = (!narrowest)
        .then(|| crate::views::kernels::gemm_precision_step(hw, precision))
        .flatten();
    if let Some(pad) = pad {
        return Some(match lower {
            Some(l) => format!("{pad}; then: {l}"),
            None => pad,
        });
    }
    let compute = efficiency
        .classes
        .iter()
        .filter(|c| c.class == OpClass::Gemm)
        .all(|c| c.throughput.bound != Some(crate::views::efficiency::Bound::Memory));
    let evidence = format!(
        "{}their recorded dimensions are multiples of 8{}",
        if narrowest {
            "they already run in FP8 or fewer bits, "
        } else {
            ""
        },
        if compute && efficiency.peak_tflops.is_some() {
            " and they run compute-bound"
        } else {
            ""
        }
    );
    Some(match lower {
        Some(l) => format!("{l} ({evidence})"),
        None => format!("{evidence}: fewer or smaller multiplies (a smaller model, shorter sequences) are what is left"),
    })
}

#[cfg(test)]
mod tests {
    use crate::diagnose::detectors::testing::{launch_call, span_us, thread_and_stream};
    use tracelens_model::{SourceInfo, SpanKind, Trace};

    /// A 100 ms host call, then `kernels` launches of a 1 ms kernel (none: no GPU records).
    fn host_then_kernels(kernels: i64) -> Trace {
        let (mut b, cpu, gpu) = thread_and_stream();
        span_us(
            &mut b,
            SpanKind::Runtime,
            cpu,
            "cudaMalloc",
            (0, 100_000),
            None,
        );
        for i in 0..kernels.max(1) {
            let t = 100_010 + i * 1_100;
            let c = Some(i.unsigned_abs() + 1);
            launch_call(&mut b, cpu, t, c);
            if kernels > 0 {
                span_us(&mut b, SpanKind::Kernel, gpu, "k", (t + 10, 1_000), c);
            }
        }
        b.finish(SourceInfo::default())
    }

    /// An sgemm kernel launched inside a convolution op is convolution time; the same kernel
    /// launched by a matrix multiply stays a GEMM.
    #[test]
    fn gemm_kernels_a_convolution_launches_are_convolution_time() {
        use crate::views::kernels::KernelClass;
        let (mut b, cpu, gpu) = thread_and_stream();
        for (k, op) in ["aten::cudnn_convolution", "aten::mm"]
            .into_iter()
            .enumerate()
        {
            let t = i64::try_from(k).unwrap() * 1_000;
            let corr = u64::try_from(k).unwrap() + 1;
            span_us(&mut b, SpanKind::CpuOp, cpu, op, (t, 50), None);
            span_us(
                &mut b,
                SpanKind::Runtime,
                cpu,
                "cudaLaunchKernel",
                (t + 10, 5),
                Some(corr),
            );
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                "volta_sgemm_128x64_nn",
                (t + 20, 900),
                Some(corr),
            );
        }
        let d = crate::diagnose(&b.finish(tracelens_model::SourceInfo::default()));
        let share = |class: KernelClass| {
            d.verdict
                .kernel_classes
                .iter()
                .find(|c| c.class == class)
                .map_or(0.0, |c| c.percent)
        };
        assert!(
            (share(KernelClass::Convolution) - 50.0).abs() < 0.5,
            "{:?}",
            d.verdict.kernel_classes
        );
        assert!(
            (share(KernelClass::GemmFp32) - 50.0).abs() < 0.5,
            "{:?}",
            d.verdict.kernel_classes
        );
    }

    #[test]
    fn failed_launches_are_named_and_unrecorded_ones_are_not_called_failed() {
        let mut failed = host_then_kernels(0);
        failed.metadata.add_api_error("cudaLaunchKernel", 222);
        let v = crate::diagnose(&failed).verdict;
        assert!(v.text.starts_with("No GPU work ran"), "{}", v.text);
        assert!(
            v.text.contains("cudaErrorUnsupportedPtxVersion"),
            "{}",
            v.text
        );
        let unrecorded = crate::diagnose(&host_then_kernels(0)).verdict;
        assert!(
            unrecorded.text.starts_with("GPU activity not recorded"),
            "{}",
            unrecorded.text
        );
    }

    #[test]
    fn failed_launches_lead_the_verdict_and_with_no_kernel_run_are_all_of_it() {
        use crate::diagnose::detectors::testing::{launch_call, span_us, thread_and_stream};
        // Copies ran, every kernel launch failed: the failure is the verdict, no findings.
        let (mut b, cpu, gpu) = thread_and_stream();
        for i in 0..3_u64 {
            let t = i.cast_signed() * 1_000;
            launch_call(&mut b, cpu, t, Some(i + 1));
            span_us(
                &mut b,
                SpanKind::Memcpy,
                gpu,
                "Memcpy HtoD (Pinned -> Device)",
                (t + 10, 100),
                Some(i + 1),
            );
        }
        let mut copies_only = b.finish(tracelens_model::SourceInfo::default());
        copies_only.metadata.add_api_error("cudaLaunchKernel", 222);
        let d = crate::diagnose(&copies_only);
        assert!(d.verdict.text.starts_with("No kernel ran: 1 cudaLaunchKernel call returned error 222 (cudaErrorUnsupportedPtxVersion)"), "{}", d.verdict.text);
        assert!(d.findings.is_empty(), "{:#?}", d.findings);
        // Kernels ran beside the failed launch: it leads, the diagnosis stays.
        let mut some = host_then_kernels(3);
        some.metadata.add_api_error("cudaLaunchKernel", 222);
        let v = crate::diagnose(&some).verdict;
        assert!(
            v.text
                .contains("1 cudaLaunchKernel call returned error 222"),
            "{}",
            v.text
        );
        assert!(v.text.contains("those kernels never ran"), "{}", v.text);
        // Without a failed launch, neither.
        let twin = crate::diagnose(&host_then_kernels(3)).verdict;
        assert!(!twin.text.contains("returned error"), "{}", twin.text);
    }

    #[test]
    fn a_window_that_is_a_small_part_of_the_capture_says_what_lies_outside() {
        let short = crate::diagnose(&host_then_kernels(3)).verdict;
        assert!(
            short
                .text
                .contains("one cudaMalloc call takes 100.000 ms of it, the first API call"),
            "{}",
            short.text
        );
        assert!(
            short.text.starts_with("Most of this capture is host time"),
            "{}",
            short.text
        );
        // A quarter of the capture or more outside the window is said (200 kernels: 69 %
        // of it); the GPU's work spanning more than three quarters of it: nothing to add.
        let middle = crate::diagnose(&host_then_kernels(200)).verdict;
        assert!(
            middle.text.contains("These figures cover"),
            "{}",
            middle.text
        );
        let long = crate::diagnose(&host_then_kernels(400)).verdict;
        assert!(!long.text.contains("These figures cover"), "{}", long.text);
    }

    #[test]
    fn recorded_shapes_decide_whether_matrix_multiplies_are_told_to_align() {
        use crate::measure::peaks::Precision as OpPrecision;
        use crate::views::efficiency::{
            Bound, ClassEfficiency, Efficiency, OpEfficiency, Throughput,
        };
        use crate::views::flops::OpClass;
        use crate::views::kernels::{KernelClass, Precision};
        let h100 = crate::measure::environment::Hardware {
            name: Some("NVIDIA H100 80GB HBM3".into()),
            vendor: crate::measure::environment::Vendor::Nvidia,
            compute: Some((9, 0)),
            ..Default::default()
        };
        let shaped = |misaligned_gpu_ns| {
            let throughput = Throughput {
                gpu_ns: 100,
                misaligned_gpu_ns,
                bound: Some(Bound::Compute),
                ..Throughput::default()
            };
            Efficiency {
                peak_tflops: Some(989.0),
                classes: vec![ClassEfficiency {
                    class: OpClass::Gemm,
                    precision: OpPrecision::Bf16,
                    throughput: throughput.clone(),
                }],
                operators: vec![OpEfficiency {
                    name: "aten::linear".into(),
                    input_dims: "[[8, 1024, 768], [50257, 768], []]".into(),
                    class: OpClass::Gemm,
                    precision: OpPrecision::Bf16,
                    throughput,
                }],
                ..Efficiency::default()
            }
        };
        let advice = |e: &Efficiency| {
            let c = &e.classes[0].throughput;
            super::shaped_gemm_advice(
                e,
                Some(Precision::Half),
                &h100,
                (
                    KernelClass::Gemm,
                    "FP8 is the next step; their shapes would show",
                ),
                c.misaligned_gpu_ns * 100 / c.gpu_ns,
            )
            .expect("matrix advice")
        };
        // Half their time in a vocabulary head of 50,257: pad it, then FP8.
        let off = advice(&shaped(50));
        assert!(off.starts_with("50 % of their counted time"), "{off}");
        assert!(
            off.contains("aten::linear") && off.contains("pad those dimensions"),
            "{off}"
        );
        assert!(off.ends_with("then: FP8 is the next step"), "{off}");
        // The twin with every dimension a multiple of 8: no padding, the evidence said.
        let aligned = advice(&shaped(0));
        assert!(!aligned.contains("pad"), "{aligned}");
        assert!(
            aligned.contains("recorded dimensions are multiples of 8 and they run compute-bound"),
            "{aligned}"
        );
        // FP32 multiplies keep their precision advice first, the padding after it, and
        // aligned ones keep it alone.
        let fp32 = |misaligned: tracelens_model::TimeNs| {
            let e = shaped(misaligned);
            super::shaped_gemm_advice(
                &e,
                None,
                &h100,
                (KernelClass::GemmFp32, "enable TF32"),
                misaligned,
            )
        };
        let off = fp32(50).expect("padding advised");
        assert!(
            off.starts_with("enable TF32; 50 % of their counted time"),
            "{off}"
        );
        assert_eq!(fp32(0), None);
    }
}
