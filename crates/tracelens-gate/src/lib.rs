//! What a CI job needs from a run, without the trace: [`Results`] (a standalone, versioned
//! summary that the JSON document carries and that reads back), [`metrics`] (the documented
//! numbers rules compare), [`rule`] (the rule language, parsed with nom), [`diff`] (a
//! before/after comparison that knows the step-time noise) and [`ranks`] (one job from one
//! trace per rank: the straggler and why).
#![deny(missing_docs)]

pub mod diff;
pub mod metrics;
pub mod ranks;
pub mod results;
pub mod rule;

pub use diff::{diff, Diff};
pub use metrics::{Metric, Metrics, Unit};
pub use ranks::{analyze_job, Job, RankSummary};
pub use results::{FindingResult, Results};
pub use rule::{parse_rule, Rule, RuleError};
