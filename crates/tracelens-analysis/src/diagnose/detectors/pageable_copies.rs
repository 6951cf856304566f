//! Copies between pageable host memory and the GPU that no sync finding already counts: their
//! GPU time cannot overlap compute.

use super::{plural, Context, Detector, Input};
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use tracelens_model::format_ms;

/// Pageable host memory in copies that no sync finding already counts.
pub struct PageableCopies;

impl Detector for PageableCopies {
    fn name(&self) -> &'static str {
        "pageable_copies"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::PageableCopies
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Copies, Input::Framework, Input::DataLoader]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let p = cx.copies().pageable_unclaimed;
        if p.count == 0 || p.exposed_ns == 0 {
            return Vec::new();
        }
        let win = cx.win(p.exposed_ns);
        let mut f = cx.finding(FindingKind::PageableCopies, WinKind::ExposedCopy, &win);
        f.what_if = Some(crate::predict::what_if::WhatIf::PinnedCopies {
            calls: cx.copies().pageable_unclaimed_calls.clone(),
            faster: cx.copies().pageable_unclaimed_speedups.clone(),
        });
        f.lever = Some(crate::diagnose::lever::Lever::PinnedAsyncCopies);
        f.title = format!(
            "{} {} pageable host memory ({:.1} MB, {} of GPU copy time not overlapped with compute, host blocked {})",
            plural(p.count, "copy").replace("copys", "copies"),
            if p.count == 1 { "uses" } else { "use" },
            p.bytes as f64 / 1e6,
            format_ms(p.exposed_ns),
            format_ms(p.host_blocked_ns)
        );
        f.win_basis = "GPU copy time not overlapped by any kernel, which pinned non-blocking copies can overlap with compute (busy time, not idle; upper bound)".into();
        f.cpu_cost_per_step_ns = Some(cx.window.per_step(p.host_blocked_ns));
        f.evidence.add_occurrences("copies", p.count);
        f.evidence.add("copied", EvidenceValue::Bytes(p.bytes));
        f.evidence
            .add("host blocked", EvidenceValue::DurationNs(p.host_blocked_ns));
        f.evidence.add(
            "host-to-device copies serialized with compute",
            EvidenceValue::Count(cx.copies().htod_serialized_with_compute),
        );
        f.evidence.add(
            "pinned copies then synced",
            EvidenceValue::Count(cx.copies().pinned_copies_then_synced),
        );
        let directive = matches!(
            cx.framework().dialect(),
            crate::measure::environment::Dialect::OpenAcc
                | crate::measure::environment::Dialect::OpenMp
        );
        if !cx.framework().pytorch() {
            (f.fix, f.advice, f.snippet) =
                crate::diagnose::advice::pageable_copies(cx.framework().dialect()).parts();
            // A directive program is told to map its data once, which removes copies rather
            // than speeding them up: the pinned-rate replay would predict another change.
            if directive {
                f.what_if = None;
            }
        } else if cx.framework().capture == tracelens_model::CaptureTool::TorchProfiler
            && cx.dataloader().iterator.is_none()
        {
            // A profiler capture that records no DataLoader: the tensors are the program's own.
            f.fix = "Pin the host tensors once (tensor.pin_memory(), or create them with pin_memory=True) and copy them with .to(device, non_blocking=True); better still, create data that starts on the host directly on the GPU (device=\"cuda\").".into();
            f.advice = "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels. Pinned memory and non_blocking=True only work as a pair.".into();
            f.snippet = "x = x.pin_memory()                   # once, outside the loop\nx_gpu = x.to(\"cuda\", non_blocking=True)".into();
        } else {
            f.fix = "Use pin_memory=True in the DataLoader (or tensor.pin_memory()) together with .to(device, non_blocking=True).".into();
            f.advice = "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels. Pinned memory and non_blocking=True only work as a pair.".into();
            f.snippet =
                "loader = DataLoader(ds, ..., pin_memory=True)\nx = x.to(device, non_blocking=True)"
                    .into();
        }
        // Copies that fill the window bound it: moving fewer bytes comes before moving them
        // faster (a directive program's fix already maps its data once).
        if win.percent >= crate::diagnose::verdict::COPY_BOUND_WINDOW_PERCENT && !directive {
            let less = if cx.framework().pytorch() {
                "keep tensors on the GPU between ops and move to the host only what it reads (a reduced value, not each full tensor)"
            } else {
                "keep the data on the GPU between kernels and copy back only what the host reads (a reduced result, not each full buffer)"
            };
            f.fix = format!(
                "These copies fill {:.0} % of the {}: copy less first — {less}; then, for what must still cross: {}",
                win.percent,
                cx.step_time(),
                crate::num::lower_first(&f.fix)
            );
        }
        f.confidence = Confidence::High;
        vec![f]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario, scenario_text};
    use super::*;

    /// The pinned non-blocking scenario with its copies from pageable memory instead: no sync
    /// finding claims them, and they cannot overlap compute.
    fn pageable_copies_without_syncs() -> tracelens_model::Trace {
        let text = scenario_text("pinned_non_blocking_copy")
            .replace("(Pinned -> Device)", "(Pageable -> Device)");
        tracelens_kineto::import_reader(
            text.as_bytes(),
            std::path::Path::new("pageable_without_syncs.json"),
            text.len() as u64,
            None,
        )
        .unwrap()
    }

    #[test]
    fn pageable_copies_are_found_and_pinned_non_blocking_ones_are_not() {
        let f = findings_of(&PageableCopies, &pageable_copies_without_syncs());
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].title.contains("pageable host memory"),
            "{}",
            f[0].title
        );
        assert_eq!(f[0].win_kind, WinKind::ExposedCopy);

        let twin = findings_of(&PageableCopies, &scenario("pinned_non_blocking_copy"));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    /// A blocking device-to-host copy into pageable memory whose call first waits 1 ms for
    /// the kernel queued ahead of it: only the copy's own 110 µs (staging from the kernel's
    /// end, then the 90 µs transfer) blocks the host on its account; the same copy issued
    /// onto an idle stream is charged its whole call.
    #[test]
    fn a_blocking_copys_wait_for_queued_work_is_not_host_time_it_blocks() {
        use super::super::testing::{launch_call, span_us, thread_and_stream};
        use tracelens_model::{
            CopyDirection, CopyInfo, MemoryKind, SourceInfo, SpanInput, SpanKind,
        };
        let blocked = |kernel_queued: bool| {
            let (mut b, cpu, gpu) = thread_and_stream();
            // An earlier kernel before a host pause: the window is not GPU-bound, where a
            // fix that saves nothing would be dropped.
            launch_call(&mut b, cpu, -9_010, Some(3));
            span_us(&mut b, SpanKind::Kernel, gpu, "k0", (-9_000, 100), Some(3));
            let kernel_us = if kernel_queued { 10 } else { -2_000 };
            launch_call(&mut b, cpu, kernel_us - 10, Some(1));
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                "k",
                (kernel_us, 1_000),
                Some(1),
            );
            span_us(
                &mut b,
                SpanKind::Runtime,
                cpu,
                "cudaMemcpy",
                (20, 1_100),
                Some(2),
            );
            let detail = b.add_copy(CopyInfo {
                direction: CopyDirection::DtoH,
                src: MemoryKind::Device,
                dst: MemoryKind::Pageable,
                bytes: Some(1 << 20),
                ..CopyInfo::default()
            });
            let name = b.intern("Memcpy DtoH (Device -> Pageable)");
            b.add_span(SpanInput {
                kind: SpanKind::Memcpy,
                lane: gpu,
                start_ns: 1_030_000,
                dur_ns: 90_000,
                name,
                correlation: Some(2),
                external_id: None,
                detail,
            });
            let trace = b.finish(SourceInfo::default());
            let f = findings_of(&PageableCopies, &trace);
            assert_eq!(f.len(), 1, "{f:#?}");
            f[0].cpu_cost_per_step_ns.unwrap()
        };
        assert_eq!(blocked(true), 110_000);
        assert_eq!(blocked(false), 1_100_000);
    }

    #[test]
    fn copies_a_sync_finding_counts_are_not_counted_again() {
        let f = findings_of(&PageableCopies, &scenario("pageable_sync_copy"));
        assert!(f.is_empty(), "{f:#?}");
    }
}
