//! The collective kernels of one device, in start order, with what each says about itself
//! (operation, process group, sequence number, bytes moved): what the communication figures
//! measure and the multi-rank job analysis matches across ranks.

use crate::vocabulary::kernels::is_communication_kernel;
use crate::vocabulary::memo::PerName;
use serde::{Deserialize, Serialize};
use tracelens_model::{CollectiveArgs, LaneKey, SpanId, SpanKind, TimeNs, Trace};

/// What a collective does (from its recorded `Collective name`, else its kernel name).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveOp {
    /// All-reduce.
    AllReduce,
    /// All-gather.
    AllGather,
    /// Reduce-scatter.
    ReduceScatter,
    /// Broadcast.
    Broadcast,
    /// Reduce.
    Reduce,
    /// All-to-all.
    AllToAll,
    /// Point-to-point send/receive (also how NCCL runs all-to-all).
    SendRecv,
    /// Anything else (a `Generic` kernel of unknown operation, a barrier).
    #[default]
    Other,
}

impl CollectiveOp {
    /// Every operation, in output order.
    pub const ALL: [CollectiveOp; 8] = [
        CollectiveOp::AllReduce,
        CollectiveOp::AllGather,
        CollectiveOp::ReduceScatter,
        CollectiveOp::Broadcast,
        CollectiveOp::Reduce,
        CollectiveOp::AllToAll,
        CollectiveOp::SendRecv,
        CollectiveOp::Other,
    ];

    /// The operation a `Collective name` (`allreduce`, `_allgather_base`,
    /// `reduce_scatter_tensor_coalesced`) or a kernel name (`ncclKernel_AllReduce_RING_LL…`,
    /// `ncclDevKernel_ReduceScatter_…`) names.
    #[must_use]
    pub fn from_name(name: &str) -> CollectiveOp {
        let lower: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let has = |s: &str| lower.contains(s);
        match () {
            () if has("allreduce") => CollectiveOp::AllReduce,
            () if has("allgather") => CollectiveOp::AllGather,
            () if has("reducescatter") => CollectiveOp::ReduceScatter,
            () if has("alltoall") => CollectiveOp::AllToAll,
            () if has("broadcast") => CollectiveOp::Broadcast,
            () if has("sendrecv") || has("send") || has("recv") => CollectiveOp::SendRecv,
            () if has("reduce") => CollectiveOp::Reduce,
            () => CollectiveOp::Other,
        }
    }

    /// Snake-case label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            CollectiveOp::AllReduce => "all_reduce",
            CollectiveOp::AllGather => "all_gather",
            CollectiveOp::ReduceScatter => "reduce_scatter",
            CollectiveOp::Broadcast => "broadcast",
            CollectiveOp::Reduce => "reduce",
            CollectiveOp::AllToAll => "all_to_all",
            CollectiveOp::SendRecv => "send_recv",
            CollectiveOp::Other => "other",
        }
    }

    /// Bus bandwidth per algorithm bandwidth for a group of `n` ranks, as nccl-tests defines
    /// it (`doc/PERFORMANCE.md`): what each rank's link carries relative to the data size.
    #[must_use]
    pub fn bus_factor(self, n: i64) -> Option<f64> {
        if n < 1 {
            return None;
        }
        #[allow(clippy::cast_precision_loss)]
        let n = n as f64;
        match self {
            CollectiveOp::AllReduce => Some(2.0 * (n - 1.0) / n),
            CollectiveOp::AllGather | CollectiveOp::ReduceScatter | CollectiveOp::AllToAll => {
                Some((n - 1.0) / n)
            }
            CollectiveOp::Broadcast | CollectiveOp::Reduce | CollectiveOp::SendRecv => Some(1.0),
            CollectiveOp::Other => None,
        }
    }
}

/// One collective kernel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Collective {
    /// Kernel name, cut at its first `(`.
    pub name: String,
    /// What it does.
    pub op: CollectiveOp,
    /// Its process group (`Process Group Name`), when recorded.
    pub group: Option<String>,
    /// Its number within the group (`Seq`), when recorded.
    pub seq: Option<i64>,
    /// The data size nccl-tests measures bandwidth over (the larger of the input and output
    /// message: the whole gathered buffer of an all-gather), when recorded.
    pub bytes: Option<u64>,
    /// Ranks in its group, when recorded.
    pub group_size: Option<i64>,
    /// NCCL algorithm and protocol from the kernel name (`RING LL`, `TREE SIMPLE`), if named.
    pub algorithm: Option<String>,
    /// Start, trace clock.
    pub start_ns: TimeNs,
    /// Duration.
    pub dur_ns: TimeNs,
}

impl Collective {
    /// End, trace clock.
    #[must_use]
    pub fn end_ns(&self) -> TimeNs {
        self.start_ns.saturating_add(self.dur_ns)
    }

    /// Bytes on each rank's link (`bytes` × the bus factor), when sizes are recorded.
    #[must_use]
    pub fn bus_bytes(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)]
        let bytes = self.bytes? as f64;
        Some(bytes * self.op.bus_factor(self.group_size?)?)
    }
}

