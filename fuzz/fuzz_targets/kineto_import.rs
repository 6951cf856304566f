//! Any bytes, as a Kineto trace (plain or gzip): import, analyse and render every format.
//! Nothing may panic, and every rendered output must stay inert.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = tracelens_kineto::import_stream(
        std::io::Cursor::new(data.to_vec()),
        Path::new("fuzz.json"),
        data.len() as u64,
    ) else {
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
