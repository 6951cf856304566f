//! The GPU's own work on a busy GPU: when compute kernels keep the GPU busy nearly all the
//! window, the idle left is small and the kernels are what a change can shorten. Names the
//! kernels (a PyTorch program: the kernel class most of the time goes to, with its largest
//! kernel and the op that launched it; any program: a hand-written matrix multiply) and the
//! lever in the program's words: the class's next step in PyTorch, a library call for the
//! hand-written multiply. A kernel the trace says nothing more about gets no finding (the
//! GPU-bound verdict names it with a kernel profiler). A kernel whose grid leaves most
//! multiprocessors empty is the small-grid finding's, not this one's.

use super::{Context, Detector, Input};
use crate::diagnose::finding::{Confidence, EvidenceValue, Finding, WinKind};
use crate::finding_kind::{FindingKind, Lever};
use crate::measure::environment::{Dialect, Vendor};
use crate::views::kernels::{KernelClass, KernelStat};
use crate::vocabulary::kernels::is_library_gemm;
use tracelens_model::{format_ms, kernel_display_name, TimeNs};

/// The GPU must be busy at least this share of the window for its kernels to be the lever.
pub const KERNEL_WORK_BUSY_PERCENT: f64 = 80.0;

/// Single-precision matrix multiplies are the lever from this busy share on: their precision
/// flag shortens the largest part of a step the GPU is busy most of.
pub const FP32_GEMM_BUSY_PERCENT: f64 = 60.0;

/// The named kernels must take at least this share of the step.
pub const KERNEL_WORK_FINDING_PERCENT: f64 = 25.0;

/// A PyTorch program's kernel class must take more than this share of compute-kernel time to
/// be named.
pub const DOMINANT_CLASS_PERCENT: f64 = 50.0;

/// A kernel with fewer blocks per multiprocessor than this is the small-grid finding's.
const SMALL_GRID_BLOCKS_PER_SM: f64 = super::small_grid::SMALL_GRID_SM_SHARE;

/// The kernels of a busy GPU.
pub struct KernelWork;

