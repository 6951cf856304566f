//! Building a [`Trace`]: importers append spans in file order; `finish` sorts, nests and links.

use crate::collect::{collect_devices, collect_steps};
use crate::collective::{CollectiveArgs, CollectiveKey, MAX_COLLECTIVE_RECORDS};
use crate::copy::CopyInfo;
use crate::diagnostics::{Warning, WarningKind};
use crate::inputs::{KernelLaunch, OpDetail};
use crate::lane::{Ident, Lane, LaneId, LaneKey};
use crate::link::{check_external_ids, link_launches, nest};
use crate::metadata::Metadata;
use crate::names::{table_index, NameId, StringTable};
use crate::source::SourceInfo;
use crate::span::{Span, SpanId, SpanIds, SpanKind, NO_DETAIL};
use crate::time::{TimeNs, NS_PER_S};
use crate::trace::Trace;
use rayon::iter::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use rustc_hash::FxHashMap;

/// Durations above this are CUPTI garbage or clock errors, and such spans are dropped.
pub const MAX_SPAN_DUR_NS: TimeNs = 24 * 3600 * NS_PER_S;
/// Timestamps farther than this from zero (about ±126 years of epoch nanoseconds) are clock
/// garbage, and such spans are dropped: any two kept times differ by less than `i64::MAX`.
pub const MAX_ABS_TIME_NS: TimeNs = 4_000_000_000_000_000_000;

/// A span as an importer hands it over.
#[derive(Clone, Copy, Debug)]
pub struct SpanInput {
    /// What it records.
    pub kind: SpanKind,
    /// Lane it runs on.
    pub lane: LaneId,
    /// Start in nanoseconds.
    pub start_ns: TimeNs,
    /// Duration in nanoseconds; negative values are clamped to zero with a warning.
    pub dur_ns: TimeNs,
    /// Interned name.
    pub name: NameId,
    /// Launch correlation id.
    pub correlation: Option<u64>,
    /// Profiler `External id`.
    pub external_id: Option<i64>,
    /// Side-table index (see [`Span::detail`]).
    pub detail: u32,
}

/// One end of a launch flow (`ac2g` and its older names).
#[derive(Clone, Copy, Debug)]
pub struct FlowInput {
    /// Flow id (equals the correlation id).
    pub id: u64,
    /// `true` for the start (`s`, on the API call), `false` for the end (`f`, on the GPU op).
    pub is_start: bool,
    /// Raw pid of the event.
    pub pid: Ident,
    /// Raw tid of the event.
    pub tid: Ident,
    /// Timestamp.
    pub ts_ns: TimeNs,
}

/// Longest name kept (span, thread, process); real kernel names stay under 4 kB.
pub const MAX_NAME_BYTES: usize = 16 << 10;
/// Longest `Call stack` string kept.
pub const MAX_CALL_STACK_BYTES: usize = 256 << 10;

/// Accumulates spans and metadata, then produces a sorted, linked [`Trace`].
#[derive(Default)]
pub struct TraceBuilder {
    names: StringTable,
    lane_keys: Vec<LaneKey>,
    lane_index: FxHashMap<LaneKey, LaneId>,
    /// Each lane's spans (by the `LaneId` it was interned under), in the order added: a lane's
    /// spans arrive nearly in time order, so sorting lane by lane is close to linear.
    lane_spans: Vec<Vec<BuildSpan>>,
    span_count: usize,
    copies: Vec<CopyInfo>,
    op_details: Vec<OpDetail>,
    op_detail_index: FxHashMap<OpDetail, u32>,
    kernel_launches: Vec<KernelLaunch>,
    kernel_launch_index: FxHashMap<KernelLaunch, u32>,
    flows: Vec<FlowInput>,
    /// Spans to link by a flow event: (lane, position in the lane, raw pid, raw tid).
    awaiting_flow: Vec<(LaneId, u32, Ident, Ident)>,
    thread_names: FxHashMap<(Ident, Ident), NameId>,
    process_names: FxHashMap<Ident, NameId>,
    stream_names: FxHashMap<(i64, i64), NameId>,
    step_names: FxHashMap<NameId, i64>,
    negative_durations: u64,
    absurd_durations: u64,
    long_strings: u64,
    duplicates: u64,
    metadata_links_from_flows: u64,
    warnings: Vec<Warning>,
    memory: Vec<crate::memory::MemorySample>,
    cpu_samples: crate::samples::CpuSamples,
    collective_args: Vec<(CollectiveKey, CollectiveArgs)>,
    collective_args_dropped: u64,
    graph: crate::graph::GraphNotes,
    /// Trace metadata; importers fill it directly.
    pub metadata: Metadata,
}

