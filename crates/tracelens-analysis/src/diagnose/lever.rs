//! The one decision table from evidence to lever: each finding's detector names the lever its
//! own evidence points at ([`Lever`]), and this module checks that lever's preconditions
//! against what the whole window shows before the fix is given. A lever the evidence rules
//! out is replaced by the one it allows, and every finding says which evidence chose its fix
//! ([`crate::Finding::fix_chosen_by`]).
//!
//! | lever | chosen when | ruled out by |
//! |---|---|---|
//! | fewer launches (compile, CUDA graphs, fusion, batch) | per-launch CPU cost over a run of launches that repeat | host reads of GPU values in the window (they break compiled graphs and cannot be captured); one-time work; a window whose every launch is a first one (dispatch and first-call set-up look alike); a whole run of fewer than 100 launches (graphs do not repay themselves: batch instead); a step of fewer than 8 launches whose launching thread is blocked longer in copies from pageable memory (the copy, not the launches, holds back the next op: pin instead); a device allocation for every other launch or more outside PyTorch (allocate once instead) |
//! | keep values on the GPU | blocking reads of GPU values (`.item()`, `if tensor:`, sync copies of results) | one-time work |
//! | pinned, asynchronous copies | blocking copies from pageable memory | one-time work |
//! | caching allocator | frees that wait for the device, repeated | frees made once (context creation, a library's first call) |
//! | allocate once (a data region in a directive program) | launches that each come with a device allocation, outside PyTorch's caching allocator | one-time work |
//! | capture after warm-up | one-time work in a program whose later iterations can be captured (its GPU work repeats, or a PyTorch capture) | a native program that runs its GPU work once |
//! | start-up cost | one-time work in a program that runs its GPU work once | — |
//! | faster kernels (a library call, the kernel class's next step, a kernel profiler) | a GPU busy with compute kernels nearly all the window | a grid that leaves most multiprocessors empty (the small-grid fix comes first) |

use crate::attribute::syncs::SyncSite;
use crate::diagnose::finding::Finding;
pub use crate::finding_kind::Lever;
use crate::measure::environment::Framework;

/// Host reads of GPU values per step from which they split the step's launch sequence.
pub const READS_PER_STEP: f64 = 2.0;

/// What the whole window shows that the levers' preconditions ask about.
#[derive(Clone, Debug, Default)]
pub struct WindowEvidence {
    /// Host-blocking reads of GPU values in the window that recur (not one-time).
    pub value_reads: u64,
    /// The largest such site, in words (`tensor truth value (if tensor: / bool(t)) at model.py:143`).
    pub value_read_site: Option<String>,
    /// Whether the GPU work repeats: profiled steps, or a kernel launched more than once.
    pub work_repeats: bool,
    /// Whether the window's own launches repeat (steps, or half its launches run a kernel
    /// launched before): without that, every launch is a first one, and per-launch CPU cost
    /// cannot be told from first-call set-up.
    pub launches_repeat: bool,
    /// The kernel launches of the whole run, when the capture holds all of it (it starts with
    /// the context's creation, outside a PyTorch profiler window): a run of a few launches
    /// does not repay a CUDA graph.
    pub whole_run_launches: Option<u64>,
    /// Kernel launches per step in the window.
    pub launches_per_step: f64,
    /// Host time per step blocked in copies from pageable memory.
    pub pageable_blocked_per_step_ns: tracelens_model::TimeNs,
    /// Device allocation calls in the window per kernel launch.
    pub allocations_per_launch: f64,
}

/// Device allocations per kernel launch from which the allocations, not the launches, are
/// the per-launch cost to remove.
pub const ALLOCATIONS_PER_LAUNCH: f64 = 0.5;

/// A step of fewer kernel launches than this has no per-launch cost worth a graph: what
/// holds back its next op is the host work around those few launches.
pub const FEW_LAUNCHES_PER_STEP: f64 = 8.0;

/// A whole run of fewer kernel launches than this does not repay capturing and instantiating
/// a CUDA graph (microseconds saved per launch against the instantiation): batch instead.
pub const GRAPH_PAYOFF_LAUNCHES: u64 = 100;

