//! What the launching thread's CPU work is while the GPU waits: the sub-causes of host-compute
//! idle, told apart by the op, the user region and the Python frames the trace records.

use crate::measure::environment::{Framework, Program};
use serde::Serialize;
use tracelens_model::PyFrame;

/// One sub-cause of host-compute idle. Each has its own fix (`docs/findings.md`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum HostWork {
    /// One-time work: a kernel's slow first launch (module load, lazy init), compilation
    /// (torch.compile, nvFuser), autotuning, CUDA graph capture.
    WarmUp,
    /// The optimizer step or `zero_grad` (`Optimizer.step#…`, `## optimizer ##`, torch/optim
    /// frames).
    Optimizer,
    /// Logging and metrics: print, logging, tqdm, wandb, TensorBoard writers.
    Logging,
    /// Data work in the training process: numpy, PIL, transforms, collate, pinning.
    HostDataWork,
    /// Python's garbage collector.
    GarbageCollection,
    /// The per-call overhead of compiled regions (guards, graph dispatch).
    CompiledRegion,
    /// Framework ops computing on CPU tensors: an op of a millisecond or more that launches no
    /// GPU work (`aten::randn` on the CPU, a CPU matmul) — the work itself, not its dispatch.
    CpuTensorOps,
    /// Framework dispatch of the model's own ops (`aten::`, autograd).
    FrameworkDispatch,
    /// Python code between ops (a Python program).
    Python,
    /// A user-annotated region (`record_function`, NVTX) with no finer record inside.
    UserRegion,
    /// Allocating, freeing or pinning memory through the runtime outside any framework op
    /// or Python frame (`cudaMalloc`, `cudaFree`, `cudaHostAlloc`): buffers made per
    /// iteration pay the driver every time, and a free waits for the device.
    Allocation,
    /// Other recorded runtime or driver calls outside any framework op or Python frame:
    /// queries, stream and event creation, the host side of copies and launches.
    ApiCalls,
    /// Blocked in a recorded OS wait outside any op, frame or API call (`poll`, `read`,
    /// `wait4`, `pthread_cond_wait`): the thread waits for I/O, another process or a lock.
    OsWait,
    /// CPU work between API calls in a program without Python.
    BetweenApiCalls,
    /// The trace records no CPU work around the launches.
    NotRecorded,
}

impl HostWork {
    /// Snake-case label (the JSON value).
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            HostWork::WarmUp => "warm_up",
            HostWork::Optimizer => "optimizer",
            HostWork::Logging => "logging",
            HostWork::HostDataWork => "host_data_work",
            HostWork::GarbageCollection => "garbage_collection",
            HostWork::CompiledRegion => "compiled_region",
            HostWork::CpuTensorOps => "cpu_tensor_ops",
            HostWork::FrameworkDispatch => "framework_dispatch",
            HostWork::Python => "python",
            HostWork::UserRegion => "user_region",
            HostWork::Allocation => "allocation",
            HostWork::ApiCalls => "api_calls",
            HostWork::OsWait => "os_wait",
            HostWork::BetweenApiCalls => "between_api_calls",
            HostWork::NotRecorded => "not_recorded",
        }
    }

    /// What the launching thread was doing, for a title ("runs the optimizer step").
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            HostWork::WarmUp => {
                "runs one-time warm-up (first kernel launches, compilation, graph capture, autotuning)"
            }
            HostWork::Optimizer => "runs the optimizer step",
            HostWork::Logging => "logs metrics",
            HostWork::HostDataWork => "prepares input data itself (decoding, transforms, collation)",
            HostWork::GarbageCollection => "runs Python's garbage collector",
            HostWork::CompiledRegion => "enters compiled regions",
            HostWork::CpuTensorOps => "computes framework ops on CPU tensors",
            HostWork::FrameworkDispatch => "dispatches framework ops",
            HostWork::Python => "runs Python between ops",
            HostWork::UserRegion => "runs annotated regions",
            HostWork::Allocation => "allocates and frees memory through the runtime",
            HostWork::ApiCalls => "runs runtime API calls",
            HostWork::OsWait => {
                "is blocked in OS waits (I/O, another process or a lock)"
            }
            HostWork::BetweenApiCalls => "runs CPU work between API calls",
            HostWork::NotRecorded => "runs CPU work the trace does not record",
        }
    }

    /// Whether the name of an enclosing region or frame decides the sub-cause over the op
    /// inside it (an `aten::add_` under `## optimizer ##` is optimizer work).
    fn overrides_op(self) -> bool {
        matches!(
            self,
            HostWork::WarmUp
                | HostWork::Optimizer
                | HostWork::Logging
                | HostWork::HostDataWork
                | HostWork::GarbageCollection
        )
    }
}

/// The sub-cause a name shows by itself (a region, a frame or an op), when it shows one.
fn by_name(name: &str) -> Option<HostWork> {
    use crate::vocabulary::{activity, ops};
    match activity::of(name) {
        Some(activity::Activity::OneTime) => Some(HostWork::WarmUp),
        Some(activity::Activity::Optimizer) => Some(HostWork::Optimizer),
        Some(activity::Activity::GarbageCollection) => Some(HostWork::GarbageCollection),
        Some(activity::Activity::Logging) => Some(HostWork::Logging),
        Some(activity::Activity::HostDataWork) => Some(HostWork::HostDataWork),
        None if ops::is_compiled_region(name) || ops::is_dynamo_call(name) => {
            Some(HostWork::CompiledRegion)
        }
        None => None,
    }
}