impl TraceBuilder {
    /// An empty builder.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends everything `other` holds after what this builder holds, as if `other`'s
    /// events had been added here in order: names and lanes are re-interned, span, detail and
    /// flow indices shifted. Builders of consecutive chunks of one trace, absorbed in chunk
    /// order, give exactly the builder of the whole trace (what parallel parsing relies on).
    /// Metadata is not merged: importers fill it on the main builder.
    pub fn absorb(&mut self, other: TraceBuilder) {
        let names: Vec<NameId> = (0..other.names.len())
            .map(|i| self.names.intern(other.names.get(NameId::at(i))))
            .collect();
        let ident = |id: Ident| match id {
            Ident::Text(t) => Ident::Text(names[t.0 as usize]),
            num => num,
        };
        let key = |k: LaneKey| match k {
            LaneKey::Cpu { pid, tid } => LaneKey::Cpu {
                pid: ident(pid),
                tid: ident(tid),
            },
            gpu => gpu,
        };
        let lanes: Vec<LaneId> = other.lane_keys.iter().map(|&k| self.lane(key(k))).collect();
        // Where each of `other`'s lanes starts in this builder's lane.
        let lane_bases: Vec<u32> = lanes
            .iter()
            .map(|l| table_index(self.lane_spans[l.0 as usize].len()))
            .collect();
        let copy_base = table_index(self.copies.len());
        // Deduplicated tables are re-entered in order, so indices come out as one pass gives.
        let remap = |n: Option<NameId>| n.map(|n| names[n.0 as usize]);
        let op_map: Vec<u32> = other
            .op_details
            .iter()
            .map(|d| {
                self.store_op_detail(OpDetail {
                    call_stack: remap(d.call_stack),
                    input_dims: remap(d.input_dims),
                    input_types: remap(d.input_types),
                    concrete_inputs: remap(d.concrete_inputs),
                })
            })
            .collect();
        let launch_map: Vec<u32> = other
            .kernel_launches
            .iter()
            .map(|&k| self.add_kernel_launch(k))
            .collect();
        self.span_count += other.span_count;
        for (from, spans) in other.lane_spans.into_iter().enumerate() {
            let lane = lanes[from];
            self.lane_spans[lane.0 as usize].extend(spans.into_iter().map(|mut b| {
                let s = &mut b.span;
                s.name = names[s.name.0 as usize];
                s.lane = lane;
                if s.detail != NO_DETAIL {
                    // CPU ops index op details, kernels launch configurations; copies and copy
                    // API calls index copy details.
                    s.detail = match s.kind {
                        SpanKind::CpuOp | SpanKind::UserAnnotation => op_map[s.detail as usize],
                        SpanKind::Kernel => launch_map[s.detail as usize],
                        _ => s.detail + copy_base,
                    };
                }
                b
            }));
        }
        self.copies.extend(other.copies);
        for (key, args) in other.collective_args {
            self.add_collective_args(key, args);
        }
        self.collective_args_dropped += other.collective_args_dropped;
        self.graph.absorb(other.graph, &names, &lanes);
        self.memory.extend(other.memory.into_iter().map(|mut m| {
            m.lane = lanes[m.lane.0 as usize];
            m.call_stack = remap(m.call_stack);
            m
        }));
        self.flows
            .extend(other.flows.into_iter().map(|f| FlowInput {
                pid: ident(f.pid),
                tid: ident(f.tid),
                ..f
            }));
        self.awaiting_flow
            .extend(other.awaiting_flow.into_iter().map(|(lane, at, pid, tid)| {
                let from = lane.0 as usize;
                (lanes[from], at + lane_bases[from], ident(pid), ident(tid))
            }));
        // First names win, as they would in one pass.
        for ((pid, tid), n) in other.thread_names {
            self.thread_names
                .entry((ident(pid), ident(tid)))
                .or_insert(names[n.0 as usize]);
        }
        for (pid, n) in other.process_names {
            self.process_names
                .entry(ident(pid))
                .or_insert(names[n.0 as usize]);
        }
        for (k, n) in other.stream_names {
            self.stream_names.entry(k).or_insert(names[n.0 as usize]);
        }
        for (n, step) in other.step_names {
            self.step_names.insert(names[n.0 as usize], step);
        }
        self.negative_durations += other.negative_durations;
        self.absurd_durations += other.absurd_durations;
        self.long_strings += other.long_strings;
        self.warnings.extend(other.warnings);
    }

    /// Interns a string, cut to [`MAX_NAME_BYTES`] (counted into a warning).
    pub fn intern(&mut self, text: &str) -> NameId {
        self.intern_capped(text, MAX_NAME_BYTES)
    }

    fn intern_capped(&mut self, text: &str, max_bytes: usize) -> NameId {
        if text.len() <= max_bytes {
            return self.names.intern(text);
        }
        self.long_strings += 1;
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.names.intern(&format!("{}…", &text[..cut]))
    }

    /// The text of an interned string.
    #[must_use]
    pub fn text(&self, id: NameId) -> &str {
        self.names.get(id)
    }

    /// The lane for `key`, created on first use.
    pub fn lane(&mut self, key: LaneKey) -> LaneId {
        if let Some(&id) = self.lane_index.get(&key) {
            return id;
        }
        let id = LaneId::at(self.lane_keys.len());
        self.lane_keys.push(key);
        self.lane_spans.push(Vec::new());
        self.lane_index.insert(key, id);
        id
    }

    /// Stores copy details and returns the index for [`SpanInput::detail`].
    pub fn add_copy(&mut self, info: CopyInfo) -> u32 {
        self.copies.push(info);
        table_index(self.copies.len() - 1)
    }

    /// Stores a `Call stack` string and returns the index for [`SpanInput::detail`].
    pub fn add_call_stack(&mut self, stack: &str) -> u32 {
        self.add_op_detail(Some(stack), None, None, None)
    }

