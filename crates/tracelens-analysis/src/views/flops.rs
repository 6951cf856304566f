//! The cost model of an operator call: floating-point operations and bytes moved, from the
//! input shapes, dtypes and concrete values the profiler recorded (`record_shapes=True`).
//!
//! Definitions (one multiply-add is 2 FLOPs; bytes are each tensor input read once and the
//! output written once, the least traffic the op can have):
//! - **GEMM** `mm`, `addmm`, `bmm`, `baddbmm`, `matmul`, `linear`, `_scaled_mm`, `addmv`/`mv`:
//!   `2·batch·M·K·N`.
//! - **Convolution** forward (`conv1d/2d/3d`, `convolution`, `_convolution`,
//!   `cudnn_convolution`, transposed too): `2·N·out_spatial·numel(weight)` (transposed: the
//!   input's spatial size); the output size needs stride, padding and dilation, which only
//!   `Concrete Inputs` (PyTorch 2.x) records. `convolution_backward`: the same per gradient
//!   its output mask asks for (input and weight: twice the forward).
//! - **Attention** (`scaled_dot_product_attention` and its flash / memory-efficient / cuDNN
//!   kernels): `4·B·H·L·S·E` forward (`Q·Kᵀ` and `P·V`), half when causal; backward 2.5× the
//!   forward (five matrix products against two).
//! - **Normalization** (layer, batch, group, RMS), **softmax** and **elementwise** ops:
//!   memory-bound; FLOPs are a few per element (5 for a normalization or softmax, 1 for an
//!   elementwise op), bytes read and written as above.
//!
//! Ops outside this list, or whose shapes do not fit their signature, have no cost: the
//! efficiency view counts how much GPU time that leaves out.

use crate::measure::peaks::Precision;
use serde::Serialize;
use tracelens_model::inputs::parse_int_list;

/// What kind of work an op is, for the roofline.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    /// Matrix multiplies.
    Gemm,
    /// Convolutions, forward and backward.
    Convolution,
    /// Scaled-dot-product attention, forward and backward.
    Attention,
    /// Layer, batch, group and RMS normalization.
    Normalization,
    /// Softmax and log-softmax.
    Softmax,
    /// Elementwise arithmetic and activations.
    Elementwise,
}

impl OpClass {
    /// Every class, in output order.
    pub const ALL: [OpClass; 6] = [
        OpClass::Gemm,
        OpClass::Convolution,
        OpClass::Attention,
        OpClass::Normalization,
        OpClass::Softmax,
        OpClass::Elementwise,
    ];

    /// Label in output.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            OpClass::Gemm => "GEMM",
            OpClass::Convolution => "convolution",
            OpClass::Attention => "attention",
            OpClass::Normalization => "normalization",
            OpClass::Softmax => "softmax",
            OpClass::Elementwise => "elementwise",
        }
    }

    /// Whether the class runs on matrix units (tensor cores) and counts toward MFU.
    #[must_use]
    pub fn is_matrix(self) -> bool {
        matches!(
            self,
            OpClass::Gemm | OpClass::Convolution | OpClass::Attention
        )
    }
}

/// A dtype as PyTorch's profiler writes it in `Input type`: its precision and element size.
#[must_use]
pub fn dtype(name: &str) -> Option<(Precision, u32)> {
    Some(match name {
        "float" => (Precision::Fp32, 4),
        "double" => (Precision::Fp64, 8),
        "c10::Half" | "half" => (Precision::Fp16, 2),
        "c10::BFloat16" | "bfloat16" => (Precision::Bf16, 2),
        "signed char" | "unsigned char" => (Precision::Int8, 1),
        n if n.starts_with("c10::Float8_") => (Precision::Fp8, 1),
        _ => return None,
    })
}

