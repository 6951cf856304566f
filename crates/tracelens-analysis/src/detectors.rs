//! The detectors: each turns the shared analyses into findings. One trait, one type each.

use crate::copies::CopyReport;
use crate::dataloader::{percent, DataLoaderReport, IteratorKind};
use crate::finding::{Confidence, Evidence, Finding, FindingKind, Severity};
use crate::idle::{DeviceIdle, IdleCause};
use crate::launch::LaunchReport;
use crate::syncs::{SyncSite, SyncTrigger};
use tracelens_model::{format_ms, MemoryKind, TimeNs, Trace};

/// Everything detectors read.
pub struct Context<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// Idle attribution per device.
    pub idle: &'a [DeviceIdle],
    /// Sync call sites.
    pub sync_sites: &'a [SyncSite],
    /// Copies.
    pub copies: &'a CopyReport,
    /// DataLoader.
    pub dataloader: &'a DataLoaderReport,
    /// Launch-bound stretches.
    pub launch: &'a LaunchReport,
    /// Number of profiled steps (at least 1).
    pub steps: usize,
    /// The analysed GPU time (the longest device extent), the denominator of shares.
    pub analysed_ns: TimeNs,
    /// Whether the trace has `ProfilerStep#N` ranges (else "per step" means the whole trace).
    pub has_steps: bool,
}

impl Context<'_> {
    /// "per step", or "in the trace" when there are no steps.
    fn per(&self) -> &'static str {
        if self.has_steps {
            "per step"
        } else {
            "in the trace"
        }
    }

    /// "step time", or "profiled time" when there are no steps.
    fn step_time(&self) -> &'static str {
        if self.has_steps {
            "step time"
        } else {
            "profiled time"
        }
    }

    /// Builds a finding's win fields from a total over the window.
    fn win(&self, ns: TimeNs) -> (TimeNs, TimeNs, f64, Severity) {
        let share = percent(ns, self.analysed_ns);
        (
            ns,
            ns / self.steps.max(1) as TimeNs,
            share,
            Severity::from_share(share),
        )
    }

    /// The device with the most idle of `cause`.
    fn idle_of(&self, cause: IdleCause) -> TimeNs {
        self.idle
            .iter()
            .map(|d| d.by_cause[&cause])
            .max()
            .unwrap_or(0)
    }

    fn reliable(&self) -> bool {
        self.idle.iter().all(DeviceIdle::reliable)
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
        let idle = cx.idle_of(IdleCause::DataLoading);
        let (win, per_step, share, severity) = cx.win(idle);
        if idle == 0
            || (dl.share_percent < DATA_LOADER_SHARE_PERCENT && share < DATA_LOADER_SHARE_PERCENT)
        {
            return Vec::new();
        }
        let single = dl.iterator == Some(IteratorKind::SingleProcess);
        let title = format!(
            "{:.0} % of {} the GPU waits for the DataLoader ({} {}){}",
            share,
            cx.step_time(),
            format_ms(per_step),
            cx.per(),
            if single {
                " on a single-process iterator (num_workers=0)"
            } else {
                ""
            }
        );
        let advice = if single {
            "Load batches in worker processes: set num_workers (start at 2-4 and measure; more workers than physical cores slows everything), pin_memory=True together with .to(device, non_blocking=True), persistent_workers=True and prefetch_factor. Keep OMP_NUM_THREADS=1 / MKL_NUM_THREADS=1 in workers (cv2/Albumentations threads multiply per worker)."
        } else {
            "The workers do not keep up: raise num_workers (not beyond the physical cores), raise prefetch_factor, use persistent_workers=True, make per-sample transforms cheaper or move them to the GPU, and set OMP_NUM_THREADS=1 in workers."
        };
        let mut evidence = Evidence::default();
        evidence.counts.insert("next_calls".into(), dl.calls as i64);
        evidence.counts.insert("next_ns".into(), dl.next_ns);
        evidence.counts.insert(
            "share_of_step_percent_x100".into(),
            (dl.share_percent * 100.0) as i64,
        );
        if let Some(d) = cx
            .idle
            .iter()
            .max_by_key(|d| d.by_cause[&IdleCause::DataLoading])
        {
            let mut segs: Vec<_> = d
                .segments
                .iter()
                .filter(|s| s.cause == IdleCause::DataLoading)
                .collect();
            segs.sort_by_key(|s| std::cmp::Reverse(s.interval.dur_ns()));
            evidence.time_ranges = segs.iter().take(5).map(|s| s.interval).collect();
        }
        vec![Finding {
            kind: FindingKind::DataLoaderStall,
            title,
            severity,
            estimated_win_ns: win,
            estimated_win_per_step_ns: per_step,
            estimated_win_percent: share,
            win_basis: "GPU idle while the launching thread waited in DataLoader __next__ (upper bound of the recoverable time)".into(),
            cpu_cost_per_step_ns: None,
            evidence,
            call_site: None,
            advice: advice.into(),
            snippet: "loader = DataLoader(ds, batch_size=B, num_workers=4, pin_memory=True,\n                    persistent_workers=True, prefetch_factor=4)\nfor x, y in loader:\n    x = x.to(device, non_blocking=True)\n    y = y.to(device, non_blocking=True)".into(),
            confidence: Confidence::High,
        }]
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
            let (win, per_step, share, severity) = cx.win(site.gpu_idle_ns);
            // A sync that neither idles the GPU nor blocks the host noticeably is a detail.
            let blocked_share = percent(site.blocked_ns, cx.analysed_ns);
            let costly = site.gpu_idle_ns > 0 && share >= MIN_FINDING_PERCENT;
            // Blocking alone matters when it recurs every step: a one-off wait of a CPU that ran
            // ahead (a final loss read) costs nothing.
            let blocks_every_step =
                site.per_step >= 1.0 && blocked_share >= HOST_BLOCKED_FINDING_PERCENT;
            if !costly && !blocks_every_step {
                continue;
            }
            let where_ = site
                .call_site
                .as_ref()
                .map(|c| format!(" at {c}"))
                .unwrap_or_default();
            let blocked_per_step = format_ms(site.blocked_ns / cx.steps.max(1) as TimeNs);
            let title = if site.gpu_idle_ns > 0 {
                format!(
                    "{}{} ({}) blocks the CPU {} {per} and leaves the GPU idle {} {per} ({:.1} %)",
                    site.trigger.describe(),
                    where_,
                    plural(site.count, "call"),
                    blocked_per_step,
                    format_ms(per_step),
                    share,
                    per = cx.per()
                )
            } else {
                format!(
                    "{}{} ({}) blocks the CPU {} {} ({:.1} % of {}); the GPU stayed busy meanwhile",
                    site.trigger.describe(),
                    where_,
                    plural(site.count, "call"),
                    blocked_per_step,
                    cx.per(),
                    blocked_share,
                    cx.step_time()
                )
            };
            let (advice, snippet) = sync_advice(site);
            let mut evidence = Evidence::default();
            evidence.counts.insert("calls".into(), site.count as i64);
            evidence
                .counts
                .insert("host_blocked_ns".into(), site.blocked_ns);
            evidence
                .counts
                .insert("gpu_idle_ns".into(), site.gpu_idle_ns);
            evidence.time_ranges = site.example_ranges.clone();
            evidence.span_ids = site.examples.iter().map(|s| s.0).collect();
            out.push(Finding {
                kind: FindingKind::ImplicitSync,
                title,
                severity,
                estimated_win_ns: win,
                estimated_win_per_step_ns: per_step,
                estimated_win_percent: share,
                win_basis: "GPU idle from the sync's return to the next launch, when the sync drained the queue (upper bound)".into(),
                cpu_cost_per_step_ns: Some(site.blocked_ns / cx.steps.max(1) as TimeNs),
                evidence,
                call_site: site.call_site.clone(),
                advice,
                snippet,
                confidence: if cx.reliable() { Confidence::High } else { Confidence::Low },
            });
        }
        out.truncate(10);
        out
    }
}

