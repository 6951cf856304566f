//! The tracelens timeline model: one format-agnostic picture of a GPU training trace.
//!
//! Importers (Kineto JSON, Nsight Systems SQLite) only convert into this model; analyses only
//! read it. Everything is in integer nanoseconds ([`TimeNs`]).
//!
//! - [`TraceBuilder`] takes spans in any order and [`TraceBuilder::finish`]es them into a
//!   [`Trace`]: lanes sorted (GPU streams, then CPU threads), spans sorted per lane, nested
//!   per thread (`parent`), GPU ops joined to their launch call by correlation id
//!   (one launch → many ops for CUDA/HIP graphs), profiler steps and devices collected.
//! - [`Span`]s carry a [`SpanKind`], an interned name, a lane and side-table details
//!   ([`CopyInfo`] for copies, [`OpDetail`] call stacks and input shapes for CPU ops,
//!   [`KernelLaunch`] configurations for kernels).
//! - [`Metadata`] keeps device properties, versions and distributed info; free-form entries
//!   are flattened and secret-looking values redacted.
//!
//! ```
//! use tracelens_model::*;
//! let mut b = TraceBuilder::new();
//! let gpu = b.lane(LaneKey::Gpu { device: 0, stream: 7 });
//! let name = b.intern("volta_sgemm_128x64_nn");
//! b.add_span(SpanInput { kind: SpanKind::Kernel, lane: gpu, start_ns: 1_000, dur_ns: 250,
//!     name, correlation: Some(7), external_id: None, detail: NO_DETAIL });
//! let trace = b.finish(SourceInfo::default());
//! assert_eq!(trace.devices.len(), 1);
//! assert_eq!(trace.links.gpu_ops, 1);
//! ```
#![deny(missing_docs)]

mod builder;
mod by_start;
mod collect;
mod collective;
mod copy;
mod diagnostics;
pub mod graph;
mod graph_match;
mod import;
pub mod inputs;
mod kernel_name;
mod lane;
mod link;
pub mod memory;
mod metadata;
mod names;
mod python;
pub mod redact;
pub mod samples;
mod source;
mod span;
mod split;
mod time;
mod trace;

pub use builder::{
    FlowInput, SpanInput, TraceBuilder, MAX_CALL_STACK_BYTES, MAX_NAME_BYTES, MAX_SPAN_DUR_NS,
};
pub use by_start::SpansByStart;
pub use collect::profiler_step_number;
pub use collective::{CollectiveArgs, CollectiveKey, MAX_COLLECTIVE_RECORDS};
pub use copy::{format_gb_per_s, CopyDirection, CopyInfo, MemoryKind, MigrationCause, PeerDevices};
pub use diagnostics::{Warning, WarningKind};
pub use graph::{attach_capture, CapturedOp, GraphAttribution, OriginSource};
pub use import::{first_meaningful_byte, Compression, ImportFailure, Importer, Input, HEAD_BYTES};
pub use inputs::{KernelLaunch, OpDetail};
pub use kernel_name::kernel_display_name;
pub use lane::{Ident, Lane, LaneClass, LaneId, LaneKey};
pub use link::NESTING_TOLERANCE_NS;
pub use memory::{
    format_bytes, AllocatorState, MemoryDevice, MemorySample, OutOfMemory, SegmentState,
};
pub use metadata::{
    shorten, ApiError, DeviceProperties, DistributedInfo, Metadata, MAX_API_ERRORS,
    MAX_EXTRA_ENTRIES, MAX_EXTRA_VALUE_CHARS, MAX_NVTX_DOMAINS,
};
pub use names::{table_index, NameId, StringTable};
pub use python::{parse_call_stack, PyFrame};
pub use source::{CaptureTool, Detail, FrameworkRange, SourceInfo, Version};
pub use span::{Span, SpanId, SpanIds, SpanKind, NO_DETAIL};
pub use split::RankProcess;
pub use time::{format_ms, format_signed, Interval, TimeNs, NS_PER_MS, NS_PER_S, NS_PER_US};
pub use trace::{Device, LinkStats, Step, Trace, MAX_ANCESTORS};
