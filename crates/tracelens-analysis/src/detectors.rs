//! The detectors: each turns the shared analyses into findings. One trait, one type each.
//!
//! GPU-idle wins come from the [credit ledger](crate::credit), so no two findings claim the same
//! idle nanosecond; shares are per-step wins over the window's step time.

use crate::copies::CopyReport;
use crate::credit::IdleCredit;
use crate::dataloader::{percent, DataLoaderReport, IteratorKind};
use crate::environment::{Framework, FUSED_SGD, OPTIMIZER_FOREACH, TORCH_COMPILE};
use crate::finding::{
    Confidence, Evidence, EvidenceValue, Finding, FindingKind, Severity, WinKind,
};
use crate::idle::{DeviceIdle, IdleCause};
use crate::launch::LaunchReport;
use crate::syncs::{SyncSite, SyncTrigger};
use crate::window::AnalysisWindow;
use tracelens_model::{format_ms, MemoryKind, TimeNs, Trace};

/// Everything detectors read.
pub struct Context<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// The analysis window.
    pub window: &'a AnalysisWindow,
    /// Idle attribution of the focus device (the one the verdict describes).
    pub idle: Option<&'a DeviceIdle>,
    /// Its idle time, credited to findings.
    pub credit: &'a IdleCredit,
    /// Sync call sites (GPU idle measured on the focus device).
    pub sync_sites: &'a [SyncSite],
    /// Copies.
    pub copies: &'a CopyReport,
    /// DataLoader.
    pub dataloader: &'a DataLoaderReport,
    /// Launch-bound stretches.
    pub launch: &'a LaunchReport,
    /// What the trace shows of PyTorch and the optimizer.
    pub framework: &'a Framework,
}

/// A finding's win fields.
struct Win {
    total_ns: TimeNs,
    per_step_ns: TimeNs,
    percent: f64,
    severity: Severity,
}

impl Context<'_> {
    /// "per step", or "in the trace" when there are no steps.
    fn per(&self) -> &'static str {
        if self.window.has_steps() {
            "per step"
        } else {
            "in the trace"
        }
    }

    /// "step time", or "profiled time" when there are no steps.
    fn step_time(&self) -> &'static str {
        if self.window.has_steps() {
            "step time"
        } else {
            "profiled time"
        }
    }

    /// The win fields of a total over the window: per step, and that as a share of the step.
    fn win(&self, ns: TimeNs) -> Win {
        let per_step_ns = self.window.per_step(ns);
        let percent = percent(per_step_ns, self.window.step_ns()).clamp(0.0, 100.0);
        Win {
            total_ns: ns,
            per_step_ns,
            percent,
            severity: Severity::from_share(percent),
        }
    }

    fn reliable(&self) -> bool {
        self.idle.is_none_or(DeviceIdle::reliable)
    }

    fn finding(&self, kind: FindingKind, win_kind: WinKind, win: &Win) -> Finding {
        Finding {
            kind,
            title: String::new(),
            severity: win.severity,
            win_kind,
            estimated_win_ns: win.total_ns,
            estimated_win_per_step_ns: win.per_step_ns,
            estimated_win_percent: win.percent,
            win_basis: String::new(),
            cpu_cost_per_step_ns: None,
            evidence: Evidence::default(),
            call_site: None,
            fix: String::new(),
            advice: String::new(),
            snippet: String::new(),
            confidence: Confidence::Medium,
        }
    }
}

/// A detector: reads the shared analyses, reports findings.
pub trait Detector {
    /// Short name.
    fn name(&self) -> &'static str;
    /// The findings (possibly none).
    fn detect(&self, cx: &Context) -> Vec<Finding>;
}

/// All detectors, in no particular order (findings are sorted by win afterwards).
pub fn all_detectors() -> Vec<Box<dyn Detector>> {
    vec![
        Box::new(DataLoaderStall),
        Box::new(ImplicitSyncs),
        Box::new(PageableCopies),
        Box::new(LaunchBound),
        Box::new(HostCompute),
        Box::new(CpuOversubscription),
    ]
}

