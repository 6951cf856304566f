//! Any text as a CI rule: parsing never panics, errors point inside the text, and a parsed
//! rule evaluates.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracelens_results::{parse_rule, Metrics, Results};

fuzz_target!(|text: &str| {
    match parse_rule(text) {
        Ok(rule) => {
            let _ = rule.fires(&Metrics::of(&Results::empty()));
        }
        Err(e) => assert!(e.column >= 1 && e.column <= text.len() + 1, "{e}"),
    }
});
