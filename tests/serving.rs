//! The serving view of LLM-inference traces: the engine's iterations by phase, their GPU
//! time against AMD TraceLens's figures (`perf_csvs/gpu_timeline.csv` beside each corpus
//! trace), decode's bytes against those computed from the model's shapes, and serving advice
//! on a made-up engine loop with the problems beside its fixed twin.

use serde_json::Value;
use std::path::Path;
use tracelens_tests::{corpus_dir, tracelens};

/// AMD TraceLens's busy time of a corpus trace, in ns.
fn oracle_busy_ns(trace: &Path) -> f64 {
    let csv = trace.parent().unwrap().join("perf_csvs/gpu_timeline.csv");
    let text = std::fs::read_to_string(&csv).expect("the oracle");
    let row = text
        .lines()
        .find(|l| l.starts_with("busy_time,"))
        .expect("a busy row");
    let ms: f64 = row.split(',').nth(1).unwrap().parse().unwrap();
    ms * 1e6
}

#[test]
fn the_corpus_inference_traces_get_a_serving_view_that_matches_the_oracles() {
    let Some(corpus) = corpus_dir("the_corpus_inference_traces_get_a_serving_view") else {
        return;
    };
    let root = corpus.join("other/TraceLens/inference");
    // (trace, phase, iterations, requests, tokens)
    let cases = [
        (
            "sglang_decode/sglang_Qwen3-8B_decode.json.gz",
            "decode",
            1,
            32,
            32,
        ),
        (
            "vllm_decode_full/graph_execution.json.gz",
            "decode",
            1,
            32,
            32,
        ),
        (
            "sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
            "prefill",
            1,
            15,
            15360,
        ),
        (
            "vllm_prefilldecode_piecewise/graph_execution.json.gz",
            "mixed",
            1,
            46,
            8192,
        ),
    ];
    for (name, phase, iterations, requests, tokens) in cases {
        let path = root.join(name);
        let mut trace = tracelens_load::open(&path).expect("reads");
        tracelens_load::attach_captures(&mut trace, &path, None).expect("captures read");
        let report = tracelens_results::Report::build(&trace);
        let serving = report.diagnosis.serving.as_ref().expect(name);
        assert_eq!(serving.run.phases.len(), 1, "{name}");
        let p = &serving.run.phases[0];
        assert_eq!(p.phase.unwrap().label(), phase, "{name}");
        assert_eq!(
            (p.iterations, p.requests, p.tokens),
            (iterations, requests, tokens),
            "{name}"
        );
        // Every GPU op of these traces is launched inside the iteration: its GPU time is
        // the trace's busy time, as TraceLens measures it.
        let oracle = oracle_busy_ns(&path);
        let ours = p.gpu_busy_ns as f64;
        assert!(
            (ours - oracle).abs() <= oracle * 1e-3,
            "{name}: {ours} ns against TraceLens's {oracle} ns"
        );
        assert!(
            report.diagnosis.verdict.text.contains("Serving: 1 "),
            "{}",
            report.diagnosis.verdict.text
        );
    }
    // SGLang decode of Qwen3-8B at batch 32: the counted ops are its matrix multiplies,
    // whose bytes follow from the model's shapes (hidden 4096, MLP 12288, 32 query and 8 KV
    // heads of 128, 36 layers, vocabulary 151936, untied LM head): bf16 A, B and C of each.
    let (h, inter, q, kv, layers, vocab, rows) = (4096u64, 12288, 4096, 1024, 36, 151_936, 32);
    let per_layer: u64 = [(h, q + 2 * kv), (q, h), (h, 2 * inter), (inter, h)]
        .iter()
        .map(|&(k, n)| 2 * (rows * k + k * n + rows * n))
        .sum();
    let model_bytes = per_layer * layers + 2 * (rows * h + h * vocab + rows * vocab);
    let path = root.join("sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let mut trace = tracelens_load::open(&path).unwrap();
    tracelens_load::attach_captures(&mut trace, &path, None).unwrap();
    let report = tracelens_results::Report::build(&trace);
    let serving = report.diagnosis.serving.as_ref().unwrap();
    let b = serving.decode_bandwidth.expect("decode bandwidth");
    // The kernel table names the op that launched each replayed kernel at capture.
    let gemm = &report.diagnosis.top_kernels[0];
    assert!(gemm.name.starts_with("Cijk_"), "{}", gemm.name);
    assert_eq!(gemm.launched_by.as_deref(), Some("aten::mm"));
    let model_bytes = model_bytes as f64;
    assert!(
        (b.bytes_per_iteration - model_bytes).abs() <= model_bytes * 0.01,
        "{} bytes against {model_bytes} from the model's shapes",
        b.bytes_per_iteration
    );
    assert!(b.percent_of_peak.unwrap() > 0.0 && b.percent_of_peak.unwrap() <= 100.0);
    // vLLM's decode: counted ops cover too little of the GPU time to say a bandwidth.
    let path = root.join("vllm_decode_full/graph_execution.json.gz");
    let mut trace = tracelens_load::open(&path).unwrap();
    tracelens_load::attach_captures(&mut trace, &path, None).unwrap();
    let report = tracelens_results::Report::build(&trace);
    assert!(report
        .diagnosis
        .serving
        .as_ref()
        .unwrap()
        .decode_bandwidth
        .is_none());
}

/// A vLLM-style engine loop of four decode iterations at `batch` requests, each launching 20
/// kernels of 40 µs (one graph replay, or one launch per kernel), with `gap_us` of scheduler
/// work on the host between iterations.
fn engine_loop(batch: u32, graphs: bool, gap_us: f64) -> String {
    let mut ev = Vec::new();
    let mut t = 1000.0_f64;
    let mut gpu = 1000.0_f64;
    let mut corr = 0;
    for _ in 0..4 {
        let start = t;
        let label = format!(
            "execute_{batch}_context_0(sq0sk0sqsq0sqsk0)_generation_{batch}(sq{batch}sk{}sqsq{batch}sqsk{})",
            batch * 512,
            batch * 512
        );
        let mut host = start + 50.0;
        let launches: Vec<Vec<usize>> = if graphs {
            vec![(0..20).collect()]
        } else {
            (0..20).map(|k| vec![k]).collect()
        };
        for kernels in launches {
            corr += 1;
            let api = if graphs {
                "cudaGraphLaunch"
            } else {
                "cudaLaunchKernel"
            };
            ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"{api}","pid":1,"tid":1,"ts":{host},"dur":5,"args":{{"correlation":{corr}}}}}"#));
            for k in kernels {
                let s = gpu.max(host + 10.0);
                ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"gemv_kernel_{k}","pid":0,"tid":7,"ts":{s},"dur":40,"args":{{"device":0,"stream":7,"correlation":{corr}}}}}"#));
                gpu = s + 40.0;
            }
            host += 10.0;
        }
        let end = gpu.max(host) + 20.0;
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"{label}","pid":1,"tid":1,"ts":{start},"dur":{}}}"#, end - start));
        ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"vllm/v1/worker/gpu_model_runner.py(3380): execute_model","pid":1,"tid":1,"ts":{start},"dur":{}}}"#, end - start));
        let sched = end + 1.0;
        ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"vllm/v1/core/sched/scheduler.py(300): schedule","pid":1,"tid":1,"ts":{sched},"dur":{}}}"#, gap_us - 2.0));
        t = end + gap_us;
    }
    format!(
        r#"{{"schemaVersion": 1, "deviceProperties": [{{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045379072, "computeMajor": 9, "computeMinor": 0, "numSms": 132}}],
"traceEvents": [
{}
]}}"#,
        ev.join(",\n")
    )
}