/// The cost of one op call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpCost {
    /// Its class.
    pub class: OpClass,
    /// Floating-point operations.
    pub flops: f64,
    /// Least bytes read and written.
    pub bytes: f64,
    /// The precision of its first floating-point tensor input.
    pub precision: Precision,
    /// A matrix multiply whose inner or output dimension (K or N) is above
    /// [`ALIGNED_DIM`] and not a multiple of it: its kernels pad or leave the matrix units'
    /// fast path.
    pub misaligned: bool,
}

/// Matrix dimensions that are multiples of this run on tensor cores and matrix cores
/// without padding in every precision of 16 bits (NVIDIA's and AMD's GEMM guides).
pub const ALIGNED_DIM: i64 = 8;

/// An op's recorded inputs, parsed.
#[derive(Clone, Copy)]
pub struct OpInputs<'a> {
    /// One shape per input (`[]` for scalars).
    pub dims: &'a [Vec<i64>],
    /// One dtype name per input.
    pub types: &'a [String],
    /// Concrete values per input (empty when not recorded).
    pub concrete: &'a [String],
    /// For a forward convolution recorded without its stride (PyTorch 1.x): what the
    /// backward of the same input and weight shapes says about its output.
    pub paired: Option<&'a ConvPair>,
}

/// What a convolution's backward records about its forward: the output shape (its
/// `grad_output`) and the dtype, keyed by the forward's input and weight shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvPair {
    /// `[N, C_out, *spatial]`.
    pub output: Vec<i64>,
    /// Precision of the gradients.
    pub precision: Precision,
    /// Element size in bytes.
    pub elem: u32,
}

/// A forward convolution's (input, weight) shapes.
pub type ConvShapes = (Vec<i64>, Vec<i64>);

/// The forward (input, weight) shapes and the [`ConvPair`] a convolution backward records:
/// `convolution_backward(grad_output, input, weight, …)` (PyTorch 1.11+) or
/// `cudnn_convolution_backward(input, grad_output, weight, …)` (older; MIOpen alike).
#[must_use]
pub fn conv_pair(name: &str, inputs: &OpInputs) -> Option<(ConvShapes, ConvPair)> {
    let (g, x) = match name.strip_prefix("aten::")? {
        "convolution_backward" => (0, 1),
        "cudnn_convolution_backward" | "miopen_convolution_backward" => (1, 0),
        _ => return None,
    };
    let (precision, elem) = inputs.types.iter().find_map(|t| dtype(t))?;
    let (g, x, w) = (inputs.shape(g)?, inputs.shape(x)?, inputs.shape(2)?);
    (g.len() >= 3 && x.len() == g.len() && w.len() == g.len()).then(|| {
        (
            (x.to_vec(), w.to_vec()),
            ConvPair {
                output: g.to_vec(),
                precision,
                elem,
            },
        )
    })
}

impl OpInputs<'_> {
    fn shape(&self, i: usize) -> Option<&[i64]> {
        self.dims.get(i).map(Vec::as_slice)
    }

    fn concrete(&self, i: usize) -> Option<&str> {
        self.concrete
            .get(i)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    fn flag(&self, i: usize) -> bool {
        self.concrete(i) == Some("True")
    }

    fn numel(&self, i: usize) -> f64 {
        self.shape(i).map_or(0.0, numel)
    }

    /// Sum of the tensor inputs' elements (inputs with a floating dtype and a shape).
    fn tensor_elems(&self) -> f64 {
        (0..self.dims.len())
            .filter(|&i| self.types.get(i).and_then(|t| dtype(t)).is_some())
            .map(|i| self.numel(i))
            .sum()
    }
}

fn numel(shape: &[i64]) -> f64 {
    shape.iter().map(|&d| d.max(0) as f64).product()
}

