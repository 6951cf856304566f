//! The recurring fixes of [`crate::diagnose::advice`] in the words of a Python GPU library:
//! CuPy's arrays, memory pools and kernel fusion, cuDF's frames and RMM pool, Numba's device
//! arrays and kernels, JAX's `jit` and asynchronous dispatch. Each says what to change in that
//! library's API; nothing here names PyTorch or the CUDA runtime's C calls.

use crate::diagnose::fix::{Fix, HostWait};
use crate::measure::environment::PythonLibrary;

/// A host-blocking call (a free, a synchronize, a blocking copy) in a library's program.
#[must_use]
pub fn host_wait(wait: HostWait, lib: PythonLibrary) -> Fix {
    use PythonLibrary::{CuDf, CuPy, Jax, Numba};
    match (lib, wait) {
        (CuPy, HostWait::Free) => Fix::new(
            "Keep CuPy's memory pool: do not call free_all_blocks() (or set a pool limit that forces frees) inside the loop, and reuse arrays with out= instead of allocating new ones each iteration.",
            "A device free waits for all queued GPU work, so the queue drains; CuPy's default memory pool keeps freed blocks for reuse and frees to the driver only when told to.",
            "pool = cupy.get_default_memory_pool()\n# no pool.free_all_blocks() inside the loop\ncupy.add(a, b, out=buf)   # reuse buf each iteration",
        ),
        (CuDf, HostWait::Free) => Fix::new(
            "Give RMM a pool so cuDF's allocations and frees stay inside it: rmm.reinitialize(pool_allocator=True) once at start-up (or the cudf.pandas / dask-cuda pool options).",
            "Without a pool, each column cuDF allocates and frees goes to the driver, and a device free waits for all queued GPU work.",
            "import rmm\nrmm.reinitialize(pool_allocator=True, initial_pool_size=2**30)   # once, before cuDF work",
        ),
        (Numba, HostWait::Free) => Fix::new(
            "Allocate the device arrays once, outside the loop (cuda.device_array / cuda.to_device), and pass them to every launch instead of creating new ones per iteration.",
            "Each device array Numba frees returns its memory to the driver, and a device free waits for all queued GPU work.",
            "d_out = cuda.device_array(n, dtype=np.float32)   # once\nfor step in range(steps):\n    kernel[blocks, threads](d_in, d_out)",
        ),
        (Jax, HostWait::Free) => Fix::new(
            "Let XLA keep its memory: unset XLA_PYTHON_CLIENT_ALLOCATOR=platform (and XLA_PYTHON_CLIENT_PREALLOCATE=false where memory allows), so buffers come from its pool instead of the driver.",
            "With the platform allocator each buffer is allocated and freed through the driver, and a device free waits for all queued GPU work.",
            "# unset XLA_PYTHON_CLIENT_ALLOCATOR; keep the default BFC pool\nexport XLA_PYTHON_CLIENT_MEM_FRACTION=0.9",
        ),
        (CuPy, _) => Fix::new(
            "Keep results on the GPU inside the loop: no .get(), cupy.asnumpy(), float()/int() of an array or Stream.synchronize() per iteration; reduce on the GPU and read once after the loop.",
            "Reading a CuPy array on the host, or synchronizing its stream, waits for every queued kernel, so the GPU idles while Python prepares the next launches.",
            "total = cupy.zeros((), dtype=cupy.float32)\nfor batch in batches:\n    total += step(batch).sum()   # stays on the GPU\nprint(float(total))              # one read, after the loop",
        ),
        (CuDf, _) => Fix::new(
            "Keep the work in cuDF until the end: no .to_pandas(), .values_host, .to_numpy() or printing of intermediate results inside the loop; combine the operations (one groupby().agg({...}) instead of several) and convert once.",
            "Each conversion to host memory waits for every queued kernel and copies the column across the link, so the GPU idles in between.",
            "out = df.groupby(\"key\").agg({\"a\": \"sum\", \"b\": \"mean\"})   # one pass\nresult = out.to_pandas()                                   # once, at the end",
        ),
        (Numba, _) => Fix::new(
            "Keep the arrays on the device across launches: copy in once with cuda.to_device, launch the kernels back to back, and copy_to_host (or cuda.synchronize()) only where the host needs the result.",
            "Numba launches are asynchronous, but copy_to_host and cuda.synchronize() wait for every queued kernel, so the GPU idles while the host prepares the next launch.",
            "d_x = cuda.to_device(x)          # once\nfor step in range(steps):\n    kernel[blocks, threads](d_x)  # no copy back per step\nx = d_x.copy_to_host()           # once, after the loop",
        ),
        (Jax, _) => Fix::new(
            "Let JAX dispatch ahead: no block_until_ready(), float()/np.asarray() of a result or printing inside the loop; keep metrics as arrays and read them every N steps or after the loop.",
            "JAX dispatches asynchronously; reading a result on the host waits for every queued computation, so the GPU idles while Python traces and dispatches the next step.",
            "for step in range(steps):\n    state, loss = train_step(state, batch)   # returns at once\n    if step % 100 == 0:\n        print(float(loss))                    # read rarely",
        ),
    }
}