/// Share of step time in the DataLoader, or of GPU idle it causes, above which it is a finding
/// (tb_plugin's threshold for its DataLoader recommendation).
pub const DATA_LOADER_SHARE_PERCENT: f64 = 5.0;
/// A sync that recurs every step and blocks the host at least this share of step time is a
/// finding even when the GPU stayed busy (its CPU thread cannot run ahead).
pub const HOST_BLOCKED_FINDING_PERCENT: f64 = 1.0;
/// Host compute is always some of the idle; below this share of step time it is a detail.
pub const HOST_COMPUTE_FINDING_PERCENT: f64 = 2.0;
/// Syncs and launch stretches below this share of step time are details.
pub const MIN_FINDING_PERCENT: f64 = 0.5;

/// The GPU waits for `enumerate(DataLoader)`.
pub struct DataLoaderStall;

impl Detector for DataLoaderStall {
    fn name(&self) -> &'static str {
        "data_loader"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let dl = cx.dataloader;
        let win = cx.win(cx.credit.data_loader_ns);
        if win.total_ns == 0
            || (dl.share_percent < DATA_LOADER_SHARE_PERCENT
                && win.percent < DATA_LOADER_SHARE_PERCENT)
        {
            return Vec::new();
        }
        let single = dl.iterator == Some(IteratorKind::SingleProcess);
        let mut f = cx.finding(FindingKind::DataLoaderStall, WinKind::GpuIdle, &win);
        f.title = format!(
            "{:.0} % of {} the GPU waits for the DataLoader ({} {}){}",
            win.percent,
            cx.step_time(),
            format_ms(win.per_step_ns),
            cx.per(),
            if single {
                " on a single-process iterator (num_workers=0)"
            } else {
                ""
            }
        );
        (f.fix, f.advice) = if single {
            (
                "Load batches in worker processes: DataLoader(..., num_workers=4, pin_memory=True, persistent_workers=True), with num_workers at most the free physical cores.".into(),
                "With num_workers=0 every batch is loaded and transformed on the training thread while the GPU waits. Worker processes prepare the next batches in parallel: start at 2-4 workers and measure (more workers than physical cores slows everything), use pin_memory=True together with .to(device, non_blocking=True), persistent_workers=True and prefetch_factor. Keep OMP_NUM_THREADS=1 / MKL_NUM_THREADS=1 in workers (cv2/Albumentations threads multiply per worker).".into(),
            )
        } else {
            (
                "Raise num_workers (up to the free physical cores) and prefetch_factor, or make per-sample transforms cheaper.".into(),
                "The worker processes do not keep up with the GPU: raise num_workers (not beyond the physical cores), raise prefetch_factor, use persistent_workers=True, make per-sample transforms cheaper or move them to the GPU, and set OMP_NUM_THREADS=1 in workers.".into(),
            )
        };
        f.snippet = "loader = DataLoader(ds, batch_size=B, num_workers=4, pin_memory=True,\n                    persistent_workers=True, prefetch_factor=4)\nfor x, y in loader:\n    x = x.to(device, non_blocking=True)\n    y = y.to(device, non_blocking=True)".into();
        f.win_basis = "GPU idle while the launching thread waited in DataLoader __next__ (upper bound of the recoverable time)".into();
        f.evidence
            .add("__next__ calls", EvidenceValue::Count(dl.calls));
        f.evidence
            .add("time in __next__", EvidenceValue::DurationNs(dl.next_ns));
        f.evidence.add(
            "__next__ share of step time",
            EvidenceValue::Percent(dl.share_percent),
        );
        if let Some(d) = cx.idle {
            let mut segs: Vec<_> = d
                .segments
                .iter()
                .filter(|s| s.cause == IdleCause::DataLoading)
                .collect();
            segs.sort_by_key(|s| std::cmp::Reverse(s.interval.dur_ns()));
            f.evidence.time_ranges = segs.iter().take(5).map(|s| s.interval).collect();
        }
        f.confidence = Confidence::High;
        vec![f]
    }
}

/// Host-blocking syncs that drain the GPU queue.
pub struct ImplicitSyncs;

