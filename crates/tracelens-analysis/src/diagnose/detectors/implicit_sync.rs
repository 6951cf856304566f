//! Host-blocking syncs (`.item()`, `bool(tensor)`, synchronous copies, `synchronize()`) that
//! drain the GPU queue, one finding per call site.

use super::{plural, Context, Detector, Input, MIN_FINDING_PERCENT};
use crate::attribute::syncs::{SyncSite, SyncTrigger};
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use crate::measure::environment::{Framework, TorchVersion};
use crate::measure::window::AnalysisWindow;
use crate::num::percent;
use tracelens_model::{format_ms, MemoryKind, TimeNs};

/// A sync that recurs every step and blocks the host at least this share of step time is a
/// finding even when the GPU stayed busy (its CPU thread cannot run ahead).
pub const HOST_BLOCKED_FINDING_PERCENT: f64 = 1.0;

/// Host-blocking syncs that drain the GPU queue.
pub struct ImplicitSyncs;

impl Detector for ImplicitSyncs {
    fn name(&self) -> &'static str {
        "implicit_sync"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::ImplicitSync
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Framework, Input::Idle, Input::SyncSites]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let mut out = Vec::new();
        for site in cx.sync_sites() {
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
            // A program without PyTorch is told the runtime calls it makes.
            let what = if site.trigger == SyncTrigger::AllocatorFree && !site.apis.is_empty() {
                // The free calls the trace shows (cudaFree on CUDA, hipFree on ROCm).
                format!("GPU memory free ({}())", site.apis.join("()/"))
            } else if cx.framework().pytorch() || site.apis.is_empty() {
                site.trigger
                    .describe_for(cx.framework().pytorch())
                    .to_string()
            } else {
                format!("{}()", site.apis.join("()/"))
            };
            f.title = if site.gpu_idle_ns > 0 {
                format!(
                    "{}{} ({}) blocks the CPU {} {per} and leaves the GPU idle {} {per} ({:.1} %)",
                    what,
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
                    what,
                    where_,
                    plural(site.count, "call"),
                    format_ms(blocked.per_step_ns),
                    cx.per(),
                    blocked.percent,
                    cx.step_time()
                )
            };
            (f.fix, f.advice, f.snippet) = sync_advice(site, cx.framework());
            f.lever = sync_lever(site);
            if let Some(once) = &site.one_time {
                // Work done once: the warm-up fix, never a per-step one.
                (f.fix, f.snippet) =
                    crate::diagnose::detectors::host_compute::warm_up_fix(cx.framework());
                f.advice = format!(
                    "These calls are {} (the thread's first API call, or a first call that costs many times the later ones): they happen once per run, not every step, so no per-step change removes them; judge the steps after them.",
                    once.describe()
                );
                f.title = format!("One-time work, {}: {}", once.describe(), f.title);
                f.one_time = Some(once.describe());
            }
            f.win_basis = "GPU idle after the sync drained the queue: the CPU work after it, at most as long as the sync blocked the host (the GPU work it could have overlapped), and, where the CPU went straight on to the next launch, that launch's round trip to the GPU".into();
            f.cpu_cost_per_step_ns = Some(blocked.per_step_ns);
            f.evidence.add_occurrences("calls", site.count);
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
            // A free's cost is the call itself (the caching allocator makes none); other
            // blocking calls keep their host work and stop waiting for the GPU.
            f.what_if = Some(if site.trigger == SyncTrigger::AllocatorFree {
                crate::predict::what_if::WhatIf::RemovedCalls(site.calls.clone())
            } else {
                crate::predict::what_if::WhatIf::AsyncCalls(site.calls.clone())
            });
            out.push(f);
        }
        out
    }
}

/// Whether a sync site becomes a finding: it idles the GPU noticeably, or it blocks the host
/// noticeably every step (a one-off wait of a CPU that ran ahead, like a final loss read,
/// costs nothing).
#[must_use]
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

