//! One distributed job from one trace per rank: the rank table, collectives matched, and the
//! straggler named with what it was doing; refusals for traces that are not one job.

use std::path::{Path, PathBuf};
use tracelens_tests::{corpus_dir, tracelens};

/// A rank of a generated job: 3 steps of DataLoader wait, compute, then an all-reduce that
/// ends 1 ms after the last rank arrives. `slow_rank` loads for 12 ms, the others for 1 ms.
fn rank_trace(rank: usize, world: usize, slow_rank: Option<usize>) -> String {
    let mut ev = Vec::new();
    let loader = |r: usize| if Some(r) == slow_rank { 12.0 } else { 1.0 };
    let step_us = 25_000.0;
    let mut corr = 1;
    for step in 0..3 {
        let t0 = 1_000_000.0 + f64::from(step) * step_us;
        let last_arrival = (0..world)
            .map(|r| t0 + 20.0 + loader(r) * 1000.0 + 8020.0)
            .fold(0.0, f64::max);
        // The step ends when the all-reduce does.
        ev.push(format!(r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": {t0}, "dur": {}}}"#, last_arrival + 1100.0 - t0));
        let dl = loader(rank) * 1000.0;
        ev.push(format!(r#"{{"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": {}, "dur": {dl}}}"#, t0 + 10.0));
        let launch = t0 + 20.0 + dl;
        ev.push(format!(r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {launch}, "dur": 5, "args": {{"correlation": {corr}}}}}"#));
        ev.push(format!(r#"{{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": {}, "dur": 8000, "args": {{"device": 0, "stream": 7, "correlation": {corr}}}}}"#, launch + 10.0));
        corr += 1;
        let arrive = launch + 8020.0;
        let last = (0..world)
            .map(|r| t0 + 20.0 + loader(r) * 1000.0 + 8020.0)
            .fold(0.0, f64::max);
        ev.push(format!(r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {corr}}}}}"#, launch + 10.0));
        ev.push(format!(r#"{{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, "ts": {arrive}, "dur": {}, "args": {{"device": 0, "stream": 20, "correlation": {corr}}}}}"#, last + 1000.0 - arrive));
        corr += 1;
    }
    format!(
        r#"{{"traceEvents": [{}], "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {world}}}}}"#,
        ev.join(",\n")
    )
}

fn write_job(dir: &Path, slow_rank: Option<usize>) {
    std::fs::create_dir_all(dir).unwrap();
    for r in 0..4 {
        std::fs::write(
            dir.join(format!("rank{r}.json")),
            rank_trace(r, 4, slow_rank),
        )
        .unwrap();
    }
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
        "--fail-on".into(),
        "ranks.max_wait_ms > 5".into(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
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
    let run = tracelens([
        "analyze".to_string(),
        good.to_str().unwrap().to_string(),
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
    for d in [bad, good] {
        std::fs::remove_dir_all(d).unwrap();
    }
    std::fs::remove_file(html).unwrap();
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
    let doc = job_json(&[dlrm.to_str().unwrap(), "--jobs", "4"]);
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
    // HTA's two sampled ranks: numbered from their traces or names, no error.
    let a = root.join("hta/trace_filter/sampled_rank-0.json.gz");
    let b = root.join("hta/trace_filter/sampled_rank-1.json.gz");
    let doc = job_json(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(doc["job"]["ranks"].as_array().unwrap().len(), 2);
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
        "import duckdb\nprint(duckdb.sql(\"\"\"WITH c AS (SELECT rank, idx, start_ns, max(start_ns) OVER (PARTITION BY idx) AS last FROM read_parquet('{}/*/collectives.parquet')) SELECT rank FROM c WHERE start_ns = last GROUP BY rank ORDER BY count(*) DESC LIMIT 1\"\"\").fetchall()[0][0])",
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
