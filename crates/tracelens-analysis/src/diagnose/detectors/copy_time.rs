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
        CopyDirection::PtoP => ("Peer-to-peer", "peer-to-peer"),
        _ => ("Device-to-device", "device-to-device"),
    };
    let rate = c
        .all
        .gb_per_s()
        .map(|r| format!(" at {}", tracelens_model::format_gb_per_s(r)))
        .unwrap_or_default();
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
        "{label} copies take {} of GPU time {} ({share:.1} % of the {}): {}, {}{rate}{split}; {} not overlapped with compute{}",
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
    if let Some(r) = c.all.gb_per_s() {
        f.evidence
            .add("achieved rate (GB/s)", EvidenceValue::Number(r));
    }
    if c.streams > 1 {
        f.evidence.add(
            "streams carrying them",
            EvidenceValue::Count(u64::from(c.streams)),
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
    let dialect = cx.framework().dialect();
    // Pinned copies already spread over streams: only what is not done yet.
    let already_pinned_streams = host
        && c.streams > 1
        && c.all.bytes > 0
        && c.pinned.bytes.saturating_mul(10) >= c.all.bytes.saturating_mul(9);
    if already_pinned_streams {
        let on_device = cx
            .copies()
            .by_device
            .iter()
            .find(|d| d.device == cx.idle().map_or(-1, |i| i.device));
        let order = on_device.and_then(|d| d.issue_order);
        let kernel_ns = on_device.map_or(0, |d| d.kernel_ns);
        if let Some(order) = order {
            f.evidence.add(
                format!("streams issued {}", issue_order_words(order)),
                EvidenceValue::Count(u64::from(c.streams)),
            );
        }
        (f.fix, f.advice, f.snippet) = crate::diagnose::advice::pinned_stream_copies(
            lower,
            c.streams,
            order,
            (c.all.gpu_ns, c.all.exposed_ns, kernel_ns),
        )
        .parts();
        return Some(f);
    }
    if dir == CopyDirection::PtoP {
        let slow = slow_link(&cx.copies().peer_links);
        (f.fix, f.advice, f.snippet) =
            crate::diagnose::advice::peer_copies(dialect, slow.as_deref()).parts();
        return Some(f);
    }
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
        (CopyDirection::DtoD | CopyDirection::PtoP, false) => {
            crate::diagnose::advice::device_copies(dialect).parts()
        }
        _ => crate::diagnose::advice::link_copies(lower, dialect).parts(),
    };
    Some(f)
}

/// A peer link slower than a quarter of the fastest one is a slow link.
const SLOW_LINK_RATIO: f64 = 4.0;

/// `GPU 0 → GPU 2 runs at 3.1 GB/s against 45.2 GB/s for GPU 0 → GPU 1`, where one device
/// pair's peer copies run [`SLOW_LINK_RATIO`] times slower than the fastest pair's.
fn slow_link(links: &[crate::attribute::copies::PeerLink]) -> Option<String> {
    let rated: Vec<(&crate::attribute::copies::PeerLink, f64)> = links
        .iter()
        .filter_map(|l| l.stats.gb_per_s().map(|r| (l, r)))
        .collect();
    let fast = rated.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let slow = rated.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    (slow.1 * SLOW_LINK_RATIO < fast.1).then(|| {
        format!(
            "GPU {} → GPU {} runs at {:.1} GB/s against {:.1} GB/s for GPU {} → GPU {}",
            slow.0.devices.src,
            slow.0.devices.dst,
            slow.1,
            fast.1,
            fast.0.devices.src,
            fast.0.devices.dst
        )
    })
}

