//! Python GPU libraries by the names they leave in a trace: CuPy's `cupy_*` kernels, cuDF's
//! `cudf::` kernels and its `libcudf` / `cudf_python` NVTX domains, Numba's `cudapy` kernels,
//! and JAX's XLA module ranges and fusion kernels.

use serde::Serialize;

/// A Python library that launches GPU work itself (no PyTorch in the trace).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum PythonLibrary {
    /// CuPy: NumPy-like arrays on the GPU.
    #[serde(rename = "cupy")]
    CuPy,
    /// cuDF (RAPIDS): pandas-like data frames on the GPU.
    #[serde(rename = "cudf")]
    CuDf,
    /// Numba's CUDA target: kernels written in Python with `@cuda.jit`.
    Numba,
    /// JAX: XLA-compiled programs.
    #[serde(rename = "jax")]
    Jax,
}

impl PythonLibrary {
    /// The library's name as its users write it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PythonLibrary::CuPy => "CuPy",
            PythonLibrary::CuDf => "cuDF",
            PythonLibrary::Numba => "Numba",
            PythonLibrary::Jax => "JAX",
        }
    }

    /// Which library wins when a trace shows several: the one that owns the program's data
    /// structure (cuDF runs on CuPy and Numba kernels; JAX on its own).
    fn precedence(self) -> u8 {
        match self {
            PythonLibrary::CuDf => 0,
            PythonLibrary::Jax => 1,
            PythonLibrary::Numba => 2,
            PythonLibrary::CuPy => 3,
        }
    }

    /// The library of higher precedence of two.
    #[must_use]
    pub fn over(self, other: PythonLibrary) -> PythonLibrary {
        if other.precedence() < self.precedence() {
            other
        } else {
            self
        }
    }
}

/// The library a kernel's name belongs to: `cupy_add`, `cudf::detail::...`,
/// `cudapy::__main__::saxpy` (or its mangled `_ZN6cudapy...`). XLA's fusion kernels are not
/// claimed here: TensorFlow's XLA writes the same names (see [`xla_kernel`]).
#[must_use]
pub fn kernel_library(name: &str) -> Option<PythonLibrary> {
    let bare = name.trim_start_matches("void ");
    if bare.starts_with("cupy_") {
        Some(PythonLibrary::CuPy)
    } else if bare.starts_with("cudf::") || name.contains(" cudf::") || name.contains("4cudf") {
        Some(PythonLibrary::CuDf)
    } else if bare.starts_with("cudapy::") || name.contains("6cudapy") {
        Some(PythonLibrary::Numba)
    } else {
        None
    }
}

/// Whether a kernel's name is one XLA generates: `loop_add_fusion`, `input_reduce_fusion_3`,
/// `fusion_12`, `wrapped_transpose`, `triton_gemm_dot_5`, `gemm_fusion_dot_2_impl`.
#[must_use]
pub fn xla_kernel(name: &str) -> bool {
    let fusion_number = |rest: &str| rest.is_empty() || rest.bytes().all(|b| b.is_ascii_digit());
    if name == "fusion" {
        return true;
    }
    if let Some(rest) = name
        .strip_prefix("fusion_")
        .or(name.strip_prefix("fusion."))
    {
        return fusion_number(rest);
    }
    (name.starts_with("loop_") || name.starts_with("input_")) && name.contains("_fusion")
        || name.starts_with("wrapped_")
        || name.starts_with("triton_gemm_")
        || name.starts_with("gemm_fusion_")
}

/// The library an NVTX range's text or a domain's name belongs to: cuDF's domains, and the
/// XLA module ranges JAX's jitted functions run in (`XlaModule:#hlo_module=jit_step,...#`).
#[must_use]
pub fn annotation_library(name: &str) -> Option<PythonLibrary> {
    if name == "libcudf" || name == "cudf_python" || name.starts_with("cudf_") {
        Some(PythonLibrary::CuDf)
    } else if name.starts_with("XlaModule:") && name.contains("hlo_module=jit_") {
        Some(PythonLibrary::Jax)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_name_their_library_and_others_do_not() {
        assert_eq!(
            kernel_library("cupy_copy__int64_float32"),
            Some(PythonLibrary::CuPy)
        );
        assert_eq!(
            kernel_library("void cudf::detail::copy_if_kernel<int>(int)"),
            Some(PythonLibrary::CuDf)
        );
        assert_eq!(
            kernel_library("_ZN6cudapy8__main__5saxpyB2v1E5ArrayIfLi1E1C7mutable7alignedE"),
            Some(PythonLibrary::Numba)
        );
        assert_eq!(
            kernel_library("cudapy::__main__::saxpy[abi:v1](Array<float, 1, C, mutable, aligned>)"),
            Some(PythonLibrary::Numba)
        );
        for other in [
            "void at::native::vectorized_elementwise_kernel<4>(int)",
            "sgemm_128x64_nn",
            "cupyx_helper",
            "my_cudf_like_kernel",
        ] {
            assert_eq!(kernel_library(other), None, "{other}");
        }
    }

    #[test]
    fn xla_fusions_are_told_from_user_kernels() {
        for xla in [
            "loop_add_fusion",
            "input_reduce_fusion_3",
            "fusion_12",
            "fusion",
            "wrapped_transpose",
            "triton_gemm_dot_5",
            "gemm_fusion_dot_2_impl",
        ] {
            assert!(xla_kernel(xla), "{xla}");
        }
        for other in ["fusion_kernel_v2", "loop_body", "input_norm", "saxpy"] {
            assert!(!xla_kernel(other), "{other}");
        }
    }

    #[test]
    fn domains_and_module_ranges_name_their_library() {
        assert_eq!(annotation_library("libcudf"), Some(PythonLibrary::CuDf));
        assert_eq!(annotation_library("cudf_python"), Some(PythonLibrary::CuDf));
        assert_eq!(
            annotation_library("XlaModule:#hlo_module=jit_train_step,program_id=12#"),
            Some(PythonLibrary::Jax)
        );
        assert_eq!(
            annotation_library("XlaModule:#hlo_module=a_inference_cluster_0#"),
            None
        );
        assert_eq!(annotation_library("NCCL"), None);
        assert_eq!(
            PythonLibrary::CuPy.over(PythonLibrary::CuDf),
            PythonLibrary::CuDf
        );
    }
}
