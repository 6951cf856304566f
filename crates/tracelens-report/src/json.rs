//! The versioned JSON document of `tracelens analyze --format json`.
//!
//! Key order is fixed by the struct field order and maps are sorted, so two runs on the same
//! trace produce byte-identical output. See `docs/json-output.md` for the schema.

use serde::Serialize;
use tracelens_analysis::{Diagnosis, Overview};
use tracelens_model::{LinkStats, Metadata, SourceInfo, Trace, Warning};

/// Version of the document layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 3;

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Document<'a> {
    schema_version: u32,
    tool: Tool,
    input: &'a SourceInfo,
    metadata: &'a Metadata,
    overview: &'a Overview,
    diagnosis: &'a Diagnosis,
    links: &'a LinkStats,
    warnings: &'a [Warning],
    results: tracelens_gate::Results,
}

/// Renders the analyze document as pretty-printed JSON (ending with a newline).
pub fn render_json(trace: &Trace, overview: &Overview, diagnosis: &Diagnosis) -> String {
    let doc = Document {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "tracelens",
            version: env!("CARGO_PKG_VERSION"),
        },
        input: &trace.source,
        metadata: &trace.metadata,
        overview,
        diagnosis,
        links: &trace.links,
        warnings: &trace.warnings,
        results: tracelens_gate::Results::of(trace, diagnosis),
    };
    let mut out = serde_json::to_string_pretty(&doc).expect("the document always serializes");
    out.push('\n');
    out
}