/// What the finding is about: a kernel class (PyTorch) or one hand-written kernel.
enum Subject<'a> {
    Class {
        class: KernelClass,
        precision: Option<crate::views::kernels::Precision>,
        ns: TimeNs,
        percent_of_kernels: f64,
        largest: Option<&'a KernelStat>,
    },
    Kernel(&'a KernelStat),
    /// The largest kernel computes in double precision on a GPU whose FP64 rate is a small
    /// fraction of its FP32 rate.
    DoubleOnSlowFp64(&'a KernelStat),
}

impl Detector for KernelWork {
    fn name(&self) -> &'static str {
        "kernel_work"
    }

    fn kind(&self) -> FindingKind {
        FindingKind::KernelWork
    }

    fn reads(&self) -> &'static [Input] {
        &[
            Input::Verdict,
            Input::Kernels,
            Input::Hardware,
            Input::Framework,
        ]
    }

    fn detect(&self, cx: &Context) -> Vec<Finding> {
        let v = cx.verdict();
        // A benchmark's idle is its harness: the busy share that counts is its timed loops'.
        let busy_percent = v.benchmark.map_or(v.gpu_busy_percent, |b| b.busy_percent);
        let busy_in = if v.benchmark.is_some() {
            "the timed loops"
        } else {
            "the window"
        };
        // The kernel table counts every device: one device's busy share speaks for it only
        // when it is the only one.
        if v.devices_measured != 1 || busy_percent < FP32_GEMM_BUSY_PERCENT {
            return Vec::new();
        }
        let fw = cx.framework();
        let compute: Vec<&KernelStat> = cx
            .kernels()
            .iter()
            .filter(|k| k.class != KernelClass::Communication)
            .filter(|k| {
                k.mean_blocks_per_sm
                    .is_none_or(|b| b >= SMALL_GRID_BLOCKS_PER_SM)
            })
            .collect();
        let Some(subject) = subject(v, &compute, fw.pytorch(), cx.hardware()) else {
            return Vec::new();
        };
        // Below the busy share kernels need, only single-precision multiplies on a GPU whose
        // tensor cores run TF32 or bf16 are worth it: a precision flag cuts their time by
        // more than the idle there is to remove.
        let fp32_gemms = matches!(
            &subject,
            Subject::Class {
                class: KernelClass::GemmFp32,
                ..
            }
        );
        if busy_percent < KERNEL_WORK_BUSY_PERCENT && !fp32_gemms {
            return Vec::new();
        }
        let ns = match &subject {
            Subject::Class { ns, .. } => *ns,
            Subject::Kernel(k) | Subject::DoubleOnSlowFp64(k) => k.total_ns,
        };
        let win = cx.win(ns);
        if win.percent < KERNEL_WORK_FINDING_PERCENT {
            return Vec::new();
        }
        let mut f = cx.finding(FindingKind::KernelWork, WinKind::KernelTime, &win);
        let busy = if busy_percent < KERNEL_WORK_BUSY_PERCENT {
            format!(
                "the GPU is busy {busy_percent:.0} % of {busy_in}, most of it in these multiplies, so their precision shortens the step more than the idle there is to remove"
            )
        } else {
            format!(
                "the GPU is busy {busy_percent:.0} % of {busy_in}, so its kernels, not the host, set the time"
            )
        };
        let amount = format!(
            "{} {} ({:.1} % of the {})",
            format_ms(win.per_step_ns),
            cx.per(),
            win.percent,
            cx.step_time()
        );
        f.title = match &subject {
            Subject::Class {
                class,
                percent_of_kernels,
                largest,
                ..
            } => {
                let what = crate::num::capitalized(class.describe());
                let largest = largest.map_or(String::new(), |k| {
                    format!(
                        "; the largest, {}{}",
                        kernel_display_name(&k.name),
                        k.launched_by
                            .as_deref()
                            .map_or(String::new(), |op| format!(" (from {op})"))
                    )
                });
                format!("{what} take {amount}, {percent_of_kernels:.0} % of kernel time{largest}: {busy}")
            }
            Subject::Kernel(k) => format!(
                "Kernel {} ({:.0} % of kernel time) takes {amount}: {busy}",
                kernel_display_name(&k.name),
                k.share_percent
            ),
            Subject::DoubleOnSlowFp64(k) => format!(
                "Kernel {} ({:.0} % of kernel time) takes {amount} in double precision, which {} runs at a small fraction of its FP32 rate: {busy}",
                kernel_display_name(&k.name),
                k.share_percent,
                cx.hardware().name.as_deref().unwrap_or("this GPU")
            ),
        };
        f.win_basis = "the kernels' own time: what a faster kernel (or less kernel work) can shorten; how much of it a change saves depends on how far the kernels run from the GPU's peak, which the trace does not measure (upper bound, busy time, not idle)".into();
        let listed: Vec<&KernelStat> = match &subject {
            Subject::Class { class, .. } => compute
                .iter()
                .copied()
                .filter(|k| k.class == *class)
                .collect(),
            Subject::Kernel(k) | Subject::DoubleOnSlowFp64(k) => vec![*k],
        };
        f.evidence.add_occurrences(
            "launches of the named kernels",
            listed.iter().map(|k| k.count).sum(),
        );
        f.evidence
            .add("GPU busy", EvidenceValue::Percent(busy_percent));
        for k in listed.iter().take(5) {
            f.evidence.add(
                format!("{} ({} launches)", kernel_display_name(&k.name), k.count),
                EvidenceValue::DurationNs(k.total_ns),
            );
        }
        (f.fix, f.snippet) = fix(cx, &subject);
        f.advice = "When the GPU is busy nearly all the time, removing idle saves little: the step shortens only if the kernels run faster or there are fewer of them. Nsight Compute (or the vendor's kernel profiler) shows for each kernel whether it is limited by compute or by memory bandwidth, and how far from the GPU's peak it runs.".into();
        f.lever = Some(Lever::FasterKernels);
        f.fix_chosen_by = format!(
            "the GPU busy {busy_percent:.0} % of {busy_in}, {:.0} % of its busy time in compute kernels",
            v.busy_by.kernel
        );
        f.confidence = Confidence::Medium;
        vec![f]
    }
}

