//! An export's rows → the timeline model. Each table is scanned once; joins (strings, launch
//! ↔ GPU op, thread names) are done in memory by the model's builder, never row by row in SQL.

use crate::cells::{Cells, Query};
use crate::db::{pid_of, tid_of, Db};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use tracelens_model::{
    CopyDirection, CopyInfo, Detail, FrameworkRange, Ident, LaneId, LaneKey, MemoryKind,
    MigrationCause, NameId, SourceInfo, SpanInput, SpanKind, Trace, TraceBuilder, WarningKind,
    NO_DETAIL,
};

mod kernels;
mod metadata;
mod nvtx_payload;
use kernels::KernelFeed;
use metadata::read_metadata;

/// Tables whose rows are counted but not modelled.
const COUNTED_ONLY: [&str; 4] = [
    "COMPOSITE_EVENTS",
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
    "PROFILER_OVERHEAD",
    "CUDA_GPU_MEMORY_USAGE_EVENTS",
];

/// The correlation key: CUPTI correlation ids are unique within a process only.
#[must_use]
pub fn correlation_key(pid: i64, correlation: i64) -> u64 {
    // Two's-complement bits of each, masked: the key only needs to be unique.
    let bits = |v: i64, mask: i64| (v & mask).unsigned_abs();
    (bits(pid, 0xFF_FFFF) << 32) | bits(correlation, 0xFFFF_FFFF)
}

struct Importer<'a> {
    db: &'a Db,
    b: TraceBuilder,
    strings: FxHashMap<i64, String>,
    interned: FxHashMap<i64, NameId>,
    rows_by_table: BTreeMap<String, u64>,
    mem_kinds: FxHashMap<i64, String>,
    /// Distinct string ids that `StringIds` could not resolve.
    missing_names: u64,
    /// The last CPU thread's lane (`globalTid`, lane): consecutive rows are mostly one thread's.
    last_cpu_lane: Option<(i64, LaneId)>,
}

impl Importer<'_> {
    fn name(&mut self, id: Option<i64>) -> NameId {
        let Some(id) = id else {
            return self.b.intern("(unnamed)");
        };
        if let Some(&n) = self.interned.get(&id) {
            return n;
        }
        let n = match self.strings.get(&id) {
            Some(s) => self.b.intern(s),
            None => {
                self.missing_names += 1;
                self.b.intern(&format!("(string {id})"))
            }
        };
        self.interned.insert(id, n);
        n
    }

    /// Runs `sql` and hands every row to `f`; cells are read in place, not copied.
    fn scan(
        &mut self,
        table: &str,
        sql: &str,
        mut f: impl FnMut(&mut Self, &Cells),
    ) -> rusqlite::Result<()> {
        let db = self.db;
        if !db.has(table) {
            return Ok(());
        }
        let mut rows = Query::new(&db.conn, sql)?;
        let mut count = 0u64;
        while let Some(row) = rows.next()? {
            f(self, &row);
            count += 1;
        }
        *self.rows_by_table.entry(table.to_string()).or_default() += count;
        Ok(())
    }

    fn mem_kind(&self, id: Option<i64>) -> MemoryKind {
        let label = id
            .and_then(|i| self.mem_kinds.get(&i).cloned())
            .unwrap_or_else(|| {
                match id {
                    Some(0) => "Pageable",
                    Some(1) => "Pinned",
                    Some(2) | Some(5) => "Device",
                    Some(3) => "Array",
                    Some(4) | Some(6) => "Managed",
                    _ => "Unknown",
                }
                .to_string()
            });
        MemoryKind::parse(&label)
            .or_else(|| label.split_whitespace().next().and_then(MemoryKind::parse))
            .unwrap_or(MemoryKind::Unknown)
    }
}

fn kind_label(k: MemoryKind) -> &'static str {
    match k {
        MemoryKind::Pageable => "Pageable",
        MemoryKind::Pinned => "Pinned",
        MemoryKind::Device => "Device",
        MemoryKind::Host => "Host",
        MemoryKind::Array => "Array",
        MemoryKind::Managed => "Managed",
        MemoryKind::Unknown => "Unknown",
    }
}

