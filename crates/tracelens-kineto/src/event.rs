//! One trace event → the model: category to span kind, pid/tid to lane, args to links.

use std::collections::BTreeMap;
use tracelens_chrome_json::json::{
    decode_str, has_fraction, micros_to_ns, text_of, to_i64, to_u64, Fields, Value,
};
use tracelens_chrome_json::scan::{value_extent, Extent};
use tracelens_chrome_json::EventSink;
use tracelens_model::{
    profiler_step_number, CollectiveArgs, CollectiveKey, CopyDirection, CopyInfo, FlowInput, Ident,
    KernelLaunch, LaneKey, MemoryDevice, MemoryKind, MemorySample, SpanInput, SpanKind,
    TraceBuilder, NO_DETAIL,
};

/// Counts gathered while reading events; they describe the file, not the timeline.
#[derive(Debug, Default)]
pub struct EventStats {
    /// Every array element seen.
    pub events: u64,
    /// Elements that became spans.
    pub kept: u64,
    /// Elements that could not be read.
    pub malformed: u64,
    /// Decoded byte offset of the first malformed element.
    pub first_malformed_at: Option<u64>,
    /// Elements that carried a `ph` field.
    pub with_phase: u64,
    /// Per phase.
    pub by_phase: BTreeMap<String, u64>,
    /// Categories read but not kept, per category.
    pub ignored_categories: BTreeMap<String, u64>,
    /// Events in 2021-era capitalised categories (`Operator`, `Runtime`, `Kernel`).
    pub old_categories: u64,
    /// Events in modern categories (`cpu_op`, `cuda_runtime`, `kernel`).
    pub modern_categories: u64,
    /// Timestamps written with a fraction (ns-precision float µs).
    pub ts_with_fraction: u64,
    /// Timestamps written as integers.
    pub ts_integer: u64,
    /// Events of category `tracelens`: tracks a `tracelens annotate` run added, skipped.
    pub annotations: u64,
    /// Events whose phase or category was counted as `(other)`: past
    /// [`MAX_DISTINCT_LABELS`] distinct ones.
    pub labels_dropped: u64,
}

impl EventStats {
    /// Adds the counts of a later chunk of the same trace.
    pub fn absorb(&mut self, other: EventStats) {
        self.events += other.events;
        self.kept += other.kept;
        self.malformed += other.malformed;
        if self.first_malformed_at.is_none() {
            self.first_malformed_at = other.first_malformed_at;
        }
        self.with_phase += other.with_phase;
        for (map, theirs) in [
            (&mut self.by_phase, other.by_phase),
            (&mut self.ignored_categories, other.ignored_categories),
        ] {
            for (k, n) in theirs {
                if map.contains_key(&k) || map.len() < MAX_DISTINCT_LABELS || k == "(other)" {
                    *map.entry(k).or_insert(0) += n;
                } else {
                    self.labels_dropped += n;
                    *map.entry("(other)".to_string()).or_insert(0) += n;
                }
            }
        }
        self.old_categories += other.old_categories;
        self.modern_categories += other.modern_categories;
        self.ts_with_fraction += other.ts_with_fraction;
        self.ts_integer += other.ts_integer;
        self.annotations += other.annotations;
        self.labels_dropped += other.labels_dropped;
    }
}

/// Distinct phases and ignored categories counted by name (a real trace has about ten).
pub const MAX_DISTINCT_LABELS: usize = 64;
/// Longest phase or category name counted, in characters.
const MAX_LABEL_CHARS: usize = 64;

/// Counts one occurrence of `label` in `map`, capped in distinct labels and their length.
fn count_label(map: &mut BTreeMap<String, u64>, label: &str, dropped: &mut u64) {
    if let Some(n) = map.get_mut(label) {
        *n += 1;
    } else if map.len() < MAX_DISTINCT_LABELS && label.chars().count() <= MAX_LABEL_CHARS {
        map.insert(label.to_string(), 1);
    } else {
        *dropped += 1;
        *map.entry("(other)".to_string()).or_insert(0) += 1;
    }
}

