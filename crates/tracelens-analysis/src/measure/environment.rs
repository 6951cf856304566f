//! What the trace shows of the software that produced it: the PyTorch version range, the
//! optimizer, whether the step is compiled or replayed as CUDA/HIP graphs. Advice reads it to
//! suggest only APIs that exist in that version and that the code does not already use.

pub use crate::vocabulary::api::{GpuApi, Offload};
pub use crate::vocabulary::libraries::PythonLibrary;
use crate::vocabulary::{devices, libraries, ops};
use serde::Serialize;
use tracelens_model::{NameId, SpanKind, Trace};

/// A PyTorch `major.minor` version.
pub type TorchVersion = tracelens_model::Version;

/// `torch.cuda.graph` / `torch.cuda.CUDAGraph` capture.
pub const CUDA_GRAPHS: TorchVersion = TorchVersion::new(1, 10);
/// `torch.compile` and fused Adam/AdamW.
pub const TORCH_COMPILE: TorchVersion = TorchVersion::new(2, 0);
/// The `foreach=` optimizer argument.
pub const OPTIMIZER_FOREACH: TorchVersion = TorchVersion::new(1, 12);
/// `fused=True` for SGD.
pub const FUSED_SGD: TorchVersion = TorchVersion::new(2, 4);

/// What a trace records of its threads' scheduling.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadRecords {
    /// When threads leave and return to the CPU (context switches).
    pub switches: bool,
    /// Why they leave it (preempted or waiting).
    pub states: bool,
}

/// The software facts advice depends on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Framework {
    /// Oldest PyTorch the trace can come from (format generation, compiled regions).
    pub torch_min: Option<TorchVersion>,
    /// Newest PyTorch the trace can come from (format generation).
    pub torch_max: Option<TorchVersion>,
    /// Optimizer class from `Optimizer.step#NAME.step` (`SGD`, `AdamW`, `FusedAdam`).
    pub optimizer: Option<String>,
    /// A fused optimizer is already in use.
    pub fused_optimizer: bool,
    /// `_foreach_*` ops are already in use.
    pub foreach_optimizer: bool,
    /// `torch.compile` regions run (`CompiledFunction`, `Torch-Compiled Region`).
    pub compiled: bool,
    /// CUDA/HIP graphs are replayed.
    pub graphs: bool,
    /// What kind of program recorded the trace (advice names PyTorch APIs only for PyTorch).
    pub program: Program,
    /// Whether the trace records CPU work at all (ops, annotations, Python frames): without
    /// it, what the CPU did between API calls is not in the trace.
    pub cpu_ops_recorded: bool,
    /// Whether the capture holds CPU samples (Nsight Systems `-s cpu`), read or not.
    pub cpu_sampled: bool,
    /// Whether their call stacks were read (the export holds `SAMPLING_CALLCHAINS`).
    #[serde(default)]
    pub cpu_stacks_read: bool,
    /// Whether the capture traced OS runtime calls (Nsight Systems `-t osrt`).
    pub os_runtime_traced: bool,
    /// The API the host launches GPU work through, from the API calls the trace records.
    #[serde(default)]
    pub gpu_api: GpuApi,
    /// Directive-based offload the kernels were compiled from, from their names.
    #[serde(default)]
    pub offload: Option<Offload>,
    /// MPI calls are in the trace (`MPI_*` ranges).
    #[serde(default)]
    pub mpi: bool,
    /// The tool that recorded the trace (how to profile again is said in its options).
    #[serde(default)]
    pub capture: tracelens_model::CaptureTool,
    /// The Python GPU library that launches the work, in a Python program without PyTorch
    /// (CuPy, cuDF, Numba, JAX), from its kernel names, NVTX domains and module ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<PythonLibrary>,
}

/// The words a fix is written in, decided once from the program model: a fix names only
/// APIs of the program's own runtime, and a program the trace does not identify gets
/// tool-neutral advice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// PyTorch APIs (`torch.*`, DataLoader, `torch.compile`).
    PyTorch,
    /// A native program on the CUDA runtime API (C, C++, CUDA Fortran).
    CudaRuntime,
    /// OpenACC directives (`!$acc` / `#pragma acc`).
    OpenAcc,
    /// OpenMP target directives (`!$omp target` / `#pragma omp target`).
    OpenMp,
    /// A Python GPU library's own API (CuPy arrays and memory pools, cuDF frames, Numba
    /// kernels, `jax.jit`).
    Python(PythonLibrary),
    /// No program identified (or one whose API tracelens does not write fixes in): what to
    /// change, in no tool's vocabulary.
    Neutral,
}

