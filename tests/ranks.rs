//! One distributed job from one trace per rank: the rank table, collectives matched, and the
//! straggler named with what it was doing; refusals for traces that are not one job.

use std::path::{Path, PathBuf};
use tracelens_tests::synthetic_job::rank_trace;
use tracelens_tests::{corpus_dir, tracelens};

fn write_job(dir: &Path, slow_rank: Option<usize>) {
    tracelens_tests::synthetic_job::write_job(dir, 4, slow_rank);
}

fn job_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["analyze".to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    all.extend(["--format".into(), "json".into()]);
    let run = tracelens(all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tracelens-ranks-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_planted_dataloader_straggler_is_named_and_its_fixed_twin_has_none_slow() {
    let bad = scratch("bad");
    write_job(&bad, Some(2));
    let doc = job_json(&[bad.to_str().unwrap()]);
    let job = &doc["job"];
    assert_eq!(job["ranks"].as_array().unwrap().len(), 4);
    assert_eq!(job["collectives_matched"], 3);
    assert_eq!(job["straggler"]["rank"], 2, "{job}");
    assert_eq!(job["straggler"]["last_at"], 3);
    assert_eq!(job["bottleneck"], "straggler");
    let why = job["straggler"]["explanation"].as_str().unwrap();
    assert!(why.contains("DataLoader"), "{why}");
    // The others wait for rank 2; rank 2 itself waits least.
    let waits: Vec<i64> = job["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["wait_ns"].as_i64().unwrap())
        .collect();
    assert_eq!(
        waits.iter().enumerate().min_by_key(|(_, w)| **w).unwrap().0,
        2,
        "{waits:?}"
    );
    // A gate on the job.
    let run = tracelens([
        "analyze".to_string(),
        bad.to_str().unwrap().to_string(),
        "--no-report".into(),
        "--fail-on".into(),
        "ranks.max_wait_ms > 5".into(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    // The summary fits 80 columns.
    for line in run.stdout.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    // The fixed twin: every rank loads fast; nobody waits long.
    let good = scratch("good");
    write_job(&good, None);
    let doc = job_json(&[good.to_str().unwrap()]);
    let max_wait = doc["job"]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["wait_ns"].as_i64().unwrap())
        .max()
        .unwrap();
    assert!(max_wait < 1_000_000, "{max_wait}");
    assert_ne!(
        doc["job"]["bottleneck"], "straggler",
        "{}",
        doc["job"]["verdict"]
    );
    let run = tracelens([
        "analyze".to_string(),
        good.to_str().unwrap().to_string(),
        "--no-report".into(),
        "--fail-on".into(),
        "ranks.max_wait_ms > 5".into(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // HTML: a rank table and a heat map.
    let html = scratch("html").with_extension("html");
    let run = tracelens([
        "analyze".to_string(),
        bad.to_str().unwrap().to_string(),
        "-o".into(),
        html.to_str().unwrap().to_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("class=\"straggler\"") && page.contains("rank × step"));
    assert!(
        page.contains("Where each rank&#x27;s step goes")
            || page.contains("Where each rank's step goes")
    );
    assert!(page.contains("rank 2 (late)") && page.contains("The late rank."));
    for d in [bad, good] {
        std::fs::remove_dir_all(d).unwrap();
    }
    std::fs::remove_file(html).unwrap();
}

#[test]
fn a_folder_run_writes_the_job_page_beside_the_summary() {
    let work = scratch("page");
    let job = work.join("run7");
    write_job(&job, Some(2));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tracelens_for_tests"))
        .current_dir(&work)
        .args(["analyze", "run7"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("report: run7.tracelens.html"), "{stdout}");
    let page = std::fs::read_to_string(work.join("run7.tracelens.html")).unwrap();
    assert!(page.contains("tracelens — 4 ranks") && page.contains("rank 2 (late)"));
    assert!(page.contains("<meta name=\"tracelens-source\""));
    std::fs::remove_dir_all(work).unwrap();
}

#[test]
fn traces_that_are_not_one_job_are_refused() {
    let dir = scratch("refuse");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.json"), rank_trace(0, 4, None)).unwrap();
    std::fs::write(dir.join("b.json"), rank_trace(0, 4, None)).unwrap();
    let run = tracelens(["analyze".to_string(), dir.to_str().unwrap().to_string()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("are both rank 0: not one job"),
        "{}",
        run.stderr
    );
    std::fs::write(dir.join("b.json"), rank_trace(1, 8, None)).unwrap();
    let run = tracelens(["analyze".to_string(), dir.to_str().unwrap().to_string()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("jobs of different sizes"),
        "{}",
        run.stderr
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn the_dlrm_job_names_its_straggler() {
    let Some(root) = corpus_dir("the_dlrm_job_names_its_straggler") else {
        return;
    };
    let dlrm = root.join("other/param/dlrm_kineto");
    let doc = job_json(&[dlrm.to_str().unwrap(), "--jobs", "4", "--no-report"]);
    let job = &doc["job"];
    assert_eq!(job["ranks"].as_array().unwrap().len(), 8);
    assert_eq!(job["rank_source"], "distributedInfo.rank of each trace");
    assert_eq!(job["collectives_matched"], 8);
    // The straggler is the rank with the least time in collectives: the others wait for it.
    let ranks = job["ranks"].as_array().unwrap();
    let least = ranks
        .iter()
        .min_by_key(|r| r["collective_ns"].as_i64().unwrap())
        .unwrap();
    assert_eq!(job["straggler"]["rank"], least["rank"], "{job}");
    assert_eq!(job["straggler"]["rank"], 7);
    assert!(job["straggler"]["explanation"]
        .as_str()
        .unwrap()
        .contains("arrives last at 5 of 8"));
    assert_eq!(job["bottleneck"], "straggler");
    // Every wait is per rank and per step of its own: never more than the rank's step, and
    // the straggler's cost is the others' mean wait, not their sum.
    for r in ranks {
        let (wait, step) = (
            r["wait_ns"].as_i64().unwrap(),
            r["step_ns"].as_i64().unwrap(),
        );
        assert!(
            wait <= step,
            "rank {}: wait {wait} > step {step}",
            r["rank"]
        );
    }
    let others = job["straggler"]["others_wait_ns"].as_i64().unwrap();
    let shortest = ranks
        .iter()
        .map(|r| r["step_ns"].as_i64().unwrap())
        .min()
        .unwrap();
    assert!(others < shortest, "{others} vs {shortest}");
    // One host: the clocks the collectives show agree within 10 µs.
    assert!(
        job["clock"]["skew_ns"].as_i64().unwrap() < 10_000,
        "{}",
        job["clock"]
    );
    assert_eq!(job["groups"][0]["method"], "order");
    // HTA's two sampled ranks: numbered from their traces or names, no error.
    let a = root.join("hta/trace_filter/sampled_rank-0.json.gz");
    let b = root.join("hta/trace_filter/sampled_rank-1.json.gz");
    let doc = job_json(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(doc["job"]["ranks"].as_array().unwrap().len(), 2);
}

/// One collective kernel event with its NCCL arguments (`group` none: no group recorded).
#[allow(clippy::too_many_arguments)]
fn nccl_kernel(
    op: &str,
    group: Option<&str>,
    seq: Option<i64>,
    stream: u32,
    start_us: f64,
    end_us: f64,
    corr: u32,
) -> String {
    let mut args = format!(
        r#""device": 0, "stream": {stream}, "correlation": {corr}, "Collective name": "{op}", "In msg nelems": 1048576, "Out msg nelems": 1048576, "dtype": "Float", "Group size": 4"#
    );
    if let Some(g) = group {
        args.push_str(&format!(r#", "Process Group Name": "{g}""#));
    }
    if let Some(s) = seq {
        args.push_str(&format!(r#", "Seq": {s}"#));
    }
    let kernel = if op == "allreduce" {
        "ncclDevKernel_AllReduce_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    } else {
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    };
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "{kernel}", "pid": 0, "tid": {stream}, "ts": {start_us}, "dur": {}, "args": {{{args}}}}}"#,
        end_us - start_us
    )
}

/// A rank of a job with two process groups whose calls interleave differently on different
/// ranks: ranks 0 and 1 start the all-reduce of group "dp" before the all-gather of group
/// "tp"; ranks 2 and 3 the other way round. Rank 3 reaches every all-reduce 4 ms late; all
/// members leave each call together. `groups` false writes no group names (order matching).
fn two_group_rank(rank: usize, groups: bool) -> String {
    let mut ev = Vec::new();
    let mut corr = 1;
    for step in 0..3_i64 {
        let t0 = 1_000_000.0 + step as f64 * 25_000.0;
        ev.push(format!(r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": {t0}, "dur": 25000}}"#));
        ev.push(format!(r#"{{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": {}, "dur": 8000, "args": {{"device": 0, "stream": 7, "correlation": {corr}}}}}"#, t0 + 100.0));
        corr += 1;
        // The all-reduce (group dp): arrivals 10, 10, 12, 16 ms; everyone leaves at 17.
        let ar = [10_000.0, 10_000.0, 12_000.0, 16_000.0][rank];
        let dp = groups.then_some("dp");
        ev.push(nccl_kernel(
            "allreduce",
            dp,
            None,
            20,
            t0 + ar,
            t0 + 17_000.0,
            corr,
        ));
        corr += 1;
        // The all-gather (group tp, with sequence numbers): arrivals 11, 11, 9, 9; leave at 12.
        let ag = [11_000.0, 11_000.0, 9_000.0, 9_000.0][rank];
        let tp = groups.then_some("tp");
        let seq = groups.then_some(step);
        ev.push(nccl_kernel(
            "_allgather_base",
            tp,
            seq,
            21,
            t0 + ag,
            t0 + 12_000.0,
            corr,
        ));
        corr += 1;
    }
    format!(
        r#"{{"traceEvents": [{}], "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": 4}}, "deviceProperties": [{{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0, "numSms": 108, "totalGlobalMem": 85899345920}}]}}"#,
        ev.join(",\n")
    )
}

#[test]
fn two_interleaved_process_groups_are_matched_by_group_where_order_fails() {
    let run = |groups: bool| {
        let dir = scratch(if groups { "groups" } else { "no-groups" });
        std::fs::create_dir_all(&dir).unwrap();
        for r in 0..4 {
            std::fs::write(dir.join(format!("rank{r}.json")), two_group_rank(r, groups)).unwrap();
        }
        let doc = job_json(&[dir.to_str().unwrap(), "--no-report"]);
        std::fs::remove_dir_all(dir).unwrap();
        doc["job"].clone()
    };
    let ms = |v: &serde_json::Value| v.as_i64().unwrap() as f64 / 1e6;
    let waits = |job: &serde_json::Value| -> Vec<f64> {
        job["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| ms(&r["wait_ns"]))
            .collect()
    };
    // By group: the all-reduces by order within "dp", the all-gathers by sequence number.
    let job = run(true);
    let methods: Vec<(String, String)> = job["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group"].as_str().unwrap().into(),
                g["method"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        methods,
        vec![
            ("dp".into(), "order".into()),
            ("tp".into(), "sequence".into())
        ]
    );
    assert_eq!(job["collectives_matched"], 6);
    assert!(ms(&job["clock"]["skew_ns"]) < 0.001, "{}", job["clock"]);
    assert_eq!(job["straggler"]["rank"], 3, "{job}");
    assert_eq!(job["straggler"]["last_at"], 3);
    // Rank 0 waits 6 ms per step for rank 3 at the all-reduce, and 0 at the all-gather (it
    // arrives last there, 2 ms after ranks 2 and 3).
    assert_eq!(waits(&job), vec![6.0, 6.0, 4.0 + 2.0, 2.0]);
    // Bus bandwidth per operation from the recorded sizes: 4 MiB all-reduce over 4 ranks
    // moves 2·3/4 of it per rank in the 1 ms after the last arrival.
    let ops = job["operations"].as_array().unwrap();
    let all_reduce = ops.iter().find(|o| o["op"] == "all_reduce").unwrap();
    let busbw = all_reduce["busbw_gb_per_s"].as_f64().unwrap();
    assert!((busbw - 4_194_304.0 * 1.5 / 1e6).abs() < 0.01, "{busbw}");
    // By order alone, the k-th call of ranks 0-1 is an all-reduce and of ranks 2-3 an
    // all-gather: the ends disagree by 5 ms, so the clocks look 5 ms apart and the waits are
    // wrong.
    let job = run(false);
    assert_eq!(job["groups"][0]["method"], "order");
    assert!(ms(&job["clock"]["skew_ns"]) >= 4.0, "{}", job["clock"]);
    assert_ne!(waits(&job), vec![6.0, 6.0, 6.0, 2.0]);
}

#[test]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn unrelated_traces_are_refused_and_a_two_process_export_is_two_ranks() {
    let Some(root) =
        corpus_dir("unrelated_traces_are_refused_and_a_two_process_export_is_two_ranks")
    else {
        return;
    };
    let unrelated = [
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz",
        "hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
        "hta/nccl_parser_config/nccl_data.json.gz",
        "hta/trace_file_list/inference_rank_1.json.gz",
        "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    ];
    let mut args = vec!["analyze".to_string()];
    args.extend(
        unrelated
            .iter()
            .map(|p| root.join(p).to_str().unwrap().to_string()),
    );
    args.push("--no-report".into());
    let run = tracelens(args.clone());
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("not one job"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    // --as-job takes them anyway, and says so.
    args.extend(["--as-job".into(), "--format".into(), "json".into()]);
    let run = tracelens(args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["job"]["forced"], true);
    // Two processes, one GPU each, in one Nsight Systems export: two ranks.
    let export = root.join("nsys/public/GindaChen__nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite");
    let doc = job_json(&[export.to_str().unwrap(), "--no-report"]);
    let ranks = doc["job"]["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    assert!(
        ranks[0]["file"].as_str().unwrap().ends_with("#process 111"),
        "{}",
        ranks[0]["file"]
    );
    assert!(ranks[1]["file"].as_str().unwrap().ends_with("#process 112"));
    assert_eq!(doc["job"]["forced"], false);
    assert!(doc["job"]["rank_source"]
        .as_str()
        .unwrap()
        .starts_with("process order"));
}

#[test]
#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
#[cfg_attr(
    no_corpus,
    ignore = "no trace corpus: set TRACELENS_CORPUS to shared/traces"
)]
fn nccl_overlap_matches_an_independent_computation_and_bandwidth_is_per_operation() {
    let Some(root) = corpus_dir(
        "nccl_overlap_matches_an_independent_computation_and_bandwidth_is_per_operation",
    ) else {
        return;
    };
    let path = root.join("hta/nccl_parser_config/nccl_data.json.gz");
    let run = tracelens([
        "analyze".to_string(),
        path.to_str().unwrap().to_string(),
        "--format".into(),
        "json".into(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let comm = &doc["diagnosis"]["communication"];
    let window = &doc["diagnosis"]["window"]["interval"];
    let (w0, w1) = (
        window["start_ns"].as_i64().unwrap(),
        window["end_ns"].as_i64().unwrap(),
    );
    // Independently, from the raw events: HTA's definition (comm ∩ compute) / comm over the
    // kernels of device 0, each clipped to the window.
    let raw: serde_json::Value = {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()),
            &mut text,
        )
        .unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let mut comm_iv = Vec::new();
    let mut compute_iv = Vec::new();
    for e in raw["traceEvents"].as_array().unwrap() {
        if e["cat"] != "kernel" || e["args"]["device"] != 0 {
            continue;
        }
        let ts = (e["ts"].as_f64().unwrap() * 1000.0).round() as i64;
        let end = ts + (e["dur"].as_f64().unwrap() * 1000.0).round() as i64;
        let (a, b) = (ts.max(w0), end.min(w1));
        if a >= b {
            continue;
        }
        if e["name"].as_str().unwrap().starts_with("nccl") {
            comm_iv.push((a, b));
        } else {
            compute_iv.push((a, b));
        }
    }
    let merge = |mut v: Vec<(i64, i64)>| {
        v.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::new();
        for (a, b) in v {
            match out.last_mut() {
                Some(l) if a <= l.1 => l.1 = l.1.max(b),
                _ => out.push((a, b)),
            }
        }
        out
    };
    let (comm_u, compute_u) = (merge(comm_iv), merge(compute_iv));
    let total: i64 = comm_u.iter().map(|(a, b)| b - a).sum();
    let mut both = 0;
    for &(a, b) in &comm_u {
        for &(c, d) in &compute_u {
            both += (b.min(d) - a.max(c)).max(0);
        }
    }
    let independent = both as f64 * 100.0 / total as f64;
    let ours = comm["overlap_percent"].as_f64().unwrap();
    assert!((ours - independent).abs() <= 2.0, "{ours} vs {independent}");
    assert!((ours - 15.6).abs() < 0.1, "{ours}");
    // Per operation: all-reduce and broadcast, sizes from In msg nelems × 4-byte floats, the
    // nccl-tests bus factor for 2 ranks (1 for all-reduce), compared with A100 NVLink.
    let ops: Vec<&str> = comm["by_op"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, vec!["all_reduce", "broadcast"]);
    let all_reduce = &comm["by_op"][0];
    assert_eq!(all_reduce["sized"], 15);
    assert_eq!(all_reduce["algorithms"][0], "RING LL");
    let bw = all_reduce["busbw_gb_per_s"].as_f64().unwrap();
    assert!(bw > 1.0 && bw < 300.0, "{bw}");
    assert_eq!(comm["link"], "NVLink 3 (12 links)");
}

/// Writes each rank of `job_dir` as Parquet tables under `tables/rank-N/`.
fn map_step(job_dir: &Path, tables: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for r in 0..4 {
        let out = tables.join(format!("rank-{r}"));
        let trace = job_dir.join(format!("rank{r}.json"));
        let run = tracelens([
            "analyze".to_string(),
            trace.to_str().unwrap().into(),
            "--format".into(),
            "parquet".into(),
            "-o".into(),
            out.to_str().unwrap().into(),
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        dirs.push(out);
    }
    dirs
}

#[test]
fn parquet_map_then_merge_equals_the_direct_analysis() {
    let job = scratch("pq-job");
    write_job(&job, Some(2));
    let tables = scratch("pq-tables");
    let dirs = map_step(&job, &tables);
    for name in ["rank", "steps", "collectives", "findings", "idle"] {
        assert!(
            dirs[0].join(format!("{name}.parquet")).is_file(),
            "{name}.parquet"
        );
    }
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap().to_string()));
    args.extend(["--format".into(), "json".into()]);
    let merged = tracelens(args);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    let mut merged: serde_json::Value = serde_json::from_str(&merged.stdout).unwrap();
    let mut direct = job_json(&[job.to_str().unwrap()]);
    for doc in [&mut merged, &mut direct] {
        for r in doc["job"]["ranks"].as_array_mut().unwrap() {
            r.as_object_mut().unwrap().remove("file");
        }
    }
    assert_eq!(merged, direct);
    assert_eq!(merged["job"]["straggler"]["rank"], 2);
    std::fs::remove_dir_all(job).unwrap();
    std::fs::remove_dir_all(tables).unwrap();
}

#[test]
#[cfg_attr(
    no_duckdb,
    ignore = "no DuckDB: set TRACELENS_DUCKDB_PYTHON to a python with duckdb"
)]
fn duckdb_reads_the_tables_and_finds_the_straggler() {
    let Some(python) = std::env::var_os("TRACELENS_DUCKDB_PYTHON") else {
        return;
    };
    let job = scratch("duck-job");
    write_job(&job, Some(2));
    let tables = scratch("duck-tables");
    map_step(&job, &tables);
    // The straggler in SQL: the rank that reaches each collective last, most often.
    let query = format!(
        "import duckdb\nprint(duckdb.sql(\"\"\"WITH c AS (SELECT rank, process_group, start_ns, row_number() OVER (PARTITION BY rank, process_group ORDER BY start_ns) AS k FROM read_parquet('{}/*/collectives.parquet')), l AS (SELECT rank, start_ns, max(start_ns) OVER (PARTITION BY process_group, k) AS last FROM c) SELECT rank FROM l WHERE start_ns = last GROUP BY rank ORDER BY count(*) DESC LIMIT 1\"\"\").fetchall()[0][0])",
        tables.display()
    );
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(query)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    std::fs::remove_dir_all(job).unwrap();
    std::fs::remove_dir_all(tables).unwrap();
}

#[test]
fn a_large_job_prints_the_ranks_that_explain_it_not_every_rank() {
    let dir = scratch("forty");
    tracelens_tests::synthetic_job::write_job(&dir, 40, Some(27));
    let run = tracelens(["analyze", dir.to_str().unwrap(), "--no-report"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            cells.len() == 12 && cells[0].parse::<u32>().is_ok()
        })
        .collect();
    assert_eq!(rows.len(), 16, "{}", run.stdout);
    assert!(
        rows.iter().any(|l| l.trim_start().starts_with("27 ")),
        "the straggler's row: {}",
        run.stdout
    );
    assert!(run.stdout.contains("… 24 more ranks"), "{}", run.stdout);
    assert!(run.stdout.lines().all(|l| l.chars().count() <= 80));
    std::fs::remove_dir_all(dir).unwrap();
}