/// Feeds events into a [`TraceBuilder`].
#[derive(Default)]
pub struct EventReader {
    /// The model being built.
    pub builder: TraceBuilder,
    /// What was seen.
    pub stats: EventStats,
}

#[derive(Default)]
struct RawEvent<'a> {
    ph: &'a [u8],
    cat: &'a [u8],
    name: &'a [u8],
    pid: &'a [u8],
    tid: &'a [u8],
    ts: &'a [u8],
    dur: &'a [u8],
    id: &'a [u8],
    args: &'a [u8],
    /// The fields read from `args`.
    arg_fields: Args<'a>,
}

impl<'a> RawEvent<'a> {
    /// The fields an event is read from, walking `fields` to its end.
    fn collect(fields: &mut Fields<'a>) -> RawEvent<'a> {
        let mut e = RawEvent::default();
        while let Some(k) = fields.key() {
            let v = if k == b"args" {
                // Read as it is walked; an unusual one is measured, then read again.
                if !e.args.is_empty() {
                    e.arg_fields = Args::default();
                }
                let Some((v, whole)) = fields.object_value(|f| e.arg_fields.fill(f)) else {
                    // Cut off: what the walk took is dropped, as if never read.
                    e.arg_fields = read_args(e.args);
                    break;
                };
                if !whole {
                    e.arg_fields = read_args(v);
                }
                v
            } else {
                let Some(v) = fields.value() else {
                    break;
                };
                v
            };
            match k {
                b"ph" => e.ph = v,
                b"cat" => e.cat = v,
                b"name" => e.name = v,
                b"pid" => e.pid = v,
                b"tid" => e.tid = v,
                b"ts" => e.ts = v,
                b"dur" => e.dur = v,
                b"id" => e.id = v,
                b"args" => e.args = v,
                _ => {}
            }
        }
        e
    }
}

#[derive(Default)]
struct Args<'a> {
    correlation: Option<&'a [u8]>,
    external_id: Option<&'a [u8]>,
    device: Option<&'a [u8]>,
    stream: Option<&'a [u8]>,
    bytes: Option<&'a [u8]>,
    kind: Option<&'a [u8]>,
    copy_kind: Option<&'a [u8]>,
    src_kind: Option<&'a [u8]>,
    dst_kind: Option<&'a [u8]>,
    call_stack: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    input_dims: Option<&'a [u8]>,
    input_types: Option<&'a [u8]>,
    concrete_inputs: Option<&'a [u8]>,
    grid: Option<&'a [u8]>,
    block: Option<&'a [u8]>,
    registers: Option<&'a [u8]>,
    shared_memory: Option<&'a [u8]>,
    occupancy: Option<&'a [u8]>,
    /// The kernel a launch call launched (`hipLaunchKernel`'s `kernel`).
    kernel: Option<&'a [u8]>,
    /// A replayed graph node's id (`graph node id`), which PyTorch's graph annotations key.
    graph_node: Option<&'a [u8]>,
    /// A graph annotation's module path (`module_fqn`).
    module_fqn: Option<&'a [u8]>,
    collective: CollectiveFields<'a>,
}

/// The NCCL arguments of a collective kernel or `record_param_comms` op, raw.
#[derive(Default)]
struct CollectiveFields<'a> {
    op: Option<&'a [u8]>,
    group: Option<&'a [u8]>,
    seq: Option<&'a [u8]>,
    in_elems: Option<&'a [u8]>,
    out_elems: Option<&'a [u8]>,
    dtype: Option<&'a [u8]>,
    group_size: Option<&'a [u8]>,
}

/// The longest collective argument text kept.
const MAX_COLLECTIVE_TEXT: usize = 256;