/// Copies from or to pageable host memory.
#[must_use]
pub fn pageable_copies(lib: PythonLibrary) -> Fix {
    let advice = "Copies from pageable memory are staged through a driver buffer, block the host and cannot overlap kernels.";
    match lib {
        PythonLibrary::CuPy => Fix::new(
            "Copy through pinned host buffers (cupyx.empty_pinned) on a non-default stream (ndarray.set(host, stream=s) / .get(stream=s, out=pinned)), or keep the data on the GPU so it crosses the link less often.",
            advice,
            "host = cupyx.empty_pinned(shape, dtype=numpy.float32)\ns = cupy.cuda.Stream()\nd.set(host, stream=s)   # asynchronous from pinned memory",
        ),
        PythonLibrary::Numba => Fix::new(
            "Copy through pinned host arrays (cuda.pinned_array, or with cuda.pinned(a):) and pass a stream to to_device / copy_to_host so the copies run asynchronously.",
            advice,
            "h = cuda.pinned_array(n, dtype=np.float32)\ns = cuda.stream()\nd = cuda.to_device(h, stream=s)   # asynchronous from pinned memory",
        ),
        PythonLibrary::CuDf => Fix::new(
            "Read the data straight into GPU memory (cudf.read_parquet / read_csv) instead of building frames from pandas or NumPy on the host, and convert back to pandas once at the end.",
            advice,
            "df = cudf.read_parquet(path)   # not cudf.from_pandas(pd.read_parquet(path))",
        ),
        PythonLibrary::Jax => Fix::new(
            "Put the next batch on the device ahead of use (jax.device_put while the current step runs, or a prefetching input pipeline) and keep state on the device, so no step waits for a host copy.",
            advice,
            "next_batch = jax.device_put(host_batch)   # issued before the current step is read\nstate, loss = train_step(state, batch)",
        ),
    }
}

/// Per-launch overhead (kernels shorter than their launches): `(fix, snippet)`.
#[must_use]
pub fn launch_overhead(lib: PythonLibrary) -> (String, String) {
    let (fix, snippet) = match lib {
        PythonLibrary::CuPy => (
            "Launch fewer, larger kernels: fuse the elementwise chain with @cupy.fuse (or one ElementwiseKernel/RawKernel), or capture the loop body once in a CUDA graph (Stream.begin_capture / end_capture, then graph.launch()).",
            "@cupy.fuse()\ndef step(x, y, a):\n    return a * x + y          # one kernel instead of two",
        ),
        PythonLibrary::CuDf => (
            "Give cuDF fewer, larger operations: one groupby().agg({...}) over several columns instead of one call per column, vectorized column expressions instead of apply()/row loops, and whole frames instead of small batches.",
            "df.groupby(\"key\").agg({\"a\": \"sum\", \"b\": \"max\"})   # one groupby, not two",
        ),
        PythonLibrary::Numba => (
            "Do more work per launch: merge consecutive @cuda.jit kernels into one, loop inside the kernel (a grid-stride loop) instead of launching per element block or per iteration from Python.",
            "@cuda.jit\ndef step(x, y, a):\n    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):\n        y[i] = a * x[i] + y[i]",
        ),
        PythonLibrary::Jax => (
            "Compile more of the loop into one program: jax.jit the whole step (not its pieces), and move the Python loop into jax.lax.scan / fori_loop so XLA launches it as one executable.",
            "@jax.jit\ndef run(state, xs):\n    return jax.lax.scan(step, state, xs)   # one dispatch for the whole loop",
        ),
    };
    (fix.into(), snippet.into())
}

/// Copies across the host link that kernels could overlap; `direction` in words.
#[must_use]
pub fn link_copies(direction: &str, lib: PythonLibrary) -> Fix {
    let advice = "Copies across the host link are bounded by its bandwidth; on the compute stream they serialize with kernels.";
    let (text, snippet) = match lib {
        PythonLibrary::CuPy => (
            format!("Copy less and overlap the rest: keep arrays on the GPU between steps, and issue the {direction} copies from pinned buffers (cupyx.empty_pinned) on their own cupy.cuda.Stream so kernels run meanwhile."),
            "copy_stream = cupy.cuda.Stream()\nd_next.set(pinned_next, stream=copy_stream)   # overlaps the current kernels",
        ),
        PythonLibrary::Numba => (
            format!("Copy less and overlap the rest: keep device arrays between launches, and issue the {direction} copies from pinned arrays on their own cuda.stream() so kernels run meanwhile."),
            "s = cuda.stream()\nd_next = cuda.to_device(pinned_next, stream=s)   # overlaps the current kernels",
        ),
        PythonLibrary::CuDf => (
            format!("Copy less: keep the frames in GPU memory between operations and move the {direction} data once (read files straight into cuDF; to_pandas once at the end)."),
            "",
        ),
        PythonLibrary::Jax => (
            format!("Copy less and overlap the rest: keep parameters and state on the device, and put the next batch there ahead of use (jax.device_put or a prefetching loader), so the {direction} copies overlap the current step."),
            "",
        ),
    };
    Fix {
        fix: text,
        advice: advice.into(),
        snippet: snippet.into(),
    }
}

