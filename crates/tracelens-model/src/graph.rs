//! Where replayed CUDA/HIP graph work came from: the op and scope each GPU op replayed by a
//! graph launch had when the graph was captured.
//!
//! A graph launch (`cudaGraphLaunch`, `hipGraphLaunch`) feeds hundreds of kernels through one
//! API call, so the op around the launch says nothing about them. Two kinds of evidence say
//! more, read in this order:
//!
//! 1. **Annotations inside the replay trace.** PyTorch 2.13+ `export_chrome_trace(...,
//!    cuda_graph_annotations=...)` (`torch/profiler/_chrome_trace_export.py`) splices the
//!    labels that `torch.cuda._graph_annotations.mark_kernels` recorded at capture into the
//!    `args` of each replayed kernel, copy and fill that carries a `graph node id`: a
//!    `module_fqn` (torchtitan) or a `name` (`mark_kernels("attention")`) becomes the op's
//!    scope. Importers file them with [`crate::TraceBuilder::add_graph_annotation`].
//! 2. **A capture trace**: a profile taken while the graph was captured, whose launch calls
//!    record the kernel they launched (`args.kernel`; the kernels themselves never ran) inside
//!    the op that launched it. [`attach_capture`] matches each graph launch's replayed kernels,
//!    in time order, to the captured launches of the same kernel name, in capture order.
//!
//! Without either, a replay stays one unit and the trace's warning says so.

use crate::lane::LaneId;
use crate::names::NameId;
use crate::time::TimeNs;
use serde::Serialize;

pub use crate::graph_match::{attach_capture, refresh_warning};

/// Most replayed kernels a captured launch may be skipped over while matching: a replay that
/// finds no captured launch of its name within this many is left unmatched rather than made
/// to scan the whole capture (bounded time on any input).
pub const MATCH_LOOKAHEAD: usize = 64;

/// Which evidence gave replayed GPU ops their origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OriginSource {
    /// PyTorch's CUDA-graph annotations in the replay trace itself.
    Annotation,
    /// A profile of the graph's capture, matched by kernel name and order.
    CaptureTrace,
}

/// What launched one replayed GPU op when its graph was captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CapturedOp {
    /// The framework op around the captured launch (`aten::mm`), when the evidence names one.
    pub op: Option<NameId>,
    /// That op's recorded inputs ([`Trace::op_details`] index), or [`NO_DETAIL`].
    pub detail: u32,
    /// The scope: the `nn.Module` or user range around the launch at capture, or the
    /// annotation's label (`layers.0.attention`).
    pub scope: Option<NameId>,
    /// Which op call at capture: two calls of one op in one graph are two instances.
    pub instance: u32,
}

/// How much of the replayed work got an origin, and from what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct GraphAttribution {
    /// The evidence used.
    pub source: OriginSource,
    /// The capture trace's file name, for [`OriginSource::CaptureTrace`].
    pub capture_file: Option<String>,
    /// GPU ops fed by graph launches.
    pub replayed_ops: u64,
    /// Of those, how many got an origin.
    pub attributed_ops: u64,
    /// Launch calls the capture trace recorded (0 for annotations).
    pub captured_launches: u64,
}

impl GraphAttribution {
    /// Attributed in percent of replayed (100 when nothing was replayed).
    #[must_use]
    pub fn match_percent(&self) -> f64 {
        if self.replayed_ops == 0 {
            return 100.0;
        }
        // Counts stay far below 2^52: exact in f64.
        #[allow(clippy::cast_precision_loss)]
        let p = self.attributed_ops as f64 * 100.0 / self.replayed_ops as f64;
        p.clamp(0.0, 100.0)
    }
}

/// The graph evidence an importer hands the builder, joined to spans at
/// [`crate::TraceBuilder::finish`].
#[derive(Default)]
pub(crate) struct GraphNotes {
    /// Launch calls' recorded kernel names, by the call's correlation id.
    pub launched_kernels: Vec<(u64, NameId)>,
    /// Annotated GPU ops: (lane, start, name) find the span; the last is the label.
    pub annotations: Vec<(LaneId, TimeNs, NameId, NameId)>,
}

impl GraphNotes {
    /// Takes `other`'s notes, its names and lanes remapped.
    pub fn absorb(&mut self, other: GraphNotes, names: &[NameId], lanes: &[LaneId]) {
        let n = |id: NameId| names[id.0 as usize];
        self.launched_kernels
            .extend(other.launched_kernels.into_iter().map(|(c, k)| (c, n(k))));
        self.annotations.extend(
            other
                .annotations
                .into_iter()
                .map(|(l, t, name, label)| (lanes[l.0 as usize], t, n(name), n(label))),
        );
    }
}