/// `(direction, unified)` of `ENUM_CUDA_MEMCPY_OPER`.
fn copy_direction(kind: Option<i64>) -> (CopyDirection, bool) {
    match kind {
        Some(1) | Some(3) => (CopyDirection::HtoD, false),
        Some(2) | Some(4) => (CopyDirection::DtoH, false),
        Some(5..=8) => (CopyDirection::DtoD, false),
        Some(9) => (CopyDirection::HtoH, false),
        Some(10) => (CopyDirection::PtoP, false),
        Some(11) => (CopyDirection::HtoD, true),
        Some(12) => (CopyDirection::DtoH, true),
        Some(13) => (CopyDirection::DtoD, true),
        _ => (CopyDirection::Unknown, false),
    }
}

/// PyTorch's NVTX text `aten::add, seq = 3, op_id = 7, sizes = [...]` → (`aten::add`, true).
#[must_use]
pub fn pytorch_op_name(text: &str) -> (&str, bool) {
    let cut = [", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "]
        .iter()
        .filter_map(|m| text.find(m))
        .min();
    match cut {
        Some(i) => (&text[..i], true),
        None => (text, false),
    }
}

/// Imports an opened export.
pub fn import(db: &Db, path: &std::path::Path, file_bytes: u64) -> rusqlite::Result<Trace> {
    std::thread::scope(|scope| {
        // The kernel table is read on a second read-only connection meanwhile.
        let mut kernels = KernelFeed::start(scope, path);
        import_with(db, path, file_bytes, &mut kernels)
    })
}

fn import_with(
    db: &Db,
    path: &std::path::Path,
    file_bytes: u64,
    kernels: &mut KernelFeed,
) -> rusqlite::Result<Trace> {
    let mut imp = Importer {
        db,
        b: TraceBuilder::new(),
        strings: FxHashMap::default(),
        interned: FxHashMap::default(),
        rows_by_table: BTreeMap::new(),
        mem_kinds: db.enum_labels("ENUM_CUDA_MEM_KIND"),
        missing_names: 0,
        last_cpu_lane: None,
    };
    let mut strings_error = None;
    if db.has("StringIds") {
        let mut stmt = db.conn.prepare("SELECT id, value FROM StringIds")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?))
        })?;
        for row in rows {
            match row {
                Ok((id, v)) => {
                    imp.strings.insert(id, v.unwrap_or_default());
                }
                // A damaged page: keep the names read so far and say so below.
                Err(e) => {
                    strings_error = Some(e.to_string());
                    break;
                }
            }
        }
    }
    for w in db.unread_warnings() {
        imp.b.warn(WarningKind::Other, w, 1);
    }
    let gpu_rows = read_metadata(db, &mut imp.b.metadata)?;
    if let Some(rows) = gpu_rows {
        *imp.rows_by_table
            .entry("TARGET_INFO_GPU".into())
            .or_default() += rows;
    }
    read_names(&mut imp)?;
    read_runtime(&mut imp, kernels)?;
    read_gpu_ops(&mut imp)?;
    while add_next_kernels(&mut imp, kernels)? {}
    read_nvtx(&mut imp)?;
    read_os_runtime(&mut imp)?;
    let samples_read = read_cpu_samples(&mut imp)?;
    let records_thread_states = read_scheduling(&mut imp)?;
    let mut ignored = BTreeMap::new();
    for t in COUNTED_ONLY {
        let n = db.count(t);
        if n > 0 && !(samples_read && t == "COMPOSITE_EVENTS") {
            ignored.insert(t.to_string(), n);
        }
    }
    let meta: FxHashMap<String, String> = db.export_meta().into_iter().collect();
    let product = meta
        .get("EXPORT_PRODUCT_VERSION")
        .cloned()
        .unwrap_or_else(|| "unknown".into());
    let schema = meta
        .get("EXPORT_SCHEMA_VERSION")
        .cloned()
        .unwrap_or_else(|| "unknown".into());
    let lazy = meta.get("EXPORT_PARAM_LAZY").map(String::as_str);
    let read: u64 = imp.rows_by_table.values().sum();
    let kept = imp.b.span_count() as u64;
    let source = SourceInfo {
        path: path.display().to_string(),
        format: crate::db::FORMAT.into(),
        format_name: "Nsight Systems SQLite export".into(),
        content: "SQLite".into(),
        records: "rows".into(),
        annotatable: false,
        compression: None,
        version: format!("nsys_schema_{schema}"),
        version_note: format!(
            "Nsight Systems {product} SQLite export, schema {schema}{}",
            match lazy {
                Some("false") | Some("0") => " (non-lazy)",
                Some(_) => " (lazy)",
                None => "",
            }
        ),
        framework: FrameworkRange::default(),
        // NVTX ranges of operators carry shapes at most (`emit_nvtx(record_shapes=True)`),
        // never dtypes.
        records_op_inputs: false,
        records_thread_states,
        cpu_samples: db.count("COMPOSITE_EVENTS"),
        capture_tool: tracelens_model::CaptureTool::NsightSystems,
        file_bytes,
        decoded_bytes: file_bytes,
        records_read: read,
        records_kept: kept,
        ignored,
        truncated_at_byte: None,
        details: [(
            "rows_by_table".to_string(),
            Detail::Counts(imp.rows_by_table.clone()),
        )]
        .into_iter()
        .collect(),
        accelerators_not_analysed: std::collections::BTreeMap::new(),
    };
    if imp.missing_names > 0 || strings_error.is_some() {
        let why = match &strings_error {
            Some(e) => format!("StringIds could not be read to its end ({e})"),
            None => "StringIds lacks their ids".to_string(),
        };
        let message = format!(
            "{} names could not be resolved: {why}; they are shown as \"(string ID)\" and the diagnoses that match names may miss them",
            imp.missing_names
        );
        let n = imp.missing_names.max(1);
        imp.b.warn(WarningKind::MissingNames, message, n);
    }
    Ok(imp.b.finish(source))
}