/// What kind of program the trace comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Program {
    /// PyTorch (ATen ops, autograd, optimizer steps, profiler steps).
    #[serde(rename = "pytorch")]
    PyTorch,
    /// Python without PyTorch in the trace (CuPy, Numba, JAX through CUDA): a Python process
    /// launches the GPU work.
    Python,
    /// A native program (C, C++, Fortran): launching processes are known, none is Python, and
    /// nothing of PyTorch is in the trace.
    Native,
    /// The trace does not say.
    #[default]
    Unknown,
}

impl Framework {
    /// Whether advice may name PyTorch APIs: the trace is PyTorch's (never for a program the
    /// trace does not identify).
    #[must_use]
    pub fn pytorch(&self) -> bool {
        self.program == Program::PyTorch
    }

    /// Whether the trace was recorded with Nsight Systems.
    #[must_use]
    pub fn nsight(&self) -> bool {
        self.capture == tracelens_model::CaptureTool::NsightSystems
    }

    /// The words fixes are written in for this program.
    #[must_use]
    pub fn dialect(&self) -> Dialect {
        if let (Program::Python, Some(lib)) = (self.program, self.library) {
            return Dialect::Python(lib);
        }
        match (self.program, self.offload, self.gpu_api) {
            (Program::PyTorch, _, _) => Dialect::PyTorch,
            (_, Some(Offload::OpenAcc), _) => Dialect::OpenAcc,
            (_, Some(Offload::OpenMp), _) => Dialect::OpenMp,
            (Program::Native | Program::Unknown, None, GpuApi::CudaRuntime) => Dialect::CudaRuntime,
            _ => Dialect::Neutral,
        }
    }

    /// The program model in words (`native program, OpenACC offload, CUDA driver API, MPI;
    /// CPU work not recorded`), for the report. `threads`: what the trace records of the
    /// threads' scheduling.
    #[must_use]
    pub fn describe_program(&self, threads: ThreadRecords) -> String {
        let mut parts: Vec<String> = vec![match self.program {
            Program::PyTorch => match self.describe_torch() {
                Some(t) => format!("{t} program"),
                None => "PyTorch program".into(),
            },
            Program::Python => match self.library {
                Some(lib) => format!("{} program (Python, no PyTorch in the trace)", lib.name()),
                None => "Python program (no PyTorch in the trace)".into(),
            },
            Program::Native => "native program (C, C++ or Fortran)".into(),
            Program::Unknown => "program not identified".into(),
        }];
        match self.offload {
            Some(Offload::OpenAcc) => parts.push("OpenACC offload".into()),
            Some(Offload::OpenMp) => parts.push("OpenMP target offload".into()),
            None => {}
        }
        match self.gpu_api {
            GpuApi::CudaRuntime => parts.push("CUDA runtime API".into()),
            GpuApi::CudaDriver => parts.push("CUDA driver API".into()),
            GpuApi::Hip => parts.push("HIP".into()),
            GpuApi::Unknown => {}
        }
        if self.compiled {
            parts.push("torch.compile".into());
        }
        if self.graphs {
            parts.push("graph replays".into());
        }
        if self.mpi {
            parts.push("MPI".into());
        }
        if !self.cpu_ops_recorded && self.cpu_sampled {
            parts.push(if self.cpu_stacks_read {
                "CPU work sampled".into()
            } else {
                "CPU work sampled (no call stacks in the export)".into()
            });
        }
        let mut out = parts.join(", ");
        let mut missing = Vec::new();
        if !self.cpu_ops_recorded && !self.cpu_sampled {
            missing.push("CPU work");
        }
        // Only Nsight Systems can record why threads leave the CPU.
        if !threads.states && self.nsight() {
            missing.push(if threads.switches {
                "why threads leave the CPU (context switches only)"
            } else {
                "thread states"
            });
        }
        if !missing.is_empty() {
            out.push_str(&format!("; not recorded: {}", missing.join(", ")));
        }
        out
    }