/// One-time work (context creation, first kernel compilation, module load): measure after
/// it. `nsight` when the trace is an Nsight Systems export.
#[must_use]
pub fn warm_up(lib: PythonLibrary, nsight: bool) -> (String, String) {
    let what = match lib {
        PythonLibrary::CuPy => {
            "CuPy compiles and loads each kernel on its first call (cached on disk afterwards)"
        }
        PythonLibrary::CuDf => "cuDF's first calls load its kernels and create the memory pool",
        PythonLibrary::Numba => "Numba compiles each @cuda.jit kernel on its first call",
        PythonLibrary::Jax => "jax.jit traces and compiles on the first call of each shape",
    };
    let how = match (lib, nsight) {
        (PythonLibrary::CuPy, true) => "profile only the later iterations: wrap them in `with cupyx.profiler.profile():` and run nsys profile --capture-range=cudaProfilerApi",
        (PythonLibrary::Numba, true) => "profile only the later iterations: put cuda.profile_start() / cuda.profile_stop() around them and run nsys profile --capture-range=cudaProfilerApi",
        (_, true) => "profile only the later iterations: put them in an nvtx.annotate range and run nsys profile --capture-range=nvtx (or --delay=SECONDS)",
        (_, false) => "start the capture after it",
    };
    (
        format!("This is one-time warm-up: {what}. Run the work once before measuring and {how}, so the profile shows the steady state."),
        "step(x)        # warm-up: compile and load once\n# profile from here".into(),
    )
}

/// The capture holds no record of the host's CPU work: how to record it in a Python program.
#[must_use]
pub fn record_cpu_work(nsight: bool) -> (String, String) {
    if nsight {
        (
            "The trace records only API calls, not what Python did around them, so the cause is not in it: profile again with Python sampling and the OS-runtime trace (nsys profile --python-sampling=true -t cuda,nvtx,osrt -s cpu), and mark the phases with nvtx.annotate ranges.".into(),
            "nsys profile --python-sampling=true -t cuda,nvtx,osrt -s cpu python script.py".into(),
        )
    } else {
        (
            "The trace records only API calls, not what Python did around them, so the cause is not in it: profile again with a Python sampler (py-spy record) or mark the phases with nvtx.annotate ranges.".into(),
            "with nvtx.annotate(\"prepare batch\"):\n    batch = prepare()".into(),
        )
    }
}

/// Host work between launches that keeps the GPU waiting: `(fix, snippet)`.
#[must_use]
pub fn overlap_host_work(lib: PythonLibrary) -> (String, String) {
    let snippet = match lib {
        PythonLibrary::Jax => "state, loss = train_step(state, batch)   # dispatched, returns at once\nnext_batch = prepare()                   # overlaps the step",
        _ => "out = step(d_x)        # queued on the GPU, returns at once\nnext_x = prepare()      # overlaps the queued kernels",
    };
    (
        "Queue the next GPU work before the Python work that follows it (launches return at once), or move that work to another thread, so the GPU's queue never drains.".into(),
        snippet.into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [PythonLibrary; 4] = [
        PythonLibrary::CuPy,
        PythonLibrary::CuDf,
        PythonLibrary::Numba,
        PythonLibrary::Jax,
    ];

    #[test]
    fn each_library_is_told_its_own_api_only() {
        // (library, a word of another library's API it must not be told)
        let foreign: [(PythonLibrary, &[&str]); 4] = [
            (
                PythonLibrary::CuPy,
                &["jax", "numba", "cuda.jit", "rmm", "cudf"],
            ),
            (
                PythonLibrary::CuDf,
                &["jax", "cuda.jit", "cupyx", "cupy.fuse"],
            ),
            (PythonLibrary::Numba, &["jax", "cupy", "rmm", "cudf"]),
            (PythonLibrary::Jax, &["cupy", "cuda.jit", "rmm", "cudf"]),
        ];
        for (lib, words) in foreign {
            let mut texts: Vec<String> = Vec::new();
            for w in [
                HostWait::Free,
                HostWait::StreamOrEvent,
                HostWait::DeviceOrCopy,
                HostWait::ValueRead,
            ] {
                texts.extend(<[String; 3]>::from(host_wait(w, lib).parts()));
            }
            texts.extend(<[String; 3]>::from(pageable_copies(lib).parts()));
            texts.extend(<[String; 3]>::from(
                link_copies("host-to-device", lib).parts(),
            ));
            for (a, b) in [
                launch_overhead(lib),
                warm_up(lib, true),
                overlap_host_work(lib),
            ] {
                texts.push(a);
                texts.push(b);
            }
            for t in &texts {
                for w in words {
                    assert!(!t.to_lowercase().contains(w), "{lib:?} told {w:?}: {t}");
                }
                for w in ["torch", "cudaMalloc", "cudaMemcpy", "!$acc", "#pragma"] {
                    assert!(!t.contains(w), "{lib:?} told {w:?}: {t}");
                }
            }
        }
        assert_eq!(ALL.len(), foreign.len());
    }
}
