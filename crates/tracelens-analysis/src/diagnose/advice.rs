//! Fixes that recur across detectors (host synchronization, copies, launch overhead, CPU
//! work the capture did not record, warm-up, thread pools), written once per [`Dialect`]:
//! a native CUDA program is told the runtime calls it makes, an OpenACC or OpenMP program
//! the directives it is written in, and a program the trace does not identify what to
//! change in no tool's vocabulary. PyTorch's own fixes stay with their detectors, which know
//! its versions and options.

use crate::diagnose::library_advice;
use crate::measure::environment::Dialect;

pub use crate::diagnose::fix::{Fix, HostWait};

/// A host-blocking call in a program that is not PyTorch.
#[must_use]
pub fn host_wait(wait: HostWait, dialect: Dialect) -> Fix {
    match (dialect, wait) {
        (Dialect::Python(lib), _) => library_advice::host_wait(wait, lib),
        (Dialect::CudaRuntime, HostWait::Free) => Fix::new(
            "Allocate device buffers once outside the loop and reuse them, or use stream-ordered allocation (cudaMallocAsync/cudaFreeAsync) that does not wait for the device.",
            "cudaFree and cudaFreeHost wait for the whole device before they return, so the queue drains and the GPU idles until the CPU launches again.",
            "cudaMallocAsync(&buf, bytes, stream);   // instead of cudaMalloc\n/* kernels using buf */\ncudaFreeAsync(buf, stream);            // no device-wide wait",
        ),
        (Dialect::CudaRuntime, HostWait::StreamOrEvent) => Fix::new(
            "Order GPU work with cudaStreamWaitEvent instead of blocking the host, and synchronize only where the host needs a result.",
            "A stream or event synchronize blocks the CPU until the GPU catches up, so it cannot queue the next work meanwhile.",
            "cudaEventRecord(done, producer);\ncudaStreamWaitEvent(consumer, done, 0);   // GPU-side ordering, no host block",
        ),
        (Dialect::CudaRuntime, HostWait::ValueRead) => Fix::new(
            "Read the value the host decides on (a flag, a count, a residual) every N iterations, not after each: queue N iterations' kernels, then copy it with cudaMemcpyAsync into pinned memory and wait once; or keep the decision on the GPU (kernels that return at once when the flag is set).",
            "Each synchronous copy of a few bytes back to the host waits for every queued kernel, so the CPU cannot run ahead and the GPU idles through every launch that follows.",
            "for (int it = 0; it < max_iters && !done; it += N) {\n    for (int k = 0; k < N; ++k) step<<<grid, block, 0, stream>>>(d_state, d_done);\n    cudaMemcpyAsync(h_done, d_done, sizeof(int), cudaMemcpyDeviceToHost, stream);  // h_done pinned\n    cudaStreamSynchronize(stream);   // one wait per N iterations\n    done = *h_done;\n}",
        ),
        (Dialect::OpenAcc, HostWait::ValueRead) => Fix::new(
            "Bring the value the host decides on back every N iterations, not after each: run N iterations' compute regions async, then one update self(flag) and wait; or test it on the device.",
            "Each update of a few bytes back to the host waits for every queued region, so the host cannot queue the next one while the GPU works.",
            "do it = 1, max_iters, N\n  do k = 1, N\n    !$acc parallel loop async(1)\n    ...\n  end do\n  !$acc update self(done) async(1)\n  !$acc wait(1)          ! one wait per N iterations\n  if (done) exit\nend do",
        ),
        (Dialect::OpenMp, HostWait::ValueRead) => Fix::new(
            "Map the value the host decides on back every N iterations, not after each: queue N iterations' target regions with nowait, then one target update from(flag) and a taskwait; or test it on the device.",
            "Each map of a few bytes back to the host waits for the device, so the host cannot queue the next target region while the GPU works.",
            "for (it = 0; it < max_iters && !done; it += N) {\n  for (k = 0; k < N; ++k) {\n    #pragma omp target teams distribute parallel for nowait\n    for (...) { ... }\n  }\n  #pragma omp taskwait\n  #pragma omp target update from(done)   // one read per N iterations\n}",
        ),
        (Dialect::CudaRuntime, HostWait::DeviceOrCopy) => Fix::new(
            "Remove device-wide synchronization and synchronous copies from the loop: copy with cudaMemcpyAsync into pinned buffers and wait on a CUDA event (cudaEventSynchronize) only where the host needs a result.",
            "A device synchronize or a synchronous cudaMemcpy waits for every queued kernel, so the GPU idles while the CPU prepares the next launches.",
            "cudaMemcpyAsync(host_pinned, dev, bytes, cudaMemcpyDeviceToHost, stream);\ncudaEventRecord(ready, stream);\n/* queue more work */\ncudaEventSynchronize(ready);   // only when the result is needed",
        ),
        (Dialect::OpenAcc, HostWait::Free) => Fix::new(
            "Create the device copies once, outside the loop, in a data region (or enter data / exit data around the whole run) instead of allocating and freeing them around each compute region.",
            "Each free of device memory waits for the whole device, so the queue drains; a data region keeps the arrays on the device across compute regions.",
            "!$acc data create(tmp)            ! Fortran\n#pragma acc data create(tmp[0:n]) // C/C++\n  ... compute regions using tmp ...\n!$acc end data",
        ),
        (Dialect::OpenAcc, _) => Fix::new(
            "Make compute regions and updates asynchronous (async(q) clauses) and wait (acc wait) only where the host reads the results; keep arrays on the device in a data region so no copy waits in the loop.",
            "Without async, every compute region and update ends with a wait for the device (the runtime's stream synchronize), so the host cannot queue the next region while the GPU works.",
            "!$acc parallel loop async(1)     ! Fortran; C/C++: #pragma acc parallel loop async(1)\n  ...\n!$acc update self(x) async(1)\n!$acc wait(1)                    ! only where the host reads x",
        ),
        (Dialect::OpenMp, HostWait::Free) => Fix::new(
            "Map the arrays once around the whole loop (target data, or target enter data / exit data) instead of allocating and freeing device memory per target region.",
            "Each free of device memory waits for the whole device, so the queue drains; a target data region keeps the arrays on the device across target regions.",
            "#pragma omp target enter data map(alloc: tmp[0:n])\n/* target regions using tmp */\n#pragma omp target exit data map(delete: tmp[0:n])",
        ),
        (Dialect::OpenMp, _) => Fix::new(
            "Launch target regions with nowait and depend clauses, and wait (taskwait) only where the host needs the results; keep arrays on the device in a target data region so no copy waits in the loop.",
            "A target region without nowait, and every map of data back to the host, waits for the device, so the host cannot queue the next region while the GPU works.",
            "#pragma omp target teams distribute parallel for nowait depend(out: a)\nfor (...) { ... }\n#pragma omp taskwait   // only where the host reads a",
        ),
        (_, HostWait::ValueRead) => Fix::new(
            "Read the value the host decides on every N iterations, not after each: queue N iterations of GPU work, then read it once; or keep the decision on the GPU.",
            "Each synchronous read of a few bytes back to the host waits for all queued GPU work, so the GPU idles while the host prepares the next work.",
            "",
        ),
        (_, HostWait::Free) => Fix::new(
            "Allocate device memory once, outside the loop, and reuse it: freeing device memory waits for the whole device.",
            "Freeing device memory waits for all queued GPU work, so the queue drains and the GPU idles until the host launches again.",
            "",
        ),
        (_, _) => Fix::new(
            "Wait for the GPU only where the host needs a result: issue copies asynchronously and order dependent GPU work on the device instead of blocking the host.",
            "A host-blocking wait or synchronous copy drains the GPU's queue, so the GPU idles while the host prepares the next work.",
            "",
        ),
    }
}

