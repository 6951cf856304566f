//! Any text as a CI rule: parsing never panics or overflows the stack, errors point inside the
//! text, and a parsed rule evaluates. Each input is also tried deeply nested (parentheses and
//! `not`, as deep as the first byte says, times 64), past the parser's nesting bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracelens_results::{parse_rule, Metrics, Results};

fn check(text: &str) {
    match parse_rule(text) {
        Ok(rule) => {
            let _ = rule.fires(&Metrics::of(&Results::empty()));
        }
        Err(e) => assert!(e.column >= 1 && e.column <= text.len() + 1, "{e}"),
    }
}

fuzz_target!(|text: &str| {
    check(text);
    let depth = text.bytes().next().map_or(0, usize::from) * 64;
    check(&format!("{}{text}{}", "(".repeat(depth), ")".repeat(depth)));
    check(&format!("{}{text}", "not ".repeat(depth)));
});
