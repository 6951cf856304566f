//! What kernel names mean: the class of work a kernel does, whether it runs on the matrix
//! units (NVIDIA tensor cores, AMD matrix cores), whether it is a collective's and which one.
//! Tested against real names of the corpus, per vendor.

use serde::Serialize;

/// What a kernel does, from its name.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum KernelClass {
    /// Matrix multiply in plain FP32 (no tensor cores).
    GemmFp32,
    /// Matrix multiply in TF32, FP16, BF16 or FP8.
    Gemm,
    /// Convolution.
    Convolution,
    /// Attention or softmax.
    Attention,
    /// Batch/layer/RMS normalization (cuDNN's `bn_fw_*`/`bn_bw_*` included).
    Normalization,
    /// Embedding lookups and sparse-feature ops (`fbgemm_gpu`, `split_embedding_*`).
    Embedding,
    /// Elementwise (pointwise) kernels.
    Elementwise,
    /// Reductions.
    Reduction,
    /// Optimizer updates (multi-tensor apply, fused Adam).
    Optimizer,
    /// Collectives (NCCL, RCCL, MSCCL, HCCL).
    Communication,
    /// Anything else.
    Other,
}

impl KernelClass {
    /// In words, for the verdict.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            KernelClass::GemmFp32 => "matrix multiplies in FP32",
            KernelClass::Gemm => "matrix multiplies",
            KernelClass::Convolution => "convolutions",
            KernelClass::Attention => "attention and softmax",
            KernelClass::Normalization => "normalization",
            KernelClass::Embedding => "embedding lookups",
            KernelClass::Elementwise => "elementwise kernels",
            KernelClass::Reduction => "reductions",
            KernelClass::Optimizer => "optimizer updates",
            KernelClass::Communication => "collectives",
            KernelClass::Other => "other kernels",
        }
    }
}

/// The lowest number format a kernel's name shows it computes in, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Precision {
    /// 4-bit floats (MXFP4, NVFP4).
    Fp4,
    /// 8-bit floats (E4M3, E5M2).
    Fp8,
    /// bf16 or fp16.
    Half,
    /// TF32 (FP32 data on tensor cores).
    Tf32,
    /// FP32.
    Fp32,
}

/// The precision a kernel's name shows (`…bf16xbf16xmxfp4…` computes with FP4 weights,
/// hipBLASLt's `Cijk_…_BBS_…` takes bf16, cuBLAS's `sgemm` is FP32), `None` when the name
/// does not say.
#[must_use]
pub fn kernel_precision(name: &str) -> Option<Precision> {
    let n = name.to_ascii_lowercase();
    let has = |s: &str| n.contains(s);
    if has("fp4") || has("e2m1") {
        Some(Precision::Fp4)
    } else if has("fp8") || has("e4m3") || has("e5m2") {
        Some(Precision::Fp8)
    } else if has("tf32") {
        Some(Precision::Tf32)
    } else if has("bf16")
        || has("bfloat16")
        || has("f16")
        || has("fp16")
        || has("half")
        || has("_bbs_")
        || has("_hhs_")
        || has("_bss_")
        || has("_hss_")
        || has("h884")
        || has("h1688")
        || has("h16816")
    {
        Some(Precision::Half)
    } else if has("sgemm") || has("f32f32_f32") || has("fp32") {
        Some(Precision::Fp32)
    } else {
        None
    }
}

/// Whether a kernel's name (its demangled signature or template arguments) shows it works on
/// `double` data: FP64 arithmetic, which consumer and inference GPUs run at 1/32-1/64 of FP32.
#[must_use]
pub fn works_on_double(name: &str) -> bool {
    name.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|t| t == "double")
}