/// The cost of a call of `name` with `inputs`, when the model knows the op and the shapes fit.
#[must_use]
pub fn op_cost(name: &str, inputs: &OpInputs) -> Option<OpCost> {
    let op = name.strip_prefix("aten::")?;
    // The first floating tensor input gives the precision and element size (for a forward
    // convolution recorded without dtypes, its backward's).
    let (precision, elem) = inputs
        .types
        .iter()
        .find_map(|t| dtype(t))
        .or_else(|| inputs.paired.map(|p| (p.precision, p.elem)))?;
    let elem = f64::from(elem);
    // A matrix multiply's (K, N), for its alignment.
    let mut kn: Option<(i64, i64)> = None;
    let mut matrix = |w: MatrixWork| {
        kn = Some((w.k, w.n));
        (OpClass::Gemm, w.flops, w.elems)
    };
    let (class, flops, elems) = match op {
        "mm" | "_scaled_mm" => matrix(gemm(inputs.shape(0)?, inputs.shape(1)?, None)?),
        "addmm" | "addmm_" => matrix(gemm(inputs.shape(1)?, inputs.shape(2)?, inputs.shape(0))?),
        "bmm" => matrix(gemm(inputs.shape(0)?, inputs.shape(1)?, None)?),
        "baddbmm" | "baddbmm_" => {
            matrix(gemm(inputs.shape(1)?, inputs.shape(2)?, inputs.shape(0))?)
        }
        "matmul" => matrix(gemm(inputs.shape(0)?, inputs.shape(1)?, None)?),
        "linear" => matrix(linear(inputs)?),
        "mv" => matrix(gemm(inputs.shape(0)?, inputs.shape(1)?, None)?),
        "addmv" | "addmv_" => matrix(gemm(inputs.shape(1)?, inputs.shape(2)?, inputs.shape(0))?),
        "conv1d" | "conv2d" | "conv3d" => conv_forward(inputs, 3, 4, 5, None)?,
        "convolution" | "_convolution" => conv_forward(inputs, 3, 4, 5, Some(6))?,
        // cudnn_convolution(self, weight, padding, stride, dilation, groups, …)
        "cudnn_convolution" => conv_forward(inputs, 3, 2, 4, None)?,
        // miopen_convolution(self, weight, bias, padding, stride, dilation, groups, …)
        "miopen_convolution" => conv_forward(inputs, 4, 3, 5, None)?,
        "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => conv_transposed(inputs)?,
        "convolution_backward" => conv_backward(inputs, 0, 1, 10)?,
        // (input, grad_output, weight, padding, stride, dilation, groups, benchmark,
        // deterministic, allow_tf32, output_mask)
        "cudnn_convolution_backward" | "miopen_convolution_backward" => {
            conv_backward(inputs, 1, 0, 10)?
        }
        "scaled_dot_product_attention" => attention(inputs, inputs.flag(5), 1.0)?,
        "_scaled_dot_product_flash_attention" => attention(inputs, inputs.flag(4), 1.0)?,
        "_scaled_dot_product_efficient_attention" | "_scaled_dot_product_cudnn_attention" => {
            attention(inputs, inputs.flag(6), 1.0)?
        }
        "_scaled_dot_product_flash_attention_backward"
        | "_scaled_dot_product_efficient_attention_backward" => {
            // (grad_out, q, k, v, …): the forward's shapes start at input 1.
            let fwd = OpInputs {
                dims: inputs.dims.get(1..)?,
                types: inputs.types.get(1..).unwrap_or(&[]),
                concrete: &[],
                paired: None,
            };
            let (c, f, e) = attention(&fwd, inputs.flag(11), 2.5)?;
            (c, f, e + inputs.numel(0) * 2.0)
        }
        "layer_norm"
        | "native_layer_norm"
        | "group_norm"
        | "native_group_norm"
        | "rms_norm"
        | "_fused_rms_norm"
        | "batch_norm"
        | "native_batch_norm"
        | "_batch_norm_impl_index"
        | "cudnn_batch_norm"
        | "miopen_batch_norm"
        | "instance_norm" => {
            let n = inputs.numel(0);
            (OpClass::Normalization, 5.0 * n, 2.0 * n)
        }
        "native_layer_norm_backward"
        | "native_batch_norm_backward"
        | "cudnn_batch_norm_backward"
        | "native_group_norm_backward"
        | "miopen_batch_norm_backward" => {
            let n = inputs.numel(0);
            (OpClass::Normalization, 8.0 * n, 3.0 * n)
        }
        "softmax" | "_softmax" | "log_softmax" | "_log_softmax" | "_safe_softmax" => {
            let n = inputs.numel(0);
            (OpClass::Softmax, 5.0 * n, 2.0 * n)
        }
        "_softmax_backward_data" | "_log_softmax_backward_data" => {
            let n = inputs.numel(0);
            (OpClass::Softmax, 4.0 * n, 3.0 * n)
        }
        op if is_elementwise(op) => {
            let out = (0..inputs.dims.len())
                .map(|i| inputs.numel(i))
                .fold(0.0, f64::max);
            (OpClass::Elementwise, out, inputs.tensor_elems() + out)
        }
        _ => return None,
    };
    // Shapes from a crafted trace can multiply past any real op (a zettaFLOP call): no cost
    // rather than an infinite or absurd rate.
    if !(flops.is_finite() && elems.is_finite()) || flops > MAX_OP_FLOPS || elems > MAX_OP_FLOPS {
        return None;
    }
    let off = |d: i64| d > ALIGNED_DIM && d % ALIGNED_DIM != 0;
    (flops > 0.0 || class == OpClass::Elementwise).then_some(OpCost {
        class,
        flops,
        bytes: elems * elem,
        precision,
        misaligned: kn.is_some_and(|(k, n)| off(k) || off(n)),
    })
}