fn sync_advice(site: &SyncSite) -> (String, String) {
    let (a, s): (&str, &str) = match site.trigger {
        SyncTrigger::Item | SyncTrigger::TensorTruthValue => (
            "Each .item() / bool(tensor) waits for all queued GPU work. Keep values on the GPU (accumulate the loss as a tensor) and read them every N steps, or compare on the device instead of branching on a tensor in Python.",
            "running_loss += loss.detach()          # stays on the GPU\nif step % 100 == 0:\n    print(running_loss.item() / 100)    # one sync per 100 steps\n    running_loss.zero_()",
        ),
        SyncTrigger::SyncCopy => match site.host_memory {
            Some(MemoryKind::Pinned) => (
                "The copy uses pinned memory but is still synchronous: pin_memory=True only helps together with non_blocking=True.",
                "x = x.to(device, non_blocking=True)    # x comes from a pin_memory=True DataLoader",
            ),
            _ => (
                "A synchronous copy between pageable host memory and the GPU blocks the CPU until the GPU queue drains. Pin the host buffer and copy with non_blocking=True; for device-to-host results, copy into a pinned buffer asynchronously and read it later.",
                "loader = DataLoader(ds, ..., pin_memory=True)\nx = x.to(device, non_blocking=True)\n# results: out_cpu = torch.empty(shape, pin_memory=True); out_cpu.copy_(out, non_blocking=True)",
            ),
        },
        SyncTrigger::DataDependentShape => (
            "Ops with data-dependent output shapes (nonzero, boolean-mask indexing, unique, masked_select) read a size back from the GPU. Use fixed-shape alternatives (torch.where, masking by multiplication, nonzero_static / size= arguments) or move them out of the hot loop.",
            "y = torch.where(mask, x, torch.zeros_like(x))   # instead of x[mask]",
        ),
        SyncTrigger::DeviceSynchronize => (
            "torch.cuda.synchronize() in the training loop stalls the pipeline. Remove it, or keep it only around timing code that runs rarely; use CUDA events for timing.",
            "start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)\nstart.record(); step(); end.record()   # read end.elapsed_time(start) later",
        ),
        SyncTrigger::StreamSynchronize | SyncTrigger::EventSynchronize => (
            "An explicit stream/event synchronize blocks the CPU until the GPU catches up. Use stream.wait_event(...) / wait_stream(...) to order GPU work without blocking the host.",
            "torch.cuda.current_stream().wait_stream(side_stream)   # GPU-side ordering, no host block",
        ),
        SyncTrigger::BlockingCopyApi | SyncTrigger::ProfilerInjected => (
            "A blocking copy/fill API call waits for the GPU. Use the Async variant on a stream with pinned host memory.",
            "cudaMemcpyAsync(dst, src, n, kind, stream);  // with pinned host memory",
        ),
    };
    (a.into(), s.into())
}

