//! Collective kernels that run with no compute beside them on the focus device: communication
//! the step waits for instead of hiding under compute.

use super::gpu_waits::{short, BIG_SHARE_PERCENT};
use super::{Context, Detector, Input};
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::FindingKind;
use crate::measure::environment::Dialect;
use crate::measure::intervals::{intersect, total_ns};
use crate::vocabulary::kernels::{collective_op, CollectiveOp};
use rustc_hash::FxHashMap;
use tracelens_model::{format_ms, TimeNs};

/// Communication not overlapped with compute.
pub struct ExposedCommunication;

impl Detector for ExposedCommunication {
    fn name(&self) -> &'static str {
        "exposed_communication"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::ExposedCommunication
    }
    fn reads(&self) -> &'static [Input] {
        &[Input::Communication, Input::Framework, Input::Idle]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let Some(comm) = cx.communication() else {
            return Vec::new();
        };
        let exposed = &comm.exposed;
        let exposed_ns = comm.exposed_ns;
        let win = cx.win(exposed_ns);
        if win.percent < BIG_SHARE_PERCENT {
            return Vec::new();
        }
        // Which collectives the exposed time belongs to.
        let mut by_name: FxHashMap<tracelens_model::NameId, TimeNs> = FxHashMap::default();
        for (iv, name) in &comm.kernels {
            let mine = total_ns(&intersect(&[*iv], exposed));
            if mine > 0 {
                *by_name.entry(*name).or_default() += mine;
            }
        }
        let mut named: Vec<(String, TimeNs)> = by_name
            .into_iter()
            .map(|(n, t)| (cx.trace.names.get(n).to_string(), t))
            .collect();
        named.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        named.truncate(3);
        let mut f = cx.finding(
            FindingKind::ExposedCommunication,
            WinKind::ExposedCommunication,
            &win,
        );
        f.title = format!(
            "Collectives run {} {} ({:.1} %) with no compute beside them: {}",
            format_ms(win.per_step_ns),
            cx.per(),
            win.percent,
            named
                .iter()
                .map(|(n, t)| format!("{} ({})", short(n), format_ms(cx.window.per_step(*t))))
                .collect::<Vec<_>>()
                .join(", ")
        );
        f.evidence.add(
            "communication kernel time",
            EvidenceValue::DurationNs(comm.communication_ns),
        );
        f.evidence.add(
            "not overlapped with compute",
            EvidenceValue::DurationNs(exposed_ns),
        );
        for (n, t) in &named {
            f.evidence.add(short(n), EvidenceValue::DurationNs(*t));
        }
        f.win_basis = "GPU time in which only communication kernels ran (busy time, not idle; upper bound of what overlap can hide)".into();
        f.confidence = Confidence::Medium;
        f.advice = "While a collective runs alone the device computes nothing; the step is as long as compute plus this exposed communication.".into();
        let top = named.first().map_or("", |(n, _)| n.as_str());
        (f.fix, f.snippet) = communication_fix(collective_op(top), cx.framework().dialect());
        // Gathers and scatters with no FSDP in the trace are tensor or sequence parallelism's.
        let fsdp = (0..cx.trace.names.len()).any(|i| {
            crate::vocabulary::ops::is_fsdp(cx.trace.names.get(tracelens_model::NameId::at(i)))
        });
        if collective_op(top) == CollectiveOp::Sharded && cx.framework().pytorch() && !fsdp {
            let last = last_alone(cx, comm);
            f.fix = format!(
                "No FSDP in the trace: these all-gathers and reduce-scatters come from tensor or sequence parallelism (DTensor's parallelize_module, Megatron-LM). Gather less first: keep layer outputs sharded where the next layer takes them so (use_local_output, loss_parallel for a sharded output head) and gather 16-bit rather than 32-bit tensors; then overlap the rest with the neighbouring layers' compute ({}).{}",
                match cx.framework().at_least(ASYNC_TP) {
                    Some(false) => "Megatron-LM --tp-comm-overlap; PyTorch's async tensor parallelism needs 2.5 or later",
                    _ => "async tensor parallelism: torch._inductor.config._micro_pipeline_tp = True under torch.compile; Megatron-LM --tp-comm-overlap",
                },
                last.map_or(String::new(), |ns| format!(
                    " The last collective ({}) runs after every compute kernel of the window: nothing is left to hide it under, so only gathering less shortens it.",
                    format_ms(ns)
                ))
            );
            f.snippet = "from torch.distributed.tensor.parallel import ColwiseParallel, loss_parallel\nplan = {\"output\": ColwiseParallel(use_local_output=True)}   # keep the logits sharded\nwith loss_parallel():\n    loss = F.cross_entropy(logits, labels)".into();
        }
        // All-reduces issued, most of them, in the forward pass reduce activations, not
        // gradients (DDP's last bucket may be launched after backward's own ops).
        let (forward, all) = all_reduces_in_forward(cx);
        if collective_op(top) == CollectiveOp::AllReduce
            && cx.framework().pytorch()
            && forward * 4 >= all * 3
            && forward > 0
        {
            f.fix = format!(
                "{forward} of the {all} all-reduces run in the forward pass, so they reduce activations (tensor or model parallelism), not DDP's gradient buckets: overlap them with the neighbouring layers' compute (Megatron-LM: sequence parallelism with --tp-comm-overlap), keep each tensor-parallel group on GPUs joined by NVLink, and compare the ranks' collective times: where one rank's all-reduces take much longer for the same bytes, they wait for a slower rank, which overlap does not fix."
            );
            f.snippet.clear();
            f.evidence.add(
                "all-reduces launched in the forward pass",
                EvidenceValue::Count(forward),
            );
        }
        f.what_if = Some(crate::predict::what_if::WhatIf::OverlapCommunication);
        vec![f]
    }
}

