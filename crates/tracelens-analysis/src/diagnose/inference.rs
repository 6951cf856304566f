//! What to do about a serving trace: decode's achieved memory bandwidth against the HBM peak,
//! and advice in serving terms — concurrency per decode iteration, graph capture of decode,
//! host time between iterations, chunked prefill, fewer bits per weight where the GPU runs
//! them — in the engine's own options where the trace names the engine, in the vendor's words
//! for the GPU.

use crate::measure::environment::Hardware;
use crate::views::efficiency::Efficiency;
use crate::views::inference::{InferenceRun, Phase};
use crate::vocabulary::devices::Vendor;
use crate::vocabulary::serving::Engine;
use serde::Serialize;
use tracelens_model::TimeNs;

/// Decode's bytes and bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct DecodeBandwidth {
    /// Bytes the counted ops (matrix multiplies and the other ops the cost model knows) read
    /// and write per decode iteration: the weights and activations; the KV cache that
    /// attention reads is counted only where attention's shapes are recorded.
    pub bytes_per_iteration: f64,
    /// Those bytes over the decode iterations' GPU time: a lower bound on the bandwidth.
    pub tb_per_s: f64,
    /// The device's HBM peak, when known.
    pub peak_tb_per_s: Option<f64>,
    /// `tb_per_s` against it, 0–100.
    pub percent_of_peak: Option<f64>,
    /// The share of GPU time the counted ops cover.
    pub coverage_percent: f64,
}

/// What kind of serving advice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServingProblem {
    /// Decode reads its weights for few requests: more per iteration, fewer bits per weight.
    SmallDecodeBatch,
    /// Decode launches its kernels one by one.
    DecodeNotInGraphs,
    /// The host works between iterations while the GPU waits.
    HostBetweenIterations,
    /// Prefill iterations are long beside decode ones.
    LongPrefill,
}

/// One piece of serving advice.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ServingAdvice {
    /// Which problem.
    pub problem: ServingProblem,
    /// One line, with the numbers.
    pub title: String,
    /// What to change.
    pub fix: String,
}

/// The serving view and what to do about it.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ServingReport {
    /// The iterations and their split.
    pub run: InferenceRun,
    /// Decode's bandwidth, when every iteration with GPU work is a decode.
    pub decode_bandwidth: Option<DecodeBandwidth>,
    /// Advice, most important first.
    pub advice: Vec<ServingAdvice>,
}

/// Decode's bandwidth is said only when the counted ops cover this share of the GPU time.
pub const MIN_COVERAGE_PERCENT: f64 = 50.0;

/// A decode batch below this many requests leaves the GPU reading weights for few tokens.
const SMALL_DECODE_BATCH: f64 = 64.0;

#[expect(
    clippy::cast_precision_loss,
    reason = "durations and counts for ratios"
)]
fn per(ns: TimeNs, n: u64) -> f64 {
    ns as f64 / n.max(1) as f64
}

