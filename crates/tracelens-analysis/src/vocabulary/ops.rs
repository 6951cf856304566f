//! What op and range names mean: PyTorch's ATen ops (copies, host reads, data-dependent
//! shapes, matrix ops), its automatic ranges (profiler steps, DataLoader fetches, optimizer
//! steps), collectives as ops, distributed wrappers and compiled regions.

use serde::Serialize;

/// Whether a CPU range is a DataLoader (or DataPipe) fetch, as tb_plugin defines it.
#[must_use]
pub fn is_data_loader(name: &str) -> bool {
    (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__"))
        || name.starts_with("enumerate(DataPipe)#")
}

/// ATen ops that copy between host and device (`.to()`, `.cpu()`, `.tolist()`, `.numpy()`).
#[must_use]
pub fn is_copy_op(name: &str) -> bool {
    matches!(
        name,
        "aten::copy_" | "aten::_to_copy" | "aten::to" | "aten::cpu" | "aten::_copy_from"
    )
}

/// ATen ops whose output shape depends on data, so they read a count back from the GPU.
#[must_use]
pub fn is_data_dependent_op(name: &str) -> bool {
    matches!(
        name,
        "aten::nonzero"
            | "aten::nonzero_numpy"
            | "aten::masked_select"
            | "aten::unique"
            | "aten::_unique"
            | "aten::_unique2"
            | "aten::unique_dim"
            | "aten::unique_consecutive"
            | "aten::repeat_interleave"
            | "aten::bincount"
            | "aten::histc"
    )
}

/// The ops that only move data: a copy's source is the op above them.
#[must_use]
pub fn is_copy_primitive(name: &str) -> bool {
    matches!(
        name,
        "aten::copy_"
            | "aten::_to_copy"
            | "aten::to"
            | "aten::empty_strided"
            | "aten::clone"
            | "cudaMemcpyAsync"
    )
}

/// Ops that read one value back to the host: `.item()` (`aten::item`,
/// `aten::_local_scalar_dense`).
#[must_use]
pub fn is_scalar_read_op(name: &str) -> bool {
    matches!(name, "aten::item" | "aten::_local_scalar_dense")
}

/// The op a tensor's truth value (`if tensor:`) runs.
#[must_use]
pub fn is_truth_value_op(name: &str) -> bool {
    name == "aten::is_nonzero"
}

/// Ops that are matrix multiplies or convolutions (tb_plugin's allowlist): they can use
/// tensor cores.
const MATRIX_OPS: [&str; 24] = [
    "aten::_convolution",
    "aten::addmm",
    "aten::addmm_",
    "aten::addmv",
    "aten::addmv_",
    "aten::baddbmm",
    "aten::baddbmm_",
    "aten::bmm",
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::conv_tbc",
    "aten::conv_transpose1d",
    "aten::conv_transpose2d",
    "aten::conv_transpose3d",
    "aten::convolution",
    "aten::cudnn_convolution",
    "aten::cudnn_convolution_backward_input",
    "aten::cudnn_convolution_backward_weight",
    "aten::cudnn_convolution_transpose",
    "aten::linear",
    "aten::matmul",
    "aten::mm",
    "aten::_scaled_dot_product_flash_attention",
];

/// Kernel-name fragments of tensor-core kernels (tb_plugin's list, plus the Ampere-and-later
/// names: `sm80_xmma`, `cutlass` tensor-op kernels, `hmma`/`wgmma`, Hopper cuBLAS `nvjet`,
/// and AMD's matrix-core (MFMA) kernels: `MI16x16`/`MI32x32` tiles in Tensile names).
/// Whether an op is a matrix multiply or convolution (it can use the matrix units).
#[must_use]
pub fn is_matrix_op(name: &str) -> bool {
    MATRIX_OPS.contains(&name)
}

/// Whether an op is a convolution, forward or backward, by any backend (`aten::conv2d`,
/// `aten::_convolution`, `aten::cudnn_convolution`, `aten::_slow_conv2d_forward`,
/// `aten::convolution_backward`, `aten::miopen_convolution`): GEMM kernels it launches are
/// convolution time (implicit GEMM, im2col).
#[must_use]
pub fn is_convolution_op(name: &str) -> bool {
    let n = name.strip_prefix("aten::").unwrap_or(name);
    n.starts_with("conv") || n.contains("convolution") || n.contains("slow_conv")
}

/// Whether an op is a convolution's backward (`aten::convolution_backward`,
/// `aten::cudnn_convolution_backward`).
#[must_use]
pub fn is_convolution_backward(name: &str) -> bool {
    name.ends_with("convolution_backward")
}

/// Whether a CPU op is a collective (`nccl:all_reduce`, `gloo:broadcast`, `hccl:…`).
#[must_use]
pub fn is_communication_op(name: &str) -> bool {
    name.starts_with("nccl:") || name.starts_with("gloo:") || name.starts_with("hccl:")
}

/// Whether tb_plugin lists an op of this name in its operator view (it still passes time up
/// to its parents): not a profiler step, DataLoader fetch, optimizer range or data-parallel
/// forward.
#[must_use]
pub fn is_listed_by_tb_plugin(name: &str) -> bool {
    !(name.starts_with("ProfilerStep#")
        || (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__"))
        || name.starts_with("Optimizer.")
        || name == "DataParallel.forward"
        || name == "DistributedDataParallel.forward")
}

/// Ranges PyTorch's profiler writes by itself (steps, DataLoader fetches, optimizer steps):
/// not a user's region.
#[must_use]
pub fn is_automatic_range(name: &str) -> bool {
    [
        "ProfilerStep#",
        "enumerate(DataLoader)#",
        "enumerate(DataPipe)#",
        "Optimizer.step#",
        "Optimizer.zero_grad#",
    ]
    .iter()
    .any(|a| name.starts_with(a))
}

/// Whether a Python frame is an `nn.Module` (`with_modules=True`).
#[must_use]
pub fn is_module_frame(name: &str) -> bool {
    name.starts_with("nn.Module: ")
}

/// Which DataLoader iterator the trace shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IteratorKind {
    /// `_SingleProcessDataLoaderIter`: `num_workers=0`, loading runs on the training thread.
    SingleProcess,
    /// `_MultiProcessingDataLoaderIter`: worker processes; the main thread waits for batches.
    MultiProcess,
    /// A DataPipe.
    DataPipe,
    /// Another iterator name.
    Other,
}

/// The iterator a DataLoader fetch range names.
#[must_use]
pub fn data_loader_iterator(name: &str) -> IteratorKind {
    if name.contains("_SingleProcessDataLoaderIter") {
        IteratorKind::SingleProcess
    } else if name.contains("_MultiProcessingDataLoaderIter") {
        IteratorKind::MultiProcess
    } else if name.starts_with("enumerate(DataPipe)") {
        IteratorKind::DataPipe
    } else {
        IteratorKind::Other
    }
}

/// Whether a name is FSDP's (its ranges and Python frames: FSDP2's `FSDP::…` ranges,
/// FSDP1's `FullyShardedDataParallel` module and frames, `fully_shard`).
#[must_use]
pub fn is_fsdp(name: &str) -> bool {
    name.contains("FSDP")
        || name.contains("FullyShardedDataParallel")
        || name.contains("fully_shard")
}

/// Whether a name shows DistributedDataParallel (its forward range or its reducer).
#[must_use]
pub fn is_ddp(name: &str) -> bool {
    name.starts_with("DistributedDataParallel") || name.contains("Reducer::")
}

/// The class in `Optimizer.step#CLASS.step` or `Optimizer.zero_grad#CLASS.zero_grad`.
#[must_use]
pub fn optimizer_class(name: &str) -> Option<&str> {
    let rest = name
        .strip_prefix("Optimizer.step#")
        .or_else(|| name.strip_prefix("Optimizer.zero_grad#"))?;
    let class = rest.split('.').next()?;
    (!class.is_empty()).then_some(class)
}

/// The optimizer classes of `torch.optim` (the only ones `foreach=`/`fused=` advice fits).
const TORCH_OPTIMIZERS: &[&str] = &[
    "SGD",
    "Adam",
    "AdamW",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "ASGD",
    "NAdam",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SparseAdam",
    "LBFGS",
];

/// The class in `Optimizer.step#CLASS.step` only: the optimizer that steps (a trace may
/// zero the gradients of another).
#[must_use]
pub fn optimizer_step_class(name: &str) -> Option<&str> {
    name.starts_with("Optimizer.step#")
        .then(|| optimizer_class(name))
        .flatten()
}

/// Whether an optimizer class is one of `torch.optim`'s.
#[must_use]
pub fn is_torch_optimizer(class: &str) -> bool {
    TORCH_OPTIMIZERS.contains(&class)
}

/// Whether a process name shows a Python interpreter.
#[must_use]
pub fn is_python_process(name: &str) -> bool {
    name.to_ascii_lowercase().contains("python")
}

/// Whether an optimizer class is a fused implementation (`FusedAdam`, `FusedLAMB`).
#[must_use]
pub fn is_fused_optimizer_class(class: &str) -> bool {
    class.contains("Fused")
}

/// Whether an op is a fused optimizer's (`aten::_fused_adam_`, `aten::_fused_sgd_`).
#[must_use]
pub fn is_fused_optimizer_op(name: &str) -> bool {
    name.starts_with("aten::_fused_adam") || name.starts_with("aten::_fused_sgd")
}

/// Whether an op is a multi-tensor (`_foreach`) op.
#[must_use]
pub fn is_foreach_op(name: &str) -> bool {
    name.starts_with("aten::_foreach_")
}

/// Whether an optimizer class is Adam's family (Adam, AdamW, Adamax).
#[must_use]
pub fn is_adam_family(class: &str) -> bool {
    class.starts_with("Adam")
}

/// Whether an optimizer class is plain SGD.
#[must_use]
pub fn is_sgd(class: &str) -> bool {
    class == "SGD"
}

/// Whether an op builds a new tensor from nothing but its arguments (`aten::randn`,
/// `aten::zeros`, `aten::arange`): such a tensor can be made on the GPU directly.
#[must_use]
pub fn is_tensor_factory(name: &str) -> bool {
    let Some(op) = name.strip_prefix("aten::") else {
        return false;
    };
    matches!(
        op,
        "randn"
            | "rand"
            | "randint"
            | "randperm"
            | "normal"
            | "normal_"
            | "uniform_"
            | "zeros"
            | "ones"
            | "full"
            | "empty"
            | "arange"
            | "linspace"
            | "eye"
            | "randn_like"
            | "rand_like"
            | "zeros_like"
            | "ones_like"
            | "full_like"
    )
}

/// Whether an op or frame is `zero_grad`.
#[must_use]
pub fn is_zero_grad(name: &str) -> bool {
    name.to_ascii_lowercase().contains("zero_grad")
}

/// Whether a range is a torch.compile'd region's call (`CompiledFunction`,
/// `Torch-Compiled Region`).
#[must_use]
pub fn is_compiled_region(name: &str) -> bool {
    matches!(
        crate::vocabulary::compiled::of(name),
        Some(
            crate::vocabulary::compiled::CompiledName::Region { .. }
                | crate::vocabulary::compiled::CompiledName::GraphCall
        )
    ) && !name.starts_with("## Call")
}

/// Whether a name is TorchDynamo's per-call work (its cache lookup).
#[must_use]
pub fn is_dynamo_call(name: &str) -> bool {
    crate::vocabulary::compiled::of(name)
        == Some(crate::vocabulary::compiled::CompiledName::Bookkeeping)
        && name.starts_with("TorchDynamo")
}

/// Whether a name replays a CUDA/HIP graph (`cudaGraphLaunch`, `hipGraphLaunch`).
#[must_use]
pub fn is_graph_launch(name: &str) -> bool {
    name.contains("GraphLaunch")
}

/// Whether a kernel is ATen's own (`void at::native::vectorized_elementwise_kernel<…>`): a
/// Python process running them is PyTorch, though an Nsight Systems capture without NVTX
/// ranges shows it only in its kernels (a C++ program may run them through libtorch).
#[must_use]
pub fn is_aten_kernel(name: &str) -> bool {
    name.contains("at::native::")
}

/// Whether a name is one only PyTorch writes: ATen and autograd ops, optimizer ranges,
/// DataLoader fetches, Python frames (`file.py(line): function`).
#[must_use]
pub fn is_pytorch_name(name: &str) -> bool {
    is_data_loader(name)
        || name.starts_with("aten::")
        || name.starts_with("autograd::")
        || name.starts_with("Optimizer.")
        || name.contains(".py(")
}