/// One matrix multiply's work: FLOPs, elements moved, and its inner (K) and output (N)
/// dimensions.
struct MatrixWork {
    flops: f64,
    elems: f64,
    k: i64,
    n: i64,
}

/// Most FLOPs (and elements) one op call may have: 10^21, beyond any real kernel.
pub const MAX_OP_FLOPS: f64 = 1e21;

const ELEMENTWISE: &[&str] = &[
    "add",
    "add_",
    "sub",
    "sub_",
    "mul",
    "mul_",
    "div",
    "div_",
    "relu",
    "relu_",
    "gelu",
    "gelu_",
    "silu",
    "silu_",
    "sigmoid",
    "sigmoid_",
    "tanh",
    "tanh_",
    "neg",
    "exp",
    "exp_",
    "rsqrt",
    "sqrt",
    "pow",
    "clamp",
    "clamp_",
    "where",
    "threshold_backward",
    "gelu_backward",
    "silu_backward",
    "sigmoid_backward",
    "tanh_backward",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "addcmul_",
    "addcdiv_",
    "lerp_",
    "dropout",
    "native_dropout",
];

fn is_elementwise(op: &str) -> bool {
    ELEMENTWISE.contains(&op)
}

/// `a @ b` (+ bias). `a` is `[…, M, K]` or `[K]`, `b` is `[…, K, N]` or `[K]`; leading
/// dimensions broadcast.
fn gemm(a: &[i64], b: &[i64], bias: Option<&[i64]>) -> Option<MatrixWork> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (m, k) = match a.len() {
        1 => (1, a[0]),
        n => (a[n - 2], a[n - 1]),
    };
    let (k2, n) = match b.len() {
        1 => (b[0], 1),
        l => (b[l - 2], b[l - 1]),
    };
    if k != k2 || k <= 0 || m < 0 || n < 0 {
        return None;
    }
    let (dim_k, dim_n) = (k, n);
    let (m, k, n) = (m as f64, k as f64, n as f64);
    let batch_a = numel(&a[..a.len().saturating_sub(2)]);
    let batch_b = numel(&b[..b.len().saturating_sub(2)]);
    let batch = batch_a.max(batch_b);
    Some(MatrixWork {
        flops: 2.0 * batch * m * k * n,
        elems: batch_a * m * k + batch_b * k * n + batch * m * n + bias.map_or(0.0, numel),
        k: dim_k,
        n: dim_n,
    })
}

