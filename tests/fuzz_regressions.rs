//! Replays every input in `fixtures/fuzz/` (crashes found by `just fuzz` and by review)
//! through the whole pipeline: nothing may panic.

use std::path::Path;
use tracelens_tests::fixtures_dir;

#[test]
fn every_fuzz_regression_runs_clean() {
    let dir = fixtures_dir().join("fuzz");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        if name.ends_with(".txt") {
            let text = String::from_utf8_lossy(&bytes);
            let once = tracelens_model::redact::redact_text(&text).into_owned();
            assert_eq!(tracelens_model::redact::redact_text(&once), once, "{name}");
            let _ = tracelens_report::escape::markdown_text(&text);
            let _ = tracelens_report::escape::terminal_text(&text);
        } else if name.ends_with(".json") || name.ends_with(".gz") || name.ends_with(".pickle") {
            if let Ok(trace) = tracelens_load::open_bytes(bytes, Path::new(&name)) {
                let report = tracelens_report::Report::build(&trace);
                let _ = tracelens_report::render_text(&report, false);
                let _ = tracelens_report::render_markdown(&report);
                let _ = tracelens_report::render_json(&report);
                let _ = tracelens_report::render_html(&report);
            }
        } else {
            continue;
        }
        replayed += 1;
    }
    assert!(
        replayed >= 2,
        "the regression inputs are missing from {}",
        dir.display()
    );
}
