//! Generated distributed jobs: one small Kineto trace per rank, with a planted straggler.

/// Writes a job of `world` ranks (`rank{r}.json`) into `dir`; `slow_rank` loads data slowly.
pub fn write_job(dir: &std::path::Path, world: usize, slow_rank: Option<usize>) {
    std::fs::create_dir_all(dir).unwrap();
    for r in 0..world {
        std::fs::write(
            dir.join(format!("rank{r}.json")),
            rank_trace(r, world, slow_rank),
        )
        .unwrap();
    }
}

/// A rank of a generated job: 3 steps of DataLoader wait, compute, then an all-reduce that
/// ends 1 ms after the last rank arrives. `slow_rank` loads for 12 ms, the others for 1 ms.
pub fn rank_trace(rank: usize, world: usize, slow_rank: Option<usize>) -> String {
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
