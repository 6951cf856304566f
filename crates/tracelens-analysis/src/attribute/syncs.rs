//! Host-blocking calls (implicit and explicit syncs): what triggered each, where in the
//! Python code, how long the CPU was blocked and how much GPU idle it caused.

use crate::attribute::idle::{DeviceIdle, IdleCause};
use crate::measure::threads::ThreadIndex;
use crate::vocabulary::api::{normalize_api, BlockingKind};
use crate::vocabulary::ops::{
    is_copy_op, is_data_dependent_op, is_scalar_read_op, is_truth_value_op,
};
use rustc_hash::FxHashMap;
use serde::Serialize;
use tracelens_model::{CopyInfo, Interval, MemoryKind, PyFrame, SpanId, SpanKind, TimeNs, Trace};

/// What made the host wait.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SyncTrigger {
    /// `tensor.item()` / `float(t)` / `int(t)` (`aten::item`, `aten::_local_scalar_dense`).
    Item,
    /// `if tensor:` / `bool(t)` (`aten::is_nonzero`).
    TensorTruthValue,
    /// Synchronous `.to()` / `.cpu()` / `.tolist()` / `.numpy()` (`aten::to` › `aten::copy_`).
    SyncCopy,
    /// Data-dependent output shape (`nonzero`, boolean masks, `unique`, `masked_select`).
    DataDependentShape,
    /// `torch.cuda.synchronize()` (device sync with no enclosing op).
    DeviceSynchronize,
    /// `stream.synchronize()` or a stream sync under another op.
    StreamSynchronize,
    /// `event.synchronize()`.
    EventSynchronize,
    /// A blocking copy or fill API called directly (extensions, `cudaMemcpy`).
    BlockingCopyApi,
    /// Device or pinned memory freed (`cudaFree`/`hipFree`), which waits for the device:
    /// the caching allocator is off, or `empty_cache()` runs in the loop.
    AllocatorFree,
    /// The profiler's own start/stop `cudaDeviceSynchronize` (ignored).
    ProfilerInjected,
}

impl SyncSite {
    /// Whether the site's calls read a value the GPU computed: `.item()`, `if tensor:`, a
    /// data-dependent shape, or a synchronous copy back to the host (an upload reads none).
    #[must_use]
    pub fn reads_a_value(&self) -> bool {
        match self.trigger {
            SyncTrigger::SyncCopy => self.copies_to_host,
            t => t.reads_a_value(),
        }
    }
}

impl SyncTrigger {
    /// Whether the sync reads a value the GPU computes (`.item()`, `if tensor:`, a
    /// synchronous copy, a data-dependent shape): it waits for the GPU, whenever it runs.
    #[must_use]
    pub fn reads_a_value(self) -> bool {
        matches!(
            self,
            SyncTrigger::Item
                | SyncTrigger::TensorTruthValue
                | SyncTrigger::SyncCopy
                | SyncTrigger::DataDependentShape
        )
    }

    /// What the user wrote, in words.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            SyncTrigger::Item => ".item()",
            SyncTrigger::TensorTruthValue => "tensor truth value (if tensor: / bool(t))",
            SyncTrigger::SyncCopy => "synchronous .to()/.cpu()/.tolist()",
            SyncTrigger::DataDependentShape => "data-dependent shape (nonzero/mask/unique)",
            SyncTrigger::DeviceSynchronize => "torch.cuda.synchronize()",
            SyncTrigger::StreamSynchronize => "stream synchronize",
            SyncTrigger::EventSynchronize => "event synchronize",
            SyncTrigger::BlockingCopyApi => "blocking copy/fill API",
            SyncTrigger::AllocatorFree => "GPU memory free (cudaFree/hipFree)",
            SyncTrigger::ProfilerInjected => "profiler start/stop sync",
        }
    }

    /// [`SyncTrigger::describe`] for the program the trace shows: a program that is not
    /// PyTorch did not write `torch.cuda.synchronize()` (the API column names its call).
    #[must_use]
    pub fn describe_for(self, pytorch: bool) -> &'static str {
        match self {
            SyncTrigger::DeviceSynchronize if !pytorch => "device synchronize",
            _ => self.describe(),
        }
    }
}