    /// Whether the trace's PyTorch is at least `v`: `Some(true)` or `Some(false)` when the
    /// range says so, `None` when it straddles `v`.
    #[must_use]
    pub fn at_least(&self, v: TorchVersion) -> Option<bool> {
        if self.torch_min.is_some_and(|m| m >= v) {
            Some(true)
        } else if self.torch_max.is_some_and(|m| m < v) {
            Some(false)
        } else {
            None
        }
    }

    /// The PyTorch range in words (`PyTorch 1.8-1.10`, `PyTorch 2.4+`), when known.
    #[must_use]
    pub fn describe_torch(&self) -> Option<String> {
        match (self.torch_min, self.torch_max) {
            (Some(a), Some(b)) if a == b => Some(format!("PyTorch {a}")),
            (Some(a), Some(b)) => Some(format!("PyTorch {a}-{b}")),
            (Some(a), None) => Some(format!("PyTorch {a}+")),
            (None, Some(b)) => Some(format!("PyTorch ≤ {b}")),
            (None, None) => None,
        }
    }
}

/// A program model a test imposes: program, offload, launch API, Python library.
#[cfg(test)]
pub(crate) type ImposedProgram = (Program, Option<Offload>, GpuApi, Option<PythonLibrary>);

#[cfg(test)]
thread_local! {
    /// A program model a test imposes on every trace this thread reads, to render each
    /// finding under each model.
    pub(crate) static IMPOSED_PROGRAM: std::cell::Cell<Option<ImposedProgram>> =
        const { std::cell::Cell::new(None) };
}

/// Distinct XLA fusion kernel names that make a Python program a JAX one.
const XLA_KERNEL_NAMES: usize = 3;

