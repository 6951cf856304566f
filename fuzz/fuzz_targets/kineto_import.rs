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
    let (overview, diagnosis) = tracelens_analysis::analyze(&trace);
    let text = tracelens_report::render_text(&trace, &overview, &diagnosis, false);
    assert!(
        !text.contains('\u{1b}'),
        "an escape sequence reached the terminal"
    );
    let md = tracelens_report::render_markdown(&trace, &overview, &diagnosis);
    assert!(!md.contains("<script"), "raw HTML reached the Markdown");
    let _ = tracelens_report::render_json(&trace, &overview, &diagnosis);
    let _ = tracelens_report::render_html(&trace, &overview, &diagnosis);
});