/// The PyTorch that overlaps tensor-parallel collectives with matrix multiplies under
/// torch.compile (async TP, `_micro_pipeline_tp`).
const ASYNC_TP: crate::measure::environment::TorchVersion =
    crate::measure::environment::TorchVersion::new(2, 5);

/// The duration of the window's last collective kernel when no compute kernel of the focus
/// device starts after it ends, and it is a tenth of the exposed time or more.
fn last_alone(
    cx: &Context,
    comm: &crate::attribute::communication::Communication,
) -> Option<TimeNs> {
    let (last, _) = comm.kernels.iter().max_by_key(|(iv, _)| iv.end_ns)?;
    let trace = cx.trace;
    let compute_after = trace.gpu_lanes().any(|lane| {
        matches!(trace.lane(lane).key, tracelens_model::LaneKey::Gpu { device: d, .. } if d == comm.device)
            && trace.lane_span_ids(lane).any(|id| {
                let s = trace.span(id);
                s.kind == tracelens_model::SpanKind::Kernel
                    && s.start_ns >= last.end_ns
                    && s.start_ns < cx.window.interval.end_ns
                    && !crate::vocabulary::kernels::is_communication_kernel(trace.names.get(s.name))
            })
    });
    (!compute_after && last.dur_ns() * 10 >= comm.exposed_ns).then_some(last.dur_ns())
}

/// (all-reduce kernels on the focus device inside the window launched outside autograd's
/// backward and the optimizer, all of them).
fn all_reduces_in_forward(cx: &Context) -> (u64, u64) {
    let trace = cx.trace;
    let Some(device) = cx.idle().map(|d| d.device) else {
        return (0, 0);
    };
    let (mut forward, mut all) = (0, 0);
    for lane in trace.gpu_lanes() {
        if !matches!(trace.lane(lane).key, tracelens_model::LaneKey::Gpu { device: d, .. } if d == device)
        {
            continue;
        }
        for id in trace.lane_span_ids(lane) {
            let s = trace.span(id);
            if s.kind != tracelens_model::SpanKind::Kernel
                || s.interval().clip(cx.window.interval).is_none()
                || collective_op(trace.names.get(s.name)) != CollectiveOp::AllReduce
                || !crate::vocabulary::kernels::is_communication_kernel(trace.names.get(s.name))
            {
                continue;
            }
            let Some(launch) = trace.launch_of(id) else {
                continue;
            };
            all += 1;
            let in_step_phase = trace
                .ancestors(launch)
                .any(|a| crate::vocabulary::phases::of(trace.name(a)).is_some());
            if !in_step_phase {
                forward += 1;
            }
        }
    }
    (forward, all)
}

