//! Analyses over the tracelens timeline. Each module reads a [`tracelens_model::Trace`] and
//! returns plain data; nothing here renders or imports.
//!
//! - [`window`]: the analysis window and its steps, which every figure is measured over.
//! - [`intervals`]: unions and gaps of time intervals.
//! - [`utilization`]: GPU busy/idle per device, whole trace and step-clipped.
//! - [`overview`]: counts, steps and devices at a glance.
//! - [`idle`]: every idle gap split by cause (data loading, sync drain, host compute, launch
//!   latency, cross-stream wait, unattributed); causes sum exactly to the idle time.
//! - [`syncs`], [`copies`], [`dataloader`], [`launch`]: the evidence each detector needs.
//! - [`breakdown`]: tb_plugin's per-step time breakdown.
//! - [`operators`]: tb_plugin's operator view (calls, host and device self/total time).
//! - [`memory`]: GPU memory peaks per device and step, from the allocator's samples.
//! - [`regions`]: host and GPU time by user range (`record_function`, NVTX, `nn.Module`).
//! - [`host_work`]: the sub-causes of host-compute idle (optimizer, dispatch, warm-up, …).
//! - [`credit`]: each idle nanosecond credited to at most one finding.
//! - [`critical`]: the critical path of each step, and the step time each fix would give,
//!   predicted by replaying the step's dependency graph.
//! - [`detectors`]: one [`detectors::Detector`] per problem, producing [`finding::Finding`]s
//!   fitted to the [`environment`]; [`diagnose()`] runs them all and ranks the findings by
//!   estimated win.
//! - [`verdict`]: the one-sentence answer and the figures behind it.
//! - [`timeline`]: the representative step binned by class, for pictures of the timeline.
//! - [`collectives`]: the collective kernels a multi-rank job matches across ranks.
//! - [`annotations`]: GPU idle as tracks to write back into a trace.
//! - [`analyze()`] runs everything once and returns the [`Analysis`].
#![deny(missing_docs)]

pub mod annotations;
pub mod api;
pub mod breakdown;
pub mod collectives;
pub mod communication;
pub mod copies;
pub mod credit;
pub mod critical;
pub mod dataloader;
pub mod detectors;
pub mod diagnose;
pub mod efficiency;
pub mod environment;
pub mod finding;
pub mod flops;
pub mod host_work;
pub mod idle;
pub mod intervals;
pub mod kernels;
pub mod launch;
pub mod memory;
pub mod num;
pub mod operators;
pub mod overview;
pub mod peaks;
pub mod regions;
pub mod syncs;
pub mod threads;
pub mod timeline;
pub mod utilization;
pub mod verdict;
pub mod what_if;
pub mod window;

pub use diagnose::{analyze, diagnose, Analysis, CauseTime, Diagnosis};
pub use finding::{Finding, FindingKind, WinKind};
pub use overview::{overview, Overview, StepSummary};
pub use utilization::{device_utilization, BusyIdle, DeviceUtilization, WindowSource};
pub use verdict::{Verdict, VerdictKind};
pub use window::{analysis_window, AnalysisWindow, WindowKind};
