//! What a collective call says about itself: the process group, sequence number, operation and
//! message sizes the profiler records on NCCL/RCCL kernels and `record_param_comms` ops.
//!
//! Importers file the arguments under the key that finds their kernel again (the kernel's own
//! correlation id, or the External id of the CPU op that recorded them);
//! [`crate::TraceBuilder::finish`] attaches them to the collective kernels, read back with
//! [`crate::Trace::collective_args`].

/// The recorded arguments of one collective. Every field is optional: PyTorch added them over
/// several releases (sizes and dtype in 1.13, process group name and description in 2.2,
/// sequence numbers in 2.5), and Nsight Systems records none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectiveArgs {
    /// `Collective name`: `allreduce`, `_allgather_base`, `reduce_scatter_tensor_coalesced`, …
    pub op: Option<Box<str>>,
    /// `Process Group Name` (or `Process Group ID`, `pg_id`): the group's id, the same on
    /// every member rank.
    pub group: Option<Box<str>>,
    /// `Seq` (or `seq`): the call's number within its group (not autograd's `Sequence number`).
    pub seq: Option<i64>,
    /// `In msg nelems`: elements sent by this rank.
    pub in_elems: Option<u64>,
    /// `Out msg nelems`: elements received by this rank.
    pub out_elems: Option<u64>,
    /// `dtype`: `Float`, `BFloat16`, `Half`, …
    pub dtype: Option<Box<str>>,
    /// `Group size`: ranks in the group.
    pub group_size: Option<i64>,
}

impl CollectiveArgs {
    /// Whether nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == CollectiveArgs::default()
    }

    /// Whether the record names a collective: its operation, process group or message size.
    /// A sequence number or a dtype alone does not.
    #[must_use]
    pub fn names_a_collective(&self) -> bool {
        self.op.is_some()
            || self.group.is_some()
            || self.in_elems.is_some()
            || self.out_elems.is_some()
    }

    /// Bytes of one element of `dtype`, for the dtypes NCCL moves.
    #[must_use]
    pub fn element_bytes(&self) -> Option<u64> {
        let d = self.dtype.as_deref()?.to_ascii_lowercase();
        let d = d.trim_start_matches("c10::").trim_start_matches("torch.");
        Some(match d {
            "double" | "float64" | "long" | "int64" | "complexfloat" => 8,
            "float" | "float32" | "int" | "int32" | "complexhalf" => 4,
            "half" | "float16" | "bfloat16" | "short" | "int16" => 2,
            "byte" | "char" | "bool" | "uint8" | "int8" | "float8_e4m3fn" | "float8_e5m2"
            | "float8_e4m3fnuz" | "float8_e5m2fnuz" => 1,
            _ => return None,
        })
    }
}

/// Where an importer found a collective's arguments: the key that finds its kernel again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveKey {
    /// On the kernel itself: its correlation id.
    Kernel(u64),
    /// On a CPU op (`record_param_comms`): its External id, which its kernel shares.
    Op(i64),
}

/// The most collective records kept from one trace; more are counted and dropped (a crafted
/// trace may put the arguments on every event).
pub const MAX_COLLECTIVE_RECORDS: usize = 1_000_000;
