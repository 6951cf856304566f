//! Any bytes after a pickle header, read as a PyTorch memory snapshot: the bounded shape check
//! never panics, and whatever it accepts imports, analyses and renders without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let mut bytes = vec![0x80, 4];
    bytes.extend_from_slice(data);
    let limits = tracelens_snapshot::shape::Limits {
        max_values: 1 << 20,
        max_depth: 32,
    };
    let _ = tracelens_snapshot::shape::check(&bytes, limits);
    let Ok(trace) = tracelens_load::open_bytes(bytes, Path::new("fuzz.pickle")) else {
        return;
    };
    let report = tracelens_report::Report::build(&trace);
    let _ = tracelens_report::render_text(&report, false);
    let _ = tracelens_report::render_markdown(&report);
    let _ = tracelens_report::render_html(&report);
});
