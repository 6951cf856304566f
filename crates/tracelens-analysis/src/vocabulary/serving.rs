//! What LLM-serving names mean: the iteration ranges engines annotate with their batch
//! (`execute_{tokens}_context_{n}(sq…sk…sqsq…sqsk…)_generation_{n}(sq…sk…sqsq…sqsk…)`, and the
//! older `execute_context_{n}({tokens}_{…})_generation_{n}({…})`, as vLLM and SGLang traces of
//! AMD's TraceLens corpus carry them: `context` counts the prefill requests, `generation` the
//! decode requests, `sq` their query tokens, `sk` their key/value tokens), the engines' own
//! step functions, and which engine a Python frame belongs to.

/// A serving engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// vLLM.
    Vllm,
    /// SGLang.
    Sglang,
}

impl Engine {
    /// Its name as its users write it.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
        }
    }
}

/// The requests of one phase in an iteration's batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseBatch {
    /// Requests.
    pub requests: u64,
    /// Query tokens (prompt tokens for prefill, one per request for decode).
    pub query_tokens: u64,
    /// Key/value tokens attended over (context length summed over the requests), when the
    /// label says.
    pub kv_tokens: Option<u64>,
}

/// The batch an iteration label records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IterationLabel {
    /// Tokens scheduled in the iteration.
    pub tokens: u64,
    /// Prefill ("context") requests.
    pub prefill: PhaseBatch,
    /// Decode ("generation") requests.
    pub decode: PhaseBatch,
}

/// The batch of an engine's iteration range, when `name` is one.
#[must_use]
pub fn iteration_label(name: &str) -> Option<IterationLabel> {
    let rest = name.strip_prefix("execute_")?;
    let (tokens, rest) = match rest.strip_prefix("context_") {
        Some(r) => (None, r),
        None => {
            let (t, r) = rest.split_once("_context_")?;
            (Some(t.parse::<u64>().ok()?), r)
        }
    };
    let (context, generation) = rest.split_once(")_generation_")?;
    let prefill = phase(context)?;
    let decode = phase(generation.strip_suffix(')')?)?;
    let tokens = tokens.unwrap_or(prefill.query_tokens + decode.query_tokens);
    Some(IterationLabel {
        tokens,
        prefill,
        decode,
    })
}

/// `15(sq15360sk15360sqsq…sqsk…)` or the older `1(888_788544)`, `0(0)`.
fn phase(text: &str) -> Option<PhaseBatch> {
    let (requests, inner) = text.split_once('(')?;
    let requests = requests.parse().ok()?;
    let inner = inner.trim_end_matches(')');
    if let Some(fields) = inner.strip_prefix("sq") {
        let (query, rest) = fields.split_once("sk")?;
        let kv = rest.split_once("sqsq").map_or(rest, |(k, _)| k);
        return Some(PhaseBatch {
            requests,
            query_tokens: query.parse().ok()?,
            kv_tokens: Some(kv.parse().ok()?),
        });
    }
    let query = inner.split_once('_').map_or(inner, |(q, _)| q);
    Some(PhaseBatch {
        requests,
        query_tokens: query.parse().ok()?,
        kv_tokens: None,
    })
}

/// The engine a Python frame's file belongs to.
#[must_use]
pub fn engine_of_frame(name: &str) -> Option<Engine> {
    // A Python frame: `path/to/file.py(line): function`.
    let (file, _) = name.split_once(".py(")?;
    if file.contains("vllm/") {
        Some(Engine::Vllm)
    } else if file.contains("sglang/") {
        Some(Engine::Sglang)
    } else {
        None
    }
}

/// Whether a Python frame is an engine's one-iteration step: vLLM's model runner
/// `execute_model`, SGLang's `forward_batch_generation`.
#[must_use]
pub fn is_engine_step_frame(name: &str) -> bool {
    (name.contains("vllm/") && name.ends_with("): execute_model"))
        || (name.contains("sglang/") && name.ends_with("): forward_batch_generation"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_of_both_generations_are_read() {
        let l = iteration_label(
            "execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)",
        )
        .unwrap();
        assert_eq!(l.tokens, 8192);
        assert_eq!(
            (
                l.prefill.requests,
                l.prefill.query_tokens,
                l.prefill.kv_tokens
            ),
            (9, 8155, Some(8430))
        );
        assert_eq!(
            (l.decode.requests, l.decode.query_tokens, l.decode.kv_tokens),
            (37, 37, Some(34489))
        );
        let old = iteration_label("execute_context_1(888_788544)_generation_0(0)").unwrap();
        assert_eq!(
            (old.tokens, old.prefill.requests, old.decode.requests),
            (888, 1, 0)
        );
        assert_eq!(iteration_label("execute_diffusion_1_256x256"), None);
        assert_eq!(iteration_label("execute_model"), None);
        assert_eq!(
            iteration_label("execute_x_context_1(1_1)_generation_0(0)"),
            None
        );
    }

    #[test]
    fn engine_frames_are_known() {
        assert_eq!(
            engine_of_frame("vllm/v1/worker/gpu_model_runner.py(3380): execute_model"),
            Some(Engine::Vllm)
        );
        assert!(is_engine_step_frame(
            "vllm/v1/worker/gpu_model_runner.py(3380): execute_model"
        ));
        assert!(is_engine_step_frame(
            "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker.py(445): forward_batch_generation"
        ));
        assert_eq!(engine_of_frame("train.py(3): step"), None);
    }
}
