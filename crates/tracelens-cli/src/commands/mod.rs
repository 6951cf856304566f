//! One module per subcommand: each reads its arguments, does its one job through the shared
//! rooms (`sink`, `output`, `gate`, `job`) and returns how it stopped.

pub(crate) mod analyze;
pub(crate) mod annotate;
pub(crate) mod check;
pub(crate) mod diff;
pub(crate) mod history;
pub(crate) mod nsys_rules;
pub(crate) mod report;
