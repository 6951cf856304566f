//! What API names mean: CUDA/HIP runtime and driver calls (which block the host, which wait on
//! streams, which family launches, which submit work), OS waits, compiler-generated offload
//! kernels (OpenACC, OpenMP) and MPI calls.

use serde::Serialize;

/// A runtime/driver API name without version suffixes (`_v2`, `_v3020`, `_ptsz`, `_ptds`).
#[must_use]
pub fn normalize_api(name: &str) -> &str {
    let mut n = name;
    loop {
        let before = n;
        for suffix in ["_ptsz", "_ptds", "_spt"] {
            if let Some(s) = n.strip_suffix(suffix) {
                n = s;
            }
        }
        if let Some(pos) = n.rfind("_v") {
            if n[pos + 2..].chars().all(|c| c.is_ascii_digit()) && pos + 2 < n.len() {
                n = &n[..pos];
            }
        }
        if n == before {
            return n;
        }
    }
}

/// How an API call blocks the calling CPU thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockingKind {
    /// Waits for one stream (`cudaStreamSynchronize`).
    StreamSync,
    /// Waits for the whole device (`cudaDeviceSynchronize`, `torch.cuda.synchronize()`).
    DeviceSync,
    /// Waits for an event (`cudaEventSynchronize`).
    EventSync,
    /// A synchronous copy or fill (`cudaMemcpy`, `hipMemcpyWithStream`, `cudaMemset`).
    BlockingCopy,
    /// An "async" copy from or to pageable memory: CUDA syncs the stream first, so it blocks.
    PageableAsyncCopy,
    /// Freeing device or pinned host memory (`cudaFree`, `hipFree`, `cudaFreeHost`): the
    /// runtime waits for the device before it returns. Frequent with PyTorch's caching
    /// allocator off, or `torch.cuda.empty_cache()` in the loop.
    AllocatorFree,
}

/// Whether `name` is an asynchronous copy API (`cudaMemcpyAsync`, `hipMemcpyAsync`, …).
#[must_use]
pub fn is_async_copy(name: &str) -> bool {
    let n = normalize_api(name);
    n.starts_with("cudaMemcpy") && n.contains("Async")
        || n.starts_with("hipMemcpy") && n.contains("Async")
        || n.starts_with("cuMemcpy") && n.contains("Async")
}

/// Whether API call `id` launched a copy from or to pageable memory (which makes an
/// "async" copy call synchronous).
#[must_use]
pub fn launched_pageable_copy(trace: &tracelens_model::Trace, id: tracelens_model::SpanId) -> bool {
    trace
        .launched_by(id)
        .iter()
        .any(|&op| trace.copy_info(op).is_some_and(|c| c.touches_pageable()))
}

/// Whether `name` (raw API name) blocks the host until GPU work completes.
#[must_use]
pub fn blocking_kind(name: &str) -> Option<BlockingKind> {
    Some(match normalize_api(name) {
        "cudaStreamSynchronize" | "cuStreamSynchronize" | "hipStreamSynchronize" => {
            BlockingKind::StreamSync
        }
        "cudaDeviceSynchronize"
        | "cuCtxSynchronize"
        | "hipDeviceSynchronize"
        | "hipCtxSynchronize" => BlockingKind::DeviceSync,
        "cudaEventSynchronize" | "cuEventSynchronize" | "hipEventSynchronize" => {
            BlockingKind::EventSync
        }
        "cudaMemcpy"
        | "cudaMemcpy2D"
        | "cudaMemcpy3D"
        | "cudaMemcpyToSymbol"
        | "cudaMemcpyFromSymbol"
        | "cudaMemset"
        | "cudaMemset2D"
        | "cuMemcpy"
        | "cuMemcpyDtoH"
        | "cuMemcpyHtoD"
        | "cuMemcpyDtoD"
        | "cuMemsetD8"
        | "cuMemsetD32"
        | "hipMemcpy"
        | "hipMemcpyWithStream"
        | "hipMemset"
        | "hipMemcpyDtoH"
        | "hipMemcpyHtoD" => BlockingKind::BlockingCopy,
        "cudaFree" | "cuMemFree" | "cudaFreeHost" | "cuMemFreeHost" | "cudaFreeArray"
        | "hipFree" | "hipFreeHost" | "hipHostFree" | "hipFreeArray" => BlockingKind::AllocatorFree,
        _ => return None,
    })
}

/// Whether `name` makes a stream wait for an event recorded on another stream (GPU-side
/// wait, not a host sync).
#[must_use]
pub fn is_stream_wait(name: &str) -> bool {
    matches!(
        normalize_api(name),
        "cudaStreamWaitEvent" | "cuStreamWaitEvent" | "hipStreamWaitEvent"
    )
}

/// Whether a GPU-lane synchronization record is a stream waiting on an event (Kineto's
/// `cuda_sync` "Stream Wait Event"), not an event or stream sync of the host.
#[must_use]
pub fn is_stream_wait_record(name: &str) -> bool {
    name.contains("Wait")
}

