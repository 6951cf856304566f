//! Any bytes, read as `tracelens analyze` reads a file (compression undone, the format
//! sniffed, Kineto JSON or "not a trace"): import, analyse and render every format.
//! Nothing may panic, and every rendered output must stay inert.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = tracelens_load::open_bytes(data.to_vec(), Path::new("fuzz.json")) else {
        return;
    };
    let report = tracelens_report::Report::build(&trace);
    let text = tracelens_report::render_text(&report, false);
    assert!(
        !text.contains('\u{1b}'),
        "an escape sequence reached the terminal"
    );
    let md = tracelens_report::render_markdown(&report);
    assert!(!md.contains("<script"), "raw HTML reached the Markdown");
    // The document reads back, and re-renders what was rendered directly.
    let json = tracelens_report::render_json(&report);
    let back = tracelens_report::Report::from_json(&json).expect("a report reads back");
    assert_eq!(tracelens_report::render_html(&back), tracelens_report::render_html(&report));
});