/// Pageable host memory in copies.
pub struct PageableCopies;

impl Detector for PageableCopies {
    fn name(&self) -> &'static str {
        "pageable_copies"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let p = cx.copies.pageable();
        if p.count == 0 || p.exposed_ns == 0 {
            return Vec::new();
        }
        let (win, per_step, share, severity) = cx.win(p.exposed_ns);
        let title = format!(
            "{} use pageable host memory ({:.1} MB, {} of GPU copy time not overlapped with compute, host blocked {})",
            plural(p.count, "copy").replace("copys", "copies"),
            p.bytes as f64 / 1e6,
            format_ms(p.exposed_ns),
            format_ms(p.host_blocked_ns)
        );
        let mut evidence = Evidence::default();
        for (k, v) in [
            ("htod_pageable", cx.copies.htod_pageable.count),
            ("dtoh_pageable", cx.copies.dtoh_pageable.count),
            (
                "htod_serialized_with_compute",
                cx.copies.htod_serialized_with_compute,
            ),
            (
                "pinned_copies_then_synced",
                cx.copies.pinned_copies_then_synced,
            ),
        ] {
            evidence.counts.insert(k.into(), v as i64);
        }
        evidence.counts.insert("bytes".into(), p.bytes as i64);
        evidence
            .counts
            .insert("host_blocked_ns".into(), p.host_blocked_ns);
        vec![Finding {
            kind: FindingKind::PageableCopies,
            title,
            severity,
            estimated_win_ns: win,
            estimated_win_per_step_ns: per_step,
            estimated_win_percent: share,
            win_basis: "GPU copy time not overlapped by any kernel; pinned, non-blocking copies can overlap compute (upper bound)".into(),
            cpu_cost_per_step_ns: Some(p.host_blocked_ns / cx.steps.max(1) as TimeNs),
            evidence,
            call_site: None,
            advice: "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels. Use pin_memory=True in the DataLoader (or tensor.pin_memory()) together with .to(device, non_blocking=True) — the two only work as a pair.".into(),
            snippet: "loader = DataLoader(ds, ..., pin_memory=True)\nx = x.to(device, non_blocking=True)".into(),
            confidence: Confidence::High,
        }]
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
        let (win, per_step, share, severity) = cx.win(l.stretch_idle_ns);
        if l.stretch_count == 0 || share < MIN_FINDING_PERCENT {
            return Vec::new();
        }
        let depth = l.stretches.first().map_or(0.0, |s| s.mean_queue_depth);
        let title = format!(
            "Launch-bound: {} kernels in {} run shorter than their launch calls; the GPU starves {} {} ({:.1} %)",
            l.stretch_kernels,
            plural(l.stretch_count, "stretch"),
            format_ms(per_step),
            cx.per(),
            share
        );
        let mut evidence = Evidence::default();
        evidence
            .counts
            .insert("short_kernels".into(), l.short_kernels as i64);
        evidence
            .counts
            .insert("kernels_with_launch".into(), l.kernels_with_launch as i64);
        evidence
            .counts
            .insert("queue_depth_x100".into(), (depth * 100.0) as i64);
        evidence.time_ranges = l.stretches.iter().map(|s| s.interval).collect();
        vec![Finding {
            kind: FindingKind::LaunchBound,
            title,
            severity,
            estimated_win_ns: win,
            estimated_win_per_step_ns: per_step,
            estimated_win_percent: share,
            win_basis: "GPU idle inside runs of short kernels from launch latency and host work (upper bound)".into(),
            cpu_cost_per_step_ns: None,
            evidence,
            call_site: None,
            advice: "The CPU cannot issue kernels as fast as the GPU runs them. Capture the step in a CUDA graph (torch.compile(mode=\"reduce-overhead\") or torch.cuda.graphs), fuse small ops with torch.compile, or raise the batch size so each kernel does more work.".into(),
            snippet: "model = torch.compile(model, mode=\"reduce-overhead\")   # CUDA graphs + fusion".into(),
            confidence: if cx.reliable() { Confidence::Medium } else { Confidence::Low },
        }]
    }
}

