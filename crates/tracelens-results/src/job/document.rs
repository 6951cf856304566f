//! The stored job: the document `analyze DIR/ --format json` writes, which `report`, `check`,
//! `diff` and `--baseline` read back without the traces.

use super::Job;
use crate::report::Tool;
use crate::results::{Results, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};

/// A job's result document: the job, and the results of the rank its gate decides on (the
/// straggler, else the first rank), so rules and diffs read it as they read the traces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobDocument {
    /// The layout's version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tracelens that wrote it. Older job documents lack it.
    #[serde(default)]
    pub tool: Option<Tool>,
    /// The job.
    pub job: Job,
    /// Absent in documents written before it was stored: such a job renders, but rules on
    /// it need the traces again.
    #[serde(default)]
    pub gate_rank: Option<GateRank>,
}

/// The rank a job's rules and diffs read: its number and its results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateRank {
    /// Its rank number.
    pub rank: i64,
    /// Its results.
    pub results: Results,
}

/// Only the keys that tell a job document from a run's.
#[derive(Deserialize)]
struct Keys {
    schema_version: Option<u32>,
    job: Option<serde::de::IgnoredAny>,
}

impl JobDocument {
    /// A job document of this tracelens, for `job` and the rank its gate reads.
    #[must_use]
    pub fn new(job: Job, gate_rank: Option<GateRank>) -> JobDocument {
        JobDocument {
            schema_version: SCHEMA_VERSION,
            tool: Some(Tool::this()),
            job,
            gate_rank,
        }
    }

    /// Whether `text` is a job document (a top-level `job` key) rather than a run's.
    #[must_use]
    pub fn is_job(text: &str) -> bool {
        serde_json::from_str::<Keys>(text).is_ok_and(|k| k.job.is_some())
    }

    /// Reads a job document; one line saying what is wrong otherwise.
    pub fn from_json(text: &str) -> Result<JobDocument, String> {
        let keys: Keys = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match keys.schema_version {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(format!(
                    "schema_version {v} is newer than this tracelens reads ({SCHEMA_VERSION}): upgrade tracelens"
                ))
            }
            None => return Err("not a tracelens job result (no schema_version)".into()),
            _ => {}
        }
        serde_json::from_str(text).map_err(|e| format!("not a tracelens job result: {e}"))
    }

    /// The results rules and diffs read, or why there are none.
    pub fn gate_results(&self) -> Result<&Results, &'static str> {
        self.gate_rank.as_ref().map(|g| &g.results).ok_or(
            "a job result written before tracelens stored its gate rank: rules and diffs need the traces again (tracelens analyze DIR/ --format json)",
        )
    }
}