fn read_names(imp: &mut Importer) -> rusqlite::Result<()> {
    imp.scan(
        "ThreadNames",
        "SELECT nameId, globalTid FROM ThreadNames",
        |imp, r| {
            let (Some(name), Some(g)) = (r.int(0), r.int(1)) else {
                return;
            };
            let text = imp.strings.get(&name).cloned().unwrap_or_default();
            imp.b
                .name_thread(Ident::Num(pid_of(g)), Ident::Num(tid_of(g)), &text);
        },
    )?;
    let db = imp.db;
    if db.has("PROCESSES") {
        let sql = format!(
            "SELECT {}, {} FROM PROCESSES",
            db.col("PROCESSES", "pid"),
            db.col("PROCESSES", "name")
        );
        imp.scan("PROCESSES", &sql, |imp, r| {
            if let (Some(pid), Some(name)) = (r.int(0), r.text(1)) {
                imp.b.name_process(Ident::Num(pid), name);
            }
        })?;
    }
    Ok(())
}

/// Reads the runtime table, taking a block of kernels after each block of runtime rows (the
/// kernels' reader runs meanwhile: its rows wait in a few blocks, not whole).
fn read_runtime(imp: &mut Importer, kernels: &mut KernelFeed) -> rusqlite::Result<()> {
    let t = "CUPTI_ACTIVITY_KIND_RUNTIME";
    let db = imp.db;
    let sql = format!(
        "SELECT start, end, {}, {}, {}, {}, {} FROM {t}",
        db.col(t, "eventClass"),
        db.col(t, "globalTid"),
        db.col(t, "correlationId"),
        db.col(t, "nameId"),
        db.col(t, "returnValue")
    );
    // Some exports record one call twice under two API names (`cudaMemcpy` and
    // `cudaMemcpy_v3020`) with one correlation id, in consecutive rows of the thread: the
    // second is the same call, counted once. Only the thread's last row is remembered.
    let mut last: FxHashMap<i64, (i64, i64, i64)> = FxHashMap::default();
    let mut repeated = 0u64;
    let (mut rows, mut kernel_error) = (0usize, None);
    imp.scan(t, &sql, |imp, r| {
        rows += 1;
        if rows % kernels::BLOCK_ROWS == 0 && kernel_error.is_none() {
            kernel_error = add_next_kernels(imp, kernels).err();
        }
        let (Some(start), Some(end)) = (r.int(0), r.int(1)) else {
            return;
        };
        let g = r.int(3).unwrap_or(0);
        if let Some(c) = r.int(4).filter(|&c| c != 0) {
            let same_call = last
                .insert(g, (c, start, end))
                .is_some_and(|(lc, ls, le)| lc == c && start <= le && ls <= end);
            if same_call {
                repeated += 1;
                return;
            }
        }
        let name = imp.name(r.int(5));
        if let Some(code) = r.int(6).filter(|&c| c != 0) {
            let call = imp.b.text(name).to_string();
            imp.b.metadata.add_api_error(&call, code);
        }
        let kind = if r.int(2) == Some(1) {
            SpanKind::Driver
        } else {
            SpanKind::Runtime
        };
        let corr = r.int(4).map(|c| correlation_key(pid_of(g), c));
        cpu_span(imp, kind, g, (start, end), name, corr);
    })?;
    if let Some(e) = kernel_error {
        return Err(e);
    }
    if repeated > 0 {
        imp.b.warn(
            WarningKind::DuplicateEvent,
            format!(
                "{repeated} runtime rows repeat the call before them on the same thread (same correlation id, overlapping time: one call recorded under two API names); each call is counted once"
            ),
            repeated,
        );
    }
    Ok(())
}

