//! Whether the window is a cold run — made mostly of work a program does once (first kernel
//! launches, module loads, compilation, graph capture) — told by structure: how many of the
//! window's kernel launches are each kernel's first in the trace, and how much of the idle
//! time the launching thread spends in one-time work. A cold window says so in the verdict
//! with how to capture the steady state, and findings whose call site is one-time work get the
//! warm-up fix, not a steady-state one.

use crate::attribute::host_work::HostWork;
use crate::diagnose::finding::{Confidence, Finding};
use crate::diagnose::verdict::{ColdRun, Verdict, VerdictKind};
use crate::finding_kind::FindingKind;
use crate::measure::environment::Framework;
use crate::measure::utilization::GpuOp;
use rustc_hash::FxHashMap;
use tracelens_model::{NameId, SpanId, SpanKind, TimeNs, Trace};

/// A window is cold above this share of its kernel launches being first launches, or of its
/// time being one-time host work.
pub const COLD_PERCENT: f64 = 50.0;

/// One-time work that keeps the GPU idle this share of the window or more is a cost.
pub const COSTLY_ONE_TIME_PERCENT: f64 = 10.0;

/// The first kernel of each name in the trace (earliest start).
fn first_kernels(trace: &Trace) -> rustc_hash::FxHashSet<SpanId> {
    let mut first: FxHashMap<NameId, (TimeNs, SpanId)> = FxHashMap::default();
    for (i, s) in trace.spans.iter().enumerate() {
        if s.kind != SpanKind::Kernel {
            continue;
        }
        first
            .entry(s.name)
            .and_modify(|e| {
                if s.start_ns < e.0 {
                    *e = (s.start_ns, SpanId::at(i));
                }
            })
            .or_insert((s.start_ns, SpanId::at(i)));
    }
    first.into_values().map(|(_, id)| id).collect()
}

/// `(first, all)`: how many of the kernel launches in `ops` are their kernel's first in the
/// trace, and how many there are (one pass over the spans: count once per diagnosis).
#[must_use]
pub fn first_launches(trace: &Trace, ops: &[GpuOp]) -> (u64, u64) {
    let firsts = first_kernels(trace);
    let (mut first_launches, mut launches) = (0u64, 0u64);
    for &(kind, _, id) in ops {
        if kind == SpanKind::Kernel {
            launches += 1;
            first_launches += u64::from(firsts.contains(&id));
        }
    }
    (first_launches, launches)
}

/// Where a cold window's set-up ends: its first kernel, when the program is PyTorch, the
/// window is one span (no steps, no found iterations), most of its launches are first ones,
/// and GPU work (uploads) comes before that kernel. The host work before it builds the model
/// and uploads its weights (`model.cuda()`): one-time. A native program's host work before
/// its first kernel is its own computation, which may well repeat: not set apart.
#[must_use]
pub fn set_up_end(
    window: &crate::measure::window::AnalysisWindow,
    ops: &[GpuOp],
    (first, all): (u64, u64),
    fw: &Framework,
) -> Option<TimeNs> {
    let cold = all > 0 && first as f64 * 100.0 > COLD_PERCENT * all as f64;
    if !fw.pytorch() || window.kind != crate::measure::window::WindowKind::GpuExtent || !cold {
        return None;
    }
    let first_kernel = ops
        .iter()
        .filter(|(kind, _, _)| *kind == SpanKind::Kernel)
        .map(|(_, iv, _)| iv.start_ns)
        .min()?;
    ops.iter()
        .any(|(_, iv, _)| iv.start_ns < first_kernel)
        .then_some(first_kernel)
}

/// Whether the window's GPU work repeats: it has profiled steps, or at least half its kernel
/// launches run a kernel launched before (a program that runs each kernel once has no later
/// iterations to capture).
#[must_use]
pub fn work_repeats(window_has_steps: bool, (first, all): (u64, u64)) -> bool {
    window_has_steps || (all > 0 && (all - first) * 2 >= all)
}