/// An issue order in words, for the evidence.
fn issue_order_words(order: crate::attribute::copies::IssueOrder) -> &'static str {
    use crate::attribute::copies::IssueOrder;
    match order {
        IssueOrder::BreadthFirst => "breadth-first (all copies in, all kernels, all copies out)",
        IssueOrder::DepthFirst => "depth-first (each stream's copy in, kernels, copy out together)",
        IssueOrder::Mixed => "mixed",
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario, scenario_text};
    use super::*;
    use tracelens_model::{
        CopyInfo, Ident, LaneKey, MemoryKind, PeerDevices, SpanInput, SpanKind, Trace,
        TraceBuilder, NS_PER_US,
    };

    /// One GPU op of a synthetic trace: its stream, kind, copy (if any), GPU start and
    /// length (µs), and when the host launched it (µs).
    struct Op {
        stream: i64,
        copy: Option<CopyInfo>,
        gpu_us: (i64, i64),
        launch_us: i64,
    }

    /// A program launching `ops` from one thread onto device 0.
    fn program(ops: &[Op]) -> Trace {
        let mut b = TraceBuilder::new();
        let cpu = b.lane(LaneKey::Cpu {
            pid: Ident::Num(1),
            tid: Ident::Num(1),
        });
        for (i, op) in (1_u64..).zip(ops) {
            let lane = b.lane(LaneKey::Gpu {
                device: 0,
                stream: op.stream,
            });
            let (call, kind, name, detail) = match op.copy {
                Some(info) => (
                    "cudaMemcpyAsync",
                    SpanKind::Memcpy,
                    format!("Memcpy {:?}", info.direction),
                    b.add_copy(info),
                ),
                None => (
                    "cudaLaunchKernel",
                    SpanKind::Kernel,
                    "stencil".to_string(),
                    tracelens_model::NO_DETAIL,
                ),
            };
            let call = b.intern(call);
            b.add_span(SpanInput {
                kind: SpanKind::Runtime,
                lane: cpu,
                start_ns: op.launch_us * NS_PER_US,
                dur_ns: 5 * NS_PER_US,
                name: call,
                correlation: Some(i),
                external_id: None,
                detail: tracelens_model::NO_DETAIL,
            });
            let name = b.intern(&name);
            b.add_span(SpanInput {
                kind,
                lane,
                start_ns: op.gpu_us.0 * NS_PER_US,
                dur_ns: op.gpu_us.1 * NS_PER_US,
                name,
                correlation: Some(i),
                external_id: None,
                detail,
            });
        }
        b.finish(tracelens_model::SourceInfo::default())
    }

    fn host_copy(direction: CopyDirection, host: MemoryKind) -> CopyInfo {
        let (src, dst) = match direction {
            CopyDirection::HtoD => (host, MemoryKind::Device),
            _ => (MemoryKind::Device, host),
        };
        CopyInfo {
            direction,
            src,
            dst,
            bytes: Some(4_000_000),
            ..CopyInfo::default()
        }
    }

    /// Two chunks, each copied in, computed and copied out on its own stream, the copies
    /// overlapping no kernel; issued breadth-first or depth-first, from pinned or pageable
    /// memory.
    fn two_chunks(breadth_first: bool, host: MemoryKind) -> Trace {
        chunks_on(breadth_first, host, 2)
    }

    /// [`two_chunks`] with the chunks on `streams` streams (1 or 2).
    fn chunks_on(breadth_first: bool, host: MemoryKind, streams: i64) -> Trace {
        let gpu = |stage: i64, chunk: i64| (100 + stage * 400 + chunk * 200, 200);
        let mut ops = Vec::new();
        for stage in 0..3 {
            for chunk in 0..2 {
                let copy = match stage {
                    0 => Some(host_copy(CopyDirection::HtoD, host)),
                    2 => Some(host_copy(CopyDirection::DtoH, host)),
                    _ => None,
                };
                let launch_us = if breadth_first {
                    stage * 20 + chunk * 10
                } else {
                    chunk * 30 + stage * 10
                };
                ops.push(Op {
                    stream: 1 + chunk % streams,
                    copy,
                    gpu_us: gpu(stage, chunk),
                    launch_us,
                });
            }
        }
        program(&ops)
    }

    #[test]
    fn pinned_copies_on_streams_are_told_what_is_left_not_to_pin() {
        let f = findings_of(&CopyTime, &two_chunks(true, MemoryKind::Pinned));
        let htod = f
            .iter()
            .find(|f| f.title.starts_with("Host-to-device"))
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert!(htod.title.contains("GB/s"), "{}", htod.title);
        assert!(
            htod.fix
                .contains("already come from pinned memory on 2 streams")
                && htod.fix.contains("breadth-first"),
            "{}",
            htod.fix
        );
        let depth = findings_of(&CopyTime, &two_chunks(false, MemoryKind::Pinned));
        assert!(
            depth.iter().all(|f| !f.fix.contains("breadth-first")
                && f.fix.contains("already come from pinned memory")),
            "{depth:#?}"
        );
        // The pageable twin is told to pin (by the pageable-copy finding, or here), never
        // that it already does.
        let pageable = findings_of(&CopyTime, &two_chunks(true, MemoryKind::Pageable));
        assert!(
            pageable.iter().all(|f| !f.fix.contains("already")),
            "{pageable:#?}"
        );
    }

    /// Peer copies from device 0: 4 MB to GPU 1 in `fast_us` each and 4 MB to GPU 2 in
    /// `slow_us` each.
    fn peer_copies(fast_us: i64, slow_us: i64) -> Trace {
        let peer = |dst| CopyInfo {
            direction: CopyDirection::PtoP,
            src: MemoryKind::Device,
            dst: MemoryKind::Device,
            bytes: Some(4_000_000),
            peer: PeerDevices::new(0, dst),
            ..CopyInfo::default()
        };
        let mut ops = Vec::new();
        let mut t = 100;
        for i in 0..4 {
            let (dst, dur) = if i % 2 == 0 {
                (1, fast_us)
            } else {
                (2, slow_us)
            };
            ops.push(Op {
                stream: 1,
                copy: Some(peer(dst)),
                gpu_us: (t, dur),
                launch_us: t - 50,
            });
            t += dur + 20;
            ops.push(Op {
                stream: 1,
                copy: None,
                gpu_us: (t, 50),
                launch_us: t - 50,
            });
            t += 70;
        }
        program(&ops)
    }

    #[test]
    fn peer_copies_are_their_own_kind_and_a_slow_pair_is_named() {
        let f = findings_of(&CopyTime, &peer_copies(80, 1_000));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].title.starts_with("Peer-to-peer copies"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].fix
                .contains("GPU 0 → GPU 2 runs at 4.0 GB/s against 50.0 GB/s for GPU 0 → GPU 1")
                && f[0].fix.contains("nvidia-smi topo -m"),
            "{}",
            f[0].fix
        );
        assert!(!f[0].fix.contains(".contiguous()"), "{}", f[0].fix);
        // Both links at one rate: no slow link.
        let even = findings_of(&CopyTime, &peer_copies(400, 400));
        assert_eq!(even.len(), 1, "{even:#?}");
        assert!(!even[0].fix.contains("runs at"), "{}", even[0].fix);
    }

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
