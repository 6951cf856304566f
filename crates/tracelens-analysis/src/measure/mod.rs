//! What the trace measures before any cause is assigned: the analysis window and its steps
//! (profiled, or iterations found by structure),
//! interval algebra, GPU busy and idle, the trace at a glance, per-thread facts, the software
//! and hardware the trace shows and the hardware's peaks, and the loops a benchmark times.

pub mod benchmark;
pub mod environment;
pub mod intervals;
pub mod iterations;
pub mod one_time;
pub mod overview;
pub mod peaks;
pub mod priority;
pub mod seek;
pub mod threads;
pub mod utilization;
pub mod window;