/// The report of `run`, with decode's bandwidth from the efficiency view's counted bytes.
#[must_use]
pub fn report(
    run: InferenceRun,
    efficiency: &Efficiency,
    hw: &Hardware,
    verdict: &crate::diagnose::verdict::Verdict,
) -> ServingReport {
    use crate::views::kernels::KernelClass;
    use crate::vocabulary::kernels::Precision;
    // The matrix multiplies' kernels already run in FP8 or fewer bits.
    let gemm_precision = |p: Precision| {
        verdict.kernel_classes.iter().any(|c| {
            matches!(c.class, KernelClass::Gemm | KernelClass::GemmFp32) && c.precision == Some(p)
        })
    };
    let (fp4, fp8) = (
        gemm_precision(Precision::Fp4),
        gemm_precision(Precision::Fp8),
    );
    let decode_bandwidth = decode_bandwidth(&run, efficiency);
    let mut advice = Vec::new();
    let options = |vllm: &'static str, sglang: &'static str, neutral: &'static str| match run.engine
    {
        Some(Engine::Vllm) => vllm,
        Some(Engine::Sglang) => sglang,
        None => neutral,
    };
    if let Some(decode) = run.phase(Phase::Decode) {
        if let Some(batch) = decode.mean_batch().filter(|&b| b < SMALL_DECODE_BATCH) {
            let read = decode_bandwidth.map_or(String::new(), |b| {
                let peak = b
                    .percent_of_peak
                    .map_or(String::new(), |p| format!(", {p:.0} % of the HBM peak"));
                format!(
                    ": each iteration reads at least {:.1} GB at {:.2} TB/s{peak}",
                    b.bytes_per_iteration / 1e9,
                    b.tb_per_s
                )
            });
            let bits = match (hw.vendor, hw.has_fp8()) {
                _ if fp4 => "; the multiplies already run in 4 bits, so more requests per iteration is the lever".to_string(),
                _ if fp8 => ", and cut the bytes per weight: the multiplies already run in FP8, so INT4 weight-only quantization is the step left".to_string(),
                (Vendor::Amd, Some(true)) => ", and cut the bytes per weight: FP8 weights (this Instinct GPU runs FP8 on its Matrix Cores) or INT4 weight-only quantization".to_string(),
                (_, Some(true)) => ", and cut the bytes per weight: FP8 weights (this GPU runs FP8 on its tensor cores) or INT4 weight-only quantization".to_string(),
                _ => ", and cut the bytes per weight: INT8 or INT4 weight-only quantization".to_string(),
            };
            advice.push(ServingAdvice {
                problem: ServingProblem::SmallDecodeBatch,
                title: format!(
                    "Decode runs {} per iteration{read}; the weights are read once per iteration whatever the batch",
                    requests_text(batch)
                ),
                fix: format!(
                    "Serve more concurrent requests per decode iteration ({}){bits}.",
                    options(
                        "raise --max-num-seqs and send more concurrent requests",
                        "raise --max-running-requests and send more concurrent requests",
                        "raise the engine's limit on concurrent requests and send more of them"
                    )
                ),
            });
        }
        if decode.gpu_busy_ns > 0 && decode.graph_replay_ns == 0 {
            let graph = if hw.vendor == Vendor::Amd {
                "HIP graphs"
            } else {
                "CUDA graphs"
            };
            advice.push(ServingAdvice {
                problem: ServingProblem::DecodeNotInGraphs,
                title: format!(
                    "Decode launches its kernels one by one: {} iterations with no graph replay",
                    decode.iterations
                ),
                fix: format!(
                    "Capture decode in {graph} so each iteration is one launch: {}.",
                    options(
                        "do not pass --enforce-eager, and keep the batch sizes within the captured sizes",
                        "do not pass --disable-cuda-graph, and keep the batch within --cuda-graph-max-bs",
                        "enable the engine's graph capture for decode"
                    )
                ),
            });
        }
    }
    let iterations = run.iterations();
    let busy: TimeNs = run.phases.iter().map(|p| p.gpu_busy_ns).sum();
    if run.gaps > 0 && per(run.between_iterations_ns, run.gaps) >= 0.1 * per(busy, iterations) {
        advice.push(ServingAdvice {
            problem: ServingProblem::HostBetweenIterations,
            title: format!(
                "The host spends {} between iterations (scheduling, input preparation, output processing), against {} of GPU work per iteration",
                tracelens_model::format_ms(run.between_iterations_ns / i64::try_from(run.gaps).unwrap_or(1)),
                tracelens_model::format_ms(busy / i64::try_from(iterations.max(1)).unwrap_or(1))
            ),
            fix: format!(
                "Overlap the scheduling of the next iteration with the current one: {}.",
                options(
                    "vLLM's --async-scheduling where your version has it",
                    "keep SGLang's overlap scheduler on (do not pass --disable-overlap-schedule)",
                    "the engine's asynchronous or overlapped scheduling"
                )
            ),
        });
    }
    let prefill = run
        .phase(Phase::Prefill)
        .or_else(|| run.phase(Phase::Mixed));
    if let (Some(p), Some(d)) = (prefill, run.phase(Phase::Decode)) {
        if per(p.gpu_busy_ns, p.iterations) > 4.0 * per(d.gpu_busy_ns, d.iterations) {
            advice.push(ServingAdvice {
                problem: ServingProblem::LongPrefill,
                title: format!(
                    "A prefill iteration takes {} of GPU time, a decode iteration {}: decodes wait behind each prefill",
                    tracelens_model::format_ms(p.gpu_busy_ns / i64::try_from(p.iterations).unwrap_or(1)),
                    tracelens_model::format_ms(d.gpu_busy_ns / i64::try_from(d.iterations).unwrap_or(1))
                ),
                fix: format!(
                    "Chunk long prompts so each iteration carries a bounded prefill beside the decodes: {}.",
                    options(
                        "--enable-chunked-prefill with a smaller --max-num-batched-tokens",
                        "a smaller --chunked-prefill-size",
                        "the engine's chunked prefill with a smaller token budget per iteration"
                    )
                ),
            });
        }
    }
    ServingReport {
        run,
        decode_bandwidth,
        advice,
    }
}