impl Detector for ImplicitSyncs {
    fn name(&self) -> &'static str {
        "implicit_sync"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let mut out = Vec::new();
        for site in cx.sync_sites {
            if site.trigger == SyncTrigger::ProfilerInjected {
                continue;
            }
            if !sync_site_reported(site, cx.window) {
                continue;
            }
            let win = cx.win(site.gpu_idle_ns);
            let blocked = cx.win(site.blocked_ns);
            let where_ = site
                .call_site
                .as_ref()
                .map(|c| format!(" at {c}"))
                .unwrap_or_default();
            let win_kind = if site.gpu_idle_ns > 0 {
                WinKind::GpuIdle
            } else {
                WinKind::HostOnly
            };
            let mut f = cx.finding(FindingKind::ImplicitSync, win_kind, &win);
            f.title = if site.gpu_idle_ns > 0 {
                format!(
                    "{}{} ({}) blocks the CPU {} {per} and leaves the GPU idle {} {per} ({:.1} %)",
                    site.trigger.describe(),
                    where_,
                    plural(site.count, "call"),
                    format_ms(blocked.per_step_ns),
                    format_ms(win.per_step_ns),
                    win.percent,
                    per = cx.per()
                )
            } else {
                format!(
                    "{}{} ({}) blocks the CPU {} {} ({:.1} % of {}); the GPU stayed busy meanwhile",
                    site.trigger.describe(),
                    where_,
                    plural(site.count, "call"),
                    format_ms(blocked.per_step_ns),
                    cx.per(),
                    blocked.percent,
                    cx.step_time()
                )
            };
            (f.fix, f.advice, f.snippet) = sync_advice(site);
            f.win_basis = "GPU idle after the sync drained the queue, at most the time the sync blocked the host (the GPU work the CPU work after it could have overlapped)".into();
            f.cpu_cost_per_step_ns = Some(blocked.per_step_ns);
            f.evidence.add("calls", EvidenceValue::Count(site.count));
            f.evidence
                .add("blocking API calls", EvidenceValue::Count(site.api_calls));
            f.evidence
                .add("host blocked", EvidenceValue::DurationNs(site.blocked_ns));
            f.evidence.add(
                "GPU idle credited",
                EvidenceValue::DurationNs(site.gpu_idle_ns),
            );
            if site.copies > 0 {
                f.evidence.add("copies", EvidenceValue::Count(site.copies));
                f.evidence
                    .add("copied", EvidenceValue::Bytes(site.copy_bytes));
            }
            f.evidence.time_ranges = site.example_ranges.clone();
            f.evidence.span_ids = site.examples.iter().map(|s| s.0).collect();
            f.call_site = site.call_site.clone();
            f.confidence = if cx.reliable() {
                Confidence::High
            } else {
                Confidence::Low
            };
            out.push(f);
        }
        out
    }
}

/// Whether a sync site becomes a finding: it idles the GPU noticeably, or it blocks the host
/// noticeably every step (a one-off wait of a CPU that ran ahead, like a final loss read,
/// costs nothing).
pub fn sync_site_reported(site: &SyncSite, window: &AnalysisWindow) -> bool {
    if site.trigger == SyncTrigger::ProfilerInjected {
        return false;
    }
    let share = |ns: TimeNs| percent(window.per_step(ns), window.step_ns());
    let costly = site.gpu_idle_ns > 0 && share(site.gpu_idle_ns) >= MIN_FINDING_PERCENT;
    let blocks_every_step = window.has_steps()
        && site.per_step >= 1.0
        && share(site.blocked_ns) >= HOST_BLOCKED_FINDING_PERCENT;
    costly || blocks_every_step
}

