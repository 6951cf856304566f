//! Analyses over the tracelens timeline. Each module reads a [`tracelens_model::Trace`] and
//! returns plain data; nothing here renders or imports.
//!
//! - [`intervals`]: unions and gaps of time intervals.
//! - [`utilization`]: GPU busy/idle per device, whole trace and step-clipped.
//! - [`overview`]: counts, steps and devices at a glance.
#![deny(missing_docs)]

pub mod intervals;
pub mod overview;
pub mod utilization;

pub use overview::{overview, Overview, StepSummary};
pub use utilization::{device_utilization, BusyIdle, DeviceUtilization, WindowSource};