/// (fix, snippet) for the collective that is most exposed.
fn communication_fix(c: CollectiveOp, dialect: Dialect) -> (String, String) {
    let pytorch = dialect == Dialect::PyTorch;
    match (c, pytorch) {
        (CollectiveOp::AllReduce, true) => (
            "Overlap the all-reduce with backward: DDP all-reduces gradient buckets as they fill, so a smaller bucket_cap_mb starts earlier; skip it on accumulation steps with no_sync().".into(),
            "model = DDP(model, bucket_cap_mb=25, gradient_as_bucket_view=True)\nwith model.no_sync():        # accumulation steps\n    loss.backward()".into(),
        ),
        (CollectiveOp::Sharded, true) => (
            "Prefetch the all-gathers and reduce-scatters so they overlap compute: FSDP(forward_prefetch=True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE), or shard less (SHARD_GRAD_OP) when memory allows.".into(),
            "model = FSDP(model, forward_prefetch=True,\n             backward_prefetch=BackwardPrefetch.BACKWARD_PRE)".into(),
        ),
        (CollectiveOp::Exchange, true) => (
            "The all-to-all exchange (embedding or expert routing) runs alone: pipeline it with the previous batch's compute (for sharded embeddings, a pipelined train loop such as torchrec's TrainPipelineSparseDist) and cut the bytes exchanged (lower-precision payloads).".into(),
            "# start the next batch's input exchange while this batch computes\npipeline = TrainPipelineSparseDist(model, optimizer, device)\nfor _ in range(steps):\n    pipeline.progress(data_iter)".into(),
        ),
        (CollectiveOp::Other, true) => (
            "Overlap communication with compute: issue the collective asynchronously (async_op=True) as soon as its input is ready and wait on the handle only where the result is needed.".into(),
            "work = dist.broadcast(t, src=0, async_op=True)\nindependent_compute()\nwork.wait()".into(),
        ),
        (_, false) => (
            "Overlap communication with compute: issue collectives on their own stream as soon as their inputs are ready, and run independent kernels meanwhile; fewer, larger messages cut per-call latency.".into(),
            if dialect == Dialect::CudaRuntime {
                "ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, comm_stream);\nindependent_kernel<<<g, b, 0, compute_stream>>>(...);".into()
            } else {
                String::new()
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario, scenario_text};
    use super::*;

    /// The no-device-sync loop with its GEMMs turned into all-reduces, launched by the ops
    /// named `launcher` instead of `aten::linear`.
    fn all_reduces_from(launcher: &str) -> tracelens_model::Trace {
        collectives_from(
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
            launcher,
        )
    }

    /// The no-device-sync loop with its GEMMs turned into `kernel`, launched by `launcher`.
    fn collectives_from(kernel: &str, launcher: &str) -> tracelens_model::Trace {
        let text = scenario_text("no_device_sync")
            .replace("sm90_xmma_gemm_bf16_kernel", kernel)
            .replace("aten::linear", launcher);
        tracelens_kineto::import_reader(
            text.as_bytes(),
            std::path::Path::new("collectives.json"),
            text.len() as u64,
            None,
        )
        .unwrap()
    }

    #[test]
    fn all_reduces_in_backward_get_ddp_advice_and_forward_ones_tensor_parallel_advice() {
        let backward = all_reduces_from("autograd::engine::evaluate_function: AddmmBackward0");
        let f = findings_of(&ExposedCommunication, &backward);
        assert!(f[0].fix.contains("bucket_cap_mb"), "{}", f[0].fix);
        let forward = findings_of(&ExposedCommunication, &all_reduces_from("aten::linear"));
        assert!(
            forward[0]
                .fix
                .starts_with("240 of the 240 all-reduces run in the forward pass"),
            "{}",
            forward[0].fix
        );
        assert!(!forward[0].fix.contains("bucket_cap_mb"));
    }

    #[test]
    fn all_gathers_get_fsdp_advice_only_where_fsdp_is_in_the_trace() {
        let gathers_from = |launcher: &str| {
            collectives_from(
                "ncclDevKernel_AllGather_RING_LL(ncclDevComm *, unsigned long, ncclWork *)",
                launcher,
            )
        };
        let fsdp = findings_of(&ExposedCommunication, &gathers_from("FSDP::all_gather"));
        assert!(fsdp[0].fix.contains("forward_prefetch"), "{}", fsdp[0].fix);
        // The twin: the same gathers from a DTensor redistribute, with no FSDP anywhere.
        let tp = findings_of(&ExposedCommunication, &gathers_from("aten::linear"));
        assert!(
            tp[0].fix.starts_with("No FSDP in the trace"),
            "{}",
            tp[0].fix
        );
        assert!(!tp[0].fix.contains("forward_prefetch"), "{}", tp[0].fix);
    }

    #[test]
    fn collectives_alone_on_the_device_are_exposed_and_compute_is_not() {
        // The same loop with its GEMMs turned into all-reduces: communication with nothing
        // beside it.
        let text = scenario_text("no_device_sync").replace(
            "sm90_xmma_gemm_bf16_kernel",
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
        );
        let trace = tracelens_kineto::import_reader(
            text.as_bytes(),
            std::path::Path::new("allreduce.json"),
            text.len() as u64,
            None,
        )
        .unwrap();
        let f = findings_of(&ExposedCommunication, &trace);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].title.contains("ncclKernel_AllReduce"),
            "{}",
            f[0].title
        );
        assert!(f[0].estimated_win_percent >= BIG_SHARE_PERCENT);

        let twin = findings_of(&ExposedCommunication, &scenario("no_device_sync"));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    #[test]
    fn the_fix_follows_the_collective() {
        assert_eq!(
            collective_op("ncclKernel_AllReduce_RING_LL_Sum_float"),
            CollectiveOp::AllReduce
        );
        assert_eq!(
            collective_op("ncclDevKernel_AllGather_RING_LL"),
            CollectiveOp::Sharded
        );
        assert_eq!(
            collective_op("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"),
            CollectiveOp::Exchange
        );
        assert!(communication_fix(CollectiveOp::Sharded, Dialect::PyTorch)
            .0
            .contains("FSDP"));
        assert!(
            !communication_fix(CollectiveOp::AllReduce, Dialect::CudaRuntime)
                .0
                .contains("DDP")
        );
    }
}