/// (fix, advice, snippet) for a sync site.
fn sync_advice(site: &SyncSite) -> (String, String, String) {
    let (fix, a, s): (&str, &str, &str) = match site.trigger {
        SyncTrigger::Item | SyncTrigger::TensorTruthValue => (
            "Keep the value on the GPU and read it every N steps (accumulate with loss.detach()), or compare on the device instead of branching on a tensor.",
            "Each .item() / bool(tensor) waits for all queued GPU work, so the CPU cannot run ahead and the GPU idles while the CPU prepares the next launches.",
            "running_loss += loss.detach()          # stays on the GPU\nif step % 100 == 0:\n    print(running_loss.item() / 100)    # one sync per 100 steps\n    running_loss.zero_()",
        ),
        SyncTrigger::SyncCopy => match site.host_memory {
            Some(MemoryKind::Pinned) => (
                "Add non_blocking=True to the .to() call: the memory is already pinned.",
                "The copy uses pinned memory but is still synchronous: pin_memory=True only helps together with non_blocking=True.",
                "x = x.to(device, non_blocking=True)    # x comes from a pin_memory=True DataLoader",
            ),
            _ => (
                "Pin the host buffer and copy with non_blocking=True; for results, copy into a pinned buffer asynchronously and read it later.",
                "A synchronous copy between pageable host memory and the GPU blocks the CPU until the GPU queue drains; pageable copies are also staged through a driver buffer and cannot overlap compute.",
                "loader = DataLoader(ds, ..., pin_memory=True)\nx = x.to(device, non_blocking=True)\n# results: out_cpu = torch.empty(shape, pin_memory=True); out_cpu.copy_(out, non_blocking=True)",
            ),
        },
        SyncTrigger::DataDependentShape => (
            "Use fixed-shape alternatives (torch.where, masking by multiplication, size= arguments) or move the op out of the hot loop.",
            "Ops with data-dependent output shapes (nonzero, boolean-mask indexing, unique, masked_select) read a size back from the GPU, which waits for all queued work.",
            "y = torch.where(mask, x, torch.zeros_like(x))   # instead of x[mask]",
        ),
        SyncTrigger::DeviceSynchronize => (
            "Remove torch.cuda.synchronize() from the loop; time with CUDA events read later.",
            "torch.cuda.synchronize() waits for every stream of the device, so the queue drains and the GPU idles until the CPU launches again.",
            "start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)\nstart.record(); step(); end.record()   # read end.elapsed_time(start) later",
        ),
        SyncTrigger::StreamSynchronize | SyncTrigger::EventSynchronize => (
            "Order GPU work with stream.wait_event() / wait_stream() instead of blocking the host.",
            "An explicit stream or event synchronize blocks the CPU until the GPU catches up.",
            "torch.cuda.current_stream().wait_stream(side_stream)   # GPU-side ordering, no host block",
        ),
        SyncTrigger::BlockingCopyApi | SyncTrigger::ProfilerInjected => (
            "Use the Async copy/fill API on a stream, with pinned host memory.",
            "A blocking copy or fill API call waits for the GPU before it returns.",
            "cudaMemcpyAsync(dst, src, n, kind, stream);  // with pinned host memory",
        ),
    };
    (fix.into(), a.into(), s.into())
}

/// Pageable host memory in copies that no sync finding already counts.
pub struct PageableCopies;

impl Detector for PageableCopies {
    fn name(&self) -> &'static str {
        "pageable_copies"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let p = cx.copies.pageable_unclaimed;
        if p.count == 0 || p.exposed_ns == 0 {
            return Vec::new();
        }
        let win = cx.win(p.exposed_ns);
        let mut f = cx.finding(FindingKind::PageableCopies, WinKind::ExposedCopy, &win);
        f.title = format!(
            "{} use pageable host memory ({:.1} MB, {} of GPU copy time not overlapped with compute, host blocked {})",
            plural(p.count, "copy").replace("copys", "copies"),
            p.bytes as f64 / 1e6,
            format_ms(p.exposed_ns),
            format_ms(p.host_blocked_ns)
        );
        f.win_basis = "GPU copy time not overlapped by any kernel, which pinned non-blocking copies can overlap with compute (busy time, not idle; upper bound)".into();
        f.cpu_cost_per_step_ns = Some(cx.window.per_step(p.host_blocked_ns));
        f.evidence.add("copies", EvidenceValue::Count(p.count));
        f.evidence.add("copied", EvidenceValue::Bytes(p.bytes));
        f.evidence
            .add("host blocked", EvidenceValue::DurationNs(p.host_blocked_ns));
        f.evidence.add(
            "host-to-device copies serialized with compute",
            EvidenceValue::Count(cx.copies.htod_serialized_with_compute),
        );
        f.evidence.add(
            "pinned copies then synced",
            EvidenceValue::Count(cx.copies.pinned_copies_then_synced),
        );
        f.fix = "Use pin_memory=True in the DataLoader (or tensor.pin_memory()) together with .to(device, non_blocking=True).".into();
        f.advice = "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels. Pinned memory and non_blocking=True only work as a pair.".into();
        f.snippet =
            "loader = DataLoader(ds, ..., pin_memory=True)\nx = x.to(device, non_blocking=True)"
                .into();
        f.confidence = Confidence::High;
        vec![f]
    }
}

