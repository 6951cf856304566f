//! Why the GPU sat idle: every idle gap split by cause, the evidence each cause rests on
//! (syncs, copies, DataLoader waits, launches, collectives and communication, host work), and
//! each idle nanosecond credited to at most one finding.

pub mod collectives;
pub mod communication;
pub mod copies;
pub mod cpu_samples;
pub mod credit;
pub mod dataloader;
pub mod host_work;
pub mod idle;
pub mod launch;
pub mod syncs;
