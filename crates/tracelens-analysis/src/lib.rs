//! Analyses over the tracelens timeline. Each module reads a [`tracelens_model::Trace`] and
//! returns plain data; nothing here renders or imports. The modules are grouped by stage, each
//! stage reading only the ones before it (`tests/architecture.rs` checks the order):
//!
//! - [`measure`]: the analysis window and its steps (every figure is measured over it),
//!   interval unions, GPU busy/idle per device, the overview, per-thread facts, the software
//!   and hardware the trace shows ([`measure::environment`]) and the hardware's peaks.
//! - [`attribute`]: every idle gap split by cause ([`attribute::idle`]; causes sum exactly
//!   to the idle time), the evidence the causes and detectors need (syncs, copies,
//!   DataLoader, launches, collectives and communication, host work) and the credit of each
//!   idle nanosecond to at most one finding.
//! - [`predict`]: the critical path of each step, and the step time each fix would give,
//!   predicted by replaying the step's dependency graph.
//! - [`views`]: what busy time is made of — tb_plugin's step breakdown and operator view,
//!   kernels, the cost model and efficiency, memory, regions, the timeline picture, and GPU
//!   idle and the critical path as tracks to write back into a trace.
//! - [`diagnose`](mod@diagnose): one [`diagnose::detectors::Detector`] per problem,
//!   producing [`Finding`]s fitted to the environment; [`diagnose()`] runs them all and ranks
//!   the findings by estimated win; the [`Verdict`] is the one-sentence answer.
//! - Shared by every stage: [`vocabulary`] (what API, op, kernel and phase names mean), [`finding_kind`] (the kinds
//!   of problem findings describe) and [`num`] (number conversions).
//! - [`analyze()`] runs everything once and returns the [`Analysis`].
#![deny(missing_docs)]

pub mod attribute;
pub mod diagnose;
pub mod finding_kind;
pub mod measure;
pub mod num;
pub mod predict;
pub mod views;
pub mod vocabulary;

pub use diagnose::finding::{Finding, WinKind};
pub use diagnose::verdict::{Verdict, VerdictKind};
pub use diagnose::{analyze, diagnose, Analysis, CauseTime, Diagnosis};
pub use finding_kind::FindingKind;
pub use measure::overview::{overview, Overview, StepSummary};
pub use measure::utilization::{device_utilization, BusyIdle, DeviceUtilization, WindowSource};
pub use measure::window::{analysis_window, AnalysisWindow, WindowKind};