/// Kernels shorter than their launches.
pub struct LaunchBound;

impl Detector for LaunchBound {
    fn name(&self) -> &'static str {
        "launch_bound"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let l = cx.launch;
        let win = cx.win(cx.credit.launch_bound_ns);
        if l.stretch_count == 0 || win.total_ns == 0 || win.percent < MIN_FINDING_PERCENT {
            return Vec::new();
        }
        let depth = l.stretches.first().map_or(0.0, |s| s.mean_queue_depth);
        let mut f = cx.finding(FindingKind::LaunchBound, WinKind::GpuIdle, &win);
        f.title = format!(
            "Launch-bound: {} kernels in {} run shorter than their launch calls; the GPU starves {} {} ({:.1} %)",
            l.stretch_kernels,
            plural(l.stretch_count, "stretch"),
            format_ms(win.per_step_ns),
            cx.per(),
            win.percent
        );
        f.win_basis = "GPU idle inside runs of short kernels, from launch overhead and the CPU work between launches (upper bound)".into();
        f.evidence
            .add("short kernels", EvidenceValue::Count(l.short_kernels));
        f.evidence.add(
            "kernels with a launch",
            EvidenceValue::Count(l.kernels_with_launch),
        );
        f.evidence.add(
            "mean queue depth of the largest stretch (ops launched, not started)",
            EvidenceValue::Number(depth),
        );
        f.evidence.time_ranges = l.stretches.iter().map(|s| s.interval).collect();
        (f.fix, f.snippet) = launch_overhead_fix(cx.framework);
        f.advice = "The CPU cannot issue kernels as fast as the GPU runs them: each kernel is shorter than its launch call, so the GPU idles between them. Fewer, larger launches (CUDA graphs, fusion, bigger batches) remove the gaps.".into();
        f.confidence = if cx.reliable() {
            Confidence::Medium
        } else {
            Confidence::Low
        };
        vec![f]
    }
}

/// (fix, snippet) against per-launch CPU overhead, fitted to the PyTorch version and to what
/// the trace already uses.
fn launch_overhead_fix(fw: &Framework) -> (String, String) {
    if fw.graphs {
        return (
            "The step already replays CUDA graphs: raise the batch size or fuse more ops so each launch does more work.".into(),
            "# larger batches amortize each launch\nloader = DataLoader(ds, batch_size=2 * B, ...)".into(),
        );
    }
    if fw.compiled {
        return (
            "The model is already compiled: add CUDA graphs with torch.compile(model, mode=\"reduce-overhead\").".into(),
            "model = torch.compile(model, mode=\"reduce-overhead\")   # CUDA graphs on top of fusion".into(),
        );
    }
    match fw.at_least(TORCH_COMPILE) {
        Some(true) => (
            "Compile the step with torch.compile(model, mode=\"reduce-overhead\") (fusion and CUDA graphs), or raise the batch size.".into(),
            "model = torch.compile(model, mode=\"reduce-overhead\")   # CUDA graphs + fusion".into(),
        ),
        None => (
            "On PyTorch 2.0+ compile the step with torch.compile(model, mode=\"reduce-overhead\"); on 1.10-1.13 capture it with torch.cuda.graph; or raise the batch size.".into(),
            "model = torch.compile(model, mode=\"reduce-overhead\")   # PyTorch 2.0+\n# 1.10-1.13: g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): out = model(static_x)".into(),
        ),
        Some(false) => (
            "Raise the batch size so each kernel does more work, or capture the step with torch.cuda.graph (PyTorch 1.10+).".into(),
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):           # PyTorch 1.10+\n    static_out = model(static_x)\ng.replay()".into(),
        ),
    }
}