/// The class of a kernel name.
#[must_use]
pub fn kernel_class(name: &str) -> KernelClass {
    let n = name.to_ascii_lowercase();
    let has = |s: &str| n.contains(s);
    if is_communication_kernel(name) {
        KernelClass::Communication
    } else if has("flash") || has("fmha") || has("attention") || has("attn") || has("softmax") {
        KernelClass::Attention
    } else if has("norm") || has("bn_fw") || has("bn_bw") {
        // Before convolutions: cuDNN's batch norm kernels carry `cudnn::` too.
        KernelClass::Normalization
    } else if has("embedding") || has("fbgemm") {
        // Before GEMMs: `fbgemm_gpu` kernels are embedding and sparse-feature ops.
        KernelClass::Embedding
    } else if has("conv") || has("cudnn") || has("winograd") || has("miopen") || has("igemm") {
        KernelClass::Convolution
    } else if has("gemm")
        || has("cijk_")
        || has("cutlass")
        || has("xmma")
        || has("matmul")
        || has("matrixmul")
        || has("mat_mul")
    {
        // hipBLASLt's `_SB_` (single-precision B) only in its own names: a mangled C++
        // name holds `SB_` substitutions. A name that shows a narrower type is not FP32.
        let fp32 = has("sgemm")
            || (has("cijk_") && has("_sb_"))
            || has("f32f32_f32")
            || has("fp32") && !has("tf32");
        let narrower = matches!(
            kernel_precision(name),
            Some(Precision::Half | Precision::Fp8 | Precision::Fp4 | Precision::Tf32)
        );
        if fp32 && !narrower {
            KernelClass::GemmFp32
        } else {
            KernelClass::Gemm
        }
    } else if has("multi_tensor") || has("adam") || has("sgd") {
        KernelClass::Optimizer
    } else if has("reduce") || has("triton_red") || has("triton_per") {
        KernelClass::Reduction
    } else if has("elementwise") || has("triton_poi") || has("pointwise") || has("unrolled") {
        KernelClass::Elementwise
    } else {
        KernelClass::Other
    }
}

/// Whether a matrix-multiply kernel's name is a vendor library's (cuBLAS, cuBLASLt, CUTLASS,
/// rocBLAS/Tensile, hipBLASLt): a library name, an architecture prefix (`ampere_sgemm…`,
/// `sm80_xmma…`) or a tile shape (`…_128x64_…`). A matrix multiply named otherwise
/// (`naive_gemm`, `matmul_tiled`) is the program's own.
#[must_use]
pub fn is_library_gemm(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let n = n.strip_prefix("void ").unwrap_or(&n);
    let library = [
        "cutlass", "xmma", "cijk_", "cublas", "rocblas", "hipblas", "magma", "gemmk1", "gemmsn",
        "gemv2",
    ]
    .iter()
    .any(|w| n.contains(w));
    let arch = [
        "ampere_",
        "volta_",
        "turing_",
        "maxwell_",
        "kepler_",
        "pascal_",
        "hopper_",
        "ada_",
        "blackwell_",
    ]
    .iter()
    .any(|p| n.starts_with(p))
        || (n.starts_with("sm")
            && n[2..].bytes().take_while(u8::is_ascii_digit).count() >= 2
            && n[2..]
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .starts_with('_'));
    library || arch || has_tile_shape(n)
}

/// Whether a name holds a tile shape: digits, `x`, digits (`128x64`).
fn has_tile_shape(n: &str) -> bool {
    let b = n.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'x'
            && i > 0
            && b[i - 1].is_ascii_digit()
            && b.get(i + 1).is_some_and(u8::is_ascii_digit)
    })
}

/// Whether a GPU op is a collective's kernel: NCCL, RCCL and MSCCL (`ncclDevKernel_*`,
/// `ncclKernel_*`, `mscclKernel_*`), Huawei's HCCL (`hcclAllReduce…`) or DeepEP's dispatch
/// and combine.
#[must_use]
pub fn is_communication_kernel(name: &str) -> bool {
    let b = name.as_bytes();
    b.windows(4).any(|w| {
        w.eq_ignore_ascii_case(b"nccl")
            || w.eq_ignore_ascii_case(b"rccl")
            || w.eq_ignore_ascii_case(b"hccl")
    }) || name.contains("msccl")
        // DeepEP's expert-parallel dispatch and combine (`deep_ep::internode::combine`):
        // all-to-all exchanges written as kernels of their own.
        || name.contains("::internode::")
        || name.contains("::intranode::")
}

/// The collective a communication kernel runs, for its bus-bandwidth factor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CollectiveOp {
    /// All-reduce: every rank sends and receives about twice the message.
    AllReduce,
    /// All-gather or reduce-scatter: sharded data moves once.
    Sharded,
    /// Send/receive or all-to-all: point-to-point exchange.
    Exchange,
    /// A collective the name does not identify (broadcast, `ncclDevKernel_Generic`).
    Other,
}