/// `linear(input [..., K], weight [N, K], bias)`.
fn linear(inputs: &OpInputs) -> Option<MatrixWork> {
    let x = inputs.shape(0)?;
    let w = inputs.shape(1)?;
    if x.is_empty() || w.len() != 2 || x[x.len() - 1] != w[1] {
        return None;
    }
    let k = w[1] as f64;
    let n = w[0] as f64;
    let m = numel(&x[..x.len() - 1]);
    let bias = inputs.shape(2).map_or(0.0, numel);
    Some(MatrixWork {
        flops: 2.0 * m * k * n,
        elems: m * k + k * n + m * n + bias,
        k: w[1],
        n: w[0],
    })
}

/// The int list at concrete input `i`, expanded to `dims` entries (`[2]` → `[2, 2]`).
fn int_list(inputs: &OpInputs, i: usize, dims: usize) -> Option<Vec<i64>> {
    let v = parse_int_list(inputs.concrete(i)?)?;
    match v.len() {
        1 => Some(vec![v[0]; dims]),
        n if n == dims => Some(v),
        _ => None,
    }
}

/// A forward convolution with stride, padding and dilation at the given concrete inputs;
/// `transposed` names the input that flags a transposed convolution.
fn conv_forward(
    inputs: &OpInputs,
    stride_at: usize,
    padding_at: usize,
    dilation_at: usize,
    transposed: Option<usize>,
) -> Option<(OpClass, f64, f64)> {
    if transposed.is_some_and(|t| inputs.flag(t)) {
        return conv_transposed(inputs);
    }
    let x = inputs.shape(0)?;
    let w = inputs.shape(1)?;
    if x.len() < 3 || w.len() != x.len() {
        return None;
    }
    let spatial = x.len() - 2;
    let Some(stride) = int_list(inputs, stride_at, spatial) else {
        // No stride recorded: the backward of the same shapes gives the output.
        let out = inputs.paired.map(|p| &p.output)?;
        if out.len() != x.len() || out[0] != x[0] || out[1] != w[0] {
            return None;
        }
        return Some(conv_of(x, w, &out[2..]));
    };
    let dilation = int_list(inputs, dilation_at, spatial).unwrap_or_else(|| vec![1; spatial]);
    let padding = match inputs.concrete(padding_at)? {
        "same" => None,
        "valid" => Some(vec![0; spatial]),
        _ => Some(int_list(inputs, padding_at, spatial)?),
    };
    let mut out = Vec::with_capacity(spatial);
    for d in 0..spatial {
        let size = x[2 + d];
        let o = match &padding {
            None => size,
            Some(p) => {
                let span = dilation[d] * (w[2 + d] - 1) + 1;
                if stride[d] <= 0 {
                    return None;
                }
                (size + 2 * p[d] - span).div_euclid(stride[d]) + 1
            }
        };
        if o <= 0 {
            return None;
        }
        out.push(o);
    }
    Some(conv_of(x, w, &out))
}

/// A forward convolution of input `x` and weight `w` with output spatial size `out`.
fn conv_of(x: &[i64], w: &[i64], out: &[i64]) -> (OpClass, f64, f64) {
    let batch = x[0] as f64;
    let cout = w[0] as f64;
    let out_elems = batch * cout * numel(out);
    let flops = 2.0 * batch * numel(out) * numel(w);
    (OpClass::Convolution, flops, numel(x) + numel(w) + out_elems)
}

