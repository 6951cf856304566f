//! `tracelens-merge-bench [--ranks 1000] [--dir DIR] [--tracelens PATH]`
//!
//! Writes the Parquet tables of RANKS generated ranks (one real-looking rank summary, renumbered,
//! with 200 collectives and 10 steps each, one planted straggler), then measures
//! `tracelens merge DIR/*` (wall time and peak RSS): the reduce step of a big job.

use std::path::PathBuf;
use std::process::Command;
use tracelens_results::job::Collective;
use tracelens_results::{RankSummary, Results};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| tracelens_bench::option(&args, name);
    let ranks: i64 = opt("--ranks").map_or(1000, |v| v.parse().expect("--ranks N"));
    let dir = PathBuf::from(opt("--dir").unwrap_or_else(|| "bench-traces/merge".into()));
    let tracelens = opt("--tracelens").unwrap_or_else(|| "target/release/tracelens".into());
    let _ = std::fs::remove_dir_all(&dir);
    let straggler = ranks / 3;
    let mut dirs = Vec::new();
    for r in 0..ranks {
        let mut results = Results::empty();
        results.trace = format!("rank{r}.json");
        results.step_count = 10;
        results.step_ns = 100_000_000 + (r % 7) * 1_000_000;
        results.has_steps = true;
        let late = if r == straggler {
            3_000_000
        } else {
            (r % 5) * 10_000
        };
        let summary = RankSummary {
            file: format!("rank{r}.json"),
            rank_in_trace: Some(r),
            world_size: Some(ranks),
            results,
            collectives: (0..200)
                .map(|k| Collective {
                    name: "ncclKernel_AllReduce_RING_LL_Sum_float".into(),
                    start_ns: k * 5_000_000 + late,
                    dur_ns: 4_000_000 - late.min(3_000_000),
                    ..Collective::default()
                })
                .collect(),
            steps: (0..10).map(|s| (s, 100_000_000)).collect(),
            ..RankSummary::default()
        };
        let d = dir.join(format!("rank-{r}"));
        tracelens_parquet::write_rank(&d, &summary).expect("write tables");
        dirs.push(d);
    }
    let m = tracelens_bench::measure::measure(
        Command::new(&tracelens)
            .arg("merge")
            .args(&dirs)
            .args(["--format", "json"]),
    );
    assert_eq!(m.exit_code, Some(0), "merge failed");
    println!(
        "merge of {ranks} ranks (200 collectives, 10 steps each): {:.2} s, peak RSS {:.0} MB; planted straggler rank {straggler}",
        m.seconds,
        m.peak_rss_kb as f64 / 1024.0
    );
}
