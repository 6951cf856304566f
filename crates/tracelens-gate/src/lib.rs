//! What a CI job needs from a run, without the trace: [`Results`] (a standalone, versioned
//! summary that the JSON document carries and that reads back), [`metrics`] (the documented
//! numbers rules compare), [`rule`] (the rule language, parsed with nom) and [`diff`] (a
//! before/after comparison that knows the step-time noise).
#![deny(missing_docs)]

pub mod diff;
pub mod metrics;
pub mod results;
pub mod rule;

pub use diff::{diff, Diff};
pub use metrics::{Metric, Metrics, Unit};
pub use results::{FindingResult, Results};
pub use rule::{parse_rule, Rule, RuleError};