/// One host-blocking call.
#[derive(Clone, Debug)]
pub struct SyncCall {
    /// The API call.
    pub span: SpanId,
    /// What triggered it.
    pub trigger: SyncTrigger,
    /// The first Python frame outside torch and site-packages (boxed: most calls have
    /// none, and a trace may hold millions of calls).
    pub call_site: Option<Box<PyFrame>>,
    /// The copy involved, for copy triggers.
    pub copy: Option<CopyInfo>,
    /// The innermost enclosing op: several blocking calls under one op (a pageable copy and
    /// its stream sync) are one sync of the user's code.
    pub trigger_op: Option<SpanId>,
    /// Time the CPU thread was blocked (the call's duration inside the analysis window).
    pub blocked_ns: TimeNs,
    /// GPU idle charged to this call by the idle attribution (`sync_drain`).
    pub gpu_idle_ns: TimeNs,
}

/// Syncs grouped by (trigger, call site).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct SyncSite {
    /// What triggered them.
    pub trigger: SyncTrigger,
    /// `file:line function`, when the trace has Python stacks.
    pub call_site: Option<String>,
    /// API names seen.
    pub apis: Vec<String>,
    /// Innermost op chain of the first call (`aten::is_nonzero › aten::item › …`).
    pub op_chain: Vec<String>,
    /// Number of syncs in the user's code (blocking calls under one op count once).
    pub count: u64,
    /// Number of blocking API calls.
    pub api_calls: u64,
    /// Calls per profiled step (count / steps; count when there are no steps).
    pub per_step: f64,
    /// Total host-blocked time.
    pub blocked_ns: TimeNs,
    /// Total GPU idle caused.
    pub gpu_idle_ns: TimeNs,
    /// Host memory kind of the copies involved, for copy triggers (`Pageable`, `Pinned`, …).
    pub host_memory: Option<MemoryKind>,
    /// Copies launched by the blocking calls (counted here, not in the pageable-copy finding).
    pub copies: u64,
    /// Their bytes.
    pub copy_bytes: u64,
    /// The copies themselves.
    #[serde(skip)]
    pub copy_ids: Vec<SpanId>,
    /// Up to five example calls.
    #[serde(skip)]
    pub examples: Vec<SpanId>,
    /// Every blocking API call of the site.
    #[serde(skip)]
    pub calls: Vec<SpanId>,
    /// Time ranges of up to five example calls.
    pub example_ranges: Vec<Interval>,
    /// Whether any of its copies brings data back to the host (device-to-host): a synchronous
    /// copy that only uploads reads no GPU value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copies_to_host: bool,
    /// Why every call of the site is work done once (context creation, a library's first
    /// call), when each is: not a per-step cost. Never for value reads, which wait for the GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_time: Option<crate::measure::one_time::OneTimeWork>,
}