impl CollectiveFields<'_> {
    /// Whether the fields name a collective ([`CollectiveArgs::names_a_collective`], asked
    /// of the raw fields so that no record is built for the other events).
    fn names_a_collective(&self) -> bool {
        [self.op, self.group, self.in_elems, self.out_elems]
            .iter()
            .any(Option::is_some)
    }

    fn args(&self) -> CollectiveArgs {
        let text = |v: Option<&[u8]>| -> Option<Box<str>> {
            let t = text_of(v?);
            let t = t.trim();
            (!t.is_empty()).then(|| {
                let mut cut = t.len().min(MAX_COLLECTIVE_TEXT);
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                t[..cut].into()
            })
        };
        CollectiveArgs {
            op: text(self.op),
            group: text(self.group),
            seq: self.seq.and_then(to_i64),
            in_elems: self.in_elems.and_then(to_u64),
            out_elems: self.out_elems.and_then(to_u64),
            dtype: text(self.dtype),
            group_size: self.group_size.and_then(to_i64),
        }
    }
}

/// The fields of a raw `args` value; none when it is no object.
fn read_args(raw: &[u8]) -> Args<'_> {
    if raw.first() != Some(&b'{') {
        return Args::default();
    }
    let mut a = Args::default();
    a.fill(&mut Fields::new(raw));
    a
}

impl<'a> Args<'a> {
    /// Takes the fields of the `args` object that `fields` walks, walked to its end.
    fn fill(&mut self, fields: &mut Fields<'a>) {
        let a = self;
        for (k, v) in fields.by_ref() {
            let slot = match k {
                b"correlation" => &mut a.correlation,
                b"External id" | b"external id" => &mut a.external_id,
                b"device" => &mut a.device,
                b"stream" => &mut a.stream,
                b"bytes" => &mut a.bytes,
                b"kind" => &mut a.kind,
                b"copy kind" => &mut a.copy_kind,
                b"src kind" => &mut a.src_kind,
                b"dst kind" => &mut a.dst_kind,
                b"Call stack" => &mut a.call_stack,
                b"name" => &mut a.name,
                b"Input Dims" => &mut a.input_dims,
                b"Input type" => &mut a.input_types,
                b"Concrete Inputs" => &mut a.concrete_inputs,
                b"grid" => &mut a.grid,
                b"block" => &mut a.block,
                b"registers per thread" => &mut a.registers,
                b"shared memory" => &mut a.shared_memory,
                b"est. achieved occupancy %" => &mut a.occupancy,
                b"kernel" => &mut a.kernel,
                b"graph node id" => &mut a.graph_node,
                b"module_fqn" => &mut a.module_fqn,
                b"Collective name" => &mut a.collective.op,
                b"Process Group Name" | b"Process Group ID" | b"pg_id" => &mut a.collective.group,
                // Kineto's collective sequence number; `Sequence number` is autograd's, on every op.
                b"Seq" | b"seq" => &mut a.collective.seq,
                b"In msg nelems" => &mut a.collective.in_elems,
                b"Out msg nelems" => &mut a.collective.out_elems,
                b"dtype" => &mut a.collective.dtype,
                b"Group size" => &mut a.collective.group_size,
                _ => continue,
            };
            *slot = Some(v);
        }
    }
}

/// A kernel's launch configuration from its `grid`, `block`, `registers per thread`, `shared
/// memory` and `est. achieved occupancy %` arguments; `None` without grid and block.
fn kernel_launch(args: &Args) -> Option<KernelLaunch> {
    // `[564, 1, 1]`, read in place: this runs once per kernel event.
    let dims = |v: Option<&[u8]>| -> Option<[u32; 3]> {
        let body = v?.strip_prefix(b"[")?.strip_suffix(b"]")?;
        let mut out = [1u32; 3];
        for (o, d) in out.iter_mut().zip(body.split(|&b| b == b',')) {
            *o = std::str::from_utf8(d).ok()?.trim().parse().ok()?;
        }
        Some(out)
    };
    let small = |v: Option<&[u8]>| v.and_then(to_u64).and_then(|x| u32::try_from(x).ok());
    Some(KernelLaunch {
        grid: dims(args.grid)?,
        block: dims(args.block)?,
        registers_per_thread: small(args.registers).unwrap_or(0),
        shared_memory_bytes: small(args.shared_memory).unwrap_or(0),
        est_occupancy_percent: args
            .occupancy
            .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<f64>().ok())
            .filter(|x| (0.0..=100.0).contains(x))
            // The nearest whole percent, without a float-to-int cast.
            .and_then(|x| (0u8..=100).find(|&v| f64::from(v) + 0.5 > x)),
    })
}