/// What the finding is about, where the trace shows a lever for it: in a PyTorch program, the
/// kernel class most of the kernel time goes to (more than half of it), when the class is named
/// by what it does; in any program, a hand-written matrix multiply that is the largest kernel.
/// Otherwise none: a kernel the trace says nothing about needs a kernel profiler, which the
/// verdict names with the kernel.
fn subject<'a>(
    v: &crate::diagnose::verdict::Verdict,
    compute: &[&'a KernelStat],
    pytorch: bool,
    hw: &crate::measure::environment::Hardware,
) -> Option<Subject<'a>> {
    // Double precision on a GPU built for single comes before any other kernel lever.
    if let Some(top) = compute
        .first()
        .copied()
        .filter(|k| crate::measure::peaks::double_on_slow_fp64(hw, &k.name, k.share_percent))
    {
        return Some(Subject::DoubleOnSlowFp64(top));
    }
    if pytorch {
        if let Some(top) = v
            .kernel_classes
            .first()
            .filter(|c| c.class != KernelClass::Other && c.percent > DOMINANT_CLASS_PERCENT)
        {
            return Some(Subject::Class {
                class: top.class,
                precision: top.precision,
                ns: top.total_ns,
                percent_of_kernels: top.percent,
                largest: compute.iter().copied().find(|k| k.class == top.class),
            });
        }
    }
    let top = compute.first().copied()?;
    hand_written_gemm(top).then_some(Subject::Kernel(top))
}

/// Whether a kernel is a matrix multiply no library wrote.
fn hand_written_gemm(k: &KernelStat) -> bool {
    matches!(k.class, KernelClass::Gemm | KernelClass::GemmFp32) && !is_library_gemm(&k.name)
}

/// Gives the kernel-work finding about `class` the verdict's refined advice (matrix
/// multiplies measured memory-bound get more rows per multiply, not precision advice), so
/// the verdict and the finding say one thing.
pub fn refit(findings: &mut [Finding], class: KernelClass, advice: &str) {
    let what = crate::num::capitalized(class.describe());
    for f in findings
        .iter_mut()
        .filter(|f| f.kind == FindingKind::KernelWork && f.title.starts_with(&what))
    {
        f.fix = format!("{}.", crate::num::capitalized(advice));
        f.snippet.clear();
    }
}

/// (fix, snippet) for the subject, in the program's words.
fn fix(cx: &Context, subject: &Subject) -> (String, String) {
    let fw = cx.framework();
    let hw = cx.hardware();
    match subject {
        Subject::Class {
            class, precision, ..
        } => {
            let step = class.next_step(hw, fw, *precision);
            let snippet = match class {
                KernelClass::Convolution | KernelClass::Gemm | KernelClass::GemmFp32 => {
                    let bf16 = hw.has_bf16() == Some(true);
                    let dtype = if bf16 { "torch.bfloat16" } else { "torch.float16" };
                    // TF32 and bf16 come together (compute capability 8.0+, Instinct MI200+).
                    let layout = match class {
                        KernelClass::Convolution => "torch.backends.cudnn.benchmark = True\nmodel = model.to(memory_format=torch.channels_last)\n",
                        _ if bf16 && precision.is_none_or(|p| p == crate::views::kernels::Precision::Fp32) => {
                            "torch.backends.cuda.matmul.allow_tf32 = True\n"
                        }
                        _ => "",
                    };
                    // Kernels already in 16 bits or fewer: no autocast to show.
                    let low = matches!(
                        precision,
                        Some(
                            crate::views::kernels::Precision::Half
                                | crate::views::kernels::Precision::Fp8
                                | crate::views::kernels::Precision::Fp4
                        )
                    );
                    if hw.has_tensor_cores() == Some(false) || low {
                        layout.trim_end().to_string()
                    } else {
                        format!("{layout}with torch.autocast(\"cuda\", dtype={dtype}):\n    out = model(x)")
                    }
                }
                KernelClass::Attention => "out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)".into(),
                _ => String::new(),
            };
            (format!("{}.", crate::num::capitalized(&step)), snippet)
        }
        Subject::DoubleOnSlowFp64(k) => double_fix(fw, k),
        Subject::Kernel(k) => {
            let (library, profiler, snippet) = match hw.vendor {
                Vendor::Amd => ("rocBLAS or hipBLASLt (rocblas_sgemm)", "rocprofv3 or Omniperf", String::new()),
                _ => (
                    "cuBLAS (cublasSgemm, or cublasGemmEx for lower precision)",
                    "Nsight Compute (ncu)",
                    "// C = A * B, column-major, n x n\ncublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, dA, n, dB, n, &zero, dC, n);".into(),
                ),
            };
            let call = if fw.pytorch() {
                "torch.matmul (which calls the vendor library)".to_string()
            } else {
                library.to_string()
            };
            let compiled_from = match fw.dialect() {
                Dialect::OpenAcc => " (it is compiler-generated from a loop: -Minfo=accel says how the compiler mapped it)",
                Dialect::OpenMp => " (it is compiler-generated from a target region: the compiler's offload report says how it was mapped)",
                _ => "",
            };
            let fix = format!(
                "{}{compiled_from} is a hand-written matrix multiply: call {call} instead, or at least tile it in shared memory, so each operand is read from global memory once per tile, not once per output; {profiler} on it shows how far it runs from the GPU's peak.",
                kernel_display_name(&k.name)
            );
            (fix, snippet)
        }
    }
}