/// A transposed convolution: every input element meets the whole per-group filter.
fn conv_transposed(inputs: &OpInputs) -> Option<(OpClass, f64, f64)> {
    let x = inputs.shape(0)?;
    let w = inputs.shape(1)?;
    if x.len() < 3 || w.len() != x.len() {
        return None;
    }
    let flops = 2.0 * x[0] as f64 * numel(&x[2..]) * numel(w);
    Some((OpClass::Convolution, flops, 2.0 * numel(x) + numel(w)))
}

/// A convolution backward with grad_output, input and weight at `g_at`, `x_at` and 2, and
/// its output mask at `mask_at` (`convolution_backward(grad_output, input, weight,
/// bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask)`;
/// without a recorded mask both gradients are assumed).
fn conv_backward(
    inputs: &OpInputs,
    g_at: usize,
    x_at: usize,
    mask_at: usize,
) -> Option<(OpClass, f64, f64)> {
    let g = inputs.shape(g_at)?;
    let x = inputs.shape(x_at)?;
    let w = inputs.shape(2)?;
    if g.len() < 3 || x.len() != g.len() || w.len() != g.len() {
        return None;
    }
    // Only `convolution_backward` records `transposed` (input 7).
    let spatial = if g_at == 0 && inputs.flag(7) {
        &x[2..]
    } else {
        &g[2..]
    };
    let forward = 2.0 * g[0] as f64 * numel(spatial) * numel(w);
    // The output mask says which gradients were asked for (input, weight, bias).
    let mask = inputs.concrete(mask_at).map_or(vec![true, true], |m| {
        m.trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|v| v.trim() == "True")
            .collect()
    });
    let passes = mask.iter().take(2).filter(|&&b| b).count() as f64;
    (passes > 0.0).then_some((
        OpClass::Convolution,
        forward * passes,
        numel(g) + numel(x) + numel(w) + passes * numel(x).max(numel(w)),
    ))
}

/// Attention over `q [B, H, L, E]`, `k [B, H, S, E]`, `v [B, H, S, Ev]`; `scale` multiplies
/// the forward FLOPs (2.5 for the backward).
fn attention(inputs: &OpInputs, causal: bool, scale: f64) -> Option<(OpClass, f64, f64)> {
    let q = inputs.shape(0)?;
    let k = inputs.shape(1)?;
    let v = inputs.shape(2)?;
    if q.len() != 4 || k.len() != 4 || v.len() != 4 {
        return None;
    }
    let (b, h, l, e) = (q[0] as f64, q[1] as f64, q[2] as f64, q[3] as f64);
    let s = k[2] as f64;
    let ev = v[3] as f64;
    let mut flops = 2.0 * b * h * l * s * (e + ev) * scale;
    if causal {
        flops /= 2.0;
    }
    let out = b * h * l * ev;
    Some((
        OpClass::Attention,
        flops,
        numel(q) + numel(k) + numel(v) + out,
    ))
}