/// Reads the framework facts of a trace.
#[must_use]
pub fn framework(trace: &Trace) -> Framework {
    // The importer says which PyTorch versions write its format generation.
    let range = trace.source.framework;
    let (mut torch_min, torch_max) = (range.min, range.max);
    let mut fw = Framework {
        graphs: trace.links.graph_launches > 0,
        ..Framework::default()
    };
    // Profiler steps, or an importer that places the file in a PyTorch version range (a
    // PyTorch profiler trace), say PyTorch even when no op was recorded.
    let mut pytorch = !trace.steps.is_empty() || range.min.is_some() || range.max.is_some();
    let mut aten_kernels = false;
    let mut library: Option<PythonLibrary> = None;
    let mut xla_kernel_names = 0_usize;
    for domain in &trace.metadata.nvtx_domains {
        if let Some(lib) = libraries::annotation_library(domain) {
            library = Some(library.map_or(lib, |l| l.over(lib)));
        }
    }
    for i in 0..trace.names.len() {
        let name = trace.names.get(NameId::at(i));
        if let Some(class) = ops::optimizer_step_class(name) {
            if fw.optimizer.as_deref().is_none_or(|o| o > class) {
                fw.optimizer = Some(class.to_string());
            }
            fw.fused_optimizer |= ops::is_fused_optimizer_class(class);
        }
        fw.fused_optimizer |= ops::is_fused_optimizer_op(name);
        fw.foreach_optimizer |= ops::is_foreach_op(name);
        fw.compiled |= ops::is_compiled_region(name);
        // PyTorch names compiled regions since 2.2, with frame and compile ids since 2.5.
        if let Some(crate::vocabulary::compiled::CompiledName::Region { frame, .. }) =
            crate::vocabulary::compiled::of(name)
        {
            let since = if frame.is_some() {
                TorchVersion::new(2, 5)
            } else {
                TorchVersion::new(2, 2)
            };
            torch_min = torch_min.max(Some(since));
        }
        fw.graphs |= ops::is_graph_launch(name);
        pytorch |= ops::is_pytorch_name(name);
        aten_kernels |= ops::is_aten_kernel(name);
        if let Some(lib) = libraries::kernel_library(name).or(libraries::annotation_library(name)) {
            library = Some(library.map_or(lib, |l| l.over(lib)));
        }
        xla_kernel_names += usize::from(libraries::xla_kernel(name));
        if let Some(kind) = crate::vocabulary::api::offload_kernel(name) {
            fw.offload.get_or_insert(kind);
        }
        fw.mpi |= crate::vocabulary::api::is_mpi_call(name);
    }
    fw.capture = trace.source.capture_tool;
    fw.cpu_sampled = trace.source.cpu_samples > 0;
    fw.cpu_stacks_read = !trace.cpu_samples.samples.is_empty();
    // A memory snapshot is PyTorch's own format.
    pytorch |= fw.capture == tracelens_model::CaptureTool::MemorySnapshot;
    // Only CPU lanes can hold them (GPU lanes come first in the span table).
    // One pass over the CPU lanes (GPU lanes come first in the span table and hold neither):
    // whether any CPU work is recorded, and the names the API calls use.
    let mut api_names = rustc_hash::FxHashSet::default();
    for lane in trace.lanes.iter().filter(|l| !l.key.is_gpu()) {
        for s in &trace.spans[lane.spans.start as usize..lane.spans.end as usize] {
            match s.kind {
                SpanKind::CpuOp | SpanKind::UserAnnotation | SpanKind::PythonFunction => {
                    fw.cpu_ops_recorded = true;
                }
                SpanKind::OsRuntime => fw.os_runtime_traced = true,
                k if k.is_api_call() => {
                    api_names.insert(s.name);
                }
                _ => {}
            }
        }
    }
    fw.gpu_api = launch_api(&api_names, trace);
    fw.program = match (pytorch, program_from_processes(trace)) {
        (true, _) => Program::PyTorch,
        // A Python process running ATen's kernels is PyTorch, whatever the capture recorded.
        (false, Program::Python) if aten_kernels => Program::PyTorch,
        (false, program) => program,
    };
    // XLA's fusion kernels launched from Python: JAX (three distinct names, not one look-alike).
    if library.is_none() && xla_kernel_names >= XLA_KERNEL_NAMES && fw.program == Program::Python {
        library = Some(PythonLibrary::Jax);
    }
    // A library's kernels say Python even where the processes are not named.
    if library.is_some() && fw.program == Program::Unknown {
        fw.program = Program::Python;
    }
    if fw.program == Program::Python {
        fw.library = library;
    }
    if fw.compiled && torch_min.is_none_or(|m| m < TORCH_COMPILE) {
        torch_min = Some(TORCH_COMPILE);
    }
    fw.torch_min = torch_min;
    fw.torch_max = torch_max.filter(|&m| torch_min.is_none_or(|n| n <= m));
    #[cfg(test)]
    if let Some((program, offload, api, library)) = IMPOSED_PROGRAM.get() {
        fw.program = program;
        fw.offload = offload;
        fw.gpu_api = api;
        fw.library = library;
    }
    fw
}

/// The API the launch calls go through: HIP or the CUDA runtime when any launch call names
/// it, else the CUDA driver when the launches are `cu*` calls.
fn launch_api(api_names: &rustc_hash::FxHashSet<NameId>, trace: &Trace) -> GpuApi {
    let mut api = GpuApi::Unknown;
    for &name in api_names {
        match crate::vocabulary::api::api_family(trace.names.get(name)) {
            Some(GpuApi::Hip) => return GpuApi::Hip,
            Some(GpuApi::CudaRuntime) => api = GpuApi::CudaRuntime,
            Some(GpuApi::CudaDriver) if api == GpuApi::Unknown => api = GpuApi::CudaDriver,
            _ => {}
        }
    }
    api
}

/// Without PyTorch names in the trace: a native program when the processes that launch GPU
/// work are named and none is Python, else unknown.
fn program_from_processes(trace: &Trace) -> Program {
    let mut named = false;
    for lane in &trace.lanes {
        if lane.key.is_gpu() {
            continue;
        }
        let launches = trace.spans[lane.spans.start as usize..lane.spans.end as usize]
            .iter()
            .any(|s| s.kind.is_api_call());
        if !launches {
            continue;
        }
        match lane.process_name.map(|n| trace.names.get(n)) {
            Some(name) if ops::is_python_process(name) => return Program::Python,
            Some(_) => named = true,
            None => return Program::Unknown,
        }
    }
    if named {
        Program::Native
    } else {
        Program::Unknown
    }
}

