//! Results that stand on their own, without the trace: [`Report`] (the analyze document:
//! everything a report shows, render-ready, versioned, read back by `tracelens report`),
//! [`Results`] (the gate's summary of it, which reads back on its own), [`metrics`] (the documented
//! numbers rules compare), [`rules`] (the rule language, parsed with nom), [`diff`] (a
//! before/after comparison that knows the step-time noise) and [`job`] (one job from one
//! trace per rank: the straggler and why).
#![deny(missing_docs)]

pub mod diff;
pub mod history;
pub mod job;
pub mod metrics;
pub mod report;
pub mod results;
pub mod rules;

pub use diff::{diff, Diff};
pub use job::{
    analyze_job, matching_words, missing_ranks_words, ranks_words, Bottleneck, GateRank, Job,
    JobDocument, RankSummary,
};
pub use metrics::{Metric, Metrics, Unit};
pub use report::{results_of_document, Report, ReportError, Tool};
pub use results::SCHEMA_VERSION;
pub use results::{CategoryResult, FindingResult, Results, STEP_CATEGORIES};
pub use rules::{parse_rule, Rule, RuleError};
