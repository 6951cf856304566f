//! Spans: timed intervals on a lane, with their kind and cross-lane identifiers.

use crate::lane::LaneId;
use crate::names::NameId;
use crate::time::{Interval, TimeNs};
use serde::Serialize;

/// Handle of a span in [`crate::Trace::spans`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub u32);

impl SpanId {
    /// The span at position `i` of [`crate::Trace::spans`].
    #[must_use]
    pub fn at(i: usize) -> SpanId {
        SpanId(crate::names::table_index(i))
    }
}

/// What a span records.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// An ATen or `record_function` operator (`cpu_op`, 2021 `Operator`).
    CpuOp,
    /// A user range on the CPU (`user_annotation`): `ProfilerStep#N`, `enumerate(DataLoader)#…`.
    UserAnnotation,
    /// A Python frame recorded with `with_stack=True` (`python_function`).
    PythonFunction,
    /// A CUDA runtime or HIP API call (`cuda_runtime`).
    Runtime,
    /// A CUDA driver API call (`cuda_driver`).
    Driver,
    /// A GPU kernel.
    Kernel,
    /// A GPU memory copy.
    Memcpy,
    /// A GPU memory fill.
    Memset,
    /// A CUPTI synchronization record on a GPU lane (`cuda_sync`).
    CudaSync,
    /// The GPU-side projection of a user range (`gpu_user_annotation`).
    GpuUserAnnotation,
    /// An OS runtime call on a CPU thread (`pthread_cond_wait`, `poll`; Nsight Systems OSRT).
    OsRuntime,
    /// A stretch in which the thread was off the CPU (Nsight Systems scheduling trace).
    OffCpu,
}

impl SpanKind {
    /// Every kind, in output order.
    pub const ALL: [SpanKind; 12] = [
        SpanKind::CpuOp,
        SpanKind::UserAnnotation,
        SpanKind::PythonFunction,
        SpanKind::Runtime,
        SpanKind::Driver,
        SpanKind::Kernel,
        SpanKind::Memcpy,
        SpanKind::Memset,
        SpanKind::CudaSync,
        SpanKind::GpuUserAnnotation,
        SpanKind::OsRuntime,
        SpanKind::OffCpu,
    ];

    /// Whether spans of this kind sit on GPU stream lanes.
    #[must_use]
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            SpanKind::Kernel
                | SpanKind::Memcpy
                | SpanKind::Memset
                | SpanKind::CudaSync
                | SpanKind::GpuUserAnnotation
        )
    }

    /// Whether this is GPU work that makes a device busy (kernel, copy, fill).
    #[must_use]
    pub fn is_gpu_work(self) -> bool {
        matches!(self, SpanKind::Kernel | SpanKind::Memcpy | SpanKind::Memset)
    }

    /// Whether this is a host API call that may launch GPU work.
    #[must_use]
    pub fn is_api_call(self) -> bool {
        matches!(self, SpanKind::Runtime | SpanKind::Driver)
    }

    /// Snake-case label used in output.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            SpanKind::CpuOp => "cpu_op",
            SpanKind::UserAnnotation => "user_annotation",
            SpanKind::PythonFunction => "python_function",
            SpanKind::Runtime => "runtime",
            SpanKind::Driver => "driver",
            SpanKind::Kernel => "kernel",
            SpanKind::Memcpy => "memcpy",
            SpanKind::Memset => "memset",
            SpanKind::CudaSync => "cuda_sync",
            SpanKind::GpuUserAnnotation => "gpu_user_annotation",
            SpanKind::OsRuntime => "os_runtime",
            SpanKind::OffCpu => "off_cpu",
        }
    }
}

/// Sentinel for "no side-table entry" in [`Span::detail`].
pub const NO_DETAIL: u32 = u32::MAX;

/// One timed interval on a lane. 32 bytes: the launch correlation and `External id` that
/// join spans while a trace is built live in [`SpanIds`], beside the span table only while
/// linking (and in a trace whose ranks can be split, [`crate::Trace::span_ids`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Start, in trace nanoseconds.
    pub start_ns: TimeNs,
    /// Duration in nanoseconds, never negative (importers clamp and warn).
    pub dur_ns: TimeNs,
    /// Interned name.
    pub name: NameId,
    /// The lane it runs on.
    pub lane: LaneId,
    /// Index into a kind-specific side table: copies for memcpy/memset/runtime copy calls,
    /// call stacks for CPU ops; [`NO_DETAIL`] when none.
    pub detail: u32,
    /// What it records.
    pub kind: SpanKind,
    /// Whether it carried a launch correlation id (linked or not).
    pub(crate) has_correlation: bool,
}

/// The ids that join a span to others while a trace is built: launch correlation (API call ↔
/// GPU op) and profiler `External id` (op ↔ API call ↔ GPU op). 16 bytes, sentinels for
/// "none", kept in a column beside the spans rather than in each span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpanIds {
    correlation_raw: u64,
    external_id_raw: i64,
}

/// Stored for "no correlation id".
const NO_CORRELATION: u64 = u64::MAX;
/// Stored for "no External id".
const NO_EXTERNAL_ID: i64 = i64::MIN;

impl Default for SpanIds {
    /// No ids.
    fn default() -> SpanIds {
        SpanIds::new(None, None)
    }
}

impl SpanIds {
    /// The ids of a span; `None` for an id it lacks.
    #[must_use]
    pub fn new(correlation: Option<u64>, external_id: Option<i64>) -> SpanIds {
        SpanIds {
            correlation_raw: correlation.unwrap_or(NO_CORRELATION),
            external_id_raw: external_id.unwrap_or(NO_EXTERNAL_ID),
        }
    }

    /// Launch correlation id (runtime/driver call ↔ GPU op).
    #[must_use]
    pub fn correlation(&self) -> Option<u64> {
        (self.correlation_raw != NO_CORRELATION).then_some(self.correlation_raw)
    }

    /// Profiler `External id` (op ↔ runtime ↔ GPU op; unreliable in 2022-04 … 2024-02 traces).
    #[must_use]
    pub fn external_id(&self) -> Option<i64> {
        (self.external_id_raw != NO_EXTERNAL_ID).then_some(self.external_id_raw)
    }

    pub(crate) fn set_correlation(&mut self, id: u64) {
        self.correlation_raw = id;
    }
}

impl Span {
    /// Whether the span carried a launch correlation id: a GPU op with one was launched by a
    /// call, in the trace or not; one without comes from a GPU-only recording.
    #[must_use]
    pub fn has_correlation(&self) -> bool {
        self.has_correlation
    }

    /// End, in trace nanoseconds.
    #[must_use]
    pub fn end_ns(&self) -> TimeNs {
        self.start_ns + self.dur_ns
    }

    /// The span as an interval.
    #[must_use]
    pub fn interval(&self) -> Interval {
        Interval::new(self.start_ns, self.end_ns())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_stays_at_32_bytes_and_its_ids_at_16() {
        assert_eq!(std::mem::size_of::<Span>(), 32);
        assert_eq!(std::mem::size_of::<SpanIds>(), 16);
    }
}
