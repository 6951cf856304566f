//! Any text as a CI rule: parsing never panics or overflows the stack, errors point inside the
//! text, and a parsed rule evaluates. Each input is also tried deeply nested (parentheses and
//! `not`, as deep as the first byte says, times 64), past the parser's nesting bound. On a
//! run without a baseline or a job (one trace), every metric a parsed rule names is either
//! measured or refused with a reason: no rule can hold for want of evidence (issue 40).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracelens_results::{parse_rule, Metrics, Results};

fn check(text: &str) {
    match parse_rule(text) {
        Ok(rule) => {
            let metrics = Metrics::of(&Results::empty());
            for name in rule.metric_names() {
                assert!(
                    metrics.get(name).is_some() || metrics.not_measured(name).is_some(),
                    "{name} is neither measured nor refused: the rule would hold silently"
                );
            }
            let _ = rule.fires(&metrics);
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