fn serving_doc(text: &str, test: &str) -> Value {
    let dir = std::env::temp_dir().join(format!("tracelens-serving-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("engine.json");
    std::fs::write(&path, text).unwrap();
    let run = tracelens([
        "analyze".into(),
        path.into_os_string(),
        "--format".into(),
        "json".into(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

fn problems(doc: &Value) -> Vec<String> {
    doc["diagnosis"]["serving"]["advice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["problem"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_eager_small_batch_engine_loop_gets_serving_advice_and_its_fixed_twin_does_not() {
    let doc = serving_doc(&engine_loop(8, false, 800.0), "problem");
    let serving = &doc["diagnosis"]["serving"];
    assert_eq!(serving["run"]["engine"], "vllm");
    let decode = &serving["run"]["phases"][0];
    assert_eq!(
        (&decode["phase"], &decode["iterations"], &decode["requests"]),
        (&Value::from("decode"), &Value::from(4), &Value::from(32))
    );
    assert_eq!(decode["gpu_busy_ns"], 4 * 20 * 40_000);
    assert_eq!(serving["run"]["gaps"], 3);
    assert_eq!(
        problems(&doc),
        [
            "small_decode_batch",
            "decode_not_in_graphs",
            "host_between_iterations"
        ]
    );
    let fixes: Vec<&str> = serving["advice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["fix"].as_str().unwrap())
        .collect();
    assert!(fixes[0].contains("--max-num-seqs"), "{fixes:?}");
    assert!(fixes[1].contains("--enforce-eager"), "{fixes:?}");
    assert!(fixes[1].contains("CUDA graphs"), "{fixes:?}");
    let twin = serving_doc(&engine_loop(128, true, 20.0), "twin");
    assert_eq!(problems(&twin), Vec::<String>::new());
    let decode = &twin["diagnosis"]["serving"]["run"]["phases"][0];
    assert_eq!(decode["graph_replay_ns"], decode["gpu_busy_ns"]);
}