impl WindowEvidence {
    /// From the window's sync sites, its step count (1 without steps) and whether its
    /// kernels repeat. Reads split the step's launch sequence when there are at least
    /// [`READS_PER_STEP`] of them per step: one read at the step's end (the loss) leaves the
    /// sequence before it whole.
    #[must_use]
    pub fn of(
        sites: &[SyncSite],
        steps: usize,
        (work_repeats, launches_repeat): (bool, bool),
        fw: &Framework,
    ) -> Self {
        let mut reads: Vec<&SyncSite> = sites
            .iter()
            .filter(|s| s.reads_a_value() && s.one_time.is_none())
            .collect();
        let per_step = reads.iter().map(|s| s.count).sum::<u64>() as f64 / steps.max(1) as f64;
        if per_step < READS_PER_STEP {
            reads.clear();
        }
        let site = reads
            .iter()
            .max_by_key(|s| (s.blocked_ns, s.count))
            .map(|s| {
                let what = s.trigger.describe_for(fw.pytorch());
                match &s.call_site {
                    Some(c) => format!("{what} at {c}"),
                    None => what.to_string(),
                }
            });
        WindowEvidence {
            value_reads: reads.iter().map(|s| s.count).sum(),
            value_read_site: site,
            work_repeats,
            launches_repeat,
            whole_run_launches: None,
            launches_per_step: 0.0,
            pageable_blocked_per_step_ns: 0,
            allocations_per_launch: 0.0,
        }
    }
}

/// Checks each finding's lever against the window's evidence: a ruled-out lever gives way to
/// the one the evidence allows, and every finding with a lever says what chose its fix.
pub fn decide(findings: &mut [Finding], evidence: &WindowEvidence, fw: &Framework) {
    for f in findings.iter_mut() {
        let Some(lever) = f.lever else {
            continue;
        };
        // One-time work gets a one-time lever, whatever its detector named.
        let lever = if f.one_time.is_some() || !lever.per_step() {
            one_time_lever(evidence)
        } else {
            lever
        };
        match lever {
            // A window of first launches: what looks like dispatch holds each op's first-call
            // set-up too, and nothing repeats to tell them apart.
            Lever::FewerLaunches if !evidence.launches_repeat => {
                let lever = one_time_lever(evidence);
                (f.fix, f.snippet) = match lever {
                    Lever::StartUpCost => start_up_fix(fw),
                    _ => crate::diagnose::detectors::host_compute::warm_up_fix(fw),
                };
                f.one_time
                    .get_or_insert_with(|| "first launches: each op's first call".into());
                f.lever = Some(lever);
                f.fix_chosen_by = "per-launch CPU cost, but every launch in the window is its kernel's first: dispatch cannot be told from first-call set-up until later iterations are captured".into();
            }
            Lever::FewerLaunches if evidence.value_reads > 0 => {
                let site = evidence
                    .value_read_site
                    .clone()
                    .unwrap_or_else(|| "host reads of GPU values".into());
                f.fix = format!(
                    "First remove the host reads of GPU values in the step ({} of them; the largest: {site}): each one stops the CPU until the GPU catches up, breaks a compiled graph and cannot be captured in a CUDA graph. Then: {}",
                    evidence.value_reads, f.fix
                );
                f.lever = Some(Lever::KeepValuesOnGpu);
                f.fix_chosen_by = format!(
                    "per-launch CPU cost, but {} host reads of GPU values in the window rule out graph capture until they go",
                    evidence.value_reads
                );
            }
            Lever::FewerLaunches
                if evidence.allocations_per_launch >= ALLOCATIONS_PER_LAUNCH && !fw.pytorch() =>
            {
                (f.fix, f.snippet) = allocate_once_fix(fw, evidence.allocations_per_launch);
                f.lever = Some(Lever::AllocateOnce);
                f.fix_chosen_by = format!(
                    "per-launch CPU cost, but the window makes {:.1} device allocations per kernel launch: allocating, not launching, is the repeated cost",
                    evidence.allocations_per_launch
                );
            }
            Lever::FewerLaunches
                if evidence.launches_per_step < FEW_LAUNCHES_PER_STEP
                    && evidence.pageable_blocked_per_step_ns > f.estimated_win_per_step_ns =>
            {
                let pinned = if fw.pytorch() {
                    "copy from pinned memory (tensor.pin_memory(), or pin_memory=True in the DataLoader) with .to(device, non_blocking=True), so the copy returns at once and the next ops queue behind it.".to_string()
                } else {
                    crate::num::lower_first(
                        &crate::diagnose::advice::pageable_copies(fw.dialect()).fix,
                    )
                };
                f.fix = format!(
                    "The step launches only {:.0} kernels, so per-launch cost is not what holds the GPU back: a copy from pageable memory blocks the launching thread {} per step, and the ops after it are launched only once it returns. {}",
                    evidence.launches_per_step,
                    tracelens_model::format_ms(evidence.pageable_blocked_per_step_ns),
                    crate::num::capitalized(&pinned)
                );
                f.snippet = if fw.pytorch() {
                    "x = x.pin_memory()                       # once, outside the loop\ny = x.to(\"cuda\", non_blocking=True)   # returns at once".into()
                } else {
                    crate::diagnose::advice::pageable_copies(fw.dialect()).snippet
                };
                f.lever = Some(Lever::PinnedAsyncCopies);
                f.fix_chosen_by = format!(
                    "per-launch CPU cost, but the step makes {:.0} kernel launches and blocks {} in copies from pageable memory: the blocking copy delays the launches",
                    evidence.launches_per_step,
                    tracelens_model::format_ms(evidence.pageable_blocked_per_step_ns)
                );
            }
            Lever::FewerLaunches
                if evidence
                    .whole_run_launches
                    .is_some_and(|n| n < GRAPH_PAYOFF_LAUNCHES) =>
            {
                let n = evidence.whole_run_launches.unwrap_or(0);
                (f.fix, f.snippet) = batch_fix(fw);
                f.lever = Some(Lever::FewerLaunches);
                f.fix_chosen_by = format!("per-launch CPU cost, but the whole run makes {n} kernel launches: a CUDA graph's capture and instantiation would cost about what it saves, so the launches are batched instead");
            }
            Lever::StartUpCost if f.lever != Some(Lever::StartUpCost) => {
                let (fix, snippet) = start_up_fix(fw);
                f.fix = fix;
                f.snippet = snippet;
                f.lever = Some(Lever::StartUpCost);
                f.fix_chosen_by = "one-time work in a program whose GPU work does not repeat (each kernel is launched once): there are no later iterations to capture".into();
            }
            other => {
                f.lever = Some(other);
                if f.fix_chosen_by.is_empty() {
                    f.fix_chosen_by = other.needs().to_string();
                }
            }
        }
    }
}

