//! Any string, through redaction and the Markdown and terminal escapes: no panic, and the
//! escaped forms keep their promises (no control character on the terminal, no line break
//! or raw HTML in Markdown, redaction idempotent).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracelens_model::redact::redact_text;
use tracelens_report::escape::{markdown_text, terminal_text};

fuzz_target!(|text: &str| {
    let once = redact_text(text).into_owned();
    assert_eq!(redact_text(&once), once, "redaction is not idempotent");
    let t = terminal_text(text);
    assert!(
        !t.chars().any(char::is_control),
        "a control character reached the terminal"
    );
    let md = markdown_text(text);
    assert!(
        !md.contains('\n') && !md.contains('<'),
        "Markdown text broke out: {md:?}"
    );
});
