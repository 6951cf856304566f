//! Work replayed from CUDA/HIP graphs gets the op, shapes and scope that launched it at
//! capture: from a capture trace beside the replay (the corpus' inference traces), from
//! `--capture FILE`, and from PyTorch's own graph annotations in the replay trace.

use serde_json::Value;
use std::path::{Path, PathBuf};
use tracelens_model::OriginSource;
use tracelens_tests::{corpus_dir, tracelens};

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tracelens-graphs-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// The replay traces of the corpus that have a `capture_traces/` folder beside them.
fn replays_with_captures(corpus: &Path) -> Vec<PathBuf> {
    let root = corpus.join("other/TraceLens/inference");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root)
        .expect("the inference folder")
        .flatten()
    {
        let dir = dir.path();
        if !dir.join(tracelens_load::CAPTURE_FOLDER).is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).expect("a trace folder").flatten() {
            let f = f.path();
            if f.is_file() && tracelens_load::is_trace_file_name(&f) {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_replay_with_a_capture_trace_gets_its_ops_and_the_views_cover_them() {
    let Some(corpus) = corpus_dir("every_replay_with_a_capture_trace_gets_its_ops") else {
        return;
    };
    let replays = replays_with_captures(&corpus);
    assert!(
        replays.len() >= 4,
        "expected the 4 replay traces, found {replays:?}"
    );
    for path in replays {
        let mut trace = tracelens_load::open(&path).expect("the replay reads");
        assert!(
            trace.links.graph_launches > 0,
            "{}: no graph launch",
            path.display()
        );
        let a = tracelens_load::attach_captures(&mut trace, &path, None)
            .expect("the capture reads")
            .unwrap_or_else(|| panic!("{}: no capture matched", path.display()));
        eprintln!(
            "{}: {} of {} replayed GPU ops matched ({:.1} %) from {:?}",
            path.display(),
            a.attributed_ops,
            a.replayed_ops,
            a.match_percent(),
            a.capture_file
        );
        assert_eq!(a.source, OriginSource::CaptureTrace);
        assert!(a.replayed_ops > 0);
        assert_eq!(a.attributed_ops, a.replayed_ops, "{}", path.display());
        let with_op = trace
            .graph_origins()
            .filter(|(_, o)| o.op.is_some())
            .count() as u64;
        assert_eq!(
            with_op,
            a.attributed_ops,
            "{}: ops without an op",
            path.display()
        );
        let report = tracelens_results::Report::build(&trace);
        let d = &report.diagnosis;
        let replayed: u64 = d.operators.iter().map(|o| o.replayed_calls).sum();
        assert!(
            replayed > 0,
            "{}: the operator view has no replayed call",
            path.display()
        );
        for idle in &d.idle {
            assert!(
                idle.attribution_reliable,
                "{}: idle still unreliable with every replayed op matched",
                path.display()
            );
        }
        assert!(
            d.efficiency.flops > 0.0,
            "{}: the efficiency view counts no replayed op",
            path.display()
        );
        assert!(
            !report
                .warnings
                .iter()
                .any(|w| w.message.contains("one unit")),
            "{}: the warning still calls the replay one unit",
            path.display()
        );
    }
}

#[test]
fn a_replay_without_its_capture_is_one_unit_and_says_so() {
    let Some(corpus) = corpus_dir("a_replay_without_its_capture_is_one_unit") else {
        return;
    };
    let path = corpus.join("other/TraceLens/inference/vllm_decode_full/graph_execution.json.gz");
    let mut trace = tracelens_load::open(&path).expect("the replay reads");
    assert!(trace.graph_attribution.is_none());
    assert!(trace
        .warnings
        .iter()
        .any(|w| w.message.contains("one unit")));
    let report = tracelens_results::Report::build(&trace);
    assert!(report
        .diagnosis
        .operators
        .iter()
        .all(|o| o.replayed_calls == 0));
    // The same replay with its capture named on the command line.
    let capture = std::fs::read_dir(path.parent().unwrap().join("capture_traces"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .expect("the capture trace");
    let a = tracelens_load::attach_captures(&mut trace, Path::new("-"), Some(&capture))
        .expect("reads")
        .expect("matches");
    assert_eq!(a.attributed_ops, 421);
    // Another program's capture (sglang's Qwen3 decode) does not pass for this one's.
    let other =
        corpus.join("other/TraceLens/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz");
    let mut wrong = tracelens_load::open(&path).expect("the replay reads");
    let w =
        tracelens_load::attach_captures(&mut wrong, Path::new("-"), Some(&other)).expect("reads");
    assert!(
        w.as_ref()
            .is_none_or(|w| w.attributed_ops * 2 < w.replayed_ops),
        "a foreign capture matched {w:?}"
    );
    let run = tracelens([
        "analyze".into(),
        path.clone().into_os_string(),
        "--capture".into(),
        capture.into_os_string(),
        "--format".into(),
        "json".into(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["graph_attribution"]["attributed_ops"], 421);
    assert_eq!(doc["graph_attribution"]["source"], "capture_trace");
}

#[test]
fn a_capture_that_cannot_be_read_is_one_line_and_exit_2() {
    let dir = scratch("unreadable_capture");
    let replay = dir.join("replay.json");
    std::fs::write(&replay, annotated_replay(false)).unwrap();
    let missing = dir.join("no-such-capture.json");
    let run = tracelens([
        "analyze".into(),
        replay.into_os_string(),
        "--capture".into(),
        missing.clone().into_os_string(),
        "--no-report".into(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no-such-capture.json"),
        "{}",
        run.stderr
    );
}

/// A replay in the format PyTorch 2.13+ writes with `export_chrome_trace(path,
/// cuda_graph_annotations=get_kernel_annotations())` (`torch/profiler/_chrome_trace_export.py`):
/// each replayed kernel carries its `graph node id` (from Kineto's metadata) and, spliced into
/// its `args` after it, the annotation `mark_kernels` recorded for that node, its values
/// stringified (`{"name": "attention"}`, torchtitan's `{"module_fqn": "layers.0.attention.wq"}`).
/// The envelope says `cudaGraphInlineAnnotated: true`. With `annotated` false, no kernel has
/// an annotation (the same replay exported without them).
fn annotated_replay(annotated: bool) -> String {
    let ann = |fields: &str| {
        if annotated {
            format!(", {fields}")
        } else {
            String::new()
        }
    };
    format!(
        r#"{{"schemaVersion": 1, "deviceProperties": [{{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045379072, "computeMajor": 9, "computeMinor": 0, "numSms": 132}}],
"cudaGraphInlineAnnotated": {annotated},
"traceEvents": [
{{"ph":"X","cat":"cpu_op","name":"aten::_cudagraph_replay","pid":1,"tid":1,"ts":100.0,"dur":30.0,"args":{{"External id":5}}}},
{{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":105.0,"dur":20.0,"args":{{"External id":5,"correlation":900}}}},
{{"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16bf16_bf16f32","pid":0,"tid":7,"ts":130.0,"dur":40.0,"args":{{"External id":5,"device":0,"stream":7,"correlation":900,"graph node id":4294967297{}}}}},
{{"ph":"X","cat":"kernel","name":"flash_fwd_kernel","pid":0,"tid":7,"ts":171.0,"dur":30.0,"args":{{"External id":5,"device":0,"stream":7,"correlation":900,"graph node id":4294967298{}}}}},
{{"ph":"X","cat":"kernel","name":"vectorized_elementwise_kernel","pid":0,"tid":7,"ts":202.0,"dur":5.0,"args":{{"External id":5,"device":0,"stream":7,"correlation":900,"graph node id":4294967299}}}}
]}}"#,
        ann(r#""module_fqn": "layers.0.attention.wq""#),
        ann(r#""name": "attention""#),
    )
}

#[test]
fn pytorch_graph_annotations_give_replayed_kernels_their_scope() {
    let dir = scratch("annotations");
    let path = dir.join("annotated.json");
    std::fs::write(&path, annotated_replay(true)).unwrap();
    let trace = tracelens_load::open(&path).expect("reads");
    let a = trace.graph_attribution.clone().expect("annotations read");
    assert_eq!(a.source, OriginSource::Annotation);
    assert_eq!((a.attributed_ops, a.replayed_ops), (2, 3));
    let scopes: Vec<&str> = trace
        .graph_origins()
        .map(|(_, o)| trace.names.get(o.scope.expect("a scope")))
        .collect();
    assert_eq!(scopes, ["layers.0.attention.wq", "attention"]);
    assert!(trace.warnings.iter().any(|w| w.message.contains("2 of 3")));
    // The regions view shows the scopes with their replayed GPU time.
    let report = tracelens_results::Report::build(&trace);
    let region = |name: &str| {
        report
            .diagnosis
            .regions
            .iter()
            .find(|r| r.name == name)
            .map(|r| (r.calls, r.gpu_ns, r.host_ns))
    };
    assert_eq!(region("layers.0.attention.wq"), Some((1, 40_000, 0)));
    assert_eq!(region("attention"), Some((1, 30_000, 0)));
    // The fixed twin: the same replay exported without annotations stays one unit.
    std::fs::write(&path, annotated_replay(false)).unwrap();
    let plain = tracelens_load::open(&path).expect("reads");
    assert!(plain.graph_attribution.is_none());
    assert_eq!(plain.graph_origins().count(), 0);
    assert!(plain
        .warnings
        .iter()
        .any(|w| w.message.contains("one unit")));
}

#[test]
fn a_memory_bound_decode_gets_serving_advice_and_a_prefill_heavy_replay_does_not() {
    let Some(corpus) = corpus_dir("a_memory_bound_decode_gets_serving_advice") else {
        return;
    };
    let verdict = |name: &str, with_capture: bool| {
        let path = corpus.join("other/TraceLens/inference").join(name);
        let mut trace = tracelens_load::open(&path).expect("reads");
        if with_capture {
            tracelens_load::attach_captures(&mut trace, &path, None).expect("capture reads");
        }
        tracelens_results::Report::build(&trace)
            .diagnosis
            .verdict
            .text
    };
    // vLLM decode at batch 32 (capture_traces/execution_details.json): its GEMMs read their
    // weights for 32 rows each, about 32 FLOP per byte of 16-bit weights, far below an
    // MI300X's ridge point.
    let decode = verdict("vllm_decode_full/graph_execution.json.gz", true);
    assert!(decode.contains("memory-bound"), "{decode}");
    assert!(
        decode.contains("more rows through each multiply"),
        "{decode}"
    );
    assert!(!decode.contains("multiples of 8"), "{decode}");
    assert!(!decode.contains("compute capability"), "{decode}");
    // Without the capture there are no shapes, so no bound is claimed.
    let unknown = verdict("vllm_decode_full/graph_execution.json.gz", false);
    assert!(!unknown.contains("memory-bound"), "{unknown}");
    // The twin: prefill and decode together, whose GEMMs are mostly compute-bound.
    let prefill = verdict("vllm_prefilldecode_piecewise/graph_execution.json.gz", true);
    assert!(!prefill.contains("memory-bound"), "{prefill}");
    assert!(prefill.contains("multiples of 8"), "{prefill}");
}

#[test]
fn check_decides_on_the_replay_as_analyze_reads_it() {
    let Some(corpus) = corpus_dir("check_decides_on_the_replay_as_analyze_reads_it") else {
        return;
    };
    let path = corpus.join("other/TraceLens/inference/vllm_decode_full/graph_execution.json.gz");
    // MFU needs the replayed ops' shapes, which only the capture beside the trace gives.
    let run = tracelens([
        "check".into(),
        path.into_os_string(),
        "--rule".into(),
        "gpu.mfu_percent > 0.01".into(),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("measured: gpu.mfu_percent"),
        "{}",
        run.stdout
    );
}