/// Copies to or from pageable host memory, in a program that is not PyTorch.
#[must_use]
pub fn pageable_copies(dialect: Dialect) -> Fix {
    match dialect {
        Dialect::Python(lib) => library_advice::pageable_copies(lib),
        Dialect::CudaRuntime => Fix::new(
            "Allocate the host buffers pinned (cudaMallocHost/cudaHostAlloc, or cudaHostRegister an existing buffer) and copy with cudaMemcpyAsync on a stream.",
            "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels; pinned buffers with async copies can.",
            "cudaMallocHost(&host_buf, bytes);            // once, outside the loop\ncudaMemcpyAsync(dev_buf, host_buf, bytes, cudaMemcpyHostToDevice, stream);",
        ),
        Dialect::OpenAcc => Fix::new(
            "Keep the arrays on the device in a data region so they cross the link once, and let the compiler pin host memory (NVIDIA HPC compilers: -gpu=pinned) for the updates that remain.",
            "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels.",
            "!$acc data copyin(a) copyout(b)   ! Fortran; C/C++: #pragma acc data copyin(a[0:n]) copyout(b[0:n])\n  ... compute regions ...\n!$acc end data\n! compile with -gpu=pinned",
        ),
        Dialect::OpenMp => Fix::new(
            "Map the arrays once around the loop (target data, or target enter data / exit data) so they cross the link once, and update only what the host reads.",
            "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels.",
            "#pragma omp target data map(to: a[0:n]) map(from: b[0:n])\n{\n  /* target regions */\n}",
        ),
        Dialect::PyTorch | Dialect::Neutral => Fix::new(
            "Use page-locked (pinned) host buffers for transfers and issue them asynchronously, or keep the data on the GPU so it crosses the link less often.",
            "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels.",
            "",
        ),
    }
}