    /// Stores a CPU op's call stack and recorded inputs (the texts of `Call stack`, `Input
    /// Dims`, `Input type`, `Concrete Inputs`) and returns the index for
    /// [`SpanInput::detail`], or [`NO_DETAIL`] when all are absent.
    pub fn add_op_detail(
        &mut self,
        call_stack: Option<&str>,
        input_dims: Option<&str>,
        input_types: Option<&str>,
        concrete_inputs: Option<&str>,
    ) -> u32 {
        let detail = OpDetail {
            call_stack: call_stack.map(|s| self.intern_capped(s, MAX_CALL_STACK_BYTES)),
            input_dims: input_dims.map(|s| self.intern_capped(s, MAX_CALL_STACK_BYTES)),
            input_types: input_types.map(|s| self.intern_capped(s, MAX_CALL_STACK_BYTES)),
            concrete_inputs: concrete_inputs.map(|s| self.intern_capped(s, MAX_CALL_STACK_BYTES)),
        };
        if detail.is_empty() {
            return NO_DETAIL;
        }
        self.store_op_detail(detail)
    }

    fn store_op_detail(&mut self, detail: OpDetail) -> u32 {
        if let Some(&i) = self.op_detail_index.get(&detail) {
            return i;
        }
        let i = table_index(self.op_details.len());
        self.op_details.push(detail);
        self.op_detail_index.insert(detail, i);
        i
    }

    /// Stores a kernel's launch configuration and returns the index for
    /// [`SpanInput::detail`] (one entry per distinct configuration).
    pub fn add_kernel_launch(&mut self, launch: KernelLaunch) -> u32 {
        if let Some(&i) = self.kernel_launch_index.get(&launch) {
            return i;
        }
        let i = table_index(self.kernel_launches.len());
        self.kernel_launches.push(launch);
        self.kernel_launch_index.insert(launch, i);
        i
    }

    /// Files a collective's recorded arguments under the key that finds its kernel
    /// ([`CollectiveKey`]); records that name no collective (no operation, group or message
    /// size) are not kept, and at most [`MAX_COLLECTIVE_RECORDS`].
    pub fn add_collective_args(&mut self, key: CollectiveKey, args: CollectiveArgs) {
        if !args.names_a_collective() {
            return;
        }
        if self.collective_args.len() >= MAX_COLLECTIVE_RECORDS {
            self.collective_args_dropped += 1;
            return;
        }
        self.collective_args.push((key, args));
    }

    /// Files the kernel a launch call names (`args.kernel` of `hipLaunchKernel`), by the
    /// call's correlation id: what a capture trace records of each captured launch
    /// ([`crate::graph`]). Kept only for calls that fed no recorded GPU op.
    pub fn add_launched_kernel(&mut self, correlation: u64, kernel: &str) {
        let kernel = self.intern(kernel);
        self.graph.launched_kernels.push((correlation, kernel));
    }

    /// Files the label PyTorch's CUDA-graph annotations gave a replayed GPU op (its
    /// `module_fqn` or `name`), found again by its lane, start and name ([`crate::graph`]).
    pub fn add_graph_annotation(
        &mut self,
        lane: LaneId,
        start_ns: TimeNs,
        name: NameId,
        label: &str,
    ) {
        let label = self.intern(label);
        self.graph.annotations.push((lane, start_ns, name, label));
    }

    /// Marks `name` as the name of profiler step `number` (PyTorch's `ProfilerStep#N`): the
    /// CPU and GPU ranges of that name become the trace's steps. Importers recognise steps in
    /// their format; the model never matches names.
    pub fn mark_step(&mut self, name: NameId, number: i64) {
        self.step_names.insert(name, number);
    }

    /// Appends a span. Negative durations are clamped to zero and absurd ones (over a day, or
    /// times beyond [`MAX_ABS_TIME_NS`]) dropped, each counted into a warning. Returns whether
    /// it was kept.
    pub fn add_span(&mut self, input: SpanInput) -> bool {
        let mut dur_ns = input.dur_ns;
        if dur_ns < 0 {
            self.negative_durations += 1;
            dur_ns = 0;
        }
        if dur_ns > MAX_SPAN_DUR_NS
            || input.start_ns.unsigned_abs() > MAX_ABS_TIME_NS as u64
            || input.start_ns.checked_add(dur_ns).is_none()
        {
            self.absurd_durations += 1;
            return false;
        }
        self.span_count += 1;
        self.lane_spans[input.lane.0 as usize].push(BuildSpan {
            span: Span {
                start_ns: input.start_ns,
                dur_ns,
                name: input.name,
                lane: input.lane,
                kind: input.kind,
                has_correlation: input.correlation.is_some(),
                detail: input.detail,
            },
            ids: SpanIds::new(input.correlation, input.external_id),
        });
        true
    }

    /// Like [`Self::add_span`] for a span without a correlation id: the link is recovered
    /// from a flow event at the same pid, tid and timestamp, if one exists.
    pub fn add_span_linked_by_flow(&mut self, input: SpanInput, pid: Ident, tid: Ident) -> bool {
        let kept = self.add_span(input);
        if kept {
            let at = table_index(self.lane_spans[input.lane.0 as usize].len() - 1);
            self.awaiting_flow.push((input.lane, at, pid, tid));
        }
        kept
    }

    /// Records one end of a launch flow.
    pub fn add_flow(&mut self, flow: FlowInput) {
        self.flows.push(flow);
    }