/// The NCCL algorithm and protocol a kernel name carries: `ncclKernel_AllReduce_RING_LL_Sum_float`
/// → `RING LL`; `ncclDevKernel_Generic` → none.
#[must_use]
pub fn algorithm_of(kernel: &str) -> Option<String> {
    const ALGORITHMS: [&str; 6] = [
        "RING",
        "TREE",
        "COLLNET_DIRECT",
        "COLLNET_CHAIN",
        "NVLS_TREE",
        "NVLS",
    ];
    const PROTOCOLS: [&str; 3] = ["LL128", "LL", "SIMPLE"];
    let parts: Vec<&str> = kernel.split('(').next()?.split('_').collect();
    let joined = parts.join("_");
    let algorithm = ALGORITHMS
        .iter()
        .find(|a| joined.contains(&format!("_{a}_")) || joined.ends_with(&format!("_{a}")))?;
    let protocol = PROTOCOLS.iter().find(|p| parts.contains(p));
    Some(match protocol {
        Some(p) => format!("{algorithm} {p}"),
        None => (*algorithm).to_string(),
    })
}

/// The collective described by kernel `id` and its recorded arguments.
fn collective(trace: &Trace, id: SpanId, args: Option<&CollectiveArgs>) -> Collective {
    let s = trace.span(id);
    let kernel = trace.names.get(s.name);
    let name = kernel.split('(').next().unwrap_or("").to_string();
    let by_name = CollectiveOp::from_name(&name);
    let op = match args
        .and_then(|a| a.op.as_deref())
        .map(CollectiveOp::from_name)
    {
        Some(CollectiveOp::Other) | None => by_name,
        Some(op) => op,
    };
    let bytes = args.and_then(|a| {
        let elems = a.in_elems.max(a.out_elems)?;
        elems.checked_mul(a.element_bytes()?)
    });
    Collective {
        op,
        group: args.and_then(|a| a.group.as_deref()).map(str::to_string),
        seq: args.and_then(|a| a.seq),
        bytes,
        group_size: args.and_then(|a| a.group_size).filter(|&n| n > 0),
        algorithm: algorithm_of(&name),
        name,
        start_ns: s.start_ns,
        dur_ns: s.dur_ns,
    }
}

/// The collective kernels on `device` (every device when `None`), by start.
#[must_use]
pub fn collectives_on(trace: &Trace, device: Option<i64>) -> Vec<Collective> {
    let mut names = PerName::new(trace, is_communication_kernel);
    let mut out: Vec<Collective> = trace
        .spans_of_kind(SpanKind::Kernel)
        .filter(|&id| {
            device.is_none_or(
                |dev| matches!(trace.lane_key(id), LaneKey::Gpu { device, .. } if device == dev),
            )
        })
        .filter(|&id| names.of(trace, trace.span(id).name))
        .map(|id| collective(trace, id, trace.collective_args(id)))
        .collect();
    out.sort_by_key(|c| c.start_ns);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_and_algorithms_from_names() {
        let k = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
        assert_eq!(CollectiveOp::from_name(k), CollectiveOp::AllReduce);
        assert_eq!(algorithm_of(k).as_deref(), Some("RING LL"));
        assert_eq!(
            algorithm_of("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
                .as_deref(),
            Some("RING LL")
        );
        assert_eq!(
            algorithm_of("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"),
            None
        );
        assert_eq!(
            CollectiveOp::from_name("_allgather_base"),
            CollectiveOp::AllGather
        );
        assert_eq!(
            CollectiveOp::from_name("reduce_scatter_tensor_coalesced"),
            CollectiveOp::ReduceScatter
        );
        assert_eq!(
            CollectiveOp::from_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"),
            CollectiveOp::SendRecv
        );
        assert_eq!(
            CollectiveOp::from_name("broadcast"),
            CollectiveOp::Broadcast
        );
        assert_eq!(
            CollectiveOp::from_name("ncclDevKernel_Generic"),
            CollectiveOp::Other
        );
    }

    #[test]
    #[allow(clippy::float_cmp)]
    fn bus_factors_follow_nccl_tests() {
        assert_eq!(CollectiveOp::AllReduce.bus_factor(8), Some(1.75));
        assert_eq!(CollectiveOp::AllGather.bus_factor(8), Some(0.875));
        assert_eq!(CollectiveOp::ReduceScatter.bus_factor(2), Some(0.5));
        assert_eq!(CollectiveOp::Broadcast.bus_factor(4), Some(1.0));
        assert_eq!(CollectiveOp::Other.bus_factor(4), None);
        assert_eq!(CollectiveOp::AllReduce.bus_factor(0), None);
        let c = Collective {
            op: CollectiveOp::AllReduce,
            bytes: Some(1000),
            group_size: Some(2),
            ..Collective::default()
        };
        assert_eq!(c.bus_bytes(), Some(1000.0));
    }
}