/// The lever a sync site's own evidence points at (the decision table checks it).
fn sync_lever(site: &SyncSite) -> Option<crate::diagnose::lever::Lever> {
    use crate::diagnose::lever::Lever;
    if site.one_time.is_some() {
        return Some(Lever::CaptureAfterWarmUp);
    }
    match site.trigger {
        SyncTrigger::SyncCopy | SyncTrigger::BlockingCopyApi
            if site.host_memory == Some(MemoryKind::Pageable) =>
        {
            Some(Lever::PinnedAsyncCopies)
        }
        SyncTrigger::Item | SyncTrigger::TensorTruthValue | SyncTrigger::DataDependentShape => {
            Some(Lever::KeepValuesOnGpu)
        }
        SyncTrigger::AllocatorFree => Some(Lever::CachingAllocator),
        _ => None,
    }
}

/// (fix, advice, snippet) for a sync site.
fn sync_advice(site: &SyncSite, fw: &Framework) -> (String, String, String) {
    if !fw.pytorch() {
        return native_sync_advice(site, fw);
    }
    if site.trigger == SyncTrigger::AllocatorFree {
        return allocator_advice(site, fw);
    }
    let (fix, a, s): (&str, &str, &str) = match site.trigger {
        SyncTrigger::TensorTruthValue => (
            "Branch on the GPU instead of in Python: replace `if tensor:` / bool(t) with a device-side select (torch.where, a mask multiply), or decide once per N steps.",
            "Each bool(tensor) reads a value back from the GPU, which waits for all queued GPU work, so the CPU cannot run ahead and the GPU idles while the CPU prepares the next launches.",
            "# instead of: if (scores > t).any(): x = f(x)\nx = torch.where((scores > t).any(), f(x), x)   # no host read",
        ),
        SyncTrigger::Item => (
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
        SyncTrigger::BlockingCopyApi
        | SyncTrigger::ProfilerInjected
        | SyncTrigger::AllocatorFree => (
            "Use the Async copy/fill API on a stream, with pinned host memory.",
            "A blocking copy or fill API call waits for the GPU before it returns.",
            "cudaMemcpyAsync(dst, src, n, kind, stream);  // with pinned host memory",
        ),
    };
    (fix.into(), a.into(), s.into())
}

/// (fix, advice, snippet) for a sync in a program without PyTorch, in its own runtime's
/// words.
fn native_sync_advice(site: &SyncSite, fw: &Framework) -> (String, String, String) {
    use crate::diagnose::advice::{host_wait, HostWait};
    let wait = match site.trigger {
        SyncTrigger::AllocatorFree => HostWait::Free,
        SyncTrigger::SyncCopy | SyncTrigger::BlockingCopyApi if reads_small_values(site) => {
            HostWait::ValueRead
        }
        SyncTrigger::StreamSynchronize | SyncTrigger::EventSynchronize => HostWait::StreamOrEvent,
        _ => HostWait::DeviceOrCopy,
    };
    host_wait(wait, fw.dialect()).parts()
}

/// A blocking copy bringing back this many bytes or fewer on average reads a value the host
/// decides on (a flag, a count, a residual), not data.
pub const VALUE_READ_MAX_BYTES: u64 = 1024;

/// Whether a site's blocking copies read values back: copies to the host of
/// [`VALUE_READ_MAX_BYTES`] or fewer on average.
fn reads_small_values(site: &SyncSite) -> bool {
    site.copies_to_host && site.copies > 0 && site.copy_bytes / site.copies <= VALUE_READ_MAX_BYTES
}

/// `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` arrived in PyTorch 2.1.
const EXPANDABLE_SEGMENTS: TorchVersion = TorchVersion::new(2, 1);

/// (fix, advice, snippet) for GPU memory freed in the loop, named for the trace's runtime
/// (CUDA or HIP) and offering `expandable_segments` only where its PyTorch has it.
fn allocator_advice(site: &SyncSite, fw: &Framework) -> (String, String, String) {
    let hip = site.apis.iter().any(|a| {
        crate::vocabulary::api::api_family(a) == Some(crate::vocabulary::api::GpuApi::Hip)
    });
    let (runtime, no_cache, alloc_conf) = if hip {
        (
            "hipFree",
            "PYTORCH_NO_HIP_MEMORY_CACHING",
            "PYTORCH_HIP_ALLOC_CONF",
        )
    } else {
        (
            "cudaFree",
            "PYTORCH_NO_CUDA_MEMORY_CACHING",
            "PYTORCH_CUDA_ALLOC_CONF",
        )
    };
    let segments = match fw.at_least(EXPANDABLE_SEGMENTS) {
        Some(true) => {
            format!("; if memory is tight, {alloc_conf}=expandable_segments:True instead")
        }
        None => format!(
            "; if memory is tight, {alloc_conf}=expandable_segments:True (PyTorch 2.1+) instead"
        ),
        Some(false) => String::new(),
    };
    let fix = format!(
        "Keep PyTorch's caching allocator on: unset {no_cache} and remove torch.cuda.empty_cache() from the loop{segments}."
    );
    let advice = format!(
        "Each {runtime} waits for the whole device before it returns, so the CPU cannot run ahead and the GPU drains its queue. PyTorch's caching allocator reuses freed blocks without calling {runtime}; it is off when {no_cache}=1 is set, and empty_cache() hands every cached block back to the driver."
    );
    let snippet = format!(
        "# remove {no_cache}=1 from the job's environment (its launch script, not the loop)
# and delete per-step calls like:
# torch.cuda.empty_cache()"
    );
    (fix, advice, snippet)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario};
    use super::*;

    #[test]
    fn item_every_step_is_found_at_its_call_site_and_a_read_every_n_steps_is_not() {
        let f = findings_of(&ImplicitSyncs, &scenario("item_every_step"));
        let item = f
            .iter()
            .find(|f| f.title.starts_with(".item()"))
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert_eq!(item.call_site.as_deref(), Some("train.py:52 log_loss"));
        assert_eq!(item.win_kind, WinKind::GpuIdle);

        let twin = findings_of(&ImplicitSyncs, &scenario("item_read_every_n_steps"));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    #[test]
    fn memory_freed_every_step_names_the_allocator_and_its_twin_is_clean() {
        let f = findings_of(&ImplicitSyncs, &scenario("allocator_free_every_step"));
        let free = f
            .iter()
            .find(|f| f.title.starts_with("GPU memory free"))
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert_eq!(free.call_site.as_deref(), Some("train.py:70 train_step"));
        assert_eq!(free.win_kind, WinKind::GpuIdle);
        // A ROCm call names the HIP variables; the trace's PyTorch (2.4+) has expandable
        // segments, so no version caveat.
        assert!(
            free.fix.contains("unset PYTORCH_NO_HIP_MEMORY_CACHING"),
            "{}",
            free.fix
        );
        assert!(free
            .fix
            .contains("PYTORCH_HIP_ALLOC_CONF=expandable_segments:True instead"));
        assert!(!free.fix.contains("torch.compile"), "{}", free.fix);

        let twin = findings_of(&ImplicitSyncs, &scenario("no_device_sync"));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    #[test]
    fn synchronize_every_step_is_found_and_its_twin_is_clean() {
        let f = findings_of(&ImplicitSyncs, &scenario("device_sync_every_step"));
        assert!(
            f.iter()
                .any(|f| f.title.starts_with("torch.cuda.synchronize()")
                    && f.call_site.as_deref() == Some("train.py:61 train_step")),
            "{f:#?}"
        );
        let twin = findings_of(&ImplicitSyncs, &scenario("no_device_sync"));
        assert!(twin.is_empty(), "{twin:#?}");
    }
}