/// The lever for one-time work: capture after it where the work repeats, else it is the
/// run's fixed start-up cost.
fn one_time_lever(evidence: &WindowEvidence) -> Lever {
    if evidence.work_repeats {
        Lever::CaptureAfterWarmUp
    } else {
        Lever::StartUpCost
    }
}

/// (fix, snippet) for launches that each allocate device memory: allocate once, in the
/// program's words (a directive program keeps its data in a data region).
fn allocate_once_fix(fw: &Framework, per_launch: f64) -> (String, String) {
    use crate::measure::environment::Dialect;
    let rate = format!("{per_launch:.1} device allocations per kernel launch");
    match fw.dialect() {
        Dialect::OpenAcc => (
            format!("Keep the arrays on the device in a data region around the loop (!$acc data, or enter data / exit data), so they are allocated and copied once: each compute region now allocates its data again ({rate}) and copies and waits around a short kernel. Then check with -Minfo=accel that the loops doing the arithmetic run on the GPU."),
            "!$acc enter data copyin(w, x) create(y)   ! once, before the loop; C/C++: #pragma acc enter data ...
do it = 1, n_iter
  !$acc parallel loop present(w, x, y)
  ...
end do
!$acc exit data copyout(y) delete(w, x)".into(),
        ),
        Dialect::OpenMp => (
            format!("Map the arrays once around the loop (target data, or target enter data / exit data), so they are allocated and copied once: each target region now allocates its data again ({rate}) and copies and waits around a short kernel."),
            "#pragma omp target enter data map(to: w[0:n], x[0:n]) map(alloc: y[0:n])   // once
for (int it = 0; it < n_iter; ++it) {
  #pragma omp target teams distribute parallel for
  ...
}
#pragma omp target exit data map(from: y[0:n])".into(),
        ),
        Dialect::CudaRuntime => (
            format!("Allocate the device buffers once, before the loop, and reuse them: the loop allocates again for nearly every launch ({rate}), and each allocation goes to the driver while the GPU waits."),
            "cudaMalloc(&d_buf, bytes);   // once, before the loop
for (int i = 0; i < n_iter; ++i) { kernel<<<grid, block>>>(d_buf, n); }
cudaFree(d_buf);             // once, at the end".into(),
        ),
        _ => (
            format!("Allocate the device memory once, before the loop, and reuse it: the loop allocates again for nearly every launch ({rate}), and each allocation goes to the driver while the GPU waits."),
            String::new(),
        ),
    }
}