    /// Names a CPU thread (from `thread_name` metadata events; the first name wins).
    pub fn name_thread(&mut self, pid: Ident, tid: Ident, name: &str) {
        let id = self.intern(name.trim());
        self.thread_names.entry((pid, tid)).or_insert(id);
    }

    /// Names a process (from `process_name` metadata events; the first name wins).
    pub fn name_process(&mut self, pid: Ident, name: &str) {
        let id = self.intern(name.trim());
        self.process_names.entry(pid).or_insert(id);
    }

    /// Names a GPU stream.
    pub fn name_stream(&mut self, device: i64, stream: i64, name: &str) {
        let id = self.intern(name.trim());
        self.stream_names.entry((device, stream)).or_insert(id);
    }

    /// Adds a warning.
    pub fn warn(&mut self, kind: WarningKind, message: impl Into<String>, count: u64) {
        self.warnings.push(Warning {
            kind,
            message: message.into(),
            count,
        });
    }

    /// Records one allocator sample.
    pub fn add_memory(&mut self, sample: crate::memory::MemorySample) {
        self.memory.push(sample);
    }

    /// Sets the CPU samples (their names interned in this builder; threads by key, which
    /// no sort renumbers).
    pub fn set_cpu_samples(&mut self, samples: crate::samples::CpuSamples) {
        self.cpu_samples = samples;
    }

    /// Number of spans appended so far.
    #[must_use]
    pub fn span_count(&self) -> usize {
        self.span_count
    }

    /// Sorts, nests and links everything into a [`Trace`].
    #[must_use]
    pub fn finish(mut self, source: SourceInfo) -> Trace {
        self.link_by_flows();
        let mut trace = Trace {
            source,
            metadata: std::mem::take(&mut self.metadata),
            ..Trace::default()
        };
        let ids = self.sort_into(&mut trace);
        nest(&mut trace);
        link_launches(&mut trace, &ids);
        self.attach_collective_args(&mut trace, &ids);
        crate::graph_match::attach_notes(std::mem::take(&mut self.graph), &mut trace, |i| {
            ids[i].correlation()
        });
        check_external_ids(&mut trace, &ids);
        trace.step_names = std::mem::take(&mut self.step_names);
        trace.steps = collect_steps(&trace);
        trace.devices = collect_devices(&trace);
        // Only splitting a capture into its ranks links again; any other trace drops the
        // ids here (16 bytes a span).
        if !trace.rank_processes().is_empty() {
            trace.span_ids = ids;
        }
        trace.warnings = std::mem::take(&mut self.warnings);
        self.add_count_warnings(&mut trace);
        trace.redact();
        trace
    }

    /// Gives each collective kernel its recorded arguments: its own (by correlation id), else
    /// those of the CPU op that shares its External id (`record_param_comms`).
    fn attach_collective_args(&mut self, trace: &mut Trace, ids: &[SpanIds]) {
        if self.collective_args.is_empty() {
            return;
        }
        let mut by_key: FxHashMap<CollectiveKey, usize> = FxHashMap::default();
        for (i, (key, _)) in self.collective_args.iter().enumerate() {
            by_key.entry(*key).or_insert(i);
        }
        let mut attached = Vec::new();
        for (i, (s, ids)) in trace.spans.iter().zip(ids).enumerate() {
            if s.kind != SpanKind::Kernel {
                continue;
            }
            let own = ids
                .correlation()
                .and_then(|c| by_key.get(&CollectiveKey::Kernel(c)));
            let op = || {
                ids.external_id()
                    .and_then(|e| by_key.get(&CollectiveKey::Op(e)))
            };
            if let Some(&at) = own.or_else(op) {
                attached.push((SpanId::at(i), at));
            }
        }
        let mut args = std::mem::take(&mut self.collective_args);
        trace.collective_args = attached
            .into_iter()
            .map(|(id, at)| (id, std::mem::take(&mut args[at].1)))
            .filter(|(_, a)| !a.is_empty())
            .collect();
        if self.collective_args_dropped > 0 {
            self.warn(
                WarningKind::LimitReached,
                format!(
                    "{} collective argument records beyond the first {MAX_COLLECTIVE_RECORDS} were not kept",
                    self.collective_args_dropped
                ),
                self.collective_args_dropped,
            );
        }
    }

    fn link_by_flows(&mut self) {
        if self.awaiting_flow.is_empty() {
            return;
        }
        let mut by_place: FxHashMap<(bool, Ident, Ident, TimeNs), u64> = FxHashMap::default();
        for f in &self.flows {
            by_place
                .entry((f.is_start, f.pid, f.tid, f.ts_ns))
                .or_insert(f.id);
        }
        let mut recovered = 0;
        for &(lane, at, pid, tid) in &self.awaiting_flow {
            let BuildSpan { span, ids } = &mut self.lane_spans[lane.0 as usize][at as usize];
            let is_start = !span.kind.is_gpu();
            if let Some(&id) = by_place.get(&(is_start, pid, tid, span.start_ns)) {
                span.has_correlation = true;
                ids.set_correlation(id);
                recovered += 1;
            }
        }
        self.metadata_links_from_flows = recovered;
    }