/// Decode's bandwidth: the counted bytes of the window over the decode iterations' GPU time,
/// when decode iterations are the only ones with GPU work (so the window's bytes are theirs).
fn decode_bandwidth(run: &InferenceRun, efficiency: &Efficiency) -> Option<DecodeBandwidth> {
    let decode = run.phase(Phase::Decode)?;
    let others_busy = run
        .phases
        .iter()
        .filter(|p| p.phase != Some(Phase::Decode))
        .any(|p| p.gpu_busy_ns > 0);
    let bytes: f64 = efficiency.classes.iter().map(|c| c.throughput.bytes).sum();
    // Bytes of ops that cover under half the GPU time say little of the bandwidth.
    let covered = efficiency.coverage_percent >= MIN_COVERAGE_PERCENT;
    if others_busy || !covered || decode.gpu_busy_ns <= 0 || bytes <= 0.0 {
        return None;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "a duration and a count for a rate"
    )]
    let (seconds, iterations) = (decode.gpu_busy_ns as f64 / 1e9, decode.iterations as f64);
    let tb_per_s = bytes / seconds / 1e12;
    let peak = efficiency.peak_tb_per_s.filter(|&p| p > 0.0);
    Some(DecodeBandwidth {
        bytes_per_iteration: bytes / iterations,
        tb_per_s,
        peak_tb_per_s: peak,
        percent_of_peak: peak.map(|p| (tb_per_s * 100.0 / p).min(100.0)),
        coverage_percent: efficiency.coverage_percent,
    })
}

/// `1 request`, `32 requests` (a mean batch, rounded).
fn requests_text(batch: f64) -> String {
    let n = batch.round();
    if (n - 1.0).abs() < 0.5 {
        "1 request".into()
    } else {
        format!("{n:.0} requests")
    }
}

/// Says what the serving trace's iterations are, after the verdict: how many of each phase
/// and their batch, and decode's bandwidth against the HBM peak.
pub(crate) fn add_to_verdict(v: &mut crate::diagnose::verdict::Verdict, serving: &ServingReport) {
    let run = &serving.run;
    let mut parts = Vec::new();
    for p in &run.phases {
        let Some(phase) = p.phase else { continue };
        let batch = p
            .mean_batch()
            .map_or(String::new(), |b| format!(" of {}", requests_text(b)));
        let noun = if p.iterations == 1 {
            "iteration"
        } else {
            "iterations"
        };
        parts.push(format!("{} {} {noun}{batch}", p.iterations, phase.label()));
    }
    let mut text = format!("Serving: {}", parts.join(", "));
    if let (Some(b), Some(_)) = (serving.decode_bandwidth, run.phase(Phase::Decode)) {
        let peak = b
            .percent_of_peak
            .map_or(String::new(), |p| format!(" ({p:.0} % of the HBM peak)"));
        text.push_str(&format!(
            "; decode moves at least {:.1} GB per iteration at {:.2} TB/s{peak}",
            b.bytes_per_iteration / 1e9,
            b.tb_per_s
        ));
    }
    v.text.push_str(". ");
    v.text.push_str(&text);
}
