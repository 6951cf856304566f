//! The finished timeline: sorted span tables per lane, links between them, and queries.

use crate::copy::CopyInfo;
use crate::diagnostics::Warning;
use crate::inputs::{KernelLaunch, OpDetail};
use crate::lane::{Lane, LaneId, LaneKey};
use crate::metadata::Metadata;
use crate::names::{NameId, StringTable};
use crate::python::{parse_call_stack, PyFrame};
use crate::source::{Detail, SourceInfo};
use crate::span::{Span, SpanId, SpanKind, NO_DETAIL};
use crate::time::Interval;
use serde::Serialize;
use std::collections::BTreeMap;

/// Levels [`Trace::ancestors`] walks up; real traces nest under 300 (deep Python stacks).
pub const MAX_ANCESTORS: usize = 1024;

/// Sentinel for "no span" in the dense link columns.
pub(crate) const NO_SPAN: u32 = u32::MAX;

/// One profiler step (`ProfilerStep#N`) with its CPU and GPU extents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Step {
    /// N in `ProfilerStep#N`.
    pub number: i64,
    /// The CPU `ProfilerStep#N` range.
    pub cpu: Option<Interval>,
    /// Hull of the GPU-side `ProfilerStep#N` ranges (`gpu_user_annotation`).
    pub gpu: Option<Interval>,
}

/// A GPU device seen in the trace.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Device {
    /// Device index as the trace numbers it (ROCm may use the system index).
    pub index: i64,
    /// Name from `deviceProperties`, when known.
    pub name: Option<String>,
    /// Stream lanes of this device.
    #[serde(skip)]
    pub lanes: Vec<LaneId>,
    /// Stream ids.
    pub streams: Vec<i64>,
    /// Numeric ids of the processes whose API calls launched work on this device.
    pub processes: Vec<i64>,
}

/// How well launches and GPU ops could be joined.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct LinkStats {
    /// GPU ops (kernels, copies, fills).
    pub gpu_ops: u64,
    /// GPU ops joined to the API call that launched them.
    pub gpu_ops_linked: u64,
    /// GPU ops with a correlation id whose launch call is missing from the trace.
    pub gpu_ops_launch_missing: u64,
    /// GPU ops with neither a correlation id nor a flow.
    pub gpu_ops_without_correlation: u64,
    /// Links recovered from `ac2g`-style flow events instead of `args.correlation`.
    pub links_from_flows: u64,
    /// API calls that launched more than one GPU op (CUDA/HIP graph launches).
    pub graph_launches: u64,
    /// GPU ops fed by those graph launches.
    pub graph_launched_ops: u64,
    /// API calls whose `External id` was compared with their enclosing op's.
    pub external_id_checked: u64,
    /// Of those, how many disagreed.
    pub external_id_mismatched: u64,
}