    /// Sorts the spans into lanes and time order, drops repeated events and moves the tables
    /// into `trace`; returns the spans' ids, in the new order.
    fn sort_into(&mut self, trace: &mut Trace) -> Vec<SpanIds> {
        // Lanes: GPU streams first, then CPU threads, each in key order.
        let mut order: Vec<u32> = (0..self.lane_keys.len()).map(table_index).collect();
        order.sort_by_key(|&i| self.lane_keys[i as usize]);
        let mut remap = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            remap[old as usize] = table_index(new);
        }
        let mut memory = std::mem::take(&mut self.memory);
        for m in &mut memory {
            m.lane = LaneId(remap[m.lane.0 as usize]);
        }
        memory.sort_by_key(|m| m.ts_ns);
        for a in &mut self.graph.annotations {
            a.0 = LaneId(remap[a.0 .0 as usize]);
        }
        trace.memory = memory;
        trace.cpu_samples = std::mem::take(&mut self.cpu_samples);
        // Each lane's spans in the new lane order. A lane's room past its spans goes back
        // first (lanes grow by doubling): the memory budget counts it, and the columns below
        // are allocated whole.
        let mut by_lane: Vec<Vec<BuildSpan>> = order
            .iter()
            .map(|&old| {
                let mut spans = std::mem::take(&mut self.lane_spans[old as usize]);
                spans.shrink_to_fit();
                spans
            })
            .collect();
        // Sorted by time (the key orders every field, so any sort gives this order), the
        // largest lanes handed out first.
        let mut largest_first: Vec<(usize, &mut Vec<BuildSpan>)> =
            by_lane.iter_mut().enumerate().collect();
        largest_first.sort_by_key(|(_, spans)| std::cmp::Reverse(spans.len()));
        let duplicates: usize = largest_first
            .into_par_iter()
            .with_max_len(1)
            .map(|(new, spans)| {
                for s in spans.iter_mut() {
                    s.span.lane = LaneId::at(new);
                }
                sort_lane(spans)
            })
            .sum();
        self.duplicates = duplicates as u64;
        let mut lanes = Vec::with_capacity(order.len());
        let mut begin = 0usize;
        for (&old, spans) in order.iter().zip(&by_lane) {
            let key = self.lane_keys[old as usize];
            let end = begin + spans.len();
            let (name, process_name) = match key {
                LaneKey::Cpu { pid, tid } => (
                    self.thread_names.get(&(pid, tid)).copied(),
                    self.process_names.get(&pid).copied(),
                ),
                LaneKey::Gpu { device, stream } => {
                    (self.stream_names.get(&(device, stream)).copied(), None)
                }
            };
            lanes.push(Lane {
                key,
                name,
                process_name,
                spans: table_index(begin)..table_index(end),
            });
            begin = end;
        }
        let (spans, ids) = into_columns(by_lane);
        trace.lanes = lanes;
        trace.spans = spans;
        trace.names = std::mem::take(&mut self.names);
        trace.copies = std::mem::take(&mut self.copies);
        trace.op_details = std::mem::take(&mut self.op_details);
        trace.kernel_launches = std::mem::take(&mut self.kernel_launches);
        trace.links.links_from_flows = self.metadata_links_from_flows;
        ids
    }

    fn add_count_warnings(&self, trace: &mut Trace) {
        if self.negative_durations > 0 {
            trace.warnings.push(Warning {
                kind: WarningKind::NegativeDuration,
                message: format!(
                    "{} events had a negative duration; clamped to 0",
                    self.negative_durations
                ),
                count: self.negative_durations,
            });
        }
        if self.absurd_durations > 0 {
            trace.warnings.push(Warning {
                kind: WarningKind::AbsurdDuration,
                message: format!(
                    "{} events lasted over a day or overflowed the clock; dropped",
                    self.absurd_durations
                ),
                count: self.absurd_durations,
            });
        }
        if self.duplicates > 0 {
            trace.warnings.push(Warning {
                kind: WarningKind::DuplicateEvent,
                message: format!(
                    "{} events appear more than once (same thread or stream, name, start, duration and ids); each is counted once",
                    self.duplicates
                ),
                count: self.duplicates,
            });
        }
        if self.long_strings > 0 {
            trace.warnings.push(Warning {
                kind: WarningKind::LimitReached,
                message: format!(
                    "{} names longer than {} kB (call stacks {} kB) were cut to that length",
                    self.long_strings,
                    MAX_NAME_BYTES / 1024,
                    MAX_CALL_STACK_BYTES / 1024
                ),
                count: self.long_strings,
            });
        }
        let l = trace.links.clone();
        if l.gpu_ops == 0 {
            trace.warnings.push(Warning {
                kind: WarningKind::NoGpuActivity,
                message: "no GPU activity: the trace holds no kernel, memcpy or memset".into(),
                count: 1,
            });
        }
        let cpu_side_present = trace.spans.iter().any(|s| s.kind.is_api_call());
        if l.gpu_ops > l.gpu_ops_linked && cpu_side_present {
            // Unified-memory migrations have no launch call by nature: they are not missing one.
            let (mut with_id, mut without_id) = (0u64, 0u64);
            for (i, s) in trace.spans.iter().enumerate() {
                if trace.is_migration(SpanId::at(i)) {
                    *if s.has_correlation() {
                        &mut with_id
                    } else {
                        &mut without_id
                    } += 1;
                }
            }
            let missing = l.gpu_ops_launch_missing.saturating_sub(with_id);
            let uncorrelated = l.gpu_ops_without_correlation.saturating_sub(without_id);
            let unlinked = missing + uncorrelated;
            let ops = l.gpu_ops - with_id - without_id;
            if unlinked > 0 {
                trace.warnings.push(Warning {
                    kind: WarningKind::UnlinkedGpuOp,
                    message: format!(
                        "{unlinked} of {ops} GPU ops have no launch call in the trace ({missing} launch missing, {uncorrelated} without correlation id); their cause cannot be attributed"
                    ),
                    count: unlinked,
                });
            }
        }
        crate::graph_match::refresh_warning(trace);
        // A few mismatches happen in every era (ops starting on the same microsecond); only a
        // majority points at the 2022-04…2024-02 bug.
        if l.external_id_mismatched * 2 > l.external_id_checked {
            trace.warnings.push(Warning {
                kind: WarningKind::ExternalIdMismatch,
                message: format!(
                    "{} of {} API calls carry an External id that differs from their enclosing op's (Kineto 2022-04…2024-02 wrote correlation ids there); ops are attributed by time containment",
                    l.external_id_mismatched, l.external_id_checked
                ),
                count: l.external_id_mismatched,
            });
        }
    }
}