/// The GPU waits while the CPU does other work.
pub struct HostCompute;

/// What most of the host-compute time is.
#[derive(Clone, Copy, PartialEq)]
enum HostWork {
    /// `Optimizer.step#…` / `Optimizer.zero_grad#…`.
    Optimizer,
    /// The model's own `aten::` ops being dispatched.
    Dispatch,
    /// `torch.compile` regions.
    Compiled,
    /// Python between ops, or user frames.
    Python,
}

fn host_work(name: &str) -> HostWork {
    if name.starts_with("Optimizer.") {
        HostWork::Optimizer
    } else if name.starts_with("aten::") || name.starts_with("autograd::") {
        HostWork::Dispatch
    } else if name.starts_with("CompiledFunction") || name.starts_with("Torch-Compiled") {
        HostWork::Compiled
    } else {
        HostWork::Python
    }
}

/// An op name as the host-compute title shows it.
fn host_label(name: &str) -> String {
    match host_work(name) {
        HostWork::Dispatch => format!("framework dispatch of {name}"),
        _ => name.to_string(),
    }
}

impl Detector for HostCompute {
    fn name(&self) -> &'static str {
        "host_compute"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let win = cx.win(cx.credit.host_compute_ns);
        if win.total_ns == 0 || win.percent < HOST_COMPUTE_FINDING_PERCENT {
            return Vec::new();
        }
        let ops = &cx.credit.host_compute_ops;
        let top: Vec<String> = ops
            .iter()
            .take(3)
            .map(|(n, t)| format!("{} ({})", host_label(n), format_ms(cx.window.per_step(*t))))
            .collect();
        let mut f = cx.finding(FindingKind::HostCompute, WinKind::GpuIdle, &win);
        f.title = format!(
            "GPU idle {} {} ({:.1} %) while the launching thread runs CPU work: {}{}",
            format_ms(win.per_step_ns),
            cx.per(),
            win.percent,
            if top.is_empty() {
                "unnamed CPU work".to_string()
            } else {
                top.join(", ")
            },
            cx.idle
                .map(|d| os_wait_note(d, win.total_ns))
                .unwrap_or_default()
        );
        for (n, t) in ops.iter().take(8) {
            f.evidence.add(host_label(n), EvidenceValue::DurationNs(*t));
        }
        if let Some(d) = cx.idle {
            for (n, t) in d.os_waits.iter().take(4) {
                f.evidence
                    .add(format!("OS wait: {n}"), EvidenceValue::DurationNs(*t));
            }
        }
        let main = ops.first().map_or(HostWork::Python, |(n, _)| host_work(n));
        (f.fix, f.snippet) = match main {
            HostWork::Optimizer if ops[0].0.starts_with("Optimizer.zero_grad") => (
                "Let zero_grad() drop the gradients instead of filling them with zeros: optimizer.zero_grad(set_to_none=True).".into(),
                "optimizer.zero_grad(set_to_none=True)   # default from PyTorch 2.0".into(),
            ),
            HostWork::Optimizer => optimizer_fix(cx.framework),
            HostWork::Dispatch | HostWork::Compiled => launch_overhead_fix(cx.framework),
            HostWork::Python => (
                "Move per-step Python work (logging, metrics, data munging) out of the loop or run it every N steps.".into(),
                "if step % 100 == 0:\n    log_metrics(...)   # not every step".into(),
            ),
        };
        f.advice = "The GPU runs out of queued work while the launching thread does CPU work before its next launch. The ops listed are where that time goes; shorten them or overlap them with GPU work.".into();
        f.win_basis = "GPU idle while the launching thread ran CPU work before its next launch, outside launch-bound stretches (upper bound)".into();
        vec![f]
    }
}

