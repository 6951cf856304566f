//! The GPU waits while the launching thread runs CPU work before its next launch (optimizer,
//! framework dispatch, Python), outside launch-bound stretches.

use super::launch_bound::launch_overhead_fix;
use super::{Context, Detector};
use crate::environment::{Framework, FUSED_SGD, OPTIMIZER_FOREACH, TORCH_COMPILE};
use crate::finding::{EvidenceValue, Finding, FindingKind, WinKind};
use crate::idle::DeviceIdle;
use tracelens_model::{format_ms, TimeNs};

/// Host compute is always some of the idle; below this share of step time it is a detail.
pub const HOST_COMPUTE_FINDING_PERCENT: f64 = 2.0;

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

    fn kind(&self) -> FindingKind {
        FindingKind::HostCompute
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
        if !cx.framework.cpu_ops_recorded {
            (f.fix, f.snippet) = if cx.framework.pytorch() {
                (
                    "The trace records no CPU ops, so what the launching thread did is not in it: profile again with CPU activity (torch.profiler's ProfilerActivity.CPU, with_stack=True for Python lines) to see the cause.".into(),
                    "with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],\n                            with_stack=True) as prof:\n    train_step()".into(),
                )
            } else {
                (
                    "The trace records only API calls, not what the CPU did around them, so the cause is not in it: add NVTX ranges around the host phases and profile with nsys -t cuda,nvtx,osrt.".into(),
                    "nvtxRangePushA(\"prepare batch\");\nprepare_batch();\nnvtxRangePop();\n// nsys profile -t cuda,nvtx,osrt ./program".into(),
                )
            };
        } else if !cx.framework.pytorch() {
            (f.fix, f.snippet) = (
                "Launch the next GPU work before the CPU work that follows it, or move that CPU work to another thread, so the queue never drains.".into(),
                "// enqueue the next kernels first, then do the host work\nkernel<<<grid, block, 0, stream>>>(...);\nhost_work();   // overlaps the queued kernels".into(),
            );
        }
        f.advice = if cx.framework.cpu_ops_recorded {
            "The GPU runs out of queued work while the launching thread does CPU work before its next launch. The ops listed are where that time goes; shorten them or overlap them with GPU work."
        } else {
            "The GPU runs out of queued work while the launching thread is between API calls, but the trace holds no record of what that thread did: record its CPU work to find the cause."
        }
        .into();
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

#[cfg(test)]
mod tests {
    use super::super::testing::{findings_of, scenario};
    use super::*;

    #[test]
    fn a_cpu_slower_than_the_gpu_is_host_compute_and_the_default_loop_is_not() {
        let f = findings_of(&HostCompute, &scenario("slow_python_between_kernels"));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].title.contains("aten::linear"), "{}", f[0].title);
        assert!(f[0].estimated_win_percent >= HOST_COMPUTE_FINDING_PERCENT);

        let twin = findings_of(&HostCompute, &scenario("no_device_sync"));
        assert!(twin.is_empty(), "{twin:#?}");
    }

    #[test]
    fn host_work_is_told_apart_by_name() {
        assert!(host_work("Optimizer.step#AdamW.step") == HostWork::Optimizer);
        assert!(host_work("aten::linear") == HostWork::Dispatch);
        assert!(host_work("Torch-Compiled Region: 0/0") == HostWork::Compiled);
        assert!(host_work("train.py(12): step") == HostWork::Python);
    }
}