/// A span and its ids, as the builder holds them until `finish` sorts and links.
#[derive(Clone, Copy, Debug)]
struct BuildSpan {
    span: Span,
    ids: SpanIds,
}

/// Sorts one lane's spans by start, longer first, then kind, name, ids and detail (every
/// field, so the order does not depend on the sort or on the order they were added), and drops
/// repeated events: the same event written twice (a trace concatenated or re-exported with
/// itself) is counted once, else its time counts twice and shares pass 100 %. Returns how many
/// were dropped. The run-adaptive stable sort merges the few sorted runs a lane arrives in
/// (one per table or chunk) in close to linear time.
fn sort_lane(spans: &mut Vec<BuildSpan>) -> usize {
    spans.sort_by(|a, b| {
        let (sa, sb) = (&a.span, &b.span);
        (
            sa.start_ns,
            std::cmp::Reverse(sa.dur_ns),
            sa.kind,
            sa.name,
            a.ids,
            sa.detail,
        )
            .cmp(&(
                sb.start_ns,
                std::cmp::Reverse(sb.dur_ns),
                sb.kind,
                sb.name,
                b.ids,
                sb.detail,
            ))
    });
    let before = spans.len();
    spans.dedup_by(|later, kept| {
        let (a, b) = (&later.span, &kept.span);
        a.dur_ns > 0
            && (a.start_ns, a.dur_ns, a.kind, a.name) == (b.start_ns, b.dur_ns, b.kind, b.name)
            && later.ids == kept.ids
    });
    before - spans.len()
}