/// The cold run the window is, when it is one: the GPU idles most of the window (a GPU-bound
/// window's first launches cost the host, not the GPU) and half its launches are first ones
/// or half its time one-time host work.
#[must_use]
/// `launches`: [`first_launches`] of the window's ops.
pub fn cold_run(
    verdict: &Verdict,
    (first_launches, launches): (u64, u64),
    findings: &[Finding],
) -> Option<ColdRun> {
    if verdict.kind != VerdictKind::GpuIdle {
        return None;
    }
    let one_time_idle_percent = findings
        .iter()
        .filter(|f| f.kind == FindingKind::HostCompute && f.sub_cause == Some(HostWork::WarmUp))
        .fold(0.0, |sum, f| sum + f.estimated_win_percent)
        .min(100.0);
    let cold = ColdRun {
        first_launches,
        launches,
        one_time_idle_percent,
    };
    // First launches make a window cold only where they cost something: the GPU idles
    // most of it, or one-time work keeps it idle a tenth of it. Two cheap first launches
    // between long copies are no start-up.
    // Idle in gaps that end in unified-memory migrations is the faults', not start-up's.
    let fault_idle_percent = findings
        .iter()
        .filter(|f| f.kind == FindingKind::UnifiedMemory)
        .fold(0.0, |sum, f| sum + f.estimated_win_percent);
    let first_launches_cost = 100.0 - verdict.gpu_busy_percent - fault_idle_percent > COLD_PERCENT
        || one_time_idle_percent >= COSTLY_ONE_TIME_PERCENT;
    ((cold.first_launch_percent() > COLD_PERCENT && first_launches_cost)
        || one_time_idle_percent > COLD_PERCENT)
        .then_some(cold)
}

/// Says the cold run in the verdict, and gives findings whose call site is one-time work the
/// warm-up fix at low confidence; where the window's own launches do not repeat (nearly each
/// is its kernel's first), the host work between them (Python, regions, dispatch) cannot be
/// told from first-call set-up either, and gets the same fix.
/// `(work_repeats, launches_repeat)`: whether the program's GPU work repeats
/// ([`work_repeats`]; a program that runs its GPU work once is not told to capture later
/// iterations it does not have), and whether the window's own launches do.
pub fn mark(
    verdict: &mut Verdict,
    findings: &mut [Finding],
    cold: ColdRun,
    fw: &Framework,
    (work_repeats, launches_repeat): (bool, bool),
) {
    let mut why = Vec::new();
    if cold.first_launch_percent() > COLD_PERCENT {
        why.push(match (cold.first_launches, cold.launches) {
            (1, 1) => "its only kernel launch is that kernel's first".to_string(),
            (f, n) if f == n => format!("each of its {n} kernel launches is that kernel's first"),
            (f, n) => format!("{f} of its {n} kernel launches are the kernel's first"),
        });
    }
    if cold.one_time_idle_percent >= 1.0 {
        why.push(format!(
            "one-time work keeps the GPU idle {:.0} %",
            cold.one_time_idle_percent
        ));
    }
    if work_repeats {
        verdict.text.push_str(&format!(
            ". This is a cold run, not the steady state: {}; {}",
            why.join(" and "),
            crate::diagnose::advice::steady_state_capture(fw.dialect(), fw.capture)
        ));
    } else if cold.one_time_idle_percent < COSTLY_ONE_TIME_PERCENT
        && 100.0 - verdict.gpu_busy_percent > COLD_PERCENT
    {
        // First launches, but the idle is not theirs: the host's own work between GPU ops.
        verdict.text.push_str(&format!(
            ". The program runs its GPU work once ({}), so there are no later iterations to capture; its idle is not start-up (one-time work keeps the GPU idle {:.0} %) but host work between its GPU ops, which the findings break down",
            why.join(" and "),
            cold.one_time_idle_percent
        ));
    } else {
        verdict.text.push_str(&format!(
            ". This is start-up work, not a loop: {}; the program runs its GPU work once, so there are no later iterations to capture, and its start-up (context creation, module loading, first library calls) is the run's fixed cost",
            why.join(" and ")
        ));
    }
    verdict.cold_run = Some(cold);
    let (fix, snippet) = crate::diagnose::detectors::host_compute::warm_up_fix(fw);
    for f in findings.iter_mut() {
        let one_time_site = f
            .call_site
            .as_deref()
            .is_some_and(crate::vocabulary::activity::is_one_time);
        let first_calls = !launches_repeat
            && f.one_time.is_none()
            && matches!(
                f.sub_cause,
                Some(
                    HostWork::Python
                        | HostWork::UserRegion
                        | HostWork::FrameworkDispatch
                        | HostWork::CpuTensorOps
                        | HostWork::CompiledRegion
                )
            );
        if first_calls {
            f.one_time = Some(
                "host work between first launches: each op's first call (set-up, compilation, library loads) cannot be told from work that repeats".into(),
            );
            f.lever = Some(crate::diagnose::lever::Lever::CaptureAfterWarmUp);
        }
        if (one_time_site || first_calls) && f.sub_cause != Some(HostWork::WarmUp) {
            f.one_time
                .get_or_insert_with(|| "one-time work at its call site".into());
            f.fix.clone_from(&fix);
            f.snippet.clone_from(&snippet);
            f.snippet_language = crate::diagnose::advice::snippet_language(fw.dialect()).into();
            f.confidence = Confidence::Low;
        }
    }
}