/// The span kind of a `ph: X` category (case-insensitive, old and new names), and whether
/// the name is a 2021-era one.
#[must_use]
pub fn kind_of_category(cat: &str) -> Option<(SpanKind, bool)> {
    let old = cat.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && matches!(
            cat,
            "Operator" | "Runtime" | "Kernel" | "Memcpy" | "Memset" | "Python"
        );
    // Matched without lowercasing: this runs once per event.
    const CATEGORIES: [(&str, SpanKind); 15] = [
        ("cpu_op", SpanKind::CpuOp),
        ("operator", SpanKind::CpuOp),
        ("user_annotation", SpanKind::UserAnnotation),
        ("gpu_user_annotation", SpanKind::GpuUserAnnotation),
        ("python_function", SpanKind::PythonFunction),
        ("python", SpanKind::PythonFunction),
        ("cuda_runtime", SpanKind::Runtime),
        ("runtime", SpanKind::Runtime),
        ("cuda_driver", SpanKind::Driver),
        ("kernel", SpanKind::Kernel),
        ("gpu_memcpy", SpanKind::Memcpy),
        ("memcpy", SpanKind::Memcpy),
        ("gpu_memset", SpanKind::Memset),
        ("memset", SpanKind::Memset),
        ("cuda_sync", SpanKind::CudaSync),
    ];
    let kind = CATEGORIES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(cat))
        .map(|&(_, k)| k)?;
    Some((kind, old))
}

/// Whether a flow category is a CPU→GPU launch flow.
fn is_launch_flow(cat: &str) -> bool {
    [
        "ac2g",
        "async",
        "async_gpu",
        "async_cpu_to_gpu",
        "cpu_to_cuda",
    ]
    .iter()
    .any(|name| name.eq_ignore_ascii_case(cat))
}

/// The Kineto dialect of Chrome-trace JSON: events into the model, top-level keys into its
/// metadata.
impl EventSink for EventReader {
    fn event(&mut self, raw: &[u8], offset: u64) {
        self.read(raw, offset);
    }

    fn next_event(&mut self, bytes: &[u8], offset: u64) -> usize {
        self.read_next(bytes, offset)
    }

    fn top_level(&mut self, key: &str, value: &Value) {
        crate::metadata::read_top_level(key, value, &mut self.builder.metadata);
    }

    fn absorb(&mut self, later: Self) {
        self.builder.absorb(later.builder);
        self.stats.absorb(later.stats);
    }
}

impl EventReader {
    /// Reads one array element found at decoded byte `offset`.
    pub fn read(&mut self, raw: &[u8], offset: u64) {
        let mut fields = Fields::new(raw);
        let e = RawEvent::collect(&mut fields);
        self.read_event(&e, fields.malformed, offset);
    }

    /// Reads the element at the start of `bytes` (more elements may follow it) and returns
    /// its length: one pass over a well-formed object; anything else is measured first and
    /// then read as [`EventReader::read`] reads it, so the result is the same.
    pub fn read_next(&mut self, bytes: &[u8], offset: u64) -> usize {
        let mut fields = Fields::new(bytes);
        let e = RawEvent::collect(&mut fields);
        if let (false, false, Some(end)) = (fields.malformed, fields.irregular, fields.end) {
            self.read_event(&e, false, offset);
            return end;
        }
        let n = match value_extent(bytes, true) {
            Extent::Complete(n) => n,
            Extent::Incomplete => bytes.len(),
        };
        self.read(&bytes[..n], offset);
        n
    }