/// Per-launch overhead (kernels shorter than their launches), in a program that is not
/// PyTorch: `(fix, snippet)`.
#[must_use]
pub fn launch_overhead(dialect: Dialect) -> (String, String) {
    let (fix, snippet) = match dialect {
        Dialect::Python(lib) => return library_advice::launch_overhead(lib),
        Dialect::CudaRuntime => (
            "Capture the launch sequence once in a CUDA graph (cudaStreamBeginCapture ... cudaGraphLaunch) or fuse small kernels, so each launch does more work.",
            "cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);\n/* the step's kernels */\ncudaStreamEndCapture(stream, &graph);\ncudaGraphInstantiate(&exec, graph, 0);\ncudaGraphLaunch(exec, stream);   // every step",
        ),
        Dialect::OpenAcc => (
            "Give each compute region more work: merge neighbouring loops into one region, collapse nested loops (collapse(n)), and launch the regions with async so launches overlap the running kernels.",
            "!$acc parallel loop collapse(2) async(1)   ! Fortran; C/C++: #pragma acc parallel loop collapse(2) async(1)\ndo j = 1, ny\n  do i = 1, nx\n    ...\n!$acc wait(1)",
        ),
        Dialect::OpenMp => (
            "Give each target region more work: merge neighbouring loops into one region, collapse nested loops (collapse(n)), and launch the regions with nowait so launches overlap the running kernels.",
            "#pragma omp target teams distribute parallel for collapse(2) nowait\nfor (int j = 0; j < ny; ++j)\n  for (int i = 0; i < nx; ++i) { ... }\n#pragma omp taskwait",
        ),
        Dialect::PyTorch | Dialect::Neutral => (
            "Launch fewer, larger kernels: fuse small kernels, or record the launch sequence once as a GPU graph and replay it, so each launch does more work.",
            "",
        ),
    };
    (fix.into(), snippet.into())
}

/// Copies across the host link that kernels could overlap, in a program that is not
/// PyTorch; `direction` in words (`host-to-device`).
#[must_use]
pub fn link_copies(direction: &str, dialect: Dialect) -> Fix {
    let advice = "Copies across the host link are bounded by its bandwidth; on the compute stream they serialize with kernels.";
    match dialect {
        Dialect::Python(lib) => library_advice::link_copies(direction, lib),
        Dialect::CudaRuntime => Fix {
            fix: format!("Copy less and overlap the rest: keep data resident on the GPU, and issue the {direction} copies from pinned buffers with cudaMemcpyAsync on a separate stream so kernels run meanwhile."),
            advice: advice.into(),
            snippet: "cudaMemcpyAsync(dev, pinned_host, bytes, cudaMemcpyHostToDevice, copy_stream);\ncudaEventRecord(copied, copy_stream);\ncudaStreamWaitEvent(compute_stream, copied, 0);".into(),
        },
        Dialect::OpenAcc => Fix {
            fix: format!("Copy less and overlap the rest: keep arrays on the device in a data region, and make the {direction} updates that remain asynchronous (update ... async(q) on another queue than the compute regions)."),
            advice: advice.into(),
            snippet: "!$acc update device(next) async(2)   ! Fortran; C/C++: #pragma acc update device(next[0:n]) async(2)\n!$acc parallel loop async(1)\n  ... compute on current ...\n!$acc wait".into(),
        },
        Dialect::OpenMp => Fix {
            fix: format!("Copy less and overlap the rest: keep arrays on the device in a target data region, and make the {direction} updates that remain asynchronous (target update ... nowait)."),
            advice: advice.into(),
            snippet: "#pragma omp target update to(next[0:n]) nowait depend(out: next)\n#pragma omp target teams distribute parallel for nowait depend(in: next)\nfor (...) { ... }\n#pragma omp taskwait".into(),
        },
        Dialect::PyTorch | Dialect::Neutral => Fix {
            fix: format!("Copy less and overlap the rest: keep data resident on the GPU, and issue the {direction} copies asynchronously from pinned buffers so kernels run meanwhile."),
            advice: advice.into(),
            snippet: String::new(),
        },
    }
}

/// Device-to-device copies, in a program that is not PyTorch.
#[must_use]
pub fn device_copies(dialect: Dialect) -> Fix {
    Fix::new(
        "Avoid the device-to-device copies: operate in place or on views of the buffers, and fuse layout changes into the kernels that read them.",
        "Device-to-device copies use memory bandwidth the kernels need.",
        if dialect == Dialect::CudaRuntime {
            "// read strided data in the consumer kernel instead of cudaMemcpy2DAsync into a packed copy"
        } else {
            ""
        },
    )
}