/// (fix, snippet) for a kernel in double precision on a GPU with slow FP64, in the program's
/// words.
fn double_fix(fw: &crate::measure::environment::Framework, k: &KernelStat) -> (String, String) {
    let name = kernel_display_name(&k.name);
    match fw.dialect() {
        Dialect::PyTorch => (
            format!("{name} computes in float64: keep the model and its inputs in float32 (model.float(), x.float(); no torch.float64 or .double() in the step) unless a result is known to need double precision."),
            "model = model.float()\nx = x.to(torch.float32)   # float64 runs at 1/32-1/64 rate on this GPU".into(),
        ),
        Dialect::Python(_) => (
            format!("{name} computes in float64: create the arrays as float32 (dtype=numpy.float32, or .astype(numpy.float32)) unless a result is known to need double precision."),
            "x = x.astype(numpy.float32)   # float64 runs at 1/32-1/64 rate on this GPU".into(),
        ),
        _ => (
            format!("{name} works on double-precision data: compute in float where the precision allows (keep double only for the accumulations that need it, or move the work to a GPU with full-rate FP64), then profile it with Nsight Compute (ncu)."),
            String::new(),
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::testing::{findings_of, launch_call, span_us, thread_and_stream};
    use super::*;
    use tracelens_model::{SourceInfo, SpanKind, Trace};

    /// One kernel launched ten times, each `kernel_us` long, `gap_us` of host work apart.
    pub(crate) fn loop_of(name: &str, kernel_us: i64, gap_us: i64) -> Trace {
        loop_with(name, kernel_us, gap_us, None)
    }

    /// [`loop_of`], on a device of that name when one is given.
    fn loop_with(name: &str, kernel_us: i64, gap_us: i64, device: Option<&str>) -> Trace {
        let (mut b, cpu, gpu) = thread_and_stream();
        for i in 0..10u64 {
            let t = i.cast_signed() * (kernel_us + gap_us);
            launch_call(&mut b, cpu, t, Some(i + 1));
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                name,
                (t + 10, kernel_us),
                Some(i + 1),
            );
        }
        if let Some(device) = device {
            b.metadata.device_properties = vec![tracelens_model::DeviceProperties {
                id: 0,
                name: device.into(),
                ..tracelens_model::DeviceProperties::default()
            }];
        }
        b.finish(SourceInfo::default())
    }

    #[test]
    fn a_busy_gpu_names_its_kernel_and_an_idle_twin_does_not() {
        let found = findings_of(&KernelWork, &loop_of("matrixMulKernel", 1_000, 20));
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert!(f.title.starts_with("Kernel matrixMulKernel"), "{}", f.title);
        assert_eq!(f.win_kind, WinKind::KernelTime);
        assert_eq!(f.lever, Some(Lever::FasterKernels));
        assert!(f.fix.contains("hand-written matrix multiply"), "{}", f.fix);
        assert!(f.estimated_win_percent > 90.0 && f.estimated_win_percent <= 100.0);
        // The same kernel with the GPU idle most of the time: the host is the lever.
        assert!(findings_of(&KernelWork, &loop_of("matrixMulKernel", 100, 400)).is_empty());
    }

    /// [`loop_of`] on a named device: a busy GPU.
    fn loop_on(name: &str, device: &str) -> Trace {
        loop_with(name, 1_000, 20, Some(device))
    }

    #[test]
    fn double_precision_on_a_gpu_built_for_single_is_named_and_its_twins_are_not() {
        let conv = "convolution(PtrStepSz<float>, PtrStepSz<double>, int)";
        let found = findings_of(&KernelWork, &loop_on(conv, "NVIDIA GeForce RTX 3080"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].title.contains("double precision"),
            "{}",
            found[0].title
        );
        assert!(
            found[0].fix.contains("compute in float"),
            "{}",
            found[0].fix
        );
        // The same kernel on a GPU with full-rate FP64: a kernel the trace says nothing more
        // about.
        assert!(findings_of(&KernelWork, &loop_on(conv, "NVIDIA A100-SXM4-40GB")).is_empty());
        // A single-precision kernel on the consumer card: no finding either.
        let single = "convolution(PtrStepSz<float>, PtrStepSz<float>, int)";
        assert!(findings_of(&KernelWork, &loop_on(single, "NVIDIA GeForce RTX 3080")).is_empty());
    }

    /// A PyTorch loop of ten `aten::mm` calls on an A100, each running SIMT single-precision
    /// `ampere_sgemm` for `kernel_us` with `gap_us` of host work between them.
    fn sgemm_loop(kernel_us: i64, gap_us: i64) -> Trace {
        let (mut b, cpu, gpu) = thread_and_stream();
        for i in 0..10u64 {
            let t = i.cast_signed() * (kernel_us + gap_us);
            span_us(&mut b, SpanKind::CpuOp, cpu, "aten::mm", (t - 5, 30), None);
            launch_call(&mut b, cpu, t, Some(i + 1));
            span_us(
                &mut b,
                SpanKind::Kernel,
                gpu,
                "ampere_sgemm_128x64_tn",
                (t + 10, kernel_us),
                Some(i + 1),
            );
        }
        b.metadata.device_properties = vec![tracelens_model::DeviceProperties {
            id: 0,
            name: "NVIDIA A100-SXM4-40GB".into(),
            ..tracelens_model::DeviceProperties::default()
        }];
        b.finish(SourceInfo::default())
    }

    #[test]
    fn single_precision_multiplies_on_a_gpu_busy_most_of_the_window_get_tf32_and_an_idler_twin_does_not(
    ) {
        // Busy 72 %: the multiplies' precision shortens the step more than the idle.
        let found = findings_of(&KernelWork, &sgemm_loop(700, 300));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].fix.contains("TF32"), "{}", found[0].fix);
        assert!(
            found[0].title.contains("the GPU is busy 72 %"),
            "{}",
            found[0].title
        );
        // Busy 50 %: the host is the lever.
        assert!(findings_of(&KernelWork, &sgemm_loop(500, 500)).is_empty());
    }

    #[test]
    fn a_kernel_the_trace_says_nothing_about_gets_no_finding() {
        // A busy GPU running a kernel that is no matrix multiply: which lever applies is for a
        // kernel profiler to say (the verdict names the kernel), not this finding.
        assert!(findings_of(&KernelWork, &loop_of("stencil_step", 1_000, 20)).is_empty());
        // A library's multiply is not hand-written either.
        assert!(findings_of(&KernelWork, &loop_of("ampere_sgemm_128x64_tn", 1_000, 20)).is_empty());
    }
}