    fn read_event(&mut self, e: &RawEvent, malformed: bool, offset: u64) {
        self.stats.events += 1;
        if malformed && e.ph.is_empty() {
            self.malformed(offset);
            return;
        }
        // Tracks that `tracelens annotate` added: ours, never analysed again.
        if e.cat == b"\"tracelens\"" {
            self.stats.annotations += 1;
            return;
        }
        let ph = text_of(e.ph);
        if ph.is_empty() {
            return;
        }
        self.stats.with_phase += 1;
        let st = &mut self.stats;
        count_label(&mut st.by_phase, &ph, &mut st.labels_dropped);
        let ok = match ph.as_ref() {
            "X" => self.read_complete(e),
            "M" => {
                self.read_metadata(e);
                true
            }
            "s" | "f" => self.read_flow(e, ph.as_ref() == "s"),
            "i" | "I" => self.read_instant(e),
            _ => true,
        };
        if !ok || malformed {
            self.malformed(offset);
        }
    }

    /// An instant: the allocator's `[memory]` samples are kept, others are not used.
    fn read_instant(&mut self, e: &RawEvent) -> bool {
        if e.name != b"\"[memory]\"" {
            return true;
        }
        let Some(ts_ns) = micros_to_ns(e.ts) else {
            return false;
        };
        let mut device_type = None;
        let mut device_id = None;
        let mut bytes = None;
        let mut allocated = None;
        let mut reserved = None;
        let mut addr = None;
        if e.args.first() == Some(&b'{') {
            for (k, v) in Fields::new(e.args) {
                let slot = match k {
                    b"Device Type" => &mut device_type,
                    b"Device Id" => &mut device_id,
                    b"Bytes" => &mut bytes,
                    b"Total Allocated" => &mut allocated,
                    b"Total Reserved" => &mut reserved,
                    b"Addr" => &mut addr,
                    _ => continue,
                };
                *slot = to_i64(v);
            }
        }
        let Some(bytes) = bytes else {
            return false;
        };
        let pid = self.ident(e.pid);
        let tid = self.ident(e.tid);
        let lane = self.builder.lane(LaneKey::Cpu { pid, tid });
        self.builder.add_memory(MemorySample {
            ts_ns,
            lane,
            device: MemoryDevice::from_kineto(device_type.unwrap_or(0), device_id.unwrap_or(-1)),
            bytes,
            addr: addr.and_then(|a| u64::try_from(a).ok()),
            call_stack: None,
            total_allocated: allocated,
            total_reserved: reserved,
        });
        true
    }

    fn malformed(&mut self, offset: u64) {
        self.stats.malformed += 1;
        self.stats.first_malformed_at.get_or_insert(offset);
    }

    fn ident(&mut self, raw: &[u8]) -> Ident {
        if let Some(n) = to_i64(raw) {
            return Ident::Num(n);
        }
        let text = text_of(raw);
        Ident::Text(self.builder.intern(&text))
    }

    fn ignore_category(&mut self, cat: &str) {
        let cat = if cat.is_empty() { "(none)" } else { cat };
        let st = &mut self.stats;
        count_label(&mut st.ignored_categories, cat, &mut st.labels_dropped);
    }