/// Peer-to-peer copies between GPUs; `slow_link` names a device pair far slower than the
/// others, when the trace shows one.
#[must_use]
pub fn peer_copies(dialect: Dialect, slow_link: Option<&str>) -> Fix {
    let mut fix = match dialect {
        Dialect::PyTorch => Fix::new(
            "Move less between GPUs and overlap the rest: keep each stage's tensors on its own GPU and send only what crosses the stage boundary (.to('cuda:N', non_blocking=True)), or use torch.distributed send/recv between ranks; place consecutive stages on GPUs joined by NVLink (nvidia-smi topo -m).",
            "Peer copies are bounded by the link between the two GPUs (NVLink or PCIe, through the CPU's root complex when the GPUs are not peers), and on the compute stream they serialize with kernels.",
            "x = x.to(\"cuda:1\", non_blocking=True)   # only the stage boundary crosses GPUs",
        ),
        Dialect::CudaRuntime => Fix::new(
            "Enable peer access once (cudaDeviceEnablePeerAccess) so the copies go directly over NVLink or PCIe, issue them with cudaMemcpyPeerAsync on a copy stream so kernels run meanwhile, and move only the boundary data; nvidia-smi topo -m shows how each pair is linked.",
            "Peer copies are bounded by the link between the two GPUs; without peer access they are staged through host memory, and on the compute stream they serialize with kernels.",
            "cudaSetDevice(0);\ncudaDeviceEnablePeerAccess(1, 0);   // once\ncudaMemcpyPeerAsync(dst, 1, src, 0, bytes, copy_stream);",
        ),
        _ => Fix::new(
            "Move less between GPUs and overlap the rest: keep each device's data on it, copy only the boundary data, and issue the peer copies asynchronously so kernels run meanwhile; nvidia-smi topo -m shows how each pair is linked.",
            "Peer copies are bounded by the link between the two GPUs, and on the compute stream they serialize with kernels.",
            "",
        ),
    };
    if let Some(slow) = slow_link {
        fix.fix = format!(
            "{slow}: check the topology (nvidia-smi topo -m) and the peer access between them. {}",
            fix.fix
        );
    }
    fix
}

/// Host copies already pinned and spread over `streams` streams that still overlap no kernel:
/// what is left to change. `copy_ns`, `exposed_ns` and `kernel_ns`: the copies' GPU time,
/// the part of it no kernel overlaps, and the kernels' GPU time (kernels far shorter than the
/// copies cannot hide them, whatever the order).
#[must_use]
pub fn pinned_stream_copies(
    direction: &str,
    streams: u32,
    order: Option<crate::attribute::copies::IssueOrder>,
    (copy_ns, exposed_ns, kernel_ns): (
        tracelens_model::TimeNs,
        tracelens_model::TimeNs,
        tracelens_model::TimeNs,
    ),
) -> Fix {
    use crate::attribute::copies::IssueOrder;
    let already =
        format!("The {direction} copies already come from pinned memory on {streams} streams");
    let fix = if kernel_ns.saturating_mul(COPY_BOUND_RATIO) < copy_ns {
        format!(
            "{already}, and the kernels ({}) are far too short to hide the copies ({}): the link's bandwidth bounds the run. Copy less: keep the data on the GPU across iterations or runs, send compact types (convert on the GPU), or move only what changed.",
            tracelens_model::format_ms(kernel_ns),
            tracelens_model::format_ms(copy_ns)
        )
    } else if order == Some(IssueOrder::BreadthFirst) {
        format!("{already}, but they are issued breadth-first (every chunk's copy in, then every kernel, then every copy out): issue each chunk's copy-in, kernels and copy-out together on its own stream (depth-first), so one chunk's copies run while another computes, or copy less.")
    } else {
        format!(
            "{already}; {} of their time still overlaps no kernel: issue them earlier (a step or a chunk ahead, so they run under kernels already queued) or copy less (keep unchanged data on the GPU, send compact types and convert on the GPU).",
            tracelens_model::format_ms(exposed_ns)
        )
    };
    Fix {
        fix,
        advice: "Pinned asynchronous copies on several streams can overlap kernels only where a stream's copies have kernels of another stream to run beside; what does not overlap is bounded by the link.".into(),
        snippet: String::new(),
    }
}

/// Copies longer than this many times the kernels' time cannot be hidden behind them.
const COPY_BOUND_RATIO: i64 = 4;