/// Adds the next block of kernels from the second connection (waiting for it); `false` once
/// the table is done, which then counts as read even when empty or absent.
fn add_next_kernels(imp: &mut Importer, kernels: &mut KernelFeed) -> rusqlite::Result<bool> {
    let rows = kernels.next_block()?;
    let entry = imp
        .rows_by_table
        .entry(kernels::TABLE.to_string())
        .or_default();
    let Some(rows) = rows else {
        return Ok(false);
    };
    *entry += rows.len() as u64;
    for k in rows {
        let name = imp.name((k.name >= 0).then_some(k.name));
        let lane = imp.b.lane(LaneKey::Gpu {
            device: k.device,
            stream: k.stream,
        });
        let pid = pid_of(k.global_pid);
        let detail = k.launch.map_or(NO_DETAIL, |l| imp.b.add_kernel_launch(l));
        imp.b.add_span(SpanInput {
            kind: SpanKind::Kernel,
            lane,
            start_ns: k.start,
            dur_ns: k.end.saturating_sub(k.start),
            name,
            correlation: (k.correlation >= 0).then(|| correlation_key(pid, k.correlation)),
            external_id: None,
            detail,
        });
    }
    Ok(true)
}

fn read_gpu_ops(imp: &mut Importer) -> rusqlite::Result<()> {
    let db = imp.db;
    let common = |t: &str| {
        format!(
            "start, end, {}, {}, {}, {}",
            db.col(t, "deviceId"),
            db.col(t, "streamId"),
            db.col(t, "correlationId"),
            db.col(t, "globalPid")
        )
    };
    let t = "CUPTI_ACTIVITY_KIND_MEMCPY";
    let sql = format!(
        "SELECT {}, {}, {}, {}, {}, {}, {}, {} FROM {t}",
        common(t),
        db.col(t, "bytes"),
        db.col(t, "copyKind"),
        db.col(t, "srcKind"),
        db.col(t, "dstKind"),
        db.col(t, "migrationCause"),
        db.col(t, "srcDeviceId"),
        db.col(t, "dstDeviceId")
    );
    imp.scan(t, &sql, |imp, r| {
        let (direction, unified) = copy_direction(r.int(7));
        // A unified-memory migration moves managed pages, whatever kinds the row states.
        let (src, dst) = if unified {
            (MemoryKind::Managed, MemoryKind::Managed)
        } else {
            (imp.mem_kind(r.int(8)), imp.mem_kind(r.int(9)))
        };
        let label = format!(
            "Memcpy {}{:?} ({} -> {})",
            if unified { "Unified " } else { "" },
            direction,
            kind_label(src),
            kind_label(dst)
        );
        let name = imp.b.intern(&label);
        let detail = imp.b.add_copy(CopyInfo {
            direction,
            src,
            dst,
            bytes: r.int(6).and_then(|b| u64::try_from(b).ok()),
            migration: unified.then(|| MigrationCause::from_cupti(r.int(10).unwrap_or(0))),
            peer: match (direction, r.int(11), r.int(12)) {
                (CopyDirection::PtoP, Some(src), Some(dst)) => {
                    tracelens_model::PeerDevices::new(src, dst)
                }
                _ => None,
            },
        });
        gpu_span(imp, r, SpanKind::Memcpy, name, detail);
    })?;
    let t = "CUPTI_ACTIVITY_KIND_MEMSET";
    let sql = format!(
        "SELECT {}, {}, {} FROM {t}",
        common(t),
        db.col(t, "bytes"),
        db.col(t, "memKind")
    );
    imp.scan(t, &sql, |imp, r| {
        let kind = imp.mem_kind(r.int(7));
        let name = imp.b.intern(&format!("Memset ({})", kind_label(kind)));
        let detail = imp.b.add_copy(CopyInfo {
            direction: CopyDirection::Unknown,
            src: MemoryKind::Unknown,
            dst: kind,
            bytes: r.int(6).and_then(|b| u64::try_from(b).ok()),
            migration: None,
            peer: None,
        });
        gpu_span(imp, r, SpanKind::Memset, name, detail);
    })?;
    let t = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
    let sql = format!("SELECT {}, {} FROM {t}", common(t), db.col(t, "syncType"));
    imp.scan(t, &sql, |imp, r| {
        // Kineto's names for the same CUPTI records.
        let label = match r.int(6) {
            Some(1) => "Event Sync",
            Some(2) => "Stream Wait Event",
            Some(3) => "Stream Sync",
            Some(4) => "Context Sync",
            _ => "Unknown Sync",
        };
        let name = imp.b.intern(label);
        gpu_span(imp, r, SpanKind::CudaSync, name, NO_DETAIL);
    })
}