/// The GPU waits while the CPU does other work.
pub struct HostCompute;

impl Detector for HostCompute {
    fn name(&self) -> &'static str {
        "host_compute"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let idle = cx.idle_of(IdleCause::HostCompute);
        let (win, per_step, share, severity) = cx.win(idle);
        if share < HOST_COMPUTE_FINDING_PERCENT {
            return Vec::new();
        }
        let Some(dev) = cx
            .idle
            .iter()
            .max_by_key(|d| d.by_cause[&IdleCause::HostCompute])
        else {
            return Vec::new();
        };
        let top: Vec<String> = dev
            .host_compute_ops
            .iter()
            .take(3)
            .map(|(n, t)| format!("{n} ({})", format_ms(*t / cx.steps.max(1) as TimeNs)))
            .collect();
        let title = format!(
            "GPU idle {} {} ({:.1} %) while the CPU runs other work: {}{}",
            format_ms(per_step),
            cx.per(),
            share,
            if top.is_empty() {
                "unnamed CPU work".to_string()
            } else {
                top.join(", ")
            },
            os_wait_note(dev, idle)
        );
        let mut evidence = Evidence::default();
        for (n, t) in dev.host_compute_ops.iter().take(8) {
            evidence.counts.insert(n.clone(), *t);
        }
        for (n, t) in dev.os_waits.iter().take(4) {
            evidence.counts.insert(format!("os wait: {n}"), *t);
        }
        vec![Finding {
            kind: FindingKind::HostCompute,
            title,
            severity,
            estimated_win_ns: win,
            estimated_win_per_step_ns: per_step,
            estimated_win_percent: share,
            win_basis: "GPU idle while the launching thread ran CPU work before its next launch (upper bound)".into(),
            cpu_cost_per_step_ns: None,
            evidence,
            call_site: None,
            advice: "Shorten or overlap the CPU work between launches: use fused/foreach optimizers (torch.optim.AdamW(..., fused=True)), avoid per-step Python bookkeeping and CPU tensor ops in the loop, and compile the step with torch.compile.".into(),
            snippet: "opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)".into(),
            confidence: Confidence::Medium,
        }]
    }
}

/// The launching thread is descheduled while runnable during exposed CPU time.
pub struct CpuOversubscription;

impl Detector for CpuOversubscription {
    fn name(&self) -> &'static str {
        "cpu_oversubscription"
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let Some(dev) = cx.idle.iter().max_by_key(|d| d.descheduled_ns) else {
            return Vec::new();
        };
        let (win, per_step, share, severity) = cx.win(dev.descheduled_ns);
        if dev.descheduled_ns == 0 || share < MIN_FINDING_PERCENT {
            return Vec::new();
        }
        let mut evidence = Evidence::default();
        evidence
            .counts
            .insert("descheduled_ns".into(), dev.descheduled_ns);
        vec![Finding {
            kind: FindingKind::CpuOversubscription,
            title: format!(
                "The launching thread was off the CPU, runnable but not running, {} {} while the GPU waited ({:.1} %): CPU oversubscription",
                format_ms(per_step),
                cx.per(),
                share
            ),
            severity,
            estimated_win_ns: win,
            estimated_win_per_step_ns: per_step,
            estimated_win_percent: share,
            win_basis: "GPU idle during which the launching thread was descheduled outside any traced OS wait (upper bound)".into(),
            cpu_cost_per_step_ns: None,
            evidence,
            call_site: None,
            advice: "More threads want the cores than there are: keep DataLoader num_workers at or below the physical cores left for the trainer, set OMP_NUM_THREADS / MKL_NUM_THREADS (or torch.set_num_threads) per process, pin processes with taskset or numactl, and check for other jobs on the node.".into(),
            snippet: "export OMP_NUM_THREADS=4      # per training process
torch.set_num_threads(4)
loader = DataLoader(ds, num_workers=min(4, os.cpu_count() // nproc_per_node - 1))".into(),
            confidence: Confidence::Medium,
        }]
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