/// Every host-blocking call of a trace that overlaps the analysis `window`; GPU idle is read
/// from `idle` (the focus device).
#[must_use]
pub fn find_syncs(
    trace: &Trace,
    window: Option<Interval>,
    idle: &[DeviceIdle],
    threads: &ThreadIndex,
) -> Vec<SyncCall> {
    let mut idle_by_sync: FxHashMap<SpanId, TimeNs> = FxHashMap::default();
    for d in idle {
        for seg in d.segments() {
            if let (IdleCause::SyncDrain, Some(s)) = (seg.cause, seg.sync()) {
                *idle_by_sync.entry(s).or_default() += seg.interval.dur_ns();
            }
        }
    }
    let cpu_steps: Vec<Interval> = trace.steps.iter().filter_map(|s| s.cpu).collect();
    // At most one per blocking call: made at that size, not doubled up to it.
    let mut calls = Vec::with_capacity(threads.blocking_calls().count());
    for (id, kind) in threads.blocking_calls() {
        let s = trace.span(id);
        let blocked_ns = match window {
            None => s.dur_ns,
            Some(w) => match s.interval().clip(w) {
                Some(c) => c.dur_ns(),
                None if s.dur_ns == 0 && w.start_ns <= s.start_ns && s.start_ns < w.end_ns => 0,
                None => continue,
            },
        };
        let ops: Vec<SpanId> = enclosing_ops(trace, id).collect();
        let op_names: Vec<&str> = ops.iter().map(|&o| trace.name(o)).collect();
        let call_site = trace.python_frame_where(id, |f| !f.is_library());
        let mut copy = None;
        let trigger = if op_names.iter().any(|n| is_truth_value_op(n)) {
            SyncTrigger::TensorTruthValue
        } else if op_names.iter().any(|n| is_scalar_read_op(n)) {
            SyncTrigger::Item
        } else if op_names.iter().any(|n| is_data_dependent_op(n)) {
            SyncTrigger::DataDependentShape
        } else if let Some(&op) = ops.iter().find(|&&o| is_copy_op(trace.name(o))) {
            copy = copy_under(trace, op);
            SyncTrigger::SyncCopy
        } else {
            match kind {
                BlockingKind::DeviceSync if ops.is_empty() => {
                    let inside_steps = cpu_steps
                        .iter()
                        .any(|w| w.start_ns <= s.start_ns && s.end_ns() <= w.end_ns);
                    let from_user = call_site.is_some();
                    if !cpu_steps.is_empty() && !inside_steps && !from_user {
                        SyncTrigger::ProfilerInjected
                    } else {
                        SyncTrigger::DeviceSynchronize
                    }
                }
                BlockingKind::DeviceSync => SyncTrigger::DeviceSynchronize,
                BlockingKind::StreamSync => SyncTrigger::StreamSynchronize,
                BlockingKind::EventSync => SyncTrigger::EventSynchronize,
                BlockingKind::BlockingCopy | BlockingKind::PageableAsyncCopy => {
                    SyncTrigger::BlockingCopyApi
                }
                BlockingKind::AllocatorFree => SyncTrigger::AllocatorFree,
            }
        };
        if copy.is_none()
            && matches!(
                kind,
                BlockingKind::BlockingCopy | BlockingKind::PageableAsyncCopy
            )
        {
            copy = trace
                .launched_by(id)
                .first()
                .and_then(|&g| trace.copy_info(g))
                .or_else(|| trace.copy_info(id))
                .copied();
        }
        calls.push(SyncCall {
            span: id,
            trigger,
            call_site: call_site.map(Box::new),
            copy,
            trigger_op: ops.first().copied(),
            blocked_ns,
            gpu_idle_ns: idle_by_sync.get(&id).copied().unwrap_or(0),
        });
    }
    calls
}

/// The copy launched under `op` (by any API call inside it), if any.
fn copy_under(trace: &Trace, op: SpanId) -> Option<CopyInfo> {
    let o = trace.span(op);
    let lane = trace.lane(o.lane).spans.clone();
    let from = op.0 + 1;
    (from..lane.end)
        .map(SpanId)
        .take_while(|&s| trace.span(s).start_ns < o.end_ns())
        .filter(|&s| trace.span(s).kind.is_api_call())
        .flat_map(|s| trace.launched_by(s).iter().copied())
        .find_map(|g| trace.copy_info(g).copied())
}

impl SyncCall {
    /// The copies the call launched.
    pub fn launched_copies<'t>(&self, trace: &'t Trace) -> impl Iterator<Item = SpanId> + 't {
        trace
            .launched_by(self.span)
            .iter()
            .copied()
            .filter(|&g| trace.span(g).kind == SpanKind::Memcpy)
    }

    /// The normalized API name (`cudaStreamSynchronize`).
    #[must_use]
    pub fn api<'t>(&self, trace: &'t Trace) -> &'t str {
        normalize_api(trace.name(self.span))
    }
}

/// The ops and user ranges enclosing a call, innermost first (steps left out).
fn enclosing_ops(trace: &Trace, id: SpanId) -> impl Iterator<Item = SpanId> + '_ {
    trace.ancestors(id).filter(|&a| {
        matches!(
            trace.span(a).kind,
            SpanKind::CpuOp | SpanKind::UserAnnotation
        ) && !trace.is_step_span(a)
    })
}

