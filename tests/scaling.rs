//! Cost that grows with the input no faster than the input (issue 40), checked as the ratio
//! of run times at two sizes, alone in its test binary so no other test shares the machine's
//! cores while it measures. Benchmarks proper live in `tracelens-bench`.

use std::path::Path;
use std::process::Command;
/// `ranges` user ranges nested around `launches` CPU ops, each launching one kernel with
/// idle time before it; `steps` when the ranges are overlapping `ProfilerStep#N` instead.
fn enclosed_launches_trace(ranges: usize, launches: usize, steps: bool) -> String {
    let span_us = launches * 100 + ranges * 2 + 1_000;
    let mut events = Vec::with_capacity(ranges + launches * 3);
    for i in 0..ranges {
        let name = if steps {
            format!("ProfilerStep#{i}")
        } else {
            format!("region_{i}_forward")
        };
        events.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":1,"ts":{},"dur":{}}}"#,
            10 + i,
            span_us - 2 * i
        ));
    }
    let base = 20 + ranges;
    for j in 0..launches {
        let t = base + j * 100;
        events.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":{t},"dur":20}}"#
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{}}}}}"#,
            t + 5,
            j + 1
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{},"dur":10,"args":{{"device":0,"stream":7,"correlation":{}}}}}"#,
            t + 12,
            j + 1
        ));
    }
    format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))
}

/// Issue 40: every idle gap walked up to 1,024 enclosing ranges with substring searches, and
/// every step scanned the launches inside it: 1,100 nested ranges around 16,000 launches took
/// 112 s, 10,000 overlapping steps 61 s. Context is now computed once per span and steps are
/// matched to launches in one sorted pass, so ten times the items cost about ten times the
/// time. Checked as a ratio of the fastest of three runs at each size: the build before the
/// fix read 77 (nested) and 39 (steps) at these sizes, this one about 10; the bound leaves
/// room for a noisy machine.
#[test]
fn idle_attribution_and_steps_scale_linearly() {
    let dir = std::env::temp_dir().join(format!("tracelens-scaling-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fastest_s = |path: &Path| {
        (0..3)
            .map(|_| {
                let start = std::time::Instant::now();
                let out = Command::new(env!("CARGO_BIN_EXE_tracelens_for_tests"))
                    .arg("analyze")
                    .arg(path)
                    .arg("--no-report")
                    .output()
                    .unwrap();
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    for (shape, ranges, launches, steps) in [
        ("nested ranges", 150, 2_000, false),
        ("overlapping steps", 300, 1_000, true),
    ] {
        let small = dir.join("small.json");
        let large = dir.join("large.json");
        std::fs::write(&small, enclosed_launches_trace(ranges, launches, steps)).unwrap();
        std::fs::write(
            &large,
            enclosed_launches_trace(ranges * 10, launches * 10, steps),
        )
        .unwrap();
        let (small_s, large_s) = (fastest_s(&small), fastest_s(&large));
        let ratio = large_s / small_s;
        eprintln!("{shape}: {small_s:.3} s, 10x: {large_s:.3} s, ratio {ratio:.1}");
        assert!(
            ratio < 30.0,
            "{shape}: ten times the items took {ratio:.1} times as long ({small_s:.3} s, {large_s:.3} s)"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