/// Moves the largest one-time finding first, the others keeping their order: in a cold run
/// the one-time work is most of the window, and the verdict's advice (capture the steady
/// state) is its fix.
pub fn lead_with_one_time_work(findings: &mut [Finding]) {
    let largest = findings
        .iter()
        .enumerate()
        .filter(|(_, f)| f.one_time.is_some() && f.estimated_win_ns > 0)
        .max_by_key(|(i, f)| (f.estimated_win_ns, std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    if let Some(i) = largest {
        findings[..=i].rotate_right(1);
    }
}

/// The GPU's idle share without the one-time work is said where it is this many points
/// below the window's.
const STEADY_IDLE_DIFFERS_POINTS: f64 = 5.0;

/// Says in a warm window's verdict how much of the idle is one-time work the findings set
/// apart (ranked after the per-step problems): a capture that starts with the program holds
/// context creation and first library calls however warm its steps are.
pub fn note_one_time(verdict: &mut Verdict, findings: &[Finding]) {
    if verdict.kind != VerdictKind::GpuIdle {
        return;
    }
    let once: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.one_time.is_some() && f.estimated_win_ns > 0)
        .collect();
    if once.is_empty() {
        return;
    }
    let share: f64 = once
        .iter()
        .map(|f| f.estimated_win_percent)
        .sum::<f64>()
        .min(100.0);
    // The kernels' own work is busy time: it ranks among the idle's findings by no part of it.
    if findings
        .iter()
        .filter(|f| f.kind != FindingKind::KernelWork)
        .any(Finding::ranks_before_one_time_work)
    {
        verdict.text.push_str(&format!(
            ". One-time work ({share:.0} % of the time) ranks after the per-step findings worth 2 % or more: it does not repeat"
        ));
        // The GPU's idle with the one-time stretches taken out of the window: what the
        // steps after them will show.
        let once_idle: TimeNs = once
            .iter()
            .filter(|f| f.win_kind == crate::diagnose::finding::WinKind::GpuIdle)
            .map(|f| f.estimated_win_ns)
            .sum();
        let window_ns = verdict.window.map_or(0, |w| w.duration_ns);
        let rest_ns = window_ns - once_idle;
        if once_idle * 10 >= window_ns && rest_ns > 0 {
            let idle_rest = (verdict.gpu_idle_ns - once_idle).clamp(0, rest_ns);
            let (with, without) = (
                crate::num::percent(verdict.gpu_idle_ns, window_ns),
                crate::num::percent(idle_rest, rest_ns),
            );
            // Worth a clause where it changes the picture.
            if with - without >= STEADY_IDLE_DIFFERS_POINTS {
                verdict.text.push_str(&format!(
                    "; without it the GPU is idle {without:.0} % of the time"
                ));
            }
        }
    } else {
        verdict.text.push_str(&format!(
            ". Most of what the findings explain is one-time work ({share:.0} % of the time): it does not repeat, so judge the steps after it"
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnose::detectors::testing::{scenario, scenario_text};

    /// `text` with every kernel given a name of its own: each launch becomes its kernel's
    /// first, as in a capture of the first iteration only.
    fn every_kernel_new(text: &str) -> tracelens_model::Trace {
        let mut doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let events = doc["traceEvents"].as_array_mut().unwrap();
        for (i, e) in events.iter_mut().enumerate() {
            if e["cat"] == "kernel" {
                let name = format!("{}_{i}", e["name"].as_str().unwrap());
                e["name"] = name.into();
            }
        }
        let text = doc.to_string();
        tracelens_kineto::import_reader(
            text.as_bytes(),
            std::path::Path::new("first_iteration.json"),
            text.len() as u64,
            None,
        )
        .unwrap()
    }

    #[test]
    fn a_capture_of_first_launches_is_a_cold_run_and_its_steady_twin_is_not() {
        let steady = crate::diagnose(&scenario("slow_python_between_kernels"));
        assert_eq!(steady.verdict.cold_run, None, "{}", steady.verdict.text);
        assert!(!steady.verdict.text.contains("cold run"));

        let cold = crate::diagnose(&every_kernel_new(&scenario_text(
            "slow_python_between_kernels",
        )));
        let run = cold
            .verdict
            .cold_run
            .expect("every launch is a first launch");
        assert_eq!(run.first_launches, run.launches);
        assert!(run.one_time_idle_percent >= 0.0 && run.one_time_idle_percent.is_sign_positive());
        assert!(
            cold.verdict.text.contains("This is a cold run")
                && cold.verdict.text.contains("torch.profiler.schedule"),
            "{}",
            cold.verdict.text
        );
    }

    /// A PyTorch forward run once: five weight uploads 1 ms apart (host work between them),
    /// then six kernels, each a first launch; with `kernel_first`, one kernel runs before the
    /// uploads, so they are no longer the set-up before the first kernel.
    fn uploads_then_forward(kernel_first: bool) -> tracelens_model::Trace {
        let mut events = Vec::new();
        let mut c = 0;
        let mut launch = |events: &mut Vec<String>, t: i64, name: &str, copy: bool| {
            c += 1;
            let (call, cat, dur) = if copy {
                ("cudaMemcpyAsync", "gpu_memcpy", 20)
            } else {
                ("cudaLaunchKernel", "kernel", 300)
            };
            events.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::{}","pid":1,"tid":1,"ts":{t},"dur":30}}"#, if copy { "to" } else { "mm" }));
            events.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"{call}","pid":1,"tid":1,"ts":{},"dur":10,"args":{{"correlation":{c}}}}}"#, t + 5));
            events.push(format!(r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":0,"tid":7,"ts":{},"dur":{dur},"args":{{"correlation":{c},"device":0,"stream":7}}}}"#, t + 20));
        };
        let mut t = 0;
        if kernel_first {
            launch(&mut events, t, "warm_kernel", false);
            t += 400;
        }
        for _ in 0..5 {
            launch(&mut events, t, "Memcpy HtoD (Pageable -> Device)", true);
            events.push(format!(r#"{{"ph":"X","cat":"python_function","name":"model.py(12): build","pid":1,"tid":1,"ts":{},"dur":900}}"#, t + 60));
            t += 1_000;
        }
        for k in 0..6 {
            launch(&mut events, t, &format!("kernel_{k}"), false);
            t += 340;
        }
        let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
        tracelens_kineto::import_reader(
            std::io::Cursor::new(text),
            std::path::Path::new("uploads.json"),
            0,
            None,
        )
        .unwrap()
    }

    #[test]
    fn host_work_before_a_cold_forwards_first_kernel_is_set_up_and_after_it_is_not() {
        let once = crate::diagnose(&uploads_then_forward(false));
        let set_up = once
            .findings
            .iter()
            .find(|f| f.sub_cause == Some(crate::attribute::host_work::HostWork::WarmUp))
            .unwrap_or_else(|| panic!("{}\n{:#?}", once.verdict.text, once.findings));
        assert!(set_up.one_time.is_some());
        assert_eq!(
            set_up.lever,
            Some(crate::finding_kind::Lever::CaptureAfterWarmUp)
        );
        assert!(set_up.estimated_win_percent > 50.0, "{}", set_up.title);
        // Uploads after a kernel: the same host work is no longer before the first kernel.
        let twin = crate::diagnose(&uploads_then_forward(true));
        let warm: f64 = twin
            .findings
            .iter()
            .filter(|f| f.sub_cause == Some(crate::attribute::host_work::HostWork::WarmUp))
            .map(|f| f.estimated_win_percent)
            .sum();
        assert!(warm < 10.0, "{:#?}", twin.findings);
    }
}