    /// A duration event. Returns `false` when it is malformed.
    fn read_complete(&mut self, e: &RawEvent) -> bool {
        let cat = text_of(e.cat);
        let kind = match kind_of_category(&cat) {
            Some((kind, old)) => {
                if old {
                    self.stats.old_categories += 1;
                } else {
                    self.stats.modern_categories += 1;
                }
                kind
            }
            // The pre-Kineto autograd profiler wrote no category, only these pids.
            None if e.cat.is_empty() => match text_of(e.pid).as_ref() {
                "CPU functions" => SpanKind::CpuOp,
                "CUDA functions" => SpanKind::Kernel,
                _ => {
                    self.ignore_category(&cat);
                    return true;
                }
            },
            None => {
                self.ignore_category(&cat);
                return true;
            }
        };
        let Some(start_ns) = micros_to_ns(e.ts) else {
            return false;
        };
        if has_fraction(e.ts) {
            self.stats.ts_with_fraction += 1;
        } else {
            self.stats.ts_integer += 1;
        }
        let dur_ns = if e.dur.is_empty() {
            0
        } else {
            match micros_to_ns(e.dur) {
                Some(d) => d,
                None => return false,
            }
        };
        let args = &e.arg_fields;
        let pid = self.ident(e.pid);
        let tid = self.ident(e.tid);
        let lane_key = if kind.is_gpu() {
            LaneKey::Gpu {
                device: args
                    .device
                    .and_then(to_i64)
                    .or(match pid {
                        Ident::Num(n) => Some(n),
                        Ident::Text(_) => None,
                    })
                    .unwrap_or(0),
                stream: args
                    .stream
                    .and_then(to_i64)
                    .unwrap_or_else(|| self.stream_from_tid(tid)),
            }
        } else {
            LaneKey::Cpu { pid, tid }
        };
        let lane = self.builder.lane(lane_key);
        let name_text = text_of(e.name);
        let name = self.builder.intern(&name_text);
        if matches!(
            kind,
            SpanKind::CpuOp | SpanKind::UserAnnotation | SpanKind::GpuUserAnnotation
        ) {
            if let Some(step) = profiler_step_number(&name_text) {
                self.builder.mark_step(name, step);
            }
        }
        let detail = self.detail(kind, &name_text, args);
        let input = SpanInput {
            kind,
            lane,
            start_ns,
            dur_ns,
            name,
            correlation: args.correlation.and_then(to_u64),
            external_id: args.external_id.and_then(to_i64),
            detail,
        };
        let wants_link =
            kind.is_api_call() || (kind.is_gpu() && kind != SpanKind::GpuUserAnnotation);
        if args.collective.names_a_collective() {
            let key = match kind {
                SpanKind::Kernel => input
                    .correlation
                    .map(CollectiveKey::Kernel)
                    .or(input.external_id.map(CollectiveKey::Op)),
                SpanKind::CpuOp | SpanKind::UserAnnotation => {
                    input.external_id.map(CollectiveKey::Op)
                }
                _ => None,
            };
            if let Some(key) = key {
                self.builder
                    .add_collective_args(key, args.collective.args());
            }
        }
        if kind.is_api_call() {
            if let (Some(c), Some(k)) = (input.correlation, args.kernel) {
                self.builder.add_launched_kernel(c, &text_of(k));
            }
        } else if kind.is_gpu_work() && args.graph_node.is_some() {
            // PyTorch's CUDA-graph annotations: the module path, else the `mark_kernels` name.
            if let Some(label) = args.module_fqn.or(args.name) {
                let label = text_of(label);
                if !label.trim().is_empty() {
                    self.builder
                        .add_graph_annotation(lane, start_ns, name, label.trim());
                }
            }
        }
        let kept = if input.correlation.is_none() && wants_link {
            self.builder.add_span_linked_by_flow(input, pid, tid)
        } else {
            self.builder.add_span(input)
        };
        if kept {
            self.stats.kept += 1;
        }
        true
    }

    fn stream_from_tid(&self, tid: Ident) -> i64 {
        match tid {
            Ident::Num(n) => n,
            // Older Kineto wrote `"stream 7"`.
            Ident::Text(t) => self
                .builder
                .text(t)
                .split_whitespace()
                .last()
                .and_then(|w| w.parse().ok())
                .unwrap_or(0),
        }
    }