#[cfg(test)]
// FLOP counts of whole shapes are integers well under 2^53: exact in f64.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    fn cost(name: &str, dims: &[&[i64]], types: &[&str], concrete: &[&str]) -> Option<OpCost> {
        let dims: Vec<Vec<i64>> = dims.iter().map(|d| d.to_vec()).collect();
        let types: Vec<String> = types.iter().map(|t| (*t).to_string()).collect();
        let concrete: Vec<String> = concrete.iter().map(|t| (*t).to_string()).collect();
        op_cost(
            name,
            &OpInputs {
                dims: &dims,
                types: &types,
                concrete: &concrete,
                paired: None,
            },
        )
    }

    #[test]
    fn matrix_multiplies_with_a_dimension_off_eight_are_misaligned() {
        let linear = |x: &[i64], w: &[i64]| {
            cost("aten::linear", &[x, w, &[]], &["c10::Half"; 3], &[]).unwrap()
        };
        // GPT-2's vocabulary head: N = 50257.
        assert!(linear(&[8, 1024, 768], &[50257, 768]).misaligned);
        // The padded vocabulary, and a token count (M) off eight: aligned.
        assert!(!linear(&[8, 1023, 768], &[50304, 768]).misaligned);
        // A dimension of eight or fewer (a matrix-vector product) is not padded.
        assert!(!linear(&[4, 768], &[3, 768]).misaligned);
        // Only matrix multiplies have an alignment.
        let add = cost("aten::add", &[&[7, 9], &[7, 9]], &["float"; 2], &[]).unwrap();
        assert!(!add.misaligned);
    }

    #[test]
    fn gemms_count_two_flops_per_multiply_add() {
        // The bert trace's addmm: bias [512], x [141, 512], w [512, 512], bf16.
        let c = cost(
            "aten::addmm",
            &[&[512], &[141, 512], &[512, 512], &[], &[]],
            &[
                "c10::BFloat16",
                "c10::BFloat16",
                "c10::BFloat16",
                "Scalar",
                "Scalar",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(c.flops, 2.0 * 141.0 * 512.0 * 512.0);
        assert_eq!(
            c.bytes,
            2.0 * (512.0 + 141.0 * 512.0 + 512.0 * 512.0 + 141.0 * 512.0)
        );
        assert_eq!((c.class, c.precision), (OpClass::Gemm, Precision::Bf16));
        let l = cost(
            "aten::linear",
            &[&[1, 141, 512], &[2048, 512], &[2048]],
            &["float"; 3],
            &[],
        )
        .unwrap();
        assert_eq!(l.flops, 2.0 * 141.0 * 512.0 * 2048.0);
        let b = cost(
            "aten::bmm",
            &[&[8, 4, 16], &[8, 16, 2]],
            &["c10::Half"; 2],
            &[],
        )
        .unwrap();
        assert_eq!(b.flops, 2.0 * 8.0 * 4.0 * 16.0 * 2.0);
        // Mismatched inner dimensions are not a GEMM the model can trust.
        assert!(cost("aten::mm", &[&[4, 3], &[5, 2]], &["float"; 2], &[]).is_none());
    }

    #[test]
    fn convolutions_need_the_stride() {
        // ResNet's first layer: 224² input, 7×7 stride 2 padding 3 → 112².
        let dims: [&[i64]; 7] = [&[32, 3, 224, 224], &[64, 3, 7, 7], &[], &[], &[], &[], &[]];
        let c = cost(
            "aten::conv2d",
            &dims,
            &[
                "float",
                "float",
                "",
                "ScalarList",
                "ScalarList",
                "ScalarList",
                "Scalar",
            ],
            &["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"],
        )
        .unwrap();
        assert_eq!(c.flops, 2.0 * 32.0 * 112.0 * 112.0 * 64.0 * 3.0 * 49.0);
        // MIOpen's forward has a bias before the padding: stride is input 4.
        let m = cost(
            "aten::miopen_convolution",
            &[&[32, 3, 224, 224], &[64, 3, 7, 7], &[64]],
            &["float"; 3],
            &["", "", "", "[3, 3]", "[2, 2]", "[1, 1]", "1"],
        )
        .unwrap();
        assert_eq!(m.flops, c.flops);
        // Without Concrete Inputs (PyTorch 1.x) the output size is unknown: no figure.
        assert!(cost("aten::conv2d", &dims, &["float"; 7], &[]).is_none());
        // The backward asks for both gradients: twice the forward, from grad_output's size.
        let b = cost(
            "aten::convolution_backward",
            &[&[32, 64, 112, 112], &[32, 3, 224, 224], &[64, 3, 7, 7]],
            &["float"; 3],
            &[
                "",
                "",
                "",
                "",
                "",
                "",
                "",
                "False",
                "",
                "",
                "[False, True, False]",
            ],
        )
        .unwrap();
        assert_eq!(b.flops, c.flops);
    }

    #[test]
    fn pytorch_1_convolutions_take_their_output_from_the_backward() {
        // PyTorch 1.8 (the tb_plugin ResNet-50 sample): the forward has shapes but neither
        // stride nor dtypes; its backward has grad_output and dtypes.
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
        let bwd_dims = vec![
            vec![32, 3, 224, 224],
            vec![32, 64, 112, 112],
            vec![64, 3, 7, 7],
        ];
        let bwd_types = s(&["float", "float", "float", "GenericList"]);
        let bwd = OpInputs {
            dims: &bwd_dims,
            types: &bwd_types,
            concrete: &[],
            paired: None,
        };
        let (key, pair) = conv_pair("aten::cudnn_convolution_backward", &bwd).unwrap();
        assert_eq!(key, (vec![32, 3, 224, 224], vec![64, 3, 7, 7]));
        let fwd_dims = vec![vec![32, 3, 224, 224], vec![64, 3, 7, 7], vec![], vec![]];
        let fwd = OpInputs {
            dims: &fwd_dims,
            types: &[],
            concrete: &[],
            paired: Some(&pair),
        };
        let c = op_cost("aten::conv2d", &fwd).unwrap();
        assert_eq!(c.flops, 2.0 * 32.0 * 112.0 * 112.0 * 64.0 * 3.0 * 49.0);
        assert_eq!(c.precision, Precision::Fp32);
        // The backward: both gradients when no output mask is recorded.
        let b = op_cost("aten::cudnn_convolution_backward", &bwd).unwrap();
        assert_eq!(b.flops, 2.0 * c.flops);
        // A pair for other shapes is not used.
        let other = vec![vec![32, 3, 224, 224], vec![128, 3, 7, 7]];
        let fwd = OpInputs {
            dims: &other,
            ..fwd
        };
        assert!(op_cost("aten::conv2d", &fwd).is_none());
    }

    #[test]
    fn attention_counts_both_products_and_halves_causal() {
        let q: &[i64] = &[1, 8, 141, 64];
        let types = ["c10::BFloat16"; 3];
        let full = cost(
            "aten::_scaled_dot_product_flash_attention",
            &[q, q, q],
            &types,
            &["", "", "", "0.", "False", "False", "0.125"],
        )
        .unwrap();
        assert_eq!(full.flops, 4.0 * 8.0 * 141.0 * 141.0 * 64.0);
        let causal = cost(
            "aten::_scaled_dot_product_flash_attention",
            &[q, q, q],
            &types,
            &["", "", "", "0.", "True", "False", "0.125"],
        )
        .unwrap();
        assert_eq!(causal.flops * 2.0, full.flops);
    }

    #[test]
    fn memory_bound_ops_move_their_tensors() {
        let ln = cost(
            "aten::layer_norm",
            &[&[1, 141, 512], &[], &[512], &[512], &[], &[]],
            &[
                "c10::BFloat16",
                "ScalarList",
                "c10::BFloat16",
                "c10::BFloat16",
                "Scalar",
                "Scalar",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(ln.class, OpClass::Normalization);
        assert_eq!(ln.bytes, 2.0 * 2.0 * 141.0 * 512.0);
        let add = cost(
            "aten::add",
            &[&[1, 141, 512], &[1, 141, 512], &[]],
            &["c10::BFloat16", "c10::BFloat16", "Scalar"],
            &[],
        )
        .unwrap();
        assert_eq!(add.bytes, 2.0 * 3.0 * 141.0 * 512.0);
        assert!(cost("aten::to", &[&[4]], &["float"], &[]).is_none());
        // Crafted shapes: no absurd or infinite cost.
        let huge: &[i64] = &[i64::MAX, i64::MAX, i64::MAX];
        assert!(cost("aten::bmm", &[huge, huge], &["float"; 2], &[]).is_none());
        assert!(cost("aten::add", &[huge, huge], &["float"; 2], &[]).is_none());
        assert!(cost("aten::add", &[&[4]], &["long int"], &[]).is_none());
    }
}