/// The capture holds no record of the host's CPU work: how to record it. `nsight` when the
/// trace is an Nsight Systems export.
#[must_use]
pub fn record_cpu_work(dialect: Dialect, nsight: bool) -> (String, String) {
    if let Dialect::Python(_) = dialect {
        return library_advice::record_cpu_work(nsight);
    }
    let (fix, snippet) = match (dialect, nsight) {
        (Dialect::OpenAcc, true) => (
            "The trace records only the runtime's API calls, not what the host did around them, so the cause is not in it: profile again with the OpenACC and OS-runtime traces and CPU sampling (nsys profile -t openacc,cuda,nvtx,osrt -s cpu).",
            "nsys profile -t openacc,cuda,nvtx,osrt -s cpu ./program",
        ),
        (Dialect::OpenMp, true) => (
            "The trace records only the runtime's API calls, not what the host did around them, so the cause is not in it: profile again with the OpenMP and OS-runtime traces and CPU sampling (nsys profile -t openmp,cuda,nvtx,osrt -s cpu).",
            "nsys profile -t openmp,cuda,nvtx,osrt -s cpu ./program",
        ),
        (Dialect::CudaRuntime, true) => (
            "The trace records only API calls, not what the CPU did around them, so the cause is not in it: add NVTX ranges around the host phases and profile with nsys -t cuda,nvtx,osrt -s cpu.",
            "nvtxRangePushA(\"prepare batch\");\nprepare_batch();\nnvtxRangePop();\n// nsys profile -t cuda,nvtx,osrt -s cpu ./program",
        ),
        (_, true) => (
            "The trace records only API calls, not what the CPU did around them, so the cause is not in it: profile again with CPU sampling and the OS-runtime trace (nsys profile -t cuda,nvtx,osrt -s cpu), and mark the host phases with NVTX ranges.",
            "nsys profile -t cuda,nvtx,osrt -s cpu ./program",
        ),
        (_, false) => (
            "The trace records only API calls, not what the CPU did around them, so the cause is not in it: profile again recording the host's CPU activity and mark its phases with ranges.",
            "",
        ),
    };
    (fix.into(), snippet.into())
}

/// How to see the host's CPU work in an Nsight Systems capture that already sampled the CPU
/// or traced the OS runtime (`sampled`, `os_runtime`): never ask for what is on. `None`
/// when neither is, and [`record_cpu_work`] applies.
#[must_use]
pub fn see_cpu_work_in_capture(
    dialect: Dialect,
    sampled: bool,
    os_runtime: bool,
) -> Option<(String, String)> {
    let mark = match dialect {
        Dialect::PyTorch => "with torch.cuda.nvtx.range(\"prepare batch\"):\n    prepare_batch()",
        Dialect::Python(_) => {
            "import nvtx\nwith nvtx.annotate(\"prepare batch\"):\n    prepare_batch()"
        }
        Dialect::CudaRuntime => {
            "nvtxRangePushA(\"prepare batch\");\nprepare_batch();\nnvtxRangePop();"
        }
        // Directive programs may be Fortran: no C example.
        Dialect::OpenAcc | Dialect::OpenMp | Dialect::Neutral => "",
    };
    let fix = match (sampled, os_runtime) {
        (true, _) => format!(
            "The capture already holds CPU samples{}, but too few of them with call stacks fall in these gaps to say what the thread did: sample at a higher rate (nsys profile --sampling-frequency) with call stacks (--backtrace), and mark the host phases with NVTX ranges so the next capture names them.",
            if os_runtime { " and the OS-runtime trace" } else { "" }
        ),
        (false, true) => "The capture traces the OS runtime calls but does not sample the CPU, so what the thread computed between them is not in it: profile again with CPU sampling (nsys profile -s cpu, keeping -t osrt) and NVTX ranges around the host phases.".to_string(),
        (false, false) => return None,
    };
    Some((fix, mark.to_string()))
}

/// (fix, snippet) for CPU work the capture sampled between launches: the lever for what the
/// samples show most of, or the parts in order when no part holds half of them.
#[must_use]
pub fn sampled_cpu_work(
    work: &crate::attribute::cpu_samples::SampledHostWork,
    hardware: &crate::measure::environment::Hardware,
    dialect: Dialect,
) -> (String, String) {
    use crate::vocabulary::samples::SampledWork;
    let Some(top) = work.dominant() else {
        return (
            format!(
                "The capture's CPU samples show what the launching thread does while the GPU waits ({}): start with the largest, and mark these phases with NVTX ranges so the next capture names them.",
                work.describe()
            ),
            String::new(),
        );
    };
    let pct = work.percent(top);
    let place = &top.place;
    match top.work {
        SampledWork::PtxJit => ptx_jit_fix(pct, place, hardware, dialect),
        SampledWork::Compression => (
            format!("{pct:.0} % of the CPU samples here compress data (in {place}) while the GPU waits: write the output uncompressed or at a lower compression level, or hand it to another thread so the GPU's next work is queued first."),
            String::new(),
        ),
        SampledWork::Python => (
            format!("{pct:.0} % of the CPU samples here are the Python interpreter (in {place}): profile the Python between launches (py-spy, or torch.profiler with with_stack=True) to find the lines, then move that work off the path between launches."),
            String::new(),
        ),
        SampledWork::OsKernel => (
            format!("{pct:.0} % of the CPU samples here are in the operating system's kernel (page faults, file I/O; under {place}): allocate and touch buffers once before the loop instead of per iteration, and move file I/O off the launching thread."),
            String::new(),
        ),
        SampledWork::Profiler => (
            format!("{pct:.0} % of the CPU samples here are the profiler itself (in {place}): the capture's own overhead, which an unprofiled run does not pay. Profile with less (no -s cpu and fewer -t sources around the loop, or a shorter --capture-range) to see these gaps as the program has them."),
            String::new(),
        ),
        SampledWork::DynamicLoading => (
            format!("{pct:.0} % of the CPU samples here are the dynamic loader (in {place}): shared libraries loaded on first use, once per run; load them before the GPU work (or link them in) and judge the iterations after."),
            String::new(),
        ),
        SampledWork::Communication => (
            format!("{pct:.0} % of the CPU samples here are in the communication library (in {place}) while the GPU waits: post the exchange earlier and wait for it later (non-blocking sends and receives), so the GPU's next work is queued meanwhile."),
            String::new(),
        ),
        SampledWork::GpuRuntime => (
            format!("{pct:.0} % of the CPU samples here are inside the GPU driver and runtime (in {place}) outside the API calls the trace records: the driver's own work around the calls (memory management, synchronization, launch bookkeeping, and the profiler's tracing hooks). Make fewer driver calls per iteration: allocate once before the loop, and synchronize only where the host needs a result."),
            String::new(),
        ),
        SampledWork::Program => (
            format!("{pct:.0} % of the CPU samples here are in the program's own {place}, which runs between launches while the GPU waits: speed it up, run it before the GPU work or on another thread, or queue the GPU's next work before calling it."),
            String::new(),
        ),
    }
}