/// Groups calls by (trigger, call site), largest GPU idle first, then largest blocked time.
#[must_use]
pub fn group_sync_sites(
    trace: &Trace,
    calls: &[SyncCall],
    steps: usize,
    threads: &ThreadIndex,
) -> Vec<SyncSite> {
    let mut sites: Vec<SyncSite> = Vec::new();
    let mut index: FxHashMap<(SyncTrigger, Option<String>), usize> = FxHashMap::default();
    let mut seen_ops = rustc_hash::FxHashSet::default();
    let mut api_names: FxHashMap<tracelens_model::NameId, &str> = FxHashMap::default();
    for c in calls {
        let site = c
            .call_site
            .as_ref()
            .map(|f| format!("{}:{} {}", f.file, f.line, f.function));
        let key = (c.trigger, site.clone());
        let i = *index.entry(key).or_insert_with(|| {
            sites.push(SyncSite {
                trigger: c.trigger,
                call_site: site,
                apis: Vec::new(),
                op_chain: enclosing_ops(trace, c.span)
                    .take(6)
                    .map(|o| trace.name(o).to_string())
                    .collect(),
                count: 0,
                api_calls: 0,
                per_step: 0.0,
                blocked_ns: 0,
                gpu_idle_ns: 0,
                host_memory: None,
                copies: 0,
                copy_bytes: 0,
                copy_ids: Vec::new(),
                examples: Vec::new(),
                calls: Vec::new(),
                example_ranges: Vec::new(),
                copies_to_host: false,
                one_time: None,
            });
            sites.len() - 1
        });
        let s = &mut sites[i];
        s.api_calls += 1;
        s.calls.push(c.span);
        // Blocking calls under one tensor op (a pageable copy and its stream sync under
        // aten::copy_) are one sync of the user's code; explicit syncs count one by one.
        let op_sync = c.trigger.reads_a_value();
        if !op_sync || c.trigger_op.is_none_or(|op| seen_ops.insert((i, op))) {
            s.count += 1;
        }
        for g in c.launched_copies(trace) {
            s.copies += 1;
            s.copy_bytes += trace.copy_info(g).and_then(|k| k.bytes).unwrap_or(0);
            s.copy_ids.push(g);
        }
        s.blocked_ns += c.blocked_ns;
        s.gpu_idle_ns += c.gpu_idle_ns;
        // Normalized once per API name (there may be millions of calls).
        let api = *api_names
            .entry(trace.span(c.span).name)
            .or_insert_with(|| c.api(trace));
        if !s.apis.iter().any(|a| a == api) {
            s.apis.push(api.to_string());
        }
        if let Some(copy) = c.copy {
            s.copies_to_host |= copy.direction == tracelens_model::CopyDirection::DtoH;
            let host = if matches!(copy.src, MemoryKind::Device) {
                copy.dst
            } else {
                copy.src
            };
            if host != MemoryKind::Device && host != MemoryKind::Unknown {
                s.host_memory = Some(match s.host_memory {
                    Some(MemoryKind::Pageable) => MemoryKind::Pageable,
                    _ => host,
                });
            }
        }
        if s.examples.len() < 5 {
            s.examples.push(c.span);
            s.example_ranges.push(trace.span(c.span).interval());
        }
    }
    for s in &mut sites {
        s.apis.sort();
        s.per_step = s.count as f64 / steps.max(1) as f64;
    }
    mark_one_time(trace, &mut sites, threads.first_calls());
    sites.sort_by(|a, b| {
        b.gpu_idle_ns
            .cmp(&a.gpu_idle_ns)
            .then(b.blocked_ns.cmp(&a.blocked_ns))
            .then(a.trigger.cmp(&b.trigger))
            .then(a.call_site.cmp(&b.call_site))
    });
    sites
}

/// Marks the sites whose every call is one-time work ([`crate::measure::one_time`]).
fn mark_one_time(
    trace: &Trace,
    sites: &mut [SyncSite],
    firsts: &crate::measure::one_time::FirstCalls,
) {
    let candidate =
        |s: &SyncSite| !s.trigger.reads_a_value() && s.trigger != SyncTrigger::ProfilerInjected;
    for s in sites.iter_mut().filter(|s| candidate(s)) {
        let mut why = None;
        for &c in &s.calls {
            match firsts.of_call(trace, c) {
                Some(w) => {
                    why.get_or_insert(w);
                }
                None => {
                    why = None;
                    break;
                }
            }
        }
        s.one_time = why;
    }
}

#[cfg(test)]
mod tests {
    /// One record per host-blocking call, and a trace may hold millions: the call site is
    /// boxed and the launched copies are read from the trace, not stored.
    #[test]
    fn a_sync_call_takes_64_bytes() {
        assert_eq!(std::mem::size_of::<super::SyncCall>(), 64);
    }
}
