//! Allocator samples: the profiler's `[memory]` instants (`profile_memory=True`), one per
//! allocation or free of the caching allocator, with the running totals when the trace has
//! them (PyTorch 1.10 and later).

use crate::lane::LaneId;
use crate::time::TimeNs;
use serde::{Deserialize, Serialize};

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
    /// The block's address, when recorded (PyTorch 1.10 and later): pairs a free with its
    /// allocation.
    pub addr: Option<u64>,
    /// The Python stack of the allocation, as a `Call stack` string (`file.py(12): f;...`,
    /// innermost first), when the source records one per sample (memory snapshots).
    pub call_stack: Option<crate::names::NameId>,
    /// The allocator's total allocated bytes after it, when recorded.
    pub total_allocated: Option<i64>,
    /// The allocator's total reserved (cached) bytes after it, when recorded.
    pub total_reserved: Option<i64>,
}

impl MemoryDevice {
    /// From Kineto's `Device Type` (c10's `DeviceType`: 0 CPU, 1 CUDA, 6 HIP; ROCm builds
    /// write 1 or 6) and `Device Id`.
    #[must_use]
    pub fn from_kineto(device_type: i64, device_id: i64) -> MemoryDevice {
        match device_type {
            0 => MemoryDevice::Cpu,
            1 | 6 => MemoryDevice::Gpu(device_id),
            other => MemoryDevice::Other(other, device_id),
        }
    }
}

/// Formats bytes the one way every output shows them: GB (10^9) with two decimals from 1 GB,
/// MB (10^6) with one from 1 MB, kB with one from 1 kB, else bytes (`2.65 GB`, `50.0 MB`,
/// `4.1 kB`, `512 B`).
#[must_use]
pub fn format_bytes(bytes: i64) -> String {
    let abs = bytes.unsigned_abs();
    if abs >= 1_000_000_000 {
        format!("{:.2} GB", bytes as f64 / 1e9)
    } else if abs >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else if abs >= 1_000 {
        format!("{:.1} kB", bytes as f64 / 1e3)
    } else {
        format!("{bytes} B")
    }
}

/// What a PyTorch memory snapshot knows beyond its allocation history: the caching
/// allocator's segments when the snapshot was taken, the requests that failed, and its
/// settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocatorState {
    /// The segments (memory reserved from the driver), as the snapshot saw them.
    pub segments: Vec<SegmentState>,
    /// Requests the allocator could not serve (`torch.cuda.OutOfMemoryError`).
    pub out_of_memory: Vec<OutOfMemory>,
    /// `expandable_segments`, when the snapshot records the settings.
    pub expandable_segments: Option<bool>,
}

/// One segment of the caching allocator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentState {
    /// The GPU.
    pub device: i64,
    /// Bytes reserved from the driver.
    pub total_bytes: i64,
    /// Bytes in allocated blocks.
    pub allocated_bytes: i64,
    /// Bytes in blocks allocated or waiting to be freed.
    pub active_bytes: i64,
    /// The largest block that is free (inactive).
    pub largest_free_block_bytes: i64,
    /// Its free blocks.
    pub free_blocks: u32,
    /// An expandable segment.
    pub expandable: bool,
}

/// A request the allocator could not serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutOfMemory {
    /// The GPU.
    pub device: i64,
    /// When.
    pub ts_ns: TimeNs,
    /// Bytes requested.
    pub requested_bytes: i64,
    /// Bytes the driver said were free on the device then, when recorded.
    pub device_free_bytes: Option<i64>,
}