    fn detail(&mut self, kind: SpanKind, name: &str, args: &Args) -> u32 {
        match kind {
            SpanKind::Memcpy | SpanKind::Memset => {
                let mut info = CopyInfo::from_name(name);
                if let Some(d) = args
                    .copy_kind
                    .or(args.kind)
                    .and_then(|k| CopyDirection::parse(&text_of(k)))
                {
                    info.direction = d;
                }
                if let Some(m) = args.src_kind.and_then(|k| MemoryKind::parse(&text_of(k))) {
                    info.src = m;
                }
                if let Some(m) = args.dst_kind.and_then(|k| MemoryKind::parse(&text_of(k))) {
                    info.dst = m;
                }
                info.bytes = args.bytes.and_then(to_u64);
                self.builder.add_copy(info)
            }
            SpanKind::Runtime | SpanKind::Driver
                if name.contains("Memcpy") || name.contains("memcpy") =>
            {
                // HIP runtime calls say `kind: "2"` (hipMemcpyKind) and `bytes: "1"`.
                let direction = match args.kind.and_then(to_i64) {
                    Some(0) => CopyDirection::HtoH,
                    Some(1) => CopyDirection::HtoD,
                    Some(2) => CopyDirection::DtoH,
                    Some(3) => CopyDirection::DtoD,
                    _ => CopyDirection::Unknown,
                };
                let bytes = args.bytes.and_then(to_u64);
                if direction == CopyDirection::Unknown && bytes.is_none() {
                    return NO_DETAIL;
                }
                self.builder.add_copy(CopyInfo {
                    direction,
                    bytes,
                    ..CopyInfo::default()
                })
            }
            SpanKind::CpuOp | SpanKind::UserAnnotation => {
                let stack = args.call_stack.and_then(decode_str);
                // Shapes, dtypes and concrete values are kept as the JSON text of their lists.
                fn list(v: Option<&[u8]>) -> Option<&str> {
                    v.filter(|v| v.first() == Some(&b'['))
                        .and_then(|v| std::str::from_utf8(v).ok())
                }
                self.builder.add_op_detail(
                    stack.as_deref().filter(|s| !s.is_empty()),
                    list(args.input_dims),
                    list(args.input_types),
                    // Most ops pass only tensors: `["", "", ""]` says nothing.
                    list(args.concrete_inputs).filter(|c| {
                        c.bytes()
                            .any(|b| !matches!(b, b'[' | b']' | b'"' | b',' | b' '))
                    }),
                )
            }
            SpanKind::Kernel => match kernel_launch(args) {
                Some(launch) => self.builder.add_kernel_launch(launch),
                None => NO_DETAIL,
            },
            _ => NO_DETAIL,
        }
    }

    fn read_metadata(&mut self, e: &RawEvent) {
        let args = &e.arg_fields;
        let Some(value) = args.name.map(text_of) else {
            return;
        };
        let pid = self.ident(e.pid);
        match text_of(e.name).as_ref() {
            "process_name" => self.builder.name_process(pid, &value),
            "thread_name" => {
                let tid = self.ident(e.tid);
                if value.trim_start().starts_with("stream") {
                    if let (Ident::Num(device), Ident::Num(stream)) = (pid, tid) {
                        self.builder.name_stream(device, stream, &value);
                    }
                }
                self.builder.name_thread(pid, tid, &value);
            }
            _ => {}
        }
    }

