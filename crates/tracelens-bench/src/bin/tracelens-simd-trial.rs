//! The simd-json trial: reads one plain-JSON trace with simd-json (whole document, borrowed
//! values, then the fields tracelens uses from every event) and with tracelens's own
//! importer on one thread and on every core, from the same bytes in memory, and prints
//! seconds, MB/s and the memory each needed.
//!
//! `tracelens-simd-trial TRACE.json` (plain JSON; tens to a few hundred MB: simd-json holds
//! the whole document as a tree).

use simd_json::prelude::*;
use std::time::Instant;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: tracelens-simd-trial TRACE.json");
        std::process::exit(2);
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("tracelens-simd-trial: {path}: {e}");
        std::process::exit(2);
    });
    let mb = bytes.len() as f64 / 1e6;
    println!("{path}: {mb:.0} MB");
    let report = |what: &str, seconds: f64, count: String, rss_before: u64| {
        println!(
            "  {what:<44} {seconds:>6.2} s  {:>5.0} MB/s  {count:<18} +{} MB peak",
            mb / seconds,
            memory_kb("VmHWM:").saturating_sub(rss_before) / 1024
        );
    };

    for threads in [
        1,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    ] {
        let before = start_peak();
        let start = Instant::now();
        let trace = tracelens_kineto::import_reader_with_threads(
            &bytes[..],
            std::path::Path::new(&path),
            bytes.len() as u64,
            None,
            threads,
        )
        .expect("tracelens reads the trace");
        let label = format!("tracelens importer, {threads} thread(s)");
        report(
            &label,
            start.elapsed().as_secs_f64(),
            format!("{} spans", trace.spans.len()),
            before,
        );
    }

    let before = start_peak();
    let start = Instant::now();
    let mut copy = bytes.clone();
    let tape = simd_json::to_tape(&mut copy).expect("simd-json parses the trace");
    let label = "simd-json tape only (no fields read)";
    report(
        label,
        start.elapsed().as_secs_f64(),
        format!("{} tape nodes", tape.0.len()),
        before,
    );
    drop(tape);

    let before = start_peak();
    let start = Instant::now();
    let mut copy = bytes.clone();
    let value = simd_json::to_borrowed_value(&mut copy).expect("simd-json parses the trace");
    let parsed = start.elapsed().as_secs_f64();
    let events = value
        .get("traceEvents")
        .and_then(|v| v.as_array())
        .or_else(|| value.as_array())
        .expect("an event array");
    let mut checksum = 0f64;
    let mut kept = 0;
    for e in events {
        let (Some(ph), Some(ts)) = (e.get_str("ph"), e.get("ts").and_then(|t| t.cast_f64())) else {
            continue;
        };
        let cat = e.get_str("cat").unwrap_or("");
        let name = e.get_str("name").unwrap_or("");
        let dur = e.get("dur").and_then(|t| t.cast_f64()).unwrap_or(0.0);
        let args = e.get("args");
        let correlation = args
            .and_then(|a| a.get("correlation"))
            .and_then(|c| c.as_u64())
            .unwrap_or(0);
        checksum += ts + dur + (correlation + (ph.len() + cat.len() + name.len()) as u64) as f64;
        kept += 1;
    }
    let label = format!("simd-json tree + fields (parse {parsed:.2} s)");
    report(
        &label,
        start.elapsed().as_secs_f64(),
        format!("{kept} events"),
        before,
    );
    std::hint::black_box(checksum);
}

/// Resets the peak-RSS mark (Linux `clear_refs`) and returns the RSS now, in kB.
fn start_peak() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    memory_kb("VmRSS:")
}

/// A `/proc/self/status` figure, in kB (0 where there is none).
fn memory_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