pub use crate::vocabulary::devices::Vendor;

/// The hardware facts advice depends on: what the focus device can run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Hardware {
    /// The device's name, when the trace gives it.
    pub name: Option<String>,
    /// Its vendor.
    pub vendor: Vendor,
    /// NVIDIA compute capability, or AMD gfx major and minor.
    pub compute: Option<(i64, i64)>,
    /// Multiprocessors (SMs / CUs), when the trace gives them.
    pub num_sms: Option<i64>,
    /// Device memory in bytes, when the trace gives it.
    pub memory_bytes: Option<u64>,
}

impl Hardware {
    /// The AMD Instinct generation (100, 200, 300), from the device name or else the gfx
    /// architecture (gfx94x and gfx95x are MI300 and MI350; gfx90x is MI100 or MI200).
    fn instinct_generation(&self) -> Option<u32> {
        self.name
            .as_deref()
            .and_then(devices::instinct_generation)
            .or(match self.compute {
                Some((9, 4 | 5)) => Some(300),
                _ => None,
            })
    }

    /// Whether the device has TF32 and bf16 tensor cores: NVIDIA compute capability 8.0+
    /// (Ampere and later); `None` when the trace does not say, or on AMD (bf16 only there,
    /// see [`Hardware::has_bf16`]).
    #[must_use]
    pub fn has_tf32(&self) -> Option<bool> {
        match (self.vendor, self.compute) {
            (Vendor::Nvidia, Some((major, _))) => Some(major >= 8),
            _ => None,
        }
    }

    /// Whether the device runs bf16 on its matrix units: NVIDIA 8.0+, AMD Instinct MI200 and
    /// MI300 (gfx90a, gfx94x).
    #[must_use]
    pub fn has_bf16(&self) -> Option<bool> {
        match (self.vendor, self.compute) {
            (Vendor::Nvidia, Some((major, _))) => Some(major >= 8),
            (Vendor::Amd, _) => self
                .instinct_generation()
                .filter(|&g| g >= 200)
                .map(|_| true),
            _ => None,
        }
    }

    /// Whether the device has FP8 tensor cores: NVIDIA 8.9+ (Ada, Hopper and later), AMD MI300.
    #[must_use]
    pub fn has_fp8(&self) -> Option<bool> {
        match (self.vendor, self.compute) {
            (Vendor::Nvidia, Some((major, minor))) => Some((major, minor) >= (8, 9)),
            (Vendor::Amd, _) => self
                .instinct_generation()
                .filter(|&g| g >= 300)
                .map(|_| true),
            _ => None,
        }
    }

    /// Whether the device has tensor (matrix) cores at all: NVIDIA 7.0+ (Volta and later).
    #[must_use]
    pub fn has_tensor_cores(&self) -> Option<bool> {
        match (self.vendor, self.compute) {
            (Vendor::Nvidia, Some((major, _))) => Some(major >= 7),
            (Vendor::Amd, _) if self.has_bf16() == Some(true) => Some(true),
            _ => None,
        }
    }

    /// `Tesla V100-SXM2-16GB (compute capability 7.0)`, for advice that explains itself.
    #[must_use]
    pub fn describe(&self) -> String {
        let name = self.name.clone().unwrap_or_else(|| "this GPU".into());
        match (self.vendor, self.compute) {
            (Vendor::Nvidia, Some((a, b))) => format!("{name} (compute capability {a}.{b})"),
            _ => name,
        }
    }
}