/// Adds a span on the CPU thread of `global_tid`.
fn cpu_span(
    imp: &mut Importer,
    kind: SpanKind,
    global_tid: i64,
    (start, end): (i64, i64),
    name: NameId,
    correlation: Option<u64>,
) {
    let lane = match imp.last_cpu_lane {
        Some((g, lane)) if g == global_tid => lane,
        _ => {
            let lane = imp.b.lane(LaneKey::Cpu {
                pid: Ident::Num(pid_of(global_tid)),
                tid: Ident::Num(tid_of(global_tid)),
            });
            imp.last_cpu_lane = Some((global_tid, lane));
            lane
        }
    };
    imp.b.add_span(SpanInput {
        kind,
        lane,
        start_ns: start,
        dur_ns: end.saturating_sub(start),
        name,
        correlation,
        external_id: None,
        detail: NO_DETAIL,
    });
}

/// Adds a GPU-lane span from the common `start, end, deviceId, streamId, correlationId,
/// globalPid` prefix of a row.
fn gpu_span(imp: &mut Importer, r: &Cells, kind: SpanKind, name: NameId, detail: u32) {
    let (Some(start), Some(end)) = (r.int(0), r.int(1)) else {
        return;
    };
    let stream = match r.int(3) {
        // Context and event syncs carry 0xFFFFFFFF: no stream.
        Some(0xFFFF_FFFF) | None => -1,
        Some(s) => s,
    };
    let lane = imp.b.lane(LaneKey::Gpu {
        device: r.int(2).unwrap_or(0),
        stream,
    });
    let pid = pid_of(r.int(5).unwrap_or(0));
    imp.b.add_span(SpanInput {
        kind,
        lane,
        start_ns: start,
        dur_ns: end.saturating_sub(start),
        name,
        correlation: r.int(4).map(|c| correlation_key(pid, c)),
        external_id: None,
        detail,
    });
}