/// (fix, snippet) for PTX compiled by the driver at run time, in the program's words: a native
/// program is built with machine code for the GPU (its compute capability, when known), a
/// directive program with its compiler's target flag, and a Python program, whose kernels come
/// from its library, warms up before the loop and checks that its build covers the GPU.
fn ptx_jit_fix(
    pct: f64,
    place: &str,
    hardware: &crate::measure::environment::Hardware,
    dialect: Dialect,
) -> (String, String) {
    let (cc, sm) = hardware.compute.map_or_else(
        || ("XY".to_string(), "XY".to_string()),
        |(major, minor)| (format!("{major}{minor}"), format!("{major}{minor}")),
    );
    let what = format!("{pct:.0} % of the CPU samples here are the driver compiling PTX for this GPU at run time (in {place})");
    match dialect {
        Dialect::PyTorch | Dialect::Python(_) => (
            format!("{what}: the kernels the program's library loads carry no machine code for this GPU, so each is compiled at its first use. Run the model (or each kernel) once before the loop, so compilation is out of the steps, and use a build of the library compiled for this GPU's architecture (sm_{sm})."),
            String::new(),
        ),
        Dialect::OpenAcc | Dialect::OpenMp => (
            format!("{what}: the binary carries no machine code for this GPU. Compile for its architecture (NVIDIA HPC compilers: -gpu=cc{cc}; clang: --offload-arch=sm_{sm}), so nothing is compiled when the program runs."),
            String::new(),
        ),
        Dialect::Neutral => (
            format!("{what}: the program carries no machine code for this GPU's architecture (sm_{sm}). Build it, or get a build of it, with machine code for that architecture, so nothing is compiled when it runs."),
            String::new(),
        ),
        Dialect::CudaRuntime => (
            format!("{what}: the binary carries no machine code for this GPU's architecture. Build it with machine code for it (nvcc -gencode arch=compute_{cc},code=sm_{sm}), so nothing is compiled when the program runs; the driver's JIT cache (CUDA_CACHE_MAXSIZE) only spares later runs."),
            format!("nvcc -gencode arch=compute_{cc},code=sm_{sm} -o program program.cu"),
        ),
    }
}

/// One-time warm-up in a program that is not PyTorch: measure after it.
#[must_use]
pub fn warm_up(dialect: Dialect, nsight: bool) -> (String, String) {
    if let Dialect::Python(lib) = dialect {
        return library_advice::warm_up(lib, nsight);
    }
    if dialect == Dialect::CudaRuntime {
        return (
            "This is one-time warm-up (module load, first launches): start the capture after it (nsys --capture-range=cudaProfilerApi with cudaProfilerStart after warm-up) so the profile shows steady-state steps.".into(),
            "warm_up();\ncudaProfilerStart();   // nsys profile --capture-range=cudaProfilerApi ./program\nrun_steps();\ncudaProfilerStop();".into(),
        );
    }
    if nsight {
        return (
            "This is one-time warm-up (module load, first launches, compilation): start the capture after it — nsys profile --delay=SECONDS, or an NVTX range around the steady-state loop with --capture-range=nvtx — so the profile shows steady-state work.".into(),
            "nsys profile --capture-range=nvtx --nvtx-capture=steady ./program   # the loop inside an NVTX range named steady".into(),
        );
    }
    (
        "This is one-time warm-up (module load, first launches, compilation): start the capture after it so the profile shows steady-state work.".into(),
        String::new(),
    )
}

