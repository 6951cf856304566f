//! Any bytes as one of a rank's Parquet tables (the others valid): `merge`'s reader never
//! panics, never hangs and never allocates past its bounds; it returns a rank or one error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;
use tracelens_results::{job::Collective, RankSummary, Results};

/// A valid rank folder, written once per process.
fn valid() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tracelens-fuzz-parquet-{}", std::process::id()));
        let summary = RankSummary {
            file: "rank0.json".into(),
            rank_in_trace: Some(0),
            world_size: Some(2),
            results: Results::empty(),
            collectives: vec![Collective {
                name: "ncclKernel_AllReduce".into(),
                start_ns: 10,
                dur_ns: 5,
                ..Collective::default()
            }],
            steps: vec![(0, 100), (1, 110)],
            ..RankSummary::default()
        };
        tracelens_parquet::write_rank(&dir, &summary).expect("a valid rank");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    let tables = ["rank.parquet", "steps.parquet", "collectives.parquet"];
    let dir = std::env::temp_dir().join(format!("tracelens-fuzz-case-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for t in tables {
        let _ = std::fs::copy(valid().join(t), dir.join(t));
    }
    let _ = std::fs::write(dir.join(tables[usize::from(which) % 3]), bytes);
    let _ = tracelens_parquet::read_rank(&dir);
});