/// Whether an API name launches a kernel.
#[must_use]
pub fn is_kernel_launch(name: &str) -> bool {
    [
        "cudaLaunchKernel",
        "cudaLaunchCooperativeKernel",
        "cuLaunchKernel",
        "hipLaunchKernel",
        "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipExtLaunchKernel",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Whether an API name records an event on a stream (`cudaEventRecord`, `cuEventRecord`,
/// `hipEventRecord`, any version suffix): a benchmark's timer.
#[must_use]
pub fn is_event_record(name: &str) -> bool {
    let n = normalize_api(name);
    ["cudaEventRecord", "cuEventRecord", "hipEventRecord"]
        .iter()
        .any(|p| n.starts_with(p))
}

/// OS calls in which a thread waits for a child process to end.
#[must_use]
pub fn is_child_process_wait(name: &str) -> bool {
    matches!(name, "waitpid" | "wait4" | "waitid" | "wait")
}

/// OS calls in which a thread waits for another thread, a process or I/O (not computing).
#[must_use]
pub fn is_os_wait(name: &str) -> bool {
    matches!(
        name,
        "pthread_cond_wait"
            | "pthread_cond_timedwait"
            | "pthread_join"
            | "pthread_mutex_lock"
            | "pthread_rwlock_rdlock"
            | "pthread_rwlock_wrlock"
            | "sem_wait"
            | "sem_timedwait"
            | "poll"
            | "ppoll"
            | "select"
            | "pselect6"
            | "epoll_wait"
            | "epoll_pwait"
            | "futex"
            | "read"
            | "recv"
            | "recvfrom"
            | "recvmsg"
            | "waitpid"
            | "wait4"
            | "usleep"
            | "nanosleep"
            | "sleep"
            | "clock_nanosleep"
    )
}

/// The API a program launches GPU work through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuApi {
    /// The CUDA runtime API (`cudaLaunchKernel`, `cudaMemcpy`, …).
    CudaRuntime,
    /// The CUDA driver API only (`cuLaunchKernel`, …): OpenACC and OpenMP runtimes, Julia,
    /// Numba.
    CudaDriver,
    /// HIP (`hipLaunchKernel`, …).
    Hip,
    /// No launch API in the trace.
    #[default]
    Unknown,
}

/// Directive-based offload: the compiler wrote the kernels and the runtime calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Offload {
    /// OpenACC (NVIDIA HPC compilers name kernels `<routine>_<line>_gpu`).
    #[serde(rename = "openacc")]
    OpenAcc,
    /// OpenMP target offload (`__omp_offloading_*`, `nvkernel_*`).
    #[serde(rename = "openmp")]
    OpenMp,
}

/// The API family of a launch or memory call: the CUDA runtime (`cuda*`), the CUDA driver
/// (`cu` + an upper-case letter: `cuLaunchKernel`, `cuMemcpyHtoDAsync_v2`) or HIP (`hip*`).
#[must_use]
pub fn api_family(name: &str) -> Option<GpuApi> {
    let n = normalize_api(name);
    if n.starts_with("hip") && n[3..].starts_with(|c: char| c.is_ascii_uppercase()) {
        Some(GpuApi::Hip)
    } else if n.starts_with("cuda") && n[4..].starts_with(|c: char| c.is_ascii_uppercase()) {
        Some(GpuApi::CudaRuntime)
    } else if n.starts_with("cu") && n[2..].starts_with(|c: char| c.is_ascii_uppercase()) {
        Some(GpuApi::CudaDriver)
    } else {
        None
    }
}

/// The offload model a kernel name comes from: OpenMP target regions (`__omp_offloading_*`
/// from Clang/AMD, `nvkernel_*` from NVIDIA's compilers) or OpenACC compute regions (NVIDIA
/// HPC compilers' `<routine>_<line>_gpu`, with a `__red` suffix for reductions).
#[must_use]
pub fn offload_kernel(name: &str) -> Option<Offload> {
    if name.starts_with("__omp_offloading_") || name.starts_with("nvkernel_") {
        return Some(Offload::OpenMp);
    }
    let stem = name.strip_suffix("__red").unwrap_or(name);
    let line = stem.strip_suffix("_gpu")?;
    let (routine, digits) = line.rsplit_once('_')?;
    (!routine.is_empty() && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
        .then_some(Offload::OpenAcc)
}

/// What a CUDA runtime error code means, and what usually fixes it, for the codes that stop a
/// program's GPU work (`cudaError_t`).
#[must_use]
pub fn cuda_error(code: i64) -> Option<(&'static str, &'static str)> {
    Some(match code {
        2 => ("cudaErrorMemoryAllocation", "the device ran out of memory"),
        3 => ("cudaErrorInitializationError", "the CUDA driver could not initialise"),
        35 => ("cudaErrorInsufficientDriver", "the driver is older than the CUDA runtime: update the driver"),
        98 => ("cudaErrorInvalidDeviceFunction", "the kernel was not built for this GPU: add its architecture (-arch=sm_XY) to the build"),
        100 => ("cudaErrorNoDevice", "no CUDA device is visible (check CUDA_VISIBLE_DEVICES and the driver)"),
        209 => ("cudaErrorNoKernelImageForDevice", "the binary holds no code for this GPU's architecture: rebuild with -arch=sm_XY for it"),
        222 => ("cudaErrorUnsupportedPtxVersion", "the kernels were compiled by a newer CUDA toolkit than this driver supports: update the driver, or build with the toolkit the driver matches"),
        700 => ("cudaErrorIllegalAddress", "a kernel accessed memory out of bounds: run compute-sanitizer"),
        701 => ("cudaErrorLaunchOutOfResources", "the launch asks for more registers or shared memory than a block may have: fewer threads per block"),
        719 => ("cudaErrorLaunchFailure", "a kernel faulted: run compute-sanitizer"),
        _ => return None,
    })
}

/// Whether API call `name` submits GPU work (a kernel launch, a copy or a fill), as opposed
/// to a query or a synchronization.
#[must_use]
pub fn submits_gpu_work(name: &str) -> bool {
    api_family(name).is_some()
        && (name.contains("Launch") || name.contains("Memcpy") || name.contains("Memset"))
}

/// Whether API call `name` allocates, frees or pins memory (device, pinned host or managed):
/// `cudaMalloc*`, `cudaFree*`, `cudaHostAlloc`, `cudaHostRegister`, `cuMemAlloc*`,
/// `cuMemFree*`, `cuMemHostAlloc`, `hipMalloc*`, `hipFree*`, `hipHostMalloc`, any version
/// suffix.
#[must_use]
pub fn is_allocation(name: &str) -> bool {
    let n = normalize_api(name);
    let rest = match api_family(n) {
        Some(GpuApi::CudaRuntime) => &n[4..],
        Some(GpuApi::Hip) => &n[3..],
        Some(GpuApi::CudaDriver) => &n[2..],
        _ => return false,
    };
    [
        "Malloc",
        "Free",
        "MemAlloc",
        "MemFree",
        "HostAlloc",
        "HostMalloc",
        "HostFree",
        "HostRegister",
        "HostUnregister",
        "MemHostAlloc",
        "MemHostRegister",
        "MemHostUnregister",
        "ExtMallocWithFlags",
    ]
    .iter()
    .any(|p| rest.starts_with(p))
}

/// Whether API call `name` allocates device or managed memory (`cudaMalloc*`, `cuMemAlloc*`,
/// `hipMalloc*`), as opposed to freeing it or pinning host memory.
#[must_use]
pub fn allocates_device_memory(name: &str) -> bool {
    let n = normalize_api(name);
    is_allocation(n) && !n.contains("Free") && !n.contains("Host")
}

/// Whether API call `name` allocates, frees or pins host memory for the GPU
/// (`cudaHostAlloc`, `cudaMallocHost`, `cudaFreeHost`, `cudaHostRegister`, `cuMemHostAlloc`,
/// `hipHostMalloc`, `hipHostFree`, …).
#[must_use]
pub fn is_pinned_host_allocation(name: &str) -> bool {
    let n = normalize_api(name);
    is_allocation(n) && n.contains("Host")
}

/// Whether API call `name` pins host memory (allocates it pinned or registers it), as
/// opposed to freeing or unregistering it.
#[must_use]
pub fn pins_host_memory(name: &str) -> bool {
    let n = normalize_api(name);
    is_pinned_host_allocation(n) && !n.contains("Free") && !n.contains("Unregister")
}

/// Whether `name` is an MPI call (`MPI_Send`, `MPI_Allreduce`; Nsight Systems' MPI trace).
#[must_use]
pub fn is_mpi_call(name: &str) -> bool {
    name.strip_prefix("MPI_")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
}

/// Whether a runtime/driver API call prefetches managed memory (`cudaMemPrefetchAsync`,
/// `hipMemPrefetchAsync`, `cuMemPrefetchAsync`, any version suffix).
#[must_use]
pub fn is_prefetch(name: &str) -> bool {
    normalize_api(name).ends_with("MemPrefetchAsync")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_calls_are_told_from_other_calls_by_family() {
        for name in [
            "cudaMalloc_v3020",
            "cudaFree_v3020",
            "cudaMallocAsync_ptsz",
            "cudaHostAlloc_v3020",
            "cudaFreeHost",
            "cuMemAlloc_v2",
            "cuMemFreeHost",
            "hipMalloc",
            "hipHostFree",
            "cudaHostRegister_v4000",
        ] {
            assert!(is_allocation(name), "{name}");
        }
        for name in [
            "cudaMemcpy_v3020",
            "cudaLaunchKernel",
            "cudaGetDeviceProperties_v2",
            "cuCtxCreate_v2",
            "malloc",
            "cudaMemset",
        ] {
            assert!(!is_allocation(name), "{name}");
        }
        assert!(pins_host_memory("cudaHostAlloc_v3020"));
        assert!(pins_host_memory("cudaMallocHost"));
        assert!(!pins_host_memory("cudaFreeHost_v3020"));
        assert!(!pins_host_memory("cudaHostUnregister"));
        assert!(!pins_host_memory("cudaMalloc_v3020"));
    }
}