/// The sub-cause a region's or frame's name gives everything inside it, when it gives one
/// (`## optimizer ##`, a warm-up frame).
#[must_use]
pub fn overriding(name: &str) -> Option<HostWork> {
    by_name(name).filter(|w| w.overrides_op())
}

/// The sub-cause of one piece of host-compute time: `op` is the outermost CPU op running (or,
/// under no op, the innermost user Python frame), `context` the names of the user regions and
/// Python frames around it, innermost first.
#[must_use]
pub fn classify<'a>(
    op: Option<&str>,
    context: impl IntoIterator<Item = &'a str>,
    fw: &Framework,
) -> HostWork {
    for name in context {
        if let Some(work) = overriding(name) {
            return work;
        }
    }
    let Some(op) = op else {
        return unnamed(fw);
    };
    if let Some(work) = by_name(op) {
        return work;
    }
    if PyFrame::parse(op).is_some() {
        HostWork::Python
    } else if fw.pytorch() {
        HostWork::FrameworkDispatch
    } else {
        HostWork::UserRegion
    }
}

/// Host time under no op, frame or region, for what the trace is.
#[must_use]
pub fn unnamed(fw: &Framework) -> HostWork {
    if !fw.cpu_ops_recorded {
        HostWork::NotRecorded
    } else if matches!(fw.program, Program::Native) {
        HostWork::BetweenApiCalls
    } else {
        HostWork::Python
    }
}

/// The sub-cause a name shows by itself (an op, a region or a frame), when it shows one.
#[must_use]
pub fn named(name: &str) -> Option<HostWork> {
    by_name(name)
}

/// The sub-cause of time inside recorded runtime or driver call `name` that no op or Python
/// frame encloses.
#[must_use]
pub fn api_call(name: &str) -> HostWork {
    if crate::vocabulary::api::is_allocation(name) {
        HostWork::Allocation
    } else {
        HostWork::ApiCalls
    }
}

/// Time under a user region with no op or frame inside it: the region's own sub-cause when its
/// name shows one, else a user region.
#[must_use]
pub fn in_region(region: &str) -> HostWork {
    by_name(region).unwrap_or(HostWork::UserRegion)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pytorch() -> Framework {
        Framework {
            program: Program::PyTorch,
            cpu_ops_recorded: true,
            ..Framework::default()
        }
    }

    #[test]
    fn names_from_real_traces_get_their_sub_cause() {
        let fw = pytorch();
        let none: [&str; 0] = [];
        let cases: &[(&str, HostWork)] = &[
            ("Optimizer.step#AdamW.step", HostWork::Optimizer),
            ("Optimizer.zero_grad#SGD.zero_grad", HostWork::Optimizer),
            ("aten::conv2d", HostWork::FrameworkDispatch),
            (
                "autograd::engine::evaluate_function: AddmmBackward0",
                HostWork::FrameworkDispatch,
            ),
            ("Torch-Compiled Region: 0/0", HostWork::CompiledRegion),
            ("TorchDynamo Cache Lookup", HostWork::CompiledRegion),
            ("CudaCodeGen::compileFusion", HostWork::WarmUp),
            (
                "/app/xDiT/xfuser/model_executor/models/runner_models/base_model.py(649): _run_compile_warmup",
                HostWork::WarmUp,
            ),
            ("capture_32_DECODE", HostWork::WarmUp),
            ("train.py(41): step", HostWork::Python),
            ("site-packages/tqdm/std.py(1180): __iter__", HostWork::Logging),
            ("<built-in method collect of module object at 0x7f>", HostWork::GarbageCollection),
            ("aten::_pin_memory", HostWork::HostDataWork),
        ];
        for (name, want) in cases {
            assert_eq!(classify(Some(name), none, &fw), *want, "{name}");
        }
    }

    #[test]
    fn an_enclosing_region_decides_over_the_op_inside() {
        let fw = pytorch();
        assert_eq!(
            classify(Some("aten::add_"), ["## optimizer ##"], &fw),
            HostWork::Optimizer
        );
        assert_eq!(
            classify(Some("aten::linear"), ["## forward ##"], &fw),
            HostWork::FrameworkDispatch
        );
        assert_eq!(in_region("## forward ##"), HostWork::UserRegion);
        assert_eq!(in_region("## optimizer ##"), HostWork::Optimizer);
    }

    #[test]
    fn unnamed_time_follows_the_program() {
        let none: [&str; 0] = [];
        assert_eq!(classify(None, none, &pytorch()), HostWork::Python);
        let native = Framework {
            program: Program::Native,
            cpu_ops_recorded: true,
            ..Framework::default()
        };
        assert_eq!(classify(None, none, &native), HostWork::BetweenApiCalls);
        assert_eq!(
            classify(None, none, &Framework::default()),
            HostWork::NotRecorded
        );
    }
}
