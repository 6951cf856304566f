//! Any string, through redaction and the Markdown and terminal escapes: no panic, and the
//! escaped forms keep their promises (no control character on the terminal, no line break
//! or raw HTML in Markdown, redaction idempotent). The same text split at NUL bytes is a
//! command line (Nsight stores one argument per row): `redact_argv` keeps one entry per
//! argument, is idempotent, and never hands back a secret `redact_text` would remove.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracelens_model::redact::{redact_argv, redact_text};
use tracelens_report::escape::{markdown_text, terminal_text};

fuzz_target!(|text: &str| {
    let once = redact_text(text).into_owned();
    assert_eq!(redact_text(&once), once, "redaction is not idempotent");
    let t = terminal_text(text);
    assert!(
        !t.chars().any(char::is_control),
        "a control character reached the terminal"
    );
    let args: Vec<&str> = text.split('\0').collect();
    let redacted = redact_argv("fuzz", &args);
    assert_eq!(redacted.len(), args.len(), "an argument was lost or added");
    let again_in: Vec<&str> = redacted.iter().map(AsRef::as_ref).collect();
    let again = redact_argv("fuzz", &again_in);
    assert!(
        again.iter().zip(&redacted).all(|(a, b)| a == b),
        "argv redaction is not idempotent: {redacted:?} then {again:?}"
    );
    for (arg, out) in args.iter().zip(&redacted) {
        assert!(
            redact_text(arg) == *arg || out != arg,
            "argument {arg:?} kept whole although redact_text redacts it"
        );
    }
    let md = markdown_text(text);
    assert!(
        !md.contains('\n') && !md.contains('<'),
        "Markdown text broke out: {md:?}"
    );
});
