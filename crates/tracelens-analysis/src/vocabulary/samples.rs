//! What a sampled CPU stack is doing, told by the modules and functions in it: the CUDA
//! driver compiling PTX, compression, the GPU runtime, the Python interpreter, the operating
//! system's kernel, or the program's own code.

/// What a sampled stack is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SampledWork {
    /// The CUDA driver compiling PTX for this GPU at run time.
    PtxJit,
    /// Compressing data (zlib's deflate: writing a PNG, a compressed file).
    Compression,
    /// Inside the CUDA or HIP driver or runtime: launches, copies, waits, set-up.
    GpuRuntime,
    /// The Python interpreter.
    Python,
    /// The profiler itself (Nsight Systems' injection library, CUPTI): overhead the capture
    /// adds, absent from an unprofiled run.
    Profiler,
    /// The dynamic loader, loading and linking shared libraries.
    DynamicLoading,
    /// The communication library (MPI, UCX, NCCL's host side).
    Communication,
    /// The operating system's kernel: page faults, I/O, scheduling.
    OsKernel,
    /// The program's own code, or a library it calls.
    Program,
}

impl SampledWork {
    /// In a phrase ("PTX compiled for this GPU at run time by the driver").
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            SampledWork::PtxJit => "PTX compiled for this GPU at run time by the driver",
            SampledWork::Compression => "zlib compression",
            SampledWork::GpuRuntime => "the GPU driver and runtime",
            SampledWork::Python => "the Python interpreter",
            SampledWork::Profiler => "the profiler itself",
            SampledWork::DynamicLoading => "the dynamic loader",
            SampledWork::Communication => "the communication library",
            SampledWork::OsKernel => "the OS kernel (page faults, I/O)",
            SampledWork::Program => "the program's own code",
        }
    }
}

/// Whether a sampled frame's symbol is an address the export could not resolve (`0x7f3a…`).
#[must_use]
pub fn is_unresolved(symbol: &str) -> bool {
    symbol.starts_with("0x")
}

/// The file name of a module path (`/usr/lib/libz.so.1` → `libz.so.1`).
#[must_use]
pub fn module_file(module: &str) -> &str {
    module.rsplit(['/', '\\']).next().unwrap_or(module)
}

/// Whether a module is the program's own executable: not a shared library, not the kernel,
/// not an interpreter.
#[must_use]
pub fn is_program_module(module: &str) -> bool {
    let file = module_file(module).to_ascii_lowercase();
    !file.is_empty()
        && !file.contains(".so")
        && !file.ends_with(".dll")
        && !file.starts_with('[')
        && !file.starts_with("python")
        && file != "vmlinux"
}

/// Whether a module is the C or C++ runtime (libc, libpthread, libstdc++, libm, libgcc):
/// work there is done for whoever called it.
fn is_system_library(file: &str) -> bool {
    [
        "libc.",
        "libc-",
        "libpthread",
        "libstdc++",
        "libm.",
        "libm-",
        "libgcc",
        "libdl",
        "librt",
    ]
    .iter()
    .any(|p| file.starts_with(p))
}

/// What a stack (`(symbol, module)` frames, innermost first) is doing: a PTX compiler anywhere
/// in it is the JIT; else the innermost frame outside the C runtime decides (a `memcpy` works
/// for whoever called it).
#[must_use]
pub fn classify(frames: &[(&str, &str)]) -> SampledWork {
    let lower = |s: &str| s.to_ascii_lowercase();
    if frames
        .iter()
        .any(|(_, m)| lower(m).contains("ptxjitcompiler"))
    {
        return SampledWork::PtxJit;
    }
    let decides = frames
        .iter()
        .find(|(_, m)| !is_system_library(&lower(module_file(m))))
        .or(frames.first());
    let Some(&(symbol, module)) = decides else {
        return SampledWork::Program;
    };
    let (symbol, file) = (lower(symbol), lower(module_file(module)));
    if file.starts_with("libz.") || symbol.contains("deflate") || symbol.contains("zlib") {
        SampledWork::Compression
    } else if file.starts_with("libtoolsinjection")
        || file.starts_with("libcupti")
        || file.starts_with("libnvperf")
        || file.starts_with("librocprof")
        || file.starts_with("libroctracer")
    {
        SampledWork::Profiler
    } else if file.starts_with("ld-") || file.starts_with("ld.") {
        SampledWork::DynamicLoading
    } else if file.starts_with("libcuda.")
        || file.starts_with("libcudart")
        || file.starts_with("libamdhip")
        || file.starts_with("libhsa-runtime")
        || file.starts_with("nvcuda")
        || file.starts_with("libacc")
        || file.starts_with("libnvomp")
        || file.starts_with("libomptarget")
    {
        SampledWork::GpuRuntime
    } else if [
        "libucm",
        "libucs",
        "libucp",
        "libuct",
        "libmpi",
        "libnccl",
        "librccl",
        "libfabric",
    ]
    .iter()
    .any(|p| file.starts_with(p))
    {
        SampledWork::Communication
    } else if file.starts_with("libpython") || file.starts_with("python") {
        SampledWork::Python
    } else if file.starts_with('[') || file == "vmlinux" {
        SampledWork::OsKernel
    } else {
        SampledWork::Program
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_from_real_exports_read_right() {
        let jit = [
            (
                "0x7f3a",
                "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.535.104.05",
            ),
            (
                "cuLaunchKernel",
                "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
            ),
            ("main", "/home/u/mandelbrot/mandelbrot"),
        ];
        assert_eq!(classify(&jit), SampledWork::PtxJit);
        let png = [
            ("stbiw__zlib_compress", "/home/u/mandelbrot/mandelbrot"),
            ("stbi_write_png", "/home/u/mandelbrot/mandelbrot"),
        ];
        assert_eq!(classify(&png), SampledWork::Compression);
        assert_eq!(
            classify(&[("calculateReference", "/home/u/knn/test")]),
            SampledWork::Program
        );
        assert_eq!(
            classify(&[("clear_page_erms", "[kernel.kallsyms]")]),
            SampledWork::OsKernel
        );
        assert_eq!(
            classify(&[("_PyEval_EvalFrameDefault", "/usr/bin/python3.10")]),
            SampledWork::Python
        );
        let profiler = [
            ("memcpy", "/lib64/libc-2.17.so"),
            (
                "0x7f00",
                "/opt/nvidia/nsight-systems/target-linux-x64/libToolsInjection64.so",
            ),
        ];
        assert_eq!(classify(&profiler), SampledWork::Profiler);
        assert_eq!(
            classify(&[("_dl_relocate_object", "/lib64/ld-2.17.so")]),
            SampledWork::DynamicLoading
        );
        assert_eq!(
            classify(&[(
                "__pgi_uacc_cuda_wait",
                "/opt/nvidia/hpc_sdk/lib/libacchost.so"
            )]),
            SampledWork::GpuRuntime
        );
        assert!(is_program_module("/home/u/knn/test"));
        assert!(!is_program_module("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(!is_program_module("[kernel.kallsyms]"));
    }
}