/// (fix, snippet) for the start-up cost of a program that runs its GPU work once.
/// (fix, snippet) for per-launch cost in a run too short to repay a CUDA graph: fewer,
/// larger launches, in the program's words.
fn batch_fix(fw: &Framework) -> (String, String) {
    use crate::measure::environment::Dialect;
    match fw.dialect() {
        Dialect::PyTorch => (
            "Batch the work: stack the inputs and make one call over all of them instead of one small call each; the run is too short for torch.compile's CUDA graphs to repay their capture.".into(),
            "out = model(torch.stack(inputs))   # one batch, not a call per input".into(),
        ),
        Dialect::CudaRuntime => (
            "Batch the work into fewer, larger launches: one kernel over all the items (an extra grid dimension indexes the item), with the buffers allocated and copied once around it; the run is too short for a CUDA graph to repay its instantiation.".into(),
            "dim3 grid(blocks_per_item, n_items);   // blockIdx.y picks the item\nkernel<<<grid, threads, 0, stream>>>(d_all_items, n);".into(),
        ),
        _ => (
            "Batch the work into fewer, larger launches (one over all the items instead of one per item): the run is too short for graph capture to repay itself.".into(),
            String::new(),
        ),
    }
}

fn start_up_fix(fw: &Framework) -> (String, String) {
    use crate::vocabulary::api::GpuApi;
    // Lazy module loading is the CUDA driver's; a HIP or unknown program is not told of it.
    let lazy = if matches!(fw.gpu_api, GpuApi::CudaRuntime | GpuApi::CudaDriver) {
        "; lazy module loading (CUDA_MODULE_LOADING=LAZY, CUDA 11.7+) loads only the kernels used"
    } else {
        ""
    };
    let fix = format!("This is start-up work (context creation, module loading, first library calls) of a program that runs its GPU work once: it is the run's fixed cost, with nothing per iteration to fix. To judge the kernels themselves, launch them once untimed, then time many launches at a realistic size; to cut the cost itself, give each run more work or keep one process alive across inputs{lazy}.");
    let snippet = if fw.pytorch() {
        "# one process, many inputs: pay the start-up once\nfor batch in inputs:\n    out = model(batch)"
    } else {
        ""
    };
    (fix, snippet.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::finding::{Confidence, Evidence, Severity, WinKind};
    use crate::finding_kind::FindingKind;

    fn finding(lever: Lever, one_time: bool) -> Finding {
        Finding {
            key: String::new(),
            kind: FindingKind::HostCompute,
            sub_cause: None,
            title: "t".into(),
            severity: Severity::High,
            win_kind: WinKind::GpuIdle,
            estimated_win_ns: 1,
            estimated_win_per_step_ns: 1,
            estimated_win_percent: 1.0,
            win_basis: String::new(),
            cpu_cost_per_step_ns: None,
            evidence: Evidence::default(),
            call_site: None,
            fix: "Compile the step.".into(),
            advice: String::new(),
            snippet: String::new(),
            snippet_language: "python".into(),
            confidence: Confidence::Medium,
            predicted_step_ns: None,
            prediction: String::new(),
            one_time: one_time.then(|| "context creation".into()),
            lever: Some(lever),
            fix_chosen_by: String::new(),
            what_if: None,
        }
    }

    /// Every evidence combination, for every lever: the lever kept is one whose
    /// preconditions hold, and the finding says what chose it.
    #[test]
    fn no_lever_is_given_while_its_evidence_is_absent() {
        let fw = Framework::default();
        for lever in Lever::ALL {
            for reads in [0, 3] {
                for (repeats, launches_repeat) in [(false, false), (true, false), (true, true)] {
                    for (((one_time, whole_run), (per_step, blocked_ns)), allocations) in
                        [false, true]
                            .into_iter()
                            .flat_map(|o| [(o, None), (o, Some(6)), (o, Some(5_000))])
                            .flat_map(|c| [(c, (100.0, 0)), (c, (2.0, 0)), (c, (2.0, 5_000_000))])
                            .flat_map(|c| [(c, 0.0), (c, 1.0)])
                    {
                        let evidence = WindowEvidence {
                            value_reads: reads,
                            value_read_site: (reads > 0).then(|| ".item() at train.py:9".into()),
                            work_repeats: repeats,
                            launches_repeat,
                            whole_run_launches: whole_run,
                            launches_per_step: per_step,
                            pageable_blocked_per_step_ns: blocked_ns,
                            allocations_per_launch: allocations,
                        };
                        // A few launches behind a copy that blocks longer than their cost.
                        let copy_bound = per_step < FEW_LAUNCHES_PER_STEP && blocked_ns > 1;
                        let mut f = [finding(lever, one_time)];
                        decide(&mut f, &evidence, &fw);
                        let chosen = f[0].lever.unwrap();
                        let case = format!(
                            "{lever:?} reads={reads} repeats={repeats} one_time={one_time} -> {chosen:?}: {}",
                            f[0].fix
                        );
                        assert!(!f[0].fix_chosen_by.is_empty(), "{case}");
                        // The table turns launch overhead into allocating once only on
                        // the window's allocations (a detector naming it has its own).
                        if chosen == Lever::AllocateOnce && lever == Lever::FewerLaunches {
                            assert!(allocations >= ALLOCATIONS_PER_LAUNCH, "{case}");
                        }
                        if chosen == Lever::FewerLaunches {
                            assert!(allocations < ALLOCATIONS_PER_LAUNCH, "{case}");
                            assert_eq!(reads, 0, "{case}");
                            assert!(launches_repeat, "{case}");
                            assert!(!copy_bound, "{case}");
                            // A run too short to repay a graph is told to batch.
                            let short = whole_run.is_some_and(|n| n < GRAPH_PAYOFF_LAUNCHES);
                            assert_eq!(f[0].fix.starts_with("Batch"), short, "{case}");
                        }
                        if one_time {
                            assert!(!chosen.per_step(), "{case}");
                        }
                        if chosen == Lever::CaptureAfterWarmUp {
                            assert!(repeats, "{case}");
                        }
                        if chosen == Lever::StartUpCost {
                            assert!(!repeats && !f[0].fix.contains("later"), "{case}");
                        }
                        if lever == Lever::FewerLaunches
                            && !one_time
                            && reads == 0
                            && launches_repeat
                        {
                            assert_eq!(
                                chosen == Lever::PinnedAsyncCopies,
                                copy_bound && allocations < ALLOCATIONS_PER_LAUNCH,
                                "{case}"
                            );
                        }
                        if reads > 0
                            && lever == Lever::FewerLaunches
                            && !one_time
                            && launches_repeat
                        {
                            assert!(
                                f[0].fix.starts_with("First remove the host reads"),
                                "{case}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Launch overhead in an OpenACC program that allocates for every launch is told to keep
    /// its data in a data region; the same program allocating once keeps the launch fix, and
    /// a PyTorch program (its caching allocator) is never told to allocate once.
    #[test]
    fn allocating_for_every_launch_gets_a_data_region_and_its_twins_do_not() {
        use crate::measure::environment::{Offload, Program};
        let acc = Framework {
            program: Program::Native,
            offload: Some(Offload::OpenAcc),
            ..Framework::default()
        };
        let torch = Framework {
            program: Program::PyTorch,
            ..Framework::default()
        };
        let decided = |fw: &Framework, allocations_per_launch: f64| {
            let evidence = WindowEvidence {
                work_repeats: true,
                launches_repeat: true,
                launches_per_step: 1934.0,
                allocations_per_launch,
                ..WindowEvidence::default()
            };
            let mut f = [finding(Lever::FewerLaunches, false)];
            decide(&mut f, &evidence, fw);
            f[0].clone()
        };
        let each = decided(&acc, 1.0);
        assert_eq!(each.lever, Some(Lever::AllocateOnce));
        assert!(each.fix.contains("data region"), "{}", each.fix);
        assert!(each
            .fix_chosen_by
            .contains("1.0 device allocations per kernel launch"));
        assert_eq!(decided(&acc, 0.01).lever, Some(Lever::FewerLaunches));
        assert_eq!(decided(&torch, 1.0).lever, Some(Lever::FewerLaunches));
    }

    /// The table in the module's header names every lever, and each has its preconditions.
    #[test]
    fn the_table_lists_every_lever() {
        let header = include_str!("lever.rs");
        for lever in Lever::ALL {
            assert!(!lever.needs().is_empty());
            let words = match lever {
                Lever::FewerLaunches => "fewer launches",
                Lever::KeepValuesOnGpu => "keep values on the GPU",
                Lever::PinnedAsyncCopies => "pinned, asynchronous copies",
                Lever::CachingAllocator => "caching allocator",
                Lever::AllocateOnce => "allocate once",
                Lever::CaptureAfterWarmUp => "capture after warm-up",
                Lever::StartUpCost => "start-up cost",
                Lever::FasterKernels => "faster kernels",
            };
            assert!(header.contains(&format!("//! | {words}")), "{lever:?}");
        }
    }
}