fn read_nvtx(imp: &mut Importer) -> rusqlite::Result<()> {
    let t = "NVTX_EVENTS";
    let db = imp.db;
    if !db.has(t) {
        return Ok(());
    }
    // Unclosed ranges end where the table ends, as nsys's own reports do.
    let table_end: i64 = db
        .conn
        .query_row(
            &format!(
                "SELECT max(max(start, coalesce({}, start))) FROM {t}",
                db.col(t, "end")
            ),
            [],
            |r| r.get::<_, Option<i64>>(0),
        )?
        .unwrap_or(0);
    // Domain creations (type 75) name the libraries that annotate themselves (read apart:
    // they are not ranges, and the table's row count stays the ranges').
    let sql = format!(
        "SELECT DISTINCT {}, {}, {} FROM {t} WHERE eventType = 75 LIMIT {}",
        db.col(t, "text"),
        db.col(t, "textId"),
        db.col(t, "domainId"),
        tracelens_model::MAX_NVTX_DOMAINS
    );
    // The domains a CUDA library annotates its own API calls in (nsys --trace=cublas,…).
    let mut library_domains: Vec<i64> = Vec::new();
    let mut rows = Query::new(&db.conn, &sql)?;
    while let Some(r) = rows.next()? {
        let name = match r.text(0) {
            Some(s) => s.to_string(),
            None => r
                .int(1)
                .and_then(|id| imp.strings.get(&id).cloned())
                .unwrap_or_default(),
        };
        if is_library_domain(&name) {
            library_domains.extend(r.int(2));
        }
        if !name.is_empty() {
            imp.b.metadata.add_nvtx_domain(&name);
        }
    }
    let sql = format!(
        "SELECT start, {}, eventType, {}, {}, {}, {} FROM {t} WHERE eventType IN (59, 60, 70, 71)",
        db.col(t, "end"),
        db.col(t, "text"),
        db.col(t, "textId"),
        db.col(t, "globalTid"),
        db.col(t, "domainId")
    );
    imp.scan(t, &sql, |imp, r| {
        let Some(start) = r.int(0) else { return };
        let end = r.int(1).unwrap_or(table_end);
        let raw = match r.text(3) {
            Some(s) => s.to_string(),
            None => r
                .int(4)
                .and_then(|id| imp.strings.get(&id).cloned())
                .unwrap_or_default(),
        };
        let raw = nvtx_payload::readable(&raw).unwrap_or(raw);
        let (name_text, is_op) = pytorch_op_name(&raw);
        let name = imp.b.intern(name_text);
        if let Some(step) = tracelens_model::profiler_step_number(name_text) {
            imp.b.mark_step(name, step);
        }
        // A library's own call is an op of that library, not a phase the user marked.
        let library_call = r.int(6).is_some_and(|d| library_domains.contains(&d));
        let kind = if is_op || library_call {
            SpanKind::CpuOp
        } else {
            SpanKind::UserAnnotation
        };
        cpu_span(imp, kind, r.int(5).unwrap_or(0), (start, end), name, None);
    })
}

/// Whether an NVTX domain is one a CUDA library annotates its own API calls in (Nsight
/// Systems' `--trace=cublas,cudnn,…`): its ranges are library calls, not the user's phases.
fn is_library_domain(name: &str) -> bool {
    matches!(
        name,
        "cuBLAS" | "cuBLASLt" | "cuDNN" | "cuFFT" | "cuSPARSE" | "cuSOLVER" | "cuRAND" | "NCCL"
    )
}

