//! The versioned JSON document of `tracelens analyze --format json`: the [`Report`] itself.
//!
//! Key order is fixed by the struct field order and maps are sorted, so two runs on the same
//! trace produce byte-identical output. See `docs/json-output.md` for the schema.

use tracelens_results::Report;

/// Renders the analyze document as pretty-printed JSON (ending with a newline).
#[must_use]
pub fn render_json(report: &Report) -> String {
    report.to_json()
}