    fn read_flow(&mut self, e: &RawEvent, is_start: bool) -> bool {
        if !is_launch_flow(&text_of(e.cat)) {
            return true;
        }
        let (Some(id), Some(ts_ns)) = (to_u64(e.id), micros_to_ns(e.ts)) else {
            return false;
        };
        let pid = self.ident(e.pid);
        let tid = self.ident(e.tid);
        self.builder.add_flow(FlowInput {
            id,
            is_start,
            pid,
            tid,
            ts_ns,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelens_model::SourceInfo;

    #[test]
    fn args_cut_off_are_not_read_and_a_repeated_args_replaces_the_first() {
        fn fields_of(raw: &[u8]) -> (&[u8], Option<&[u8]>, Option<&[u8]>) {
            let mut fields = Fields::new(raw);
            let e = RawEvent::collect(&mut fields);
            (e.args, e.arg_fields.device, e.arg_fields.stream)
        }
        // The file ends inside `args`: the event keeps no argument, as before it was walked
        // in place.
        let (raw, device, _) =
            fields_of(br#"{"ph": "X", "args": {"device": 3, "stream": 7, "correlation"#);
        assert!(raw.is_empty());
        assert_eq!(device, None);
        // A first `args` stays when a second is cut off.
        let (raw, device, _) = fields_of(br#"{"args": {"device": 1}, "args": {"device": 3, "str"#);
        assert_eq!(raw, &br#"{"device": 1}"#[..]);
        assert_eq!(device, Some(&b"1"[..]));
        // The last whole `args` wins, with none of the first one's fields.
        let (_, device, stream) =
            fields_of(br#"{"args": {"device": 1, "stream": 2}, "args": {"device": 3}}"#);
        assert_eq!((device, stream), (Some(&b"3"[..]), None));
    }

    #[test]
    fn an_autograd_sequence_number_is_not_a_collective() {
        let mut r = EventReader::default();
        // aten::mm carries its autograd "Sequence number"; record_param_comms names a
        // collective, with its own "Seq" beside an autograd number; each launches one kernel
        // (same External id).
        r.read(br#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":5,"args":{"External id":7,"Sequence number":41}}"#, 0);
        r.read(br#"{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":10,"dur":1,"args":{"External id":7,"correlation":1}}"#, 0);
        r.read(br#"{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":20,"dur":5,"args":{"External id":8,"Collective name":"allreduce","Seq":3,"Sequence number":99}}"#, 0);
        r.read(br#"{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":7,"ts":30,"dur":1,"args":{"External id":8,"correlation":2}}"#, 0);
        let t = r.builder.finish(SourceInfo::default());
        let mut kernels = t.spans_of_kind(SpanKind::Kernel);
        let (gemm, nccl) = (kernels.next().unwrap(), kernels.next().unwrap());
        assert_eq!(t.collective_args(gemm), None);
        let args = t.collective_args(nccl).expect("the collective's arguments");
        assert_eq!((args.op.as_deref(), args.seq), (Some("allreduce"), Some(3)));
    }

    #[test]
    fn categories_old_and_new() {
        assert_eq!(kind_of_category("Kernel"), Some((SpanKind::Kernel, true)));
        assert_eq!(kind_of_category("kernel"), Some((SpanKind::Kernel, false)));
        assert_eq!(
            kind_of_category("gpu_user_Annotation"),
            Some((SpanKind::GpuUserAnnotation, false))
        );
        assert_eq!(kind_of_category("Trace"), None);
    }

    #[test]
    fn rocm_string_args_and_old_stream_tids() {
        let mut r = EventReader::default();
        r.read(br#"{"ph":"X","cat":"kernel","name":"k","pid":2,"tid":0,"ts":10.5,"dur":1,"args":{"stream":"0x3","correlation":"801"}}"#, 0);
        r.read(br#"{"ph":"X","cat":"Kernel","name":"k2","pid":0,"tid":"stream 7","ts":20,"dur":1,"args":{"correlation":5}}"#, 0);
        r.read(br#"{"ph":"X","cat":"cuda_runtime","name":"hipMemcpyWithStream","pid":6,"tid":6,"ts":1,"dur":2,"args":{"kind":"2","bytes":"1","correlation":801}}"#, 0);
        r.read(br#"{"ph":"X","cat":"kernel","ts":"oops"}"#, 99);
        assert_eq!(r.stats.malformed, 1);
        assert_eq!(r.stats.first_malformed_at, Some(99));
        let t = r.builder.finish(SourceInfo::default());
        let keys: Vec<_> = t.lanes.iter().map(|l| l.key).collect();
        assert!(keys.contains(&LaneKey::Gpu {
            device: 2,
            stream: 3
        }));
        assert!(keys.contains(&LaneKey::Gpu {
            device: 0,
            stream: 7
        }));
        assert_eq!(t.links.gpu_ops_linked, 1);
        let rt = t.spans_of_kind(SpanKind::Runtime).next().unwrap();
        let c = t.copy_info(rt).unwrap();
        assert_eq!((c.direction, c.bytes), (CopyDirection::DtoH, Some(1)));
    }
}