/// OS runtime calls (`-t osrt`): libc/pthread waits and I/O on each thread. The two
/// "profiling started/finished" marker rows (eventClass 31/32) are skipped.
fn read_os_runtime(imp: &mut Importer) -> rusqlite::Result<()> {
    let t = "OSRT_API";
    let db = imp.db;
    let sql = format!(
        "SELECT start, end, {}, {} FROM {t} WHERE {} NOT IN (31, 32)",
        db.col(t, "globalTid"),
        db.col(t, "nameId"),
        db.col(t, "eventClass")
    );
    let session_end = session_end_ns(db);
    imp.scan(t, &sql, |imp, r| {
        let (Some(start), Some(end)) = (r.int(0), r.int(1)) else {
            return;
        };
        // A wait still open when the session stopped is recorded past its end: it ends
        // there, or it would stretch the capture by seconds the session never held.
        let end = session_end.map_or(end, |s| end.min(s));
        if end < start {
            return;
        }
        let name = imp.name(r.int(3));
        cpu_span(
            imp,
            SpanKind::OsRuntime,
            r.int(2).unwrap_or(0),
            (start, end),
            name,
            None,
        );
    })
}

/// CPU samples with their call stacks (`-s cpu`): `COMPOSITE_EVENTS` gives each sample's time
/// and thread, `SAMPLING_CALLCHAINS` its frames (innermost first), joined in memory. The
/// first [`tracelens_model::samples::MAX_SAMPLES`] samples are kept. Returns whether any stack
/// was read (samples without stacks stay counted only).
fn read_cpu_samples(imp: &mut Importer) -> rusqlite::Result<bool> {
    use tracelens_model::samples::{CpuSamplesBuilder, Frame, MAX_FRAMES, MAX_SAMPLES};
    let (events, chains) = ("COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS");
    let db = imp.db;
    if !db.has(events) || !db.has(chains) {
        return Ok(false);
    }
    let mut when: FxHashMap<i64, (i64, i64)> = FxHashMap::default();
    let sql = format!(
        "SELECT {}, {}, {} FROM {events} LIMIT {MAX_SAMPLES}",
        db.col(events, "id"),
        db.col(events, "start"),
        db.col(events, "globalTid")
    );
    imp.scan(events, &sql, |_, r| {
        if let (Some(id), Some(start), Some(g)) = (r.int(0), r.int(1), r.int(2)) {
            when.insert(id, (start, g));
        }
    })?;
    let sql = format!(
        "SELECT {}, {}, {} FROM {chains} WHERE {} < {MAX_FRAMES} ORDER BY 1, {} LIMIT {}",
        db.col(chains, "id"),
        db.col(chains, "symbol"),
        db.col(chains, "module"),
        db.col(chains, "stackDepth"),
        db.col(chains, "stackDepth"),
        // The frames of the kept samples at most: a crafted table of endless stacks is not
        // read to its end.
        MAX_SAMPLES * MAX_FRAMES
    );
    let mut samples = CpuSamplesBuilder::default();
    imp.scan(chains, &sql, |imp, r| {
        let Some(&(start, g)) = r.int(0).and_then(|id| when.get(&id)) else {
            return;
        };
        let frame = Frame {
            symbol: imp.name(r.int(1)),
            module: imp.name(r.int(2)),
        };
        let thread = LaneKey::Cpu {
            pid: Ident::Num(pid_of(g)),
            tid: Ident::Num(tid_of(g)),
        };
        samples.frame(r.int(0).unwrap_or(0), start, thread, frame);
    })?;
    let samples = samples.finish();
    let read = !samples.samples.is_empty();
    imp.b.set_cpu_samples(samples);
    Ok(read)
}

