//! Memory copies and fills: direction, memory kinds and size.

use serde::Serialize;

/// Direction of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum CopyDirection {
    /// Host to device.
    HtoD,
    /// Device to host.
    DtoH,
    /// Device to device (same device).
    DtoD,
    /// Host to host.
    HtoH,
    /// Peer to peer (between devices).
    PtoP,
    /// Not stated.
    Unknown,
}

/// Kind of memory at one end of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum MemoryKind {
    /// Pageable host memory: the copy cannot overlap compute and the host blocks.
    Pageable,
    /// Page-locked (pinned) host memory.
    Pinned,
    /// Device memory.
    Device,
    /// Host memory whose pinned/pageable kind the tracer does not say (ROCm).
    Host,
    /// CUDA array memory.
    Array,
    /// Managed (unified) memory.
    Managed,
    /// Not stated.
    Unknown,
}

/// The entry of `table` whose name equals `text` ignoring ASCII case (no allocation: these
/// parsers run once per copy event).
fn lookup<T: Copy>(table: &[(&str, T)], text: &str) -> Option<T> {
    table
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(text))
        .map(|&(_, v)| v)
}

impl CopyDirection {
    /// Parses `HtoD`, `DtoH`, `DtoD`, `HtoH`, `PtoP` (any case).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        use CopyDirection::*;
        lookup(
            &[
                ("htod", HtoD),
                ("dtoh", DtoH),
                ("dtod", DtoD),
                ("htoh", HtoH),
                ("ptop", PtoP),
            ],
            text,
        )
    }
}

impl MemoryKind {
    /// Parses `Pageable`, `Pinned`, `Device`, `Host`, `Array`, `Managed` (any case).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        use MemoryKind::*;
        lookup(
            &[
                ("pageable", Pageable),
                ("pinned", Pinned),
                ("device", Device),
                ("host", Host),
                ("array", Array),
                ("managed", Managed),
            ],
            text.trim(),
        )
    }
}

/// What is known about one copy or fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CopyInfo {
    /// Copy direction.
    pub direction: CopyDirection,
    /// Source memory kind.
    pub src: MemoryKind,
    /// Destination memory kind.
    pub dst: MemoryKind,
    /// Bytes moved, when stated.
    pub bytes: Option<u64>,
    /// Why a unified-memory migration moved its pages, when the trace says (none for a copy
    /// a program asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration: Option<MigrationCause>,
    /// Source and destination device of a peer-to-peer copy, when the trace says (Nsight
    /// Systems' `srcDeviceId` / `dstDeviceId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerDevices>,
}

/// The two devices of a peer-to-peer copy (device indices below 256: a byte each keeps
/// [`CopyInfo`] as small as it was).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
pub struct PeerDevices {
    /// The device the bytes leave.
    pub src: u8,
    /// The device they arrive on.
    pub dst: u8,
}

impl PeerDevices {
    /// The pair of two distinct device indices, when both fit.
    #[must_use]
    pub fn new(src: i64, dst: i64) -> Option<PeerDevices> {
        let (src, dst) = (u8::try_from(src).ok()?, u8::try_from(dst).ok()?);
        (src != dst).then_some(PeerDevices { src, dst })
    }
}

/// Why the driver moved managed pages (CUPTI's unified-memory migration cause).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationCause {
    /// Not stated.
    Unknown,
    /// The program prefetched them (`cudaMemPrefetchAsync`).
    UserPrefetch,
    /// A page fault: the GPU or the host touched pages that lived on the other side.
    PageFault,
    /// The driver prefetched them speculatively, following faults.
    SpeculativePrefetch,
    /// Evicted to make room.
    Eviction,
    /// Moved because of access counters.
    AccessCounters,
}

impl MigrationCause {
    /// CUPTI's `CUpti_ActivityUnifiedMemoryMigrationCause` value (Nsight Systems'
    /// `migrationCause`).
    #[must_use]
    pub fn from_cupti(value: i64) -> Self {
        match value {
            1 => MigrationCause::UserPrefetch,
            2 => MigrationCause::PageFault,
            3 => MigrationCause::SpeculativePrefetch,
            4 => MigrationCause::Eviction,
            5 => MigrationCause::AccessCounters,
            _ => MigrationCause::Unknown,
        }
    }

    /// Whether the program asked for the move (a prefetch it issued), not a fault.
    #[must_use]
    pub fn requested(self) -> bool {
        self == MigrationCause::UserPrefetch
    }
}

impl Default for CopyInfo {
    fn default() -> Self {
        Self {
            direction: CopyDirection::Unknown,
            src: MemoryKind::Unknown,
            dst: MemoryKind::Unknown,
            bytes: None,
            migration: None,
            peer: None,
        }
    }
}

impl CopyInfo {
    /// Reads a CUPTI/roctracer copy name: `Memcpy HtoD (Pageable -> Device)`.
    pub fn from_name(name: &str) -> Self {
        let mut info = CopyInfo::default();
        let mut words = name.split_whitespace();
        if words.next().is_some() {
            if let Some(dir) = words.next().and_then(CopyDirection::parse) {
                info.direction = dir;
            }
        }
        if let (Some(open), Some(close)) = (name.find('('), name.rfind(')')) {
            if open < close {
                let inner = &name[open + 1..close];
                if let Some((src, dst)) = inner.split_once("->") {
                    info.src = MemoryKind::parse(src).unwrap_or(MemoryKind::Unknown);
                    info.dst = MemoryKind::parse(dst).unwrap_or(MemoryKind::Unknown);
                }
            }
        }
        info
    }

    /// Whether a host end of this copy is pageable memory.
    #[must_use]
    pub fn touches_pageable(&self) -> bool {
        self.src == MemoryKind::Pageable || self.dst == MemoryKind::Pageable
    }
}

/// A copy rate in GB/s for a reader: `13.1 GB/s`, or `< 0.1 GB/s` for the few-byte reads
/// whose rate rounds to nothing.
#[must_use]
pub fn format_gb_per_s(rate: f64) -> String {
    if rate < 0.05 {
        "< 0.1 GB/s".into()
    } else {
        format!("{rate:.1} GB/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cupti_and_rocm_names() {
        let c = CopyInfo::from_name("Memcpy HtoD (Pageable -> Device)");
        assert_eq!(c.direction, CopyDirection::HtoD);
        assert_eq!(c.src, MemoryKind::Pageable);
        assert_eq!(c.dst, MemoryKind::Device);
        assert!(c.touches_pageable());
        let r = CopyInfo::from_name("Memcpy DtoH (Device -> Host)");
        assert_eq!(
            (r.direction, r.src, r.dst),
            (CopyDirection::DtoH, MemoryKind::Device, MemoryKind::Host)
        );
        let m = CopyInfo::from_name("Memset (Device)");
        assert_eq!(m.direction, CopyDirection::Unknown);
        let bare = CopyInfo::from_name("Memcpy");
        assert_eq!(bare, CopyInfo::default());
    }
}