/// The timeline of one trace file.
///
/// Spans are sorted by lane, then start (longer first on ties), so each lane's spans form the
/// contiguous slice `lanes[i].spans`. Link columns (`parent`, `launch`) are indexed by span.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Origin and reading statistics.
    pub source: SourceInfo,
    /// Interned strings.
    pub names: StringTable,
    /// Lanes: GPU streams first (by device, stream), then CPU threads (by pid, tid).
    pub lanes: Vec<Lane>,
    /// All spans, sorted as described above.
    pub spans: Vec<Span>,
    /// Copy details, addressed by [`Span::detail`] of memcpy/memset/runtime copy spans.
    pub copies: Vec<CopyInfo>,
    /// Call stacks and recorded inputs, addressed by [`Span::detail`] of CPU ops and user
    /// ranges (deduplicated).
    pub op_details: Vec<OpDetail>,
    /// Launch configurations, addressed by [`Span::detail`] of kernels (deduplicated).
    pub kernel_launches: Vec<KernelLaunch>,
    /// Profiler steps by number.
    pub steps: Vec<Step>,
    /// GPU devices with activity, by index.
    pub devices: Vec<Device>,
    /// Trace metadata, redacted.
    pub metadata: Metadata,
    /// Warnings about the input.
    pub warnings: Vec<Warning>,
    /// Launch-link statistics.
    pub links: LinkStats,
    /// Allocator samples, in time order (empty unless recorded with `profile_memory=True`).
    pub memory: Vec<crate::memory::MemorySample>,
    /// CPU samples with their call stacks (Nsight Systems `-s cpu`), in time order.
    pub cpu_samples: crate::samples::CpuSamples,
    /// The caching allocator's segments, failed requests and settings, when the input is a
    /// PyTorch memory snapshot.
    pub allocator: Option<crate::memory::AllocatorState>,
    /// The recorded arguments of collective kernels, by kernel ([`Trace::collective_args`]).
    pub(crate) collective_args: Vec<(SpanId, crate::collective::CollectiveArgs)>,
    /// Launch calls that fed no recorded GPU op, with the kernel each names (a capture
    /// trace's launches), by span.
    pub(crate) launched_kernels: Vec<(SpanId, NameId)>,
    /// Replayed GPU ops with an origin: (GPU op, index into [`Trace::captured_ops`]), by span.
    pub(crate) graph_origins: Vec<(SpanId, u32)>,
    /// The ops that launched replayed graph work at capture ([`crate::graph`]).
    pub captured_ops: Vec<crate::graph::CapturedOp>,
    /// How replayed graph work got its origins, when it did.
    pub graph_attribution: Option<crate::graph::GraphAttribution>,
    /// Names the importer marked as profiler steps, with their numbers.
    pub(crate) step_names: rustc_hash::FxHashMap<NameId, i64>,
    pub(crate) parent: Vec<u32>,
    pub(crate) launch: Vec<u32>,
    /// The launched GPU ops sorted by their API call, then op, and each one's call beside it
    /// (4 bytes an op: a call's ops are found by searching the calls).
    pub(crate) launched_apis: Vec<u32>,
    pub(crate) launched_ops: Vec<SpanId>,
    /// The spans' ids, by span, kept only where [`Trace::rank_processes`] finds ranks to
    /// split (the split links each rank again); empty otherwise.
    pub(crate) span_ids: Vec<crate::span::SpanIds>,
}

impl Trace {
    /// The one redaction pass: every string the trace carries (names, thread names, call
    /// stacks, metadata, warnings, category names) loses its credentials, so no renderer and
    /// no analysis ever sees one. See [`crate::redact`] for what is redacted.
    pub fn redact(&mut self) {
        use crate::redact::redact_text;
        use std::borrow::Cow;
        let renamed = self.names.rewrite(|s| match redact_text(s) {
            Cow::Owned(r) => Some(r),
            Cow::Borrowed(_) => None,
        });
        if renamed > 0 {
            self.metadata
                .redacted
                .push(format!("{renamed} names (span, thread or call-stack text)"));
        }
        self.metadata.redact();
        // Device names come from the trace too (`deviceProperties`, `TARGET_INFO_GPU`).
        for d in &mut self.devices {
            if let Some(name) = d.name.as_mut() {
                if let Cow::Owned(r) = redact_text(name) {
                    *name = r;
                    self.metadata
                        .redacted
                        .push(format!("device {} name", d.index));
                }
            }
        }
        let mut args_redacted = 0;
        for (_, args) in &mut self.collective_args {
            for text in [&mut args.op, &mut args.group, &mut args.dtype]
                .into_iter()
                .flatten()
            {
                if let Cow::Owned(r) = redact_text(text) {
                    *text = r.into_boxed_str();
                    args_redacted += 1;
                }
            }
        }
        if args_redacted > 0 {
            self.metadata
                .redacted
                .push(format!("{args_redacted} collective arguments"));
        }
        for w in &mut self.warnings {
            if let Cow::Owned(r) = redact_text(&w.message) {
                w.message = r;
            }
        }
        let s = &mut self.source;
        redact_keys(&mut s.ignored);
        for detail in s.details.values_mut() {
            match detail {
                Detail::Counts(map) => redact_keys(map),
                Detail::Text(text) => {
                    if let Cow::Owned(r) = redact_text(text) {
                        *text = r;
                    }
                }
                Detail::Count(_) => {}
            }
        }
    }

    /// The step number, when `name` is one the importer marked as a profiler step.
    #[must_use]
    pub fn step_of_name(&self, name: NameId) -> Option<i64> {
        self.step_names.get(&name).copied()
    }

    /// Whether span `id` is a profiler step's range (CPU or GPU side).
    #[must_use]
    pub fn is_step_span(&self, id: SpanId) -> bool {
        let s = self.span(id);
        matches!(
            s.kind,
            SpanKind::CpuOp | SpanKind::UserAnnotation | SpanKind::GpuUserAnnotation
        ) && self.step_names.contains_key(&s.name)
    }

