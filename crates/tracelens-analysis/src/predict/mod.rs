//! What a fix would give: the critical path of each step and the step time each fix predicts,
//! by replaying the step's dependency graph with the fix's change.

pub mod critical;
pub mod what_if;
