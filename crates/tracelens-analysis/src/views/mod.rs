//! What the busy time is made of, each view standing on its own: tb_plugin's step breakdown and
//! operator view, kernels, the cost model and efficiency against the hardware's peaks, memory,
//! regions, the timeline picture, and GPU idle and the critical path as tracks to write back
//! into a trace.

pub mod annotations;
pub mod breakdown;
pub mod compiled;
pub mod efficiency;
pub mod flops;
pub mod inference;
pub mod kernels;
pub mod memory;
pub mod memory_blocks;
pub mod memory_timeline;
pub mod operators;
pub mod regions;
pub(crate) mod replayed;
pub mod timeline;