/// Splits the lanes' sorted spans, in lane order, into the span column and the ids column
/// without holding both copies at once: elements move from the back in blocks and each lane is
/// shrunk after each block, so the columns grow as the lanes shrink.
fn into_columns(mut by_lane: Vec<Vec<BuildSpan>>) -> (Vec<Span>, Vec<SpanIds>) {
    const BLOCK: usize = 1 << 16;
    let total = by_lane.iter().map(Vec::len).sum();
    let mut span_column = Vec::with_capacity(total);
    let mut id_column = Vec::with_capacity(total);
    while let Some(mut spans) = by_lane.pop() {
        while !spans.is_empty() {
            let block = &spans[spans.len().saturating_sub(BLOCK)..];
            // The two columns fill on two threads (their pages are new: faulting them in is
            // much of the cost).
            rayon::join(
                || span_column.extend(block.iter().rev().map(|b| b.span)),
                || id_column.extend(block.iter().rev().map(|b| b.ids)),
            );
            spans.truncate(spans.len() - block.len());
            spans.shrink_to_fit();
        }
    }
    span_column.reverse();
    id_column.reverse();
    (span_column, id_column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::SpanId;
    use crate::span::NO_DETAIL;
    use crate::time::Interval;

    fn cpu(b: &mut TraceBuilder) -> LaneId {
        b.lane(LaneKey::Cpu {
            pid: Ident::Num(1),
            tid: Ident::Num(1),
        })
    }

    fn add(
        b: &mut TraceBuilder,
        lane: LaneId,
        kind: SpanKind,
        name: &str,
        start: i64,
        dur: i64,
        corr: Option<u64>,
    ) {
        let name = b.intern(name);
        b.add_span(SpanInput {
            kind,
            lane,
            start_ns: start,
            dur_ns: dur,
            name,
            correlation: corr,
            external_id: None,
            detail: NO_DETAIL,
        });
    }

    #[test]
    fn nests_links_and_fans_out_graph_launches() {
        let mut b = TraceBuilder::new();
        let c = cpu(&mut b);
        let g = b.lane(LaneKey::Gpu {
            device: 0,
            stream: 7,
        });
        add(&mut b, g, SpanKind::Kernel, "k1", 1_000, 100, Some(5));
        add(
            &mut b,
            c,
            SpanKind::Runtime,
            "cudaLaunchKernel",
            120,
            30,
            Some(5),
        );
        add(&mut b, c, SpanKind::CpuOp, "aten::mm", 100, 100, None);
        add(
            &mut b,
            c,
            SpanKind::Runtime,
            "cudaGraphLaunch",
            300,
            10,
            Some(9),
        );
        add(&mut b, g, SpanKind::Kernel, "g1", 2_000, 10, Some(9));
        add(&mut b, g, SpanKind::Kernel, "g2", 2_010, 10, Some(9));
        add(&mut b, g, SpanKind::Kernel, "g3", 2_020, 10, Some(9));
        add(&mut b, g, SpanKind::Kernel, "orphan", 3_000, 10, Some(77));
        let t = b.finish(SourceInfo::default());
        assert!(t.lanes[0].key.is_gpu(), "GPU lanes sort first");
        let launch = t.spans_of_kind(SpanKind::Runtime).next().unwrap();
        assert_eq!(t.name(launch), "cudaLaunchKernel");
        assert_eq!(t.name(t.parent(launch).unwrap()), "aten::mm");
        let k1 = (0..t.spans.len())
            .map(SpanId::at)
            .find(|&s| t.name(s) == "k1")
            .unwrap();
        assert_eq!(t.launch_of(k1), Some(launch));
        assert_eq!(t.launched_by(launch), [k1]);
        assert!(t.launched_by(t.parent(launch).unwrap()).is_empty());
        let graph = (0..t.spans.len())
            .map(SpanId::at)
            .find(|&s| t.name(s) == "cudaGraphLaunch")
            .unwrap();
        let fed: Vec<&str> = t.launched_by(graph).iter().map(|&k| t.name(k)).collect();
        assert_eq!(fed, ["g1", "g2", "g3"]);
        assert_eq!(t.links.graph_launches, 1);
        assert_eq!(t.links.graph_launched_ops, 3);
        assert_eq!(t.links.gpu_ops, 5);
        assert_eq!(t.links.gpu_ops_linked, 4);
        assert_eq!(t.links.gpu_ops_launch_missing, 1);
        assert!(t
            .warnings
            .iter()
            .any(|w| w.kind == WarningKind::UnlinkedGpuOp));
        assert!(t
            .warnings
            .iter()
            .any(|w| w.kind == WarningKind::GraphLaunches));
    }

    #[test]
    fn clamps_negative_and_drops_absurd_durations() {
        let mut b = TraceBuilder::new();
        let c = cpu(&mut b);
        add(&mut b, c, SpanKind::CpuOp, "neg", 10, -5, None);
        add(
            &mut b,
            c,
            SpanKind::CpuOp,
            "huge",
            10,
            MAX_SPAN_DUR_NS + 1,
            None,
        );
        let t = b.finish(SourceInfo::default());
        assert_eq!(t.spans.len(), 1);
        assert_eq!(t.spans[0].dur_ns, 0);
        let kinds: Vec<_> = t.warnings.iter().map(|w| w.kind).collect();
        assert!(kinds.contains(&WarningKind::NegativeDuration));
        assert!(kinds.contains(&WarningKind::AbsurdDuration));
        assert!(kinds.contains(&WarningKind::NoGpuActivity));
    }

    #[test]
    fn child_ending_slightly_after_parent_still_nests() {
        let mut b = TraceBuilder::new();
        let c = cpu(&mut b);
        add(&mut b, c, SpanKind::CpuOp, "parent", 0, 1_000, None);
        add(&mut b, c, SpanKind::CpuOp, "child", 500, 900, None);
        add(&mut b, c, SpanKind::CpuOp, "next", 1_000, 10, None);
        let t = b.finish(SourceInfo::default());
        let find = |n: &str| {
            (0..t.spans.len())
                .map(SpanId::at)
                .find(|&s| t.name(s) == n)
                .unwrap()
        };
        assert_eq!(t.parent(find("child")), Some(find("parent")));
        assert_eq!(t.parent(find("next")), None);
    }

    #[test]
    fn steps_collect_cpu_and_gpu_sides() {
        let mut b = TraceBuilder::new();
        let c = cpu(&mut b);
        let g = b.lane(LaneKey::Gpu {
            device: 0,
            stream: 7,
        });
        add(
            &mut b,
            c,
            SpanKind::UserAnnotation,
            "ProfilerStep#3",
            0,
            100,
            None,
        );
        add(
            &mut b,
            g,
            SpanKind::GpuUserAnnotation,
            "ProfilerStep#3",
            50,
            100,
            None,
        );
        add(&mut b, c, SpanKind::CpuOp, "ProfilerStep#4", 100, 100, None);
        add(&mut b, c, SpanKind::CpuOp, "ProfilerStep#5", 300, 100, None);
        // The importer marks step names; an unmarked name is an ordinary range.
        for (name, n) in [("ProfilerStep#3", 3), ("ProfilerStep#4", 4)] {
            let id = b.intern(name);
            b.mark_step(id, n);
        }
        let t = b.finish(SourceInfo::default());
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[0].gpu, Some(Interval::new(50, 150)));
        assert_eq!(t.steps[1].cpu, Some(Interval::new(100, 200)));
    }

    #[test]
    fn flows_recover_missing_correlations() {
        let mut b = TraceBuilder::new();
        let c = cpu(&mut b);
        let g = b.lane(LaneKey::Gpu {
            device: 0,
            stream: 7,
        });
        let rt = b.intern("cudaLaunchKernel");
        let k = b.intern("k");
        let mk = |kind, lane, start, name| SpanInput {
            kind,
            lane,
            start_ns: start,
            dur_ns: 5,
            name,
            correlation: None,
            external_id: None,
            detail: NO_DETAIL,
        };
        b.add_span_linked_by_flow(
            mk(SpanKind::Runtime, c, 10, rt),
            Ident::Num(1),
            Ident::Num(1),
        );
        b.add_span_linked_by_flow(mk(SpanKind::Kernel, g, 50, k), Ident::Num(0), Ident::Num(7));
        b.add_flow(FlowInput {
            id: 42,
            is_start: true,
            pid: Ident::Num(1),
            tid: Ident::Num(1),
            ts_ns: 10,
        });
        b.add_flow(FlowInput {
            id: 42,
            is_start: false,
            pid: Ident::Num(0),
            tid: Ident::Num(7),
            ts_ns: 50,
        });
        let t = b.finish(SourceInfo::default());
        assert_eq!(t.links.gpu_ops_linked, 1);
        assert_eq!(t.links.links_from_flows, 2);
    }

    /// Spans sorted lane by lane: the trace does not depend on the order they arrive in, nor
    /// on how they are split over builders absorbed in order (a flow awaiting its link in a
    /// later chunk included); ties on time are ordered by kind, then name (by first use), and
    /// a repeated event is kept once.
    #[test]
    fn arrival_order_and_chunks_do_not_change_the_trace() {
        // (lane 0 = CPU, 1 = GPU, kind, name, start, dur, correlation, detail)
        #[allow(clippy::type_complexity)]
        let events: Vec<(usize, SpanKind, &str, i64, i64, Option<u64>, u32)> = vec![
            (0, SpanKind::CpuOp, "step", 0, 500, None, NO_DETAIL),
            (
                0,
                SpanKind::Runtime,
                "cudaLaunchKernel",
                10,
                5,
                Some(1),
                NO_DETAIL,
            ),
            (
                0,
                SpanKind::Runtime,
                "cudaLaunchKernel",
                30,
                5,
                Some(2),
                NO_DETAIL,
            ),
            (0, SpanKind::CpuOp, "aten::mm", 30, 5, None, NO_DETAIL),
            // The same event twice: kept once.
            (0, SpanKind::CpuOp, "aten::mm", 30, 5, None, NO_DETAIL),
            (0, SpanKind::CpuOp, "aten::add", 30, 5, None, NO_DETAIL),
            (1, SpanKind::Kernel, "k", 50, 10, Some(1), NO_DETAIL),
            (1, SpanKind::Kernel, "k", 70, 10, Some(2), NO_DETAIL),
            (1, SpanKind::Kernel, "j", 70, 10, None, NO_DETAIL),
        ];
        let build = |order: &[usize], chunk: usize| {
            let mut whole = TraceBuilder::new();
            for part in order.chunks(chunk) {
                let mut b = TraceBuilder::new();
                let lanes = [
                    cpu(&mut b),
                    b.lane(LaneKey::Gpu {
                        device: 0,
                        stream: 7,
                    }),
                ];
                // Names interned in one order, so ties on time order alike whatever arrives
                // first (name ids follow first use).
                for e in &events {
                    b.intern(e.2);
                }
                for &i in part {
                    let (lane, kind, name, start, dur, corr, detail) = events[i];
                    let name = b.intern(name);
                    let input = SpanInput {
                        kind,
                        lane: lanes[lane],
                        start_ns: start,
                        dur_ns: dur,
                        name,
                        correlation: corr,
                        external_id: None,
                        detail,
                    };
                    if corr == Some(2) && kind == SpanKind::Kernel {
                        // Its correlation arrives by flow only.
                        let input = SpanInput {
                            correlation: None,
                            ..input
                        };
                        b.add_span_linked_by_flow(input, Ident::Num(0), Ident::Num(7));
                        b.add_flow(FlowInput {
                            id: 2,
                            is_start: false,
                            pid: Ident::Num(0),
                            tid: Ident::Num(7),
                            ts_ns: start,
                        });
                    } else {
                        b.add_span(input);
                    }
                }
                whole.absorb(b);
            }
            let t = whole.finish(SourceInfo::default());
            let named: Vec<String> = t
                .spans
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    format!(
                        "{}@{}+{}:{}",
                        t.name(SpanId::at(i)),
                        s.start_ns,
                        s.dur_ns,
                        s.detail
                    )
                })
                .collect();
            (named, t.launch.clone(), t.links.gpu_ops_linked)
        };
        let forward: Vec<usize> = (0..events.len()).collect();
        let backward: Vec<usize> = forward.iter().rev().copied().collect();
        let reference = build(&forward, events.len());
        assert_eq!(reference.2, 2, "both kernels linked");
        assert_eq!(
            reference.0,
            [
                "k@50+10:4294967295",
                "k@70+10:4294967295",
                "j@70+10:4294967295",
                "step@0+500:4294967295",
                "cudaLaunchKernel@10+5:4294967295",
                "aten::mm@30+5:4294967295",
                "aten::add@30+5:4294967295",
                "cudaLaunchKernel@30+5:4294967295",
            ]
            .map(String::from)
        );
        for chunk in 1..events.len() {
            assert_eq!(build(&forward, chunk), reference, "chunks of {chunk}");
            assert_eq!(
                build(&backward, chunk),
                reference,
                "backward, chunks of {chunk}"
            );
        }
    }
}
