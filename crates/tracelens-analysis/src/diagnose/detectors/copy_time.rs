//! Copies that take a big share of the step on the focus device (beyond those a pageable-copy
//! or sync finding explains), by direction: bytes, the
//! pinned/pageable split, what is not overlapped with compute, and the ops that issue them.

use super::gpu_waits::BIG_SHARE_PERCENT;
use super::{plural, Context, Detector, Input};
use crate::attribute::copies::DirectionCopies;
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use crate::num::percent;
use tracelens_model::{format_ms, CopyDirection};

/// Copies of one direction take a big share of the step.
pub struct CopyTime;

impl Detector for CopyTime {
    fn name(&self) -> &'static str {
        "copy_time"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::CopyTime
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Copies, Input::Framework, Input::Idle]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let Some(device) = cx.idle().map(|d| d.device) else {
            return Vec::new();
        };
        let Some(copies) = cx.copies().by_device.iter().find(|c| c.device == device) else {
            return Vec::new();
        };
        copies
            .directions()
            .into_iter()
            .filter_map(|(dir, c)| direction_finding(cx, dir, c))
            .collect()
    }
}

/// Bytes for a title: GB, MB or KB.
fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.1} KB", b / 1e3)
    }
}

fn direction_finding(cx: &Context, dir: CopyDirection, c: &DirectionCopies) -> Option<Finding> {
    let share = percent(cx.window.per_step(c.all.gpu_ns), cx.window.step_ns());
    // Copies a pageable-copy or sync finding already explains do not make this one.
    let unexplained = percent(cx.window.per_step(c.unclaimed.gpu_ns), cx.window.step_ns());
    if c.all.count == 0 || unexplained < BIG_SHARE_PERCENT {
        return None;
    }
    let win = cx.win(c.unclaimed.exposed_ns);
    let mut f = cx.finding(FindingKind::CopyTime, WinKind::ExposedCopy, &win);
    let (label, lower) = match dir {
        CopyDirection::HtoD => ("Host-to-device", "host-to-device"),
        CopyDirection::DtoH => ("Device-to-host", "device-to-host"),
        _ => ("Device-to-device", "device-to-device"),
    };
    let host = matches!(dir, CopyDirection::HtoD | CopyDirection::DtoH);
    let split = if host && c.all.bytes > 0 {
        format!(
            ", {:.0} % of the bytes pinned",
            percent(
                i64::try_from(c.pinned.bytes).unwrap_or(i64::MAX),
                i64::try_from(c.all.bytes).unwrap_or(i64::MAX)
            )
        )
    } else {
        String::new()
    };
    let sources: Vec<String> = c
        .sources
        .iter()
        .map(|(n, k, t)| {
            format!(
                "{n} ({}, {})",
                plural(*k, "copy").replace("copys", "copies"),
                format_ms(cx.window.per_step(*t))
            )
        })
        .collect();
    f.title = format!(
        "{label} copies take {} of GPU time {} ({share:.1} % of the {}): {}, {}{split}; {} not overlapped with compute{}",
        format_ms(cx.window.per_step(c.all.gpu_ns)),
        cx.per(),
        cx.step_time(),
        plural(c.all.count, "copy").replace("copys", "copies"),
        format_bytes(c.all.bytes),
        format_ms(cx.window.per_step(c.all.exposed_ns)),
        if sources.is_empty() {
            String::new()
        } else {
            format!("; issued by {}", sources.join(", "))
        }
    );
    f.evidence.add_occurrences("copies", c.all.count);
    f.evidence.add("copied", EvidenceValue::Bytes(c.all.bytes));
    f.evidence
        .add("GPU copy time", EvidenceValue::DurationNs(c.all.gpu_ns));
    f.evidence.add(
        "not overlapped with compute",
        EvidenceValue::DurationNs(c.all.exposed_ns),
    );
    if host {
        f.evidence
            .add("pinned copies", EvidenceValue::Count(c.pinned.count));
        f.evidence
            .add("pageable copies", EvidenceValue::Count(c.pageable.count));
    }
    for (n, k, t) in &c.sources {
        f.evidence.add(
            format!("issued by {n} ({k} copies)"),
            EvidenceValue::DurationNs(*t),
        );
    }
    f.win_basis = format!("GPU time of {lower} copies not overlapped by any kernel, outside the copies a pageable-copy or sync finding counts (busy time, not idle; upper bound)");
    f.confidence = Confidence::Medium;
    let pytorch = cx.framework().pytorch();
    let offload = c
        .sources
        .iter()
        .any(|(n, _, _)| crate::vocabulary::ops::is_fsdp(n));
    // DistributedDataParallel is in the trace (its forward region or its reducer).
    let ddp = (0..cx.trace.names.len()).any(|i| {
        let name = cx.trace.names.get(tracelens_model::NameId::at(i));
        crate::vocabulary::ops::is_ddp(name)
    });
    (f.fix, f.advice, f.snippet) = match (dir, pytorch) {
        (CopyDirection::HtoD, true) if offload => (
            "The copies come from FSDP: with CPU offload it moves every parameter to the GPU each step. If the model fits, drop offload_params (CPUOffload(offload_params=False)); otherwise prefetch (forward_prefetch=True, backward_prefetch=BACKWARD_PRE) so the copies overlap compute.".into(),
            "Parameters offloaded to host memory cross PCIe every forward and backward; the GPU computes little while they stream in.".into(),
            "model = FSDP(model, cpu_offload=CPUOffload(offload_params=False),\n             forward_prefetch=True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE)".into(),
        ),
        (CopyDirection::HtoD, true) => (
            "Copy less and overlap the rest: keep tensors that do not change on the GPU, send compact dtypes (uint8 images, convert on the GPU), and copy the next batch from pinned memory with non_blocking=True ahead of use.".into(),
            "Host-to-device copies are bounded by the PCIe or NVLink-C2C link; on the compute stream they serialize with kernels.".into(),
            "x = batch.pin_memory().to(device, non_blocking=True)   # next batch, ahead of use\nx = x.float().div_(255)                                # convert on the GPU".into(),
        ),
        (CopyDirection::DtoH, true) => (
            "Read results back less often and asynchronously: keep metrics on the GPU, copy into a pinned buffer with non_blocking=True and read it a step later.".into(),
            "Device-to-host copies are bounded by the host link; read synchronously they also stall the host.".into(),
            "host_buf = torch.empty(shape, pin_memory=True)\nhost_buf.copy_(result, non_blocking=True)   # read after the next step's launches".into(),
        ),
        (_, true) => (
            format!(
                "Avoid the device-to-device copies at their source{}: use views and in-place ops instead of .contiguous()/.clone()/torch.cat of large tensors and convert memory format once{}.",
                c.sources.first().map(|(n, _, _)| format!(" ({n})")).unwrap_or_default(),
                if ddp { "; DDP copies gradients into its buckets unless gradient_as_bucket_view=True" } else { "" }
            ),
            "Device-to-device copies use memory bandwidth the kernels need and often come from layout changes that a view would avoid.".into(),
            if ddp {
                "model = DDP(model, gradient_as_bucket_view=True)   # no bucket copies of gradients\ny = x.view(n, -1)                                   # not x.contiguous() when already contiguous".into()
            } else {
                "y = x.view(n, -1)                 # not x.contiguous() when already contiguous\nout = torch.cat(parts, out=buf)    # write into a preallocated buffer".into()
            },
        ),
        (CopyDirection::DtoD, false) | (CopyDirection::PtoP, false) => {
            crate::diagnose::advice::device_copies(cx.framework().dialect()).parts()
        }
        _ => crate::diagnose::advice::link_copies(lower, cx.framework().dialect()).parts(),
    };
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario, scenario_text};
    use super::*;

    #[test]
    fn device_to_device_copies_taking_the_step_get_a_finding_and_kernels_do_not() {
        // The same loop with its GEMMs turned into device-to-device copies.
        let text = scenario_text("no_device_sync").replace(
            "\"cat\": \"kernel\", \"name\": \"sm90_xmma_gemm_bf16_kernel\"",
            "\"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoD (Device -> Device)\"",
        );
        let trace = tracelens_kineto::import_reader(
            text.as_bytes(),
            std::path::Path::new("dtod.json"),
            text.len() as u64,
            None,
        )
        .unwrap();
        let f = findings_of(&CopyTime, &trace);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].title.starts_with("Device-to-device copies"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].title.contains("aten::linear"),
            "issued by: {}",
            f[0].title
        );
        assert!(f[0].fix.contains("views"), "{}", f[0].fix);

        let twin = findings_of(&CopyTime, &scenario("no_device_sync"));
        assert!(twin.is_empty(), "{twin:#?}");
    }
}
