//! Allocator samples: the profiler's `[memory]` instants (`profile_memory=True`), one per
//! allocation or free of the caching allocator, with the running totals when the trace has
//! them (PyTorch 1.10 and later).

use crate::lane::LaneId;
use crate::time::TimeNs;

/// Which memory a sample is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryDevice {
    /// Host memory.
    Cpu,
    /// A GPU (CUDA or HIP device index).
    Gpu(i64),
    /// Another accelerator kind (its Kineto device type and index): counted, not analysed.
    Other(i64, i64),
}

/// One allocation (`bytes > 0`) or free (`bytes < 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemorySample {
    /// When it happened.
    pub ts_ns: TimeNs,
    /// The thread that made it (its CPU lane).
    pub lane: LaneId,
    /// Which memory.
    pub device: MemoryDevice,
    /// Bytes allocated (negative: freed).
    pub bytes: i64,
    /// The allocator's total allocated bytes after it, when recorded.
    pub total_allocated: Option<i64>,
    /// The allocator's total reserved (cached) bytes after it, when recorded.
    pub total_reserved: Option<i64>,
}

impl MemoryDevice {
    /// From Kineto's `Device Type` (0 CPU, 1 CUDA; HIP traces use 1 too) and `Device Id`.
    #[must_use]
    pub fn from_kineto(device_type: i64, device_id: i64) -> MemoryDevice {
        match device_type {
            0 => MemoryDevice::Cpu,
            1 => MemoryDevice::Gpu(device_id),
            other => MemoryDevice::Other(other, device_id),
        }
    }
}