    /// The span behind `id`.
    #[must_use]
    pub fn span(&self, id: SpanId) -> &Span {
        &self.spans[id.0 as usize]
    }

    /// The name of a span.
    #[must_use]
    pub fn name(&self, id: SpanId) -> &str {
        self.names.get(self.span(id).name)
    }

    /// The lane behind `id`.
    #[must_use]
    pub fn lane(&self, id: LaneId) -> &Lane {
        &self.lanes[id.0 as usize]
    }

    /// Span ids of one lane, sorted by start.
    pub fn lane_span_ids(&self, id: LaneId) -> impl Iterator<Item = SpanId> {
        self.lane(id).spans.clone().map(SpanId)
    }

    /// Span ids of every span of `kind`.
    pub fn spans_of_kind(&self, kind: SpanKind) -> impl Iterator<Item = SpanId> + '_ {
        self.spans
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.kind == kind)
            .map(|(i, _)| SpanId::at(i))
    }

    /// Lanes that are GPU streams.
    pub fn gpu_lanes(&self) -> impl Iterator<Item = LaneId> + '_ {
        self.lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| l.key.is_gpu())
            .map(|(i, _)| LaneId::at(i))
    }

    /// The innermost span on the same CPU thread that contains `id`.
    #[must_use]
    pub fn parent(&self, id: SpanId) -> Option<SpanId> {
        let p = *self.parent.get(id.0 as usize)?;
        (p != NO_SPAN).then_some(SpanId(p))
    }

    /// The enclosing chain of `id`, innermost first (not including `id`), at most
    /// [`MAX_ANCESTORS`] levels: every question asked of it (the enclosing op, the nearest
    /// user Python frame) is answered close to `id`, and a crafted trace nested 100k deep
    /// must not make each of thousands of walks 100k long.
    pub fn ancestors(&self, id: SpanId) -> impl Iterator<Item = SpanId> + '_ {
        std::iter::successors(self.parent(id), move |&p| self.parent(p)).take(MAX_ANCESTORS)
    }

    /// Whether GPU op `id` is a unified-memory migration: a copy of managed memory that no
    /// API call launched (the driver moves managed pages on a fault).
    #[must_use]
    pub fn is_migration(&self, id: SpanId) -> bool {
        self.span(id).kind == SpanKind::Memcpy
            && self.launch_of(id).is_none()
            && self.copy_info(id).is_some_and(|c| {
                c.src == crate::MemoryKind::Managed || c.dst == crate::MemoryKind::Managed
            })
    }

    /// The runtime/driver call that launched GPU op `id`.
    #[must_use]
    pub fn launch_of(&self, id: SpanId) -> Option<SpanId> {
        let l = *self.launch.get(id.0 as usize)?;
        (l != NO_SPAN).then_some(SpanId(l))
    }

    /// The GPU ops launched by API call `id` (many for a graph launch).
    #[must_use]
    pub fn launched_by(&self, id: SpanId) -> &[SpanId] {
        let apis = &self.launched_apis;
        let from = apis.partition_point(|&api| api < id.0);
        // Most calls launch one op or none: the run's end is searched only past two.
        let len = match apis.get(from..from + 2) {
            Some([a, b]) if *a == id.0 && *b == id.0 => {
                apis[from..].partition_point(|&api| api == id.0)
            }
            _ => usize::from(apis.get(from) == Some(&id.0)),
        };
        &self.launched_ops[from..from + len]
    }

    /// What launched GPU op `id` when its CUDA/HIP graph was captured, for a replayed op
    /// with an origin ([`crate::graph`]).
    #[must_use]
    pub fn graph_origin(&self, id: SpanId) -> Option<&crate::graph::CapturedOp> {
        let at = self
            .graph_origins
            .binary_search_by_key(&id, |&(span, _)| span)
            .ok()?;
        self.captured_ops.get(self.graph_origins[at].1 as usize)
    }

    /// Every replayed GPU op with an origin, by span: (GPU op, its captured op).
    pub fn graph_origins(&self) -> impl Iterator<Item = (SpanId, &crate::graph::CapturedOp)> + '_ {
        self.graph_origins
            .iter()
            .filter_map(|&(id, op)| Some((id, self.captured_ops.get(op as usize)?)))
    }

    /// Copy details of a memcpy/memset span or a runtime copy call.
    #[must_use]
    pub fn copy_info(&self, id: SpanId) -> Option<&CopyInfo> {
        let s = self.span(id);
        match s.kind {
            SpanKind::Memcpy | SpanKind::Memset | SpanKind::Runtime | SpanKind::Driver
                if s.detail != NO_DETAIL =>
            {
                self.copies.get(s.detail as usize)
            }
            _ => None,
        }
    }

    /// The raw 2021-style `Call stack` of a CPU op.
    #[must_use]
    pub fn call_stack(&self, id: SpanId) -> Option<&str> {
        self.op_detail(id)?.call_stack.map(|n| self.names.get(n))
    }

    /// The call stack and recorded inputs of a CPU op or user range, when any were recorded.
    #[must_use]
    pub fn op_detail(&self, id: SpanId) -> Option<&OpDetail> {
        let s = self.span(id);
        match s.kind {
            SpanKind::CpuOp | SpanKind::UserAnnotation if s.detail != NO_DETAIL => {
                self.op_details.get(s.detail as usize)
            }
            _ => None,
        }
    }

    /// The process group, sequence number and message sizes of a collective kernel, when the
    /// trace recorded them (on the kernel or on the `record_param_comms` op that launched it).
    #[must_use]
    pub fn collective_args(&self, id: SpanId) -> Option<&crate::collective::CollectiveArgs> {
        let at = self
            .collective_args
            .binary_search_by_key(&id, |(span, _)| *span)
            .ok()?;
        Some(&self.collective_args[at].1)
    }

    /// The launch configuration of a kernel, when the trace recorded it.
    #[must_use]
    pub fn kernel_launch(&self, id: SpanId) -> Option<&KernelLaunch> {
        let s = self.span(id);
        match s.kind {
            SpanKind::Kernel if s.detail != NO_DETAIL => {
                self.kernel_launches.get(s.detail as usize)
            }
            _ => None,
        }
    }

    /// Python frames around `id`, innermost first: from enclosing `python_function` spans, or
    /// else from the nearest enclosing op's `Call stack`.
    #[must_use]
    pub fn python_stack(&self, id: SpanId) -> Vec<PyFrame> {
        let mut frames = Vec::new();
        self.python_frame_where(id, |f| {
            frames.push(f.clone());
            false
        });
        frames
    }

    /// The innermost Python frame around `id` that satisfies `want` (the same frames as
    /// [`Trace::python_stack`], parsed only until one matches).
    pub fn python_frame_where(
        &self,
        id: SpanId,
        mut want: impl FnMut(&PyFrame) -> bool,
    ) -> Option<PyFrame> {
        let mut any = false;
        for sid in std::iter::once(id).chain(self.ancestors(id)) {
            if self.span(sid).kind == SpanKind::PythonFunction {
                if let Some(f) = PyFrame::parse(self.name(sid)) {
                    any = true;
                    if want(&f) {
                        return Some(f);
                    }
                }
            }
        }
        if any {
            return None;
        }
        for sid in std::iter::once(id).chain(self.ancestors(id)) {
            if let Some(stack) = self.call_stack(sid) {
                return parse_call_stack(stack).into_iter().find(|f| want(f));
            }
        }
        None
    }

    /// Number of spans per kind (every kind listed, zero included).
    #[must_use]
    pub fn count_by_kind(&self) -> BTreeMap<SpanKind, u64> {
        let mut counts: BTreeMap<SpanKind, u64> = SpanKind::ALL.iter().map(|&k| (k, 0)).collect();
        for s in &self.spans {
            *counts.entry(s.kind).or_default() += 1;
        }
        counts
    }

    /// Whether any kernel, copy or fill is present.
    #[must_use]
    pub fn has_gpu_activity(&self) -> bool {
        self.links.gpu_ops > 0
    }

    /// The lane key of a span.
    #[must_use]
    pub fn lane_key(&self, id: SpanId) -> LaneKey {
        self.lane(self.span(id).lane).key
    }
}

/// Redacts secret-looking keys of a count map, merging keys that become equal.
fn redact_keys(map: &mut BTreeMap<String, u64>) {
    use crate::redact::redact_text;
    use std::borrow::Cow;
    if map.keys().any(|k| matches!(redact_text(k), Cow::Owned(_))) {
        let entries = std::mem::take(map);
        for (k, v) in entries {
            *map.entry(redact_text(&k).into_owned()).or_insert(0) += v;
        }
    }
}