/// How to capture the steady state instead of a cold run, for the program and the tool that
/// recorded it.
#[must_use]
pub fn steady_state_capture(
    dialect: Dialect,
    capture: tracelens_model::CaptureTool,
) -> &'static str {
    use tracelens_model::CaptureTool;
    match (dialect, capture) {
        (Dialect::PyTorch, CaptureTool::NsightSystems) => "start the capture after the first iterations (torch.cuda.profiler.start() after warm-up with nsys profile --capture-range=cudaProfilerApi)",
        (Dialect::PyTorch, _) => "profile later calls: run the model a few times before the profiler starts, or in a loop use torch.profiler.schedule(wait=1, warmup=2, active=3) with prof.step() each iteration",
        (Dialect::Python(_), CaptureTool::NsightSystems) => "start the capture after the first iterations (an nvtx.annotate range around the later ones with nsys profile --capture-range=nvtx, or --delay)",
        (_, CaptureTool::NsightSystems) => "start the capture after the first iterations (cudaProfilerStart() after warm-up with nsys profile --capture-range=cudaProfilerApi, or --delay)",
        _ => "start the capture after the first iterations",
    }
}

/// How to capture one working phase of a run that pauses, for the program and the tool that
/// recorded it.
#[must_use]
pub fn phase_capture(dialect: Dialect, capture: tracelens_model::CaptureTool) -> &'static str {
    use tracelens_model::CaptureTool;
    match (dialect, capture) {
        (Dialect::PyTorch, CaptureTool::NsightSystems) => "torch.cuda.profiler.start() and stop() around it, with nsys profile --capture-range=cudaProfilerApi",
        (Dialect::PyTorch, _) => "open the profiler around that part only (or torch.profiler.schedule with prof.step() in its loop)",
        (Dialect::Python(_), CaptureTool::NsightSystems) => "an nvtx.annotate range around it, with nsys profile --capture-range=nvtx",
        (_, CaptureTool::NsightSystems) => "cudaProfilerStart() and cudaProfilerStop() around it, with nsys profile --capture-range=cudaProfilerApi",
        _ => "start and stop the capture around it",
    }
}

/// How to capture a window long enough to judge, for the program and the tool that recorded
/// it (a profiling cycle cut short by the end of the run is a few microseconds long).
#[must_use]
pub fn longer_capture(dialect: Dialect, capture: tracelens_model::CaptureTool) -> &'static str {
    use tracelens_model::CaptureTool;
    match (dialect, capture) {
        (Dialect::PyTorch, CaptureTool::NsightSystems) => "capture several full iterations (nsys profile --capture-range=cudaProfilerApi around a few steps)",
        (Dialect::PyTorch, _) => "profile several full steps (torch.profiler.schedule(wait=1, warmup=1, active=3)), and let the run reach the end of its last cycle: a cycle the run's end cuts short is this short",
        _ => "capture several full iterations of the program's main loop",
    }
}

/// Host time inside one annotated range with nothing finer recorded.
#[must_use]
pub fn inside_range(range: Option<&str>, dialect: Dialect) -> (String, String) {
    let what = range.map_or("an annotated range".to_string(), |r| {
        format!("the range {r}")
    });
    match dialect {
        Dialect::CudaRuntime | Dialect::OpenAcc | Dialect::OpenMp => (
            format!("The time is inside {what} with nothing finer recorded: add nested NVTX ranges inside it to see which part of it keeps the GPU waiting."),
            "nvtxRangePushA(\"inner phase\");\ninner_phase();\nnvtxRangePop();".into(),
        ),
        Dialect::PyTorch | Dialect::Neutral | Dialect::Python(_) => (
            format!("The time is inside {what} with nothing finer recorded: add nested ranges inside it to see which part of it keeps the GPU waiting."),
            String::new(),
        ),
    }
}

/// Host work between launches that keeps the GPU waiting, in a program that is not PyTorch.
#[must_use]
pub fn overlap_host_work(dialect: Dialect) -> (String, String) {
    if let Dialect::Python(lib) = dialect {
        return library_advice::overlap_host_work(lib);
    }
    let fix = "Launch the next GPU work before the CPU work that follows it, or move that CPU work to another thread, so the queue never drains.";
    let snippet = match dialect {
        Dialect::CudaRuntime => "// enqueue the next kernels first, then do the host work\nkernel<<<grid, block, 0, stream>>>(...);\nhost_work();   // overlaps the queued kernels",
        Dialect::OpenAcc => "!$acc parallel loop async(1)   ! queue the next region first\n  ...\ncall host_work()               ! overlaps the queued region\n!$acc wait(1)",
        Dialect::OpenMp => "#pragma omp target teams distribute parallel for nowait   // queue first\nfor (...) { ... }\nhost_work();   // overlaps the target region\n#pragma omp taskwait",
        Dialect::PyTorch | Dialect::Neutral | Dialect::Python(_) => "",
    };
    (fix.into(), snippet.into())
}