/// The collective of kernel name `kernel`.
#[must_use]
pub fn collective_op(kernel: &str) -> CollectiveOp {
    let lower = kernel.to_ascii_lowercase();
    if lower.contains("allreduce") {
        CollectiveOp::AllReduce
    } else if lower.contains("allgather") || lower.contains("reducescatter") {
        CollectiveOp::Sharded
    } else if lower.contains("sendrecv") || lower.contains("alltoall") {
        CollectiveOp::Exchange
    } else {
        CollectiveOp::Other
    }
}

/// Kernel-name fragments of matrix-unit kernels. NVIDIA tensor cores: tb_plugin's list plus
/// the Ampere-and-later names (`sm80_xmma`, `cutlass` tensor-op kernels, `hmma`/`wgmma`,
/// Hopper cuBLAS `nvjet`, fused attention `fmha`/`flash_fwd`). AMD matrix cores (MFMA, WMMA):
/// Tensile/hipBLASLt tiles (`MI16x16x1`, `MI32x32x8`), Composable Kernel `xdl`/`xdlops`
/// kernels, MIOpen's xdlops implicit GEMMs (`igemm_*_gtcx*`), `mfma`/`wmma` in kernel names.
const MATRIX_UNIT_KERNELS: [&str; 36] = [
    "h884",
    "s884",
    "h1688",
    "s1688",
    "hmma",
    "i8816",
    "16816",
    "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel",
    "conv1x1",
    "conv2d_c1_k1",
    "direct_group",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm",
    "xmma_sparse_gemm",
    "c1688",
    "tensorop",
    "wgmma",
    "gmma",
    "s16816",
    "h16816",
    "bf16816",
    "flash_fwd",
    "fmha",
    "Fmha",
    "nvjet",
    "MI16x16",
    "MI32x32",
    "mfma",
    "MFMA",
    "wmma",
    "xdl",
    "_gtcx",
    "WMMA",
];

/// Whether a kernel name shows 16-bit or narrower inputs (fp16/bf16, FP8, FP4).
#[must_use]
pub fn is_narrow_precision(kernel: &str) -> bool {
    matches!(
        kernel_precision(kernel),
        Some(Precision::Half | Precision::Fp8 | Precision::Fp4)
    )
}

