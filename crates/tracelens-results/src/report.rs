//! The analyze document ([`Report`]): everything a report shows, computed once, render-ready
//! and versioned. `tracelens analyze --format json` writes it; `tracelens report` reads it back
//! and renders the same HTML, Markdown and text as `analyze` does directly. Renderers take a
//! `&Report` and nothing else.

use crate::results::{Results, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};
use tracelens_analysis::views::timeline::TimelineView;
use tracelens_analysis::{Analysis, Diagnosis, Overview};
use tracelens_model::{LinkStats, Metadata, SourceInfo, Trace, Warning};

/// The program that wrote a document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// Always `tracelens`.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Tool {
    /// This tracelens.
    #[must_use]
    pub fn this() -> Tool {
        Tool {
            name: "tracelens".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Everything the analysis of one trace found, as the reports show it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The writer.
    pub tool: Tool,
    /// Where the trace came from and how it was read.
    pub input: SourceInfo,
    /// Trace metadata (secrets redacted).
    pub metadata: Metadata,
    /// Counts, steps and devices at a glance.
    pub overview: Overview,
    /// Verdict, window, findings and the tables behind them.
    pub diagnosis: Diagnosis,
    /// How launches were linked to GPU ops.
    pub links: LinkStats,
    /// Where the GPU ops that CUDA/HIP graph launches replayed came from at capture, when a
    /// capture trace or graph annotations said (`null` otherwise).
    #[serde(default)]
    pub graph_attribution: Option<tracelens_model::GraphAttribution>,
    /// What the importer and model builder warn about.
    pub warnings: Vec<Warning>,
    /// The representative step binned by class, for the timeline picture.
    pub timeline: Option<TimelineView>,
    /// The run's label (`analyze --label`: a commit, a CI run), for `tracelens history`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Why a stored document cannot be read as a [`Report`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportError {
    /// Not JSON at all.
    NotJson(String),
    /// JSON, but not a tracelens analyze document.
    NotAReport,
    /// Written by a tracelens with another document layout.
    Version {
        /// The document's version.
        found: u32,
    },
    /// The right version, but a field is missing or of the wrong type.
    Malformed(String),
}

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReportError::NotJson(e) => write!(f, "not JSON: {e}"),
            ReportError::NotAReport => f.write_str(
                "not a tracelens result (write one with tracelens analyze TRACE --format json)",
            ),
            ReportError::Version { found } if *found > SCHEMA_VERSION => write!(
                f,
                "schema version {found} is newer than this tracelens reads ({SCHEMA_VERSION}): upgrade tracelens"
            ),
            ReportError::Version { found } => write!(
                f,
                "schema version {found} is older than this tracelens reads ({SCHEMA_VERSION}): analyse the trace again"
            ),
            ReportError::Malformed(e) => write!(f, "a malformed tracelens result: {e}"),
        }
    }
}

impl std::error::Error for ReportError {}

/// What is read of a document before the rest: who wrote it, in which layout.
#[derive(Deserialize)]
struct Head {
    schema_version: Option<u32>,
    tool: Option<Tool>,
}

impl Report {
    /// The report of an analysed trace.
    #[must_use]
    pub fn new(trace: &Trace, analysis: Analysis) -> Report {
        let Analysis {
            overview,
            diagnosis,
            timeline,
            ..
        } = analysis;
        Report {
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(),
            input: trace.source.clone(),
            metadata: trace.metadata.clone(),
            overview,
            diagnosis,
            links: trace.links.clone(),
            graph_attribution: trace.graph_attribution.clone(),
            warnings: trace.warnings.clone(),
            timeline,
            label: None,
        }
    }

    /// Analyses `trace` and reports it.
    #[must_use]
    pub fn build(trace: &Trace) -> Report {
        Report::new(trace, tracelens_analysis::analyze(trace))
    }

    /// The gate's summary (rules, diffs, job rows): a view of the diagnosis, not stored in
    /// the document.
    #[must_use]
    pub fn results(&self) -> Results {
        Results::of(&self.input, &self.diagnosis)
    }

    /// The document as written (pretty-printed, fixed key order, ending with a newline).
    #[must_use]
    pub fn to_json(&self) -> String {
        let mut out = serde_json::to_string_pretty(self).expect("a report always serializes");
        out.push('\n');
        out
    }

    /// Reads a document back; refuses other layouts before reading the rest.
    pub fn from_json(text: &str) -> Result<Report, ReportError> {
        let head: Head = serde_json::from_str(text).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => ReportError::NotAReport,
            serde_json::error::Category::Eof => {
                ReportError::Malformed(format!("the document ends early ({e})"))
            }
            _ => ReportError::NotJson(e.to_string()),
        })?;
        match (head.schema_version, head.tool) {
            (Some(SCHEMA_VERSION), Some(tool)) if tool.name == "tracelens" => {}
            (Some(found), Some(tool)) if tool.name == "tracelens" => {
                return Err(ReportError::Version { found })
            }
            _ => return Err(ReportError::NotAReport),
        }
        let mut report: Report =
            serde_json::from_str(text).map_err(|e| ReportError::Malformed(e.to_string()))?;
        // Held to what an analysis makes: a crafted timeline cannot size the page.
        report.timeline = report.timeline.map(TimelineView::bounded);
        Ok(report)
    }
}

/// The results of a stored result: a document of this layout (its diagnosis, viewed as
/// [`Results`]), the `results` section an older document (version 3 or 4) stored, or a bare
/// results object (a rank's row in `rank.parquet`). Cached CI baselines written by an older
/// tracelens stay readable this way.
pub fn results_of_document(text: &str) -> Result<Results, String> {
    let head: Head = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    match (head.schema_version, head.tool) {
        (Some(SCHEMA_VERSION), Some(tool)) if tool.name == "tracelens" => Report::from_json(text)
            .map(|r| r.results())
            .map_err(|e| e.to_string()),
        _ => Results::from_json(text),
    }
}