/// The hardware of `device` as the trace's device properties describe it.
#[must_use]
pub fn hardware(trace: &Trace, device: Option<i64>) -> Hardware {
    let props = &trace.metadata.device_properties;
    let Some(p) = device
        .and_then(|d| props.iter().find(|p| p.id == d))
        .or_else(|| (props.len() == 1).then(|| &props[0]))
    else {
        return Hardware::default();
    };
    let name = Some(p.name.clone()).filter(|n| !n.is_empty());
    let vendor = devices::vendor(&p.name, p.warp_size);
    Hardware {
        name,
        vendor,
        compute: p.compute_major.zip(p.compute_minor),
        num_sms: p.num_sms,
        memory_bytes: p.total_global_mem_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process named `process` (unnamed when `None`) launching one kernel of each name.
    fn kernels_in(process: Option<&str>, kernels: &[&str]) -> Trace {
        use crate::diagnose::detectors::testing::{launch_call, span_us, thread_and_stream};
        let (mut b, cpu, gpu) = thread_and_stream();
        if let Some(process) = process {
            b.name_process(tracelens_model::Ident::Num(1), process);
        }
        for (i, kernel) in (0_i64..).zip(kernels) {
            launch_call(&mut b, cpu, i * 200, Some(i.unsigned_abs() + 1));
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                kernel,
                (i * 200 + 10, i * 200 + 100),
                Some(i.unsigned_abs() + 1),
            );
        }
        b.finish(tracelens_model::SourceInfo::default())
    }

    /// A process named `process` launching one ATen kernel.
    fn aten_kernel_in(process: &str) -> Trace {
        kernels_in(
            Some(process),
            &["void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >(int)"],
        )
    }

    #[test]
    fn python_gpu_libraries_are_named_by_their_kernels_and_get_their_own_words() {
        let cupy = framework(&kernels_in(
            Some("python3"),
            &["cupy_copy__float32_float32"],
        ));
        assert_eq!(
            (cupy.program, cupy.library),
            (Program::Python, Some(PythonLibrary::CuPy))
        );
        assert_eq!(cupy.dialect(), Dialect::Python(PythonLibrary::CuPy));
        assert!(cupy
            .describe_program(ThreadRecords::default())
            .starts_with("CuPy program"));
        // A library's kernels say Python where the processes are not named.
        let numba = framework(&kernels_in(
            None,
            &["cudapy::__main__::saxpy[abi:v1](Array<float, 1, C, mutable, aligned>)"],
        ));
        assert_eq!(
            (numba.program, numba.library),
            (Program::Python, Some(PythonLibrary::Numba))
        );
        // cuDF's kernels win over the CuPy kernels it runs on.
        let cudf = framework(&kernels_in(
            Some("python"),
            &["cupy_fill", "void cudf::detail::gather_kernel<int>(int)"],
        ));
        assert_eq!(cudf.library, Some(PythonLibrary::CuDf));
        // XLA's fusions from Python: JAX, but one look-alike name is not enough.
        let jax = framework(&kernels_in(
            Some("python3"),
            &["loop_add_fusion", "input_reduce_fusion", "fusion_3"],
        ));
        assert_eq!(jax.library, Some(PythonLibrary::Jax));
        let one = framework(&kernels_in(Some("python3"), &["fusion_3", "saxpy"]));
        assert_eq!((one.program, one.library), (Program::Python, None));
        assert_eq!(one.dialect(), Dialect::Neutral);
        // PyTorch stays PyTorch with a CuPy kernel beside it; a native program names no library.
        let torch = framework(&kernels_in(
            Some("python3"),
            &[
                "void at::native::vectorized_elementwise_kernel<4>(int)",
                "cupy_fill",
            ],
        ));
        assert_eq!((torch.program, torch.library), (Program::PyTorch, None));
        let native = framework(&kernels_in(
            Some("solver"),
            &["loop_add_fusion", "input_x_fusion", "fusion_1"],
        ));
        assert_eq!((native.program, native.library), (Program::Native, None));
    }

    #[test]
    fn a_python_process_running_aten_kernels_is_pytorch_and_a_native_one_is_not() {
        assert_eq!(
            framework(&aten_kernel_in("python3")).program,
            Program::PyTorch
        );
        // A C++ program may run them through libtorch: no Python advice for it.
        assert_eq!(
            framework(&aten_kernel_in("server")).program,
            Program::Native
        );
    }

    #[test]
    fn version_ranges_answer_only_what_they_know() {
        let fw = Framework {
            torch_min: Some(TorchVersion::new(1, 11)),
            torch_max: Some(TorchVersion::new(2, 3)),
            ..Framework::default()
        };
        assert_eq!(fw.at_least(TorchVersion::new(1, 8)), Some(true));
        assert_eq!(fw.at_least(TORCH_COMPILE), None);
        assert_eq!(fw.at_least(FUSED_SGD), Some(false));
        assert_eq!(fw.describe_torch().unwrap(), "PyTorch 1.11-2.3");
    }
}