/// Whether a kernel name shows a matrix-unit kernel (tensor cores, matrix cores).
#[must_use]
pub fn uses_matrix_cores(kernel: &str) -> bool {
    MATRIX_UNIT_KERNELS.iter().any(|k| kernel.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precisions_read_from_real_kernel_names() {
        for (name, precision) in [
            // vLLM on MI300 (TraceLens corpus): bf16 activations, MXFP4 weights.
            (
                "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
                Some(Precision::Fp4),
            ),
            (
                "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB1",
                Some(Precision::Half),
            ),
            // cuBLAS on a T4 under autocast (an FP32-input aten::linear runs it).
            (
                "turing_fp16_s1688gemm_fp16_128x256_ldg8_relu_f2f_stages_32x1_tn",
                Some(Precision::Half),
            ),
            (
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                Some(Precision::Half),
            ),
            ("volta_h884gemm_64x64_ldg8_nn", Some(Precision::Half)),
            ("volta_sgemm_128x64_nn", Some(Precision::Fp32)),
            (
                "ampere_tf32_s1688gemm_tf32_128x128_16x3_nt",
                Some(Precision::Tf32),
            ),
            ("kernel_unified_attention_3d", None),
        ] {
            assert_eq!(kernel_precision(name), precision, "{name}");
        }
    }

    /// Library multiplies are told by library name, architecture prefix or tile shape; a
    /// multiply named otherwise is the program's own.
    #[test]
    fn library_multiplies_are_told_from_the_programs_own() {
        for name in [
            "ampere_sgemm_128x64_nn",
            "volta_sgemm_64x64_nt",
            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            "sm80_gemm_bf16_tn_64x64",
            "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(T1::Params)",
            "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1",
            "void gemmSN_TN_kernel<float, 128, 16, 2, 4, 4, 4, true>(cublasGemmSmallNParams<float const>)",
        ] {
            assert!(is_library_gemm(name), "{name}");
        }
        for name in [
            "naive_gemm(const float *, const float *, float *, int, int, int)",
            "tiled_gemm(float *, float *, float *, int, int, int)",
            "matmul_kernel",
            "sgemm_shared_mem_block(int, int, int, float, const float *, const float *, float, float *)",
        ] {
            assert!(!is_library_gemm(name), "{name}");
        }
    }

    #[test]
    fn kernel_names_fall_in_their_classes() {
        for (name, class) in [
            ("ampere_sgemm_128x64_nn", KernelClass::GemmFp32),
            (
                "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
                KernelClass::Gemm,
            ),
            ("Cijk_Alik_Bljk_SB_MT64x64x16", KernelClass::GemmFp32),
            // vLLM's NVFP4 CUTLASS GEMM on Blackwell (GB10), mangled: `ESB_SB_` substitutions
            // and `float_e2m1_t`.
            (
                "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupleIJiiiiEEENS1_10collective13CollectiveMmaINS1_42MainloopSm120TmaWarpSpecializedBlockScaledILi2ELi3ENS5_IJNS4_1CILi1EEESB_SB_EEENS5_IJNS_12float_e2m1_tENS_13float_ue4m3_tEEEE",
                KernelClass::Gemm,
            ),
            (
                "volta_scudnn_128x64_relu_interior_nn_v1",
                KernelClass::Convolution,
            ),
            (
                "flash_fwd_kernel<Flash_fwd_kernel_traits>",
                KernelClass::Attention,
            ),
            (
                "void at::native::vectorized_elementwise_kernel<4>",
                KernelClass::Elementwise,
            ),
            (
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                KernelClass::Communication,
            ),
            (
                "void at::native::batch_norm_collect_statistics_kernel",
                KernelClass::Normalization,
            ),
            // Real names from hta/ns_resolution_trace: cuDNN batch norm is not a convolution.
            (
                "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, float, float, cudnnTensorStruct, float const*)",
                KernelClass::Normalization,
            ),
            (
                "void cudnn::bn_bw_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_bw_1C11_args<float>)",
                KernelClass::Normalization,
            ),
            // From hta/trace_filter/sampled_rank-0: fbgemm_gpu kernels are not GEMMs.
            (
                "void split_embedding_codegen_forward_unweighted_kernel<c10::Half, c10::Half, float, false, long, 2ul, 32ul>(at::GenericPackedTensorAccessor<c10::Half, 1ul>)",
                KernelClass::Embedding,
            ),
            (
                "void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int const*, int*)",
                KernelClass::Embedding,
            ),
            (
                "void at::native::reduce_kernel<512, 1>",
                KernelClass::Reduction,
            ),
        ] {
            assert_eq!(kernel_class(name), class, "{name}");
        }
    }

    /// Real kernel names of the corpus, per vendor: (name, matrix units, collective).
    const REAL: [(&str, bool, bool); 16] = [
        // NVIDIA (hta, kineto samples, Nsight exports).
        ("volta_sgemm_128x64_nn", false, false),
        ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", true, false),
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)", true, false),
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", true, false),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", false, true),
        ("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", false, true),
        // AMD (TraceLens mi210/mi300, hta amd_trace).
        ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1", true, false),
        ("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_wt32x32x8_ws2x1_wr2x2_ta1x4x1x4_1x4x1x64", true, false),
        ("_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weightINS_47GridwiseGemm_bk0mk1", true, false),
        ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16>", true, false),
        ("_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatch", true, false),
        ("batched_transpose_16x64_pack_1x4_ediv_1x2_half", false, false),
        ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", false, true),
        // Huawei Ascend (HCCL).
        ("hcclAllReduce_RING_fp32", false, true),
        // DeepEP's expert-parallel exchange (DeepSeek's public DualPipe training trace).
        ("void dpsk::ep::internode::combine<(dpsk::ep::MemoryDataLayout)0, 4, 4>(int4*, float*, int const*)", false, true),
        ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)", false, true),
    ];

    #[test]
    fn real_kernel_names_of_each_vendor_read_right() {
        for (name, matrix, collective) in REAL {
            assert_eq!(uses_matrix_cores(name), matrix, "matrix units: {name}");
            assert_eq!(
                is_communication_kernel(name),
                collective,
                "collective: {name}"
            );
            assert_eq!(
                kernel_class(name) == KernelClass::Communication,
                collective,
                "class: {name}"
            );
        }
        // MIOpen's implicit GEMMs without xdlops (`gtc`, not `gtcx`) run on the vector units.
        assert!(!uses_matrix_cores(
            "igemm_fwd_gtc_nchw_fp32_bx0_ex1_bt128x128x16"
        ));
        assert_eq!(
            collective_op("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            CollectiveOp::AllReduce
        );
        assert_eq!(collective_op("ncclDevKernel_Generic"), CollectiveOp::Other);
    }
}