/// The launching thread waits for a core, in a program that is not PyTorch.
#[must_use]
pub fn thread_pools(dialect: Dialect) -> Fix {
    let snippet = match dialect {
        Dialect::Neutral | Dialect::PyTorch | Dialect::Python(_) => "",
        _ => "export OMP_NUM_THREADS=4\ntaskset -c 0-7 ./program",
    };
    Fix::new(
        "Give the launching thread its core: bound OMP_NUM_THREADS and other thread pools to the free cores and pin the process with taskset or numactl.",
        "More threads want the cores than there are, so the thread that launches GPU work waits to run: bound the thread pools, pin the process, and check for other jobs on the node.",
        snippet,
    )
}

/// The language a snippet of `dialect` is written in, for a Markdown fence.
#[must_use]
pub fn snippet_language(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::PyTorch | Dialect::Python(_) => "python",
        Dialect::CudaRuntime | Dialect::OpenMp => "c",
        Dialect::OpenAcc | Dialect::Neutral => "text",
    }
}

/// Words a fix for `dialect` must not contain: another program's APIs and tools.
/// PyTorch's words: no other program may be told them.
#[cfg(test)]
const PYTORCH_WORDS: [&str; 5] = [
    "torch",
    "DataLoader",
    "num_workers",
    "non_blocking",
    "pin_memory",
];

/// The CUDA runtime's words: directive and unidentified programs may not be told them.
#[cfg(test)]
const CUDA_RUNTIME_WORDS: [&str; 4] = ["cudaMalloc", "cudaMemcpy", "cudaGraph", "cudaStream"];

/// Words a fix for `dialect` must not contain: another program's APIs and tools.
#[cfg(test)]
pub(crate) fn foreign_words(dialect: Dialect) -> Vec<&'static str> {
    let (pytorch, cuda, own): (bool, bool, &[&'static str]) = match dialect {
        Dialect::PyTorch => (
            false,
            false,
            &[
                "!$acc",
                "#pragma acc",
                "#pragma omp",
                "cudaMallocHost",
                "cudaMemcpyAsync(",
                "cudaStreamBeginCapture",
            ],
        ),
        Dialect::CudaRuntime => (true, false, &["!$acc", "#pragma acc", "#pragma omp"]),
        Dialect::OpenAcc => (true, true, &["#pragma omp"]),
        Dialect::OpenMp => (true, true, &["acc "]),
        Dialect::Neutral => (
            true,
            true,
            &["CUDA graph", "acc ", "#pragma omp", "nvtxRange"],
        ),
        Dialect::Python(_) => (true, true, &["acc ", "#pragma omp", "nvtxRange"]),
    };
    let mut words = own.to_vec();
    if pytorch {
        words.extend(PYTORCH_WORDS);
    }
    if cuda {
        words.extend(CUDA_RUNTIME_WORDS);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::environment::PythonLibrary;

    const ALL: [Dialect; 9] = [
        Dialect::PyTorch,
        Dialect::CudaRuntime,
        Dialect::OpenAcc,
        Dialect::OpenMp,
        Dialect::Neutral,
        Dialect::Python(PythonLibrary::CuPy),
        Dialect::Python(PythonLibrary::CuDf),
        Dialect::Python(PythonLibrary::Numba),
        Dialect::Python(PythonLibrary::Jax),
    ];

    /// Every fix of this module, for every dialect.
    fn every_fix(d: Dialect) -> Vec<String> {
        let mut out = Vec::new();
        for w in [
            HostWait::StreamOrEvent,
            HostWait::DeviceOrCopy,
            HostWait::Free,
            HostWait::ValueRead,
        ] {
            out.extend(<[String; 3]>::from(host_wait(w, d).parts()));
        }
        out.extend(<[String; 3]>::from(pageable_copies(d).parts()));
        out.extend(<[String; 3]>::from(
            link_copies("host-to-device", d).parts(),
        ));
        out.extend(<[String; 3]>::from(device_copies(d).parts()));
        out.extend(<[String; 3]>::from(
            peer_copies(d, Some("GPU 0 → GPU 1")).parts(),
        ));
        out.extend(<[String; 3]>::from(thread_pools(d).parts()));
        for (a, b) in [
            launch_overhead(d),
            record_cpu_work(d, true),
            record_cpu_work(d, false),
            warm_up(d, true),
            warm_up(d, false),
            inside_range(Some("main"), d),
            overlap_host_work(d),
        ] {
            out.push(a);
            out.push(b);
        }
        out
    }

    #[test]
    fn each_dialect_names_only_its_own_tools() {
        for d in ALL {
            for text in every_fix(d) {
                for w in foreign_words(d) {
                    assert!(!text.contains(w), "{d:?} names {w:?}: {text}");
                }
            }
        }
        for d in ALL {
            assert!(every_fix(d).iter().all(|t| !t.contains("tracelens job")));
        }
    }
}
