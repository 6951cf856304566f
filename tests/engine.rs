//! The Dask map (`python -m tracelens.engine`, python/src/tracelens/engine.py) on a real local
//! cluster — a scheduler and two worker processes started with `dask scheduler` / `dask
//! worker` — merges to the same job as `tracelens analyze DIR/`, keeps a refused rank as a row
//! with its error, and retries a task that was killed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tracelens_tests::synthetic_job::write_job;
use tracelens_tests::{bin_with_tracelens, corpus_dir, repo_root, tracelens};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("engine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn python() -> Option<String> {
    std::env::var("TRACELENS_DASK_PYTHON").ok().or_else(|| {
        assert!(
            std::env::var_os("TRACELENS_REQUIRE_DASK").is_none_or(|v| v != "1"),
            "TRACELENS_REQUIRE_DASK=1 but no TRACELENS_DASK_PYTHON"
        );
        None
    })
}

/// A scheduler and two single-thread worker processes, killed when dropped. `bin` is put first
/// on the workers' PATH: it holds the `tracelens` they run, as the wheel's scripts folder would.
struct Cluster {
    children: Vec<Child>,
    scheduler_file: PathBuf,
    path: String,
}

impl Cluster {
    fn start(python: &str, dir: &Path, bin: &Path) -> Cluster {
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let scheduler_file = dir.join("scheduler.json");
        let spawn = |args: &[&str], log: &str| {
            Command::new(python)
                .args(["-m", "dask"])
                .args(args)
                .env("PATH", &path)
                .env("PYTHONPATH", repo_root().join("python/src"))
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(dir.join(log)).unwrap())
                .stderr(std::fs::File::create(dir.join(format!("{log}.err"))).unwrap())
                .spawn()
                .unwrap()
        };
        let file = scheduler_file.to_str().unwrap();
        let mut cluster = Cluster {
            children: vec![spawn(
                &[
                    "scheduler",
                    "--scheduler-file",
                    file,
                    "--port",
                    "0",
                    "--no-dashboard",
                ],
                "scheduler.log",
            )],
            scheduler_file: scheduler_file.clone(),
            path: path.clone(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !scheduler_file.is_file() {
            assert!(Instant::now() < deadline, "the scheduler did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        for w in 0..2 {
            cluster.children.push(spawn(
                &[
                    "worker",
                    "--scheduler-file",
                    file,
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                ],
                &format!("worker{w}.log"),
            ));
        }
        cluster
    }

    /// Runs the engine's command line against this cluster (waiting for both workers).
    fn map(&self, python: &str, args: &[&str]) -> std::process::Output {
        Command::new(python)
            .args(["-m", "tracelens.engine", "--scheduler-file"])
            .arg(&self.scheduler_file)
            .args(["--workers", "2"])
            .args(args)
            .env("PATH", &self.path)
            .env("PYTHONPATH", repo_root().join("python/src"))
            .output()
            .unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn assert_ran(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn direct_json(dir: &Path) -> serde_json::Value {
    let run = tracelens([
        "analyze",
        dir.to_str().unwrap(),
        "--format",
        "json",
        "--no-report",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

fn rows(manifest: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(manifest)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
#[cfg_attr(
    any(no_corpus, no_dask),
    ignore = "needs the corpus and TRACELENS_DASK_PYTHON (a Python with dask[distributed])"
)]
fn the_map_on_a_dask_cluster_merges_to_the_folder_analysis() {
    let (Some(python), Some(corpus)) = (
        python(),
        corpus_dir("the_map_on_a_dask_cluster_merges_to_the_folder_analysis"),
    ) else {
        return;
    };
    let dir = scratch("equal");
    let bin = bin_with_tracelens(&dir, env!("CARGO_BIN_EXE_tracelens_for_tests"));
    let cluster = Cluster::start(&python, &dir, &bin);

    // A job folder of the corpus, and a generated 1,000-rank job with a planted straggler.
    let generated = dir.join("job1000");
    write_job(&generated, 1000, Some(617));
    for (name, job) in [
        ("dlrm", corpus.join("other/param/dlrm_kineto")),
        ("job1000", generated.clone()),
    ] {
        let out = dir.join(format!("{name}-out"));
        let merged = dir.join(format!("{name}.json"));
        let said = assert_ran(&cluster.map(
            &python,
            &[
                "--out",
                out.to_str().unwrap(),
                "-o",
                merged.to_str().unwrap(),
                job.to_str().unwrap(),
            ],
        ));
        eprintln!("{name}: {said}");
        let mut merged: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
        let mut direct = direct_json(&job);
        // The engine names each trace by its absolute path; the corpus may be given relative.
        for doc in [&mut merged, &mut direct] {
            for r in doc["job"]["ranks"].as_array_mut().unwrap() {
                r.as_object_mut().unwrap().remove("file");
            }
        }
        assert!(
            merged == direct,
            "{name}: the merged job differs from analyze DIR/"
        );
        let rows = rows(&out.join("map.jsonl"));
        let ranks = merged["job"]["ranks"].as_array().unwrap().len();
        assert_eq!(rows.len(), ranks, "{name}: one row per trace");
        assert!(rows
            .iter()
            .all(|r| r["status"] == "ok" && r["attempts"] == 1));
        // Both worker processes took a share.
        let workers: std::collections::BTreeSet<&str> =
            rows.iter().filter_map(|r| r["worker"].as_str()).collect();
        assert_eq!(workers.len(), 2, "{name}: {workers:?}");
    }
    let job = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(dir.join("job1000.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(job["job"]["straggler"]["rank"], 617);
    drop(cluster);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
#[cfg_attr(
    no_dask,
    ignore = "needs TRACELENS_DASK_PYTHON (a Python with dask[distributed])"
)]
fn a_refused_rank_is_a_row_and_a_killed_task_is_retried() {
    let Some(python) = python() else {
        return;
    };
    let dir = scratch("faults");
    let job = dir.join("job");
    write_job(&job, 6, Some(2));
    // rank3 is cut before its first event: tracelens refuses it (exit 2), which is an answer,
    // not a fault.
    let rank3 = job.join("rank3.json");
    let text = std::fs::read_to_string(&rank3).unwrap();
    std::fs::write(&rank3, &text[..40]).unwrap();
    // rank1's first attempt and every attempt at rank5 are killed (SIGKILL) before tracelens runs.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("tracelens");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \"$2\" in\n  */rank1.json) if [ ! -e '{marker}' ]; then : > '{marker}'; kill -9 $$; fi ;;\n  */rank5.json) kill -9 $$ ;;\nesac\nexec '{real}' \"$@\"\n",
            marker = dir.join("rank1-killed-once").display(),
            real = env!("CARGO_BIN_EXE_tracelens_for_tests"),
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let cluster = Cluster::start(&python, &dir, &bin);
    let out = dir.join("out");
    let merged = dir.join("job.json");
    let said = assert_ran(&cluster.map(
        &python,
        &[
            "--out",
            out.to_str().unwrap(),
            "--retries",
            "2",
            "-o",
            merged.to_str().unwrap(),
            job.to_str().unwrap(),
        ],
    ));
    assert!(said.contains("6 traces"), "{said}");
    assert!(said.contains("4 ok, 2 not"), "{said}");
    let rows = rows(&out.join("map.jsonl"));
    let by_file = |name: &str| {
        rows.iter()
            .find(|r| r["trace"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no row for {name}"))
    };
    let refused = by_file("rank3.json");
    assert_eq!(refused["status"], "refused");
    assert_eq!(refused["attempts"], 1, "a refusal is not retried");
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains("rank3.json") && error.contains("truncated"),
        "{error}"
    );
    let retried = by_file("rank1.json");
    assert_eq!(retried["status"], "ok");
    assert_eq!(retried["attempts"], 2);
    let failed = by_file("rank5.json");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["attempts"], 3);
    assert!(failed["error"].as_str().unwrap().contains("-9"), "{failed}");
    // No half-written rank is left behind, and the merge holds the four that were analysed.
    let folders: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "map.jsonl")
        .collect();
    assert_eq!(folders.len(), 4, "{folders:?}");
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let ranks: Vec<i64> = merged["job"]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_i64().unwrap())
        .collect();
    assert_eq!(ranks, [0, 1, 2, 4]);
    drop(cluster);
    std::fs::remove_dir_all(dir).unwrap();
}