/// Where the profiling session ended, on the export's clock: `ANALYSIS_DETAILS.duration`,
/// when the export's timestamps count from the session's start (no CUDA API call ends after
/// it).
fn session_end_ns(db: &Db) -> Option<i64> {
    let t = "ANALYSIS_DETAILS";
    if !db.has(t) || !db.has_col(t, "duration") {
        return None;
    }
    let duration: i64 = db
        .conn
        .query_row(
            &format!("SELECT MAX({}) FROM {t}", db.col(t, "duration")),
            [],
            |r| r.get::<_, Option<i64>>(0),
        )
        .ok()
        .flatten()
        .filter(|&d| d > 0)?;
    let runtime = "CUPTI_ACTIVITY_KIND_RUNTIME";
    if db.has(runtime) {
        let last: Option<i64> = db
            .conn
            .query_row(
                &format!("SELECT MAX({}) FROM {runtime}", db.col(runtime, "end")),
                [],
                |r| r.get::<_, Option<i64>>(0),
            )
            .ok()
            .flatten();
        if last.is_some_and(|l| l > duration) {
            return None;
        }
    }
    Some(duration)
}

/// `ENUM_SAMPLING_THREAD_STATE` of a switch-out: 0 unknown, 1 running (preempted while
/// runnable), 5 terminated; the others are waits (interruptible, uninterruptible, waiting, …).
const STATE_UNKNOWN: i64 = 0;
const STATE_RUNNING: i64 = 1;
const STATE_TERMINATED: i64 = 5;

/// Context switches (`--cpuctxsw`): each thread's switch-out → next switch-in becomes an
/// off-CPU span. A thread still out at the end of the trace gets no span. Returns whether
/// the export says why threads left the CPU (`threadState` known on some switch-out); then
/// only preemptions (state running) become off-CPU spans, and a switch-out into a wait does
/// not.
fn read_scheduling(imp: &mut Importer) -> rusqlite::Result<bool> {
    let t = "SCHED_EVENTS";
    let db = imp.db;
    let state = if db.has_col(t, "threadState") {
        db.col(t, "threadState")
    } else {
        "NULL".to_string()
    };
    let sql = format!(
        "SELECT start, {}, {}, {state} FROM {t} ORDER BY {}, start",
        db.col(t, "isSchedIn"),
        db.col(t, "globalTid"),
        db.col(t, "globalTid")
    );
    // Whether any switch-out says why (every one of the corpus' exports says "unknown").
    let known_states = db.has(t)
        && db.has_col(t, "threadState")
        && db
            .conn
            .query_row(
                &format!(
                    "SELECT EXISTS (SELECT 1 FROM {t} WHERE \"isSchedIn\" = 0 AND \"threadState\" NOT IN ({STATE_UNKNOWN}, {STATE_TERMINATED}))"
                ),
                [],
                |r| r.get::<_, i64>(0),
            )
            .is_ok_and(|n| n == 1);
    let name = imp.b.intern("[off CPU]");
    let mut out_since: Option<(i64, i64)> = None; // (globalTid, switch-out time)
    imp.scan(t, &sql, |imp, r| {
        let (Some(at), Some(sched_in), Some(g)) = (r.int(0), r.int(1), r.int(2)) else {
            return;
        };
        match (sched_in, out_since) {
            (0, _) if known_states && r.int(3) != Some(STATE_RUNNING) => out_since = None,
            (0, _) => out_since = Some((g, at)),
            (_, Some((tid, since))) if tid == g && at > since => {
                cpu_span(imp, SpanKind::OffCpu, g, (since, at), name, None);
                out_since = None;
            }
            _ => out_since = None,
        }
    })?;
    Ok(known_states)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_nvtx_texts_become_op_names() {
        assert_eq!(
            pytorch_op_name("aten::add, op_id = 314359"),
            ("aten::add", true)
        );
        assert_eq!(
            pytorch_op_name("AddmmBackward0, seq = 11, op_id = 5"),
            ("AddmmBackward0", true)
        );
        assert_eq!(
            pytorch_op_name(
                "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__, op_id = 9"
            ),
            (
                "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                true
            )
        );
        assert_eq!(pytorch_op_name("my range"), ("my range", false));
    }

    #[test]
    fn correlation_keys_separate_processes() {
        assert_ne!(correlation_key(111, 5), correlation_key(112, 5));
        assert_eq!(correlation_key(111, 5), correlation_key(111, 5));
    }
}