/// (fix, snippet) for a slow optimizer step, naming the optimizer the trace shows and only
/// options its PyTorch has.
fn optimizer_fix(fw: &Framework) -> (String, String) {
    let name = fw
        .optimizer
        .clone()
        .unwrap_or_else(|| "the optimizer".into());
    if fw.fused_optimizer {
        return (
            format!("{name} is already fused: step it less often (gradient accumulation) or overlap it with the next step's data loading."),
            "if (step + 1) % accum_steps == 0:\n    optimizer.step(); optimizer.zero_grad(set_to_none=True)".into(),
        );
    }
    let adam = name.starts_with("Adam");
    let fused_from = if adam { TORCH_COMPILE } else { FUSED_SGD };
    let class = if fw.optimizer.is_some() {
        format!("torch.optim.{name}")
    } else {
        "torch.optim.AdamW".into()
    };
    match (fw.at_least(fused_from), fw.at_least(OPTIMIZER_FOREACH)) {
        (Some(true), _) => (
            format!("Use the fused implementation: {class}(..., fused=True)."),
            format!("optimizer = {class}(model.parameters(), lr=lr, fused=True)"),
        ),
        (None, Some(true)) | (None, None) => (
            format!("Use {class}(..., foreach=True) (PyTorch 1.12+), or fused=True on PyTorch {fused_from}+."),
            format!("optimizer = {class}(model.parameters(), lr=lr, foreach=True)"),
        ),
        (_, _) => (
            format!("{name} runs one small kernel per parameter on this PyTorch: use a multi-tensor optimizer (apex.optimizers.Fused{}) or upgrade to 1.12+ for foreach=True.", if adam { "Adam" } else { "SGD" }),
            format!("from apex.optimizers import Fused{}\noptimizer = Fused{}(model.parameters(), lr=lr)", if adam { "Adam" } else { "SGD" }, if adam { "Adam" } else { "SGD" }),
        ),
    }
}

/// The launching thread is descheduled while runnable during exposed CPU time.
pub struct CpuOversubscription;

impl Detector for CpuOversubscription {
    fn name(&self) -> &'static str {
        "cpu_oversubscription"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let win = cx.win(cx.credit.oversubscription_ns);
        if win.total_ns == 0 || win.percent < MIN_FINDING_PERCENT {
            return Vec::new();
        }
        let mut f = cx.finding(FindingKind::CpuOversubscription, WinKind::GpuIdle, &win);
        f.title = format!(
            "The launching thread was off the CPU, runnable but not running, {} {} while the GPU waited ({:.1} %): CPU oversubscription",
            format_ms(win.per_step_ns),
            cx.per(),
            win.percent
        );
        f.win_basis = "GPU idle during which the launching thread was descheduled outside any traced OS wait (upper bound)".into();
        f.evidence
            .add("descheduled", EvidenceValue::DurationNs(win.total_ns));
        f.fix = "Give the trainer its cores: set OMP_NUM_THREADS / torch.set_num_threads per process and keep num_workers at or below the free physical cores.".into();
        f.advice = "More threads want the cores than there are: keep DataLoader num_workers at or below the physical cores left for the trainer, set OMP_NUM_THREADS / MKL_NUM_THREADS (or torch.set_num_threads) per process, pin processes with taskset or numactl, and check for other jobs on the node.".into();
        f.snippet = "export OMP_NUM_THREADS=4      # per training process
torch.set_num_threads(4)
loader = DataLoader(ds, num_workers=min(4, os.cpu_count() // nproc_per_node - 1))"
            .into();
        vec![f]
    }
}

/// When OS waits of the launching thread make up 30 % or more of the host-compute idle, a
/// clause naming them; else nothing.
fn os_wait_note(dev: &DeviceIdle, idle: TimeNs) -> String {
    let waited: TimeNs = dev.os_waits.iter().map(|(_, t)| t).sum();
    if waited == 0 || waited * 10 < idle * 3 {
        return String::new();
    }
    let calls: Vec<String> = dev
        .os_waits
        .iter()
        .take(2)
        .map(|(n, t)| format!("{n} {}", format_ms(*t)))
        .collect();
    format!(
        "; the launching thread was blocked in OS waits for {} of it ({})",
        format_ms(waited),
        calls.join(", ")
    )
}

/// `1 call`, `2 calls`.
fn plural(n: u64, word: &str) -> String {
    match (n, word.ends_with("ch")) {
        (1, _) => format!("1 {word}"),
        (_, true) => format!("{n} {word}es"),
        _ => format!("{n} {word}s"),
    }
}
