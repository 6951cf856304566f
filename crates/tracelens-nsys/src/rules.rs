//! nsys-compatible mode: the six CUDA rules of `nsys analyze` (2023.4 names and defaults),
//! re-derived from their documented definitions and run as SQL over the export, with nsys's
//! columns, row order, 50-row limit and column layout, so a CI job can drop the nsys
//! install. The advice texts are tracelens's own. The native diagnoses stay the default.
//!
//! | rule | rows |
//! |---|---|
//! | `cuda_memcpy_async` | memcpys with a pageable side behind a `cudaMemcpy*Async*` call |
//! | `cuda_memcpy_sync` | memcpys behind `cudaMemcpy*` calls that are not async, except host→device copies of ≤ 64000 bytes and same-device copies |
//! | `cuda_memset_sync` | memsets on pinned or managed memory behind a non-async `cudaMemset*` |
//! | `cuda_api_sync` | `cudaDeviceSynchronize*` and `cudaStreamSynchronize*` calls |
//! | `gpu_gaps` | per process, device and context: idle stretches longer than 500 ms between GPU ops (and profiler overhead), first to last op |
//! | `gpu_time_util` | per process, device and context: the span cut into 30 chunks; chunks under 50 % utilization, consecutive ones merged |
//!
//! Like nsys, API calls join GPU ops on `correlationId` alone here; the native import joins
//! on `(pid, correlationId)`.

use crate::db::{pid_of, tid_of, Db};
use rusqlite::types::{Value, ValueRef};
use std::fmt::Write;

/// Rows shown per rule (nsys's default `rows=50`).
pub const ROW_LIMIT: usize = 50;
/// `gpu_gaps`: gaps longer than this are reported (strictly).
pub const GAP_THRESHOLD_NS: i64 = 500 * 1_000_000;
/// `gpu_time_util`: number of chunks.
pub const UTIL_CHUNKS: i64 = 30;
/// `gpu_time_util`: chunks below this utilization (percent) are reported.
pub const UTIL_THRESHOLD_PERCENT: f64 = 50.0;
/// `cuda_memcpy_sync`: host→device copies up to this many bytes are exempt.
pub const SMALL_HTOD_BYTES: i64 = 64_000;

/// One cell of a result row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// An integer, right-aligned.
    Int(i64),
    /// A number with fixed decimals, right-aligned.
    Fixed(f64, usize),
    /// Text, left-aligned.
    Text(String),
    /// No value.
    Empty,
}

impl Cell {
    fn render(&self) -> String {
        match self {
            Cell::Int(i) => i.to_string(),
            Cell::Fixed(v, d) => format!("{v:.d$}", d = *d),
            Cell::Text(t) => t.clone(),
            Cell::Empty => String::new(),
        }
    }

    fn right_aligned(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Fixed(..))
    }
}

/// The outcome of one rule.
#[derive(Clone, Debug)]
pub struct RuleResult {
    /// Rule id (`cuda_memcpy_async`).
    pub rule: &'static str,
    /// Display name.
    pub title: &'static str,
    /// What the rows mean and what to do.
    pub advice: &'static str,
    /// Said when there are no rows.
    pub no_problem: &'static str,
    /// Column headers.
    pub columns: Vec<&'static str>,
    /// Rows, at most [`ROW_LIMIT`].
    pub rows: Vec<Vec<Cell>>,
    /// Whether rows were cut at [`ROW_LIMIT`].
    pub truncated: bool,
    /// Why the rule could not run (missing tables), if it could not.
    pub skipped: Option<String>,
}

impl RuleResult {
    /// The rows as CSV (`nsys analyze --format csv`), header first.
    #[must_use]
    pub fn to_csv(&self) -> String {
        let mut out = self.columns.join(",");
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| csv_field(&c.render())).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    /// The table in nsys's console layout: centred headers, numbers right-aligned, text
    /// left-aligned, two spaces between columns, a leading space.
    #[must_use]
    pub fn table(&self) -> String {
        let rendered: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(Cell::render).collect())
            .collect();
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, h)| {
                rendered
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([h.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let header: Vec<String> = self
            .columns
            .iter()
            .zip(&widths)
            .map(|(h, &w)| {
                let pad = w - h.len();
                format!("{}{h}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
            })
            .collect();
        let _ = writeln!(out, " {}", header.join("  "));
        let dashes: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        let _ = writeln!(out, " {}", dashes.join("  "));
        for (row, cells) in rendered.iter().zip(&self.rows) {
            let parts: Vec<String> = row
                .iter()
                .zip(cells)
                .zip(&widths)
                .map(|((text, cell), &w)| {
                    // Padded by hand: `format!` widths stop at 65,535 and a name may not.
                    let pad = " ".repeat(w.saturating_sub(text.chars().count()));
                    if cell.right_aligned() {
                        format!("{pad}{text}")
                    } else {
                        format!("{text}{pad}")
                    }
                })
                .collect();
            let _ = writeln!(out, " {}", parts.join("  "));
        }
        out
    }
}

/// Runs the six rules. A query the export cannot answer (a damaged table, a view that
/// fails) is an error naming the problem, never an empty table that passes a CI job.
pub fn run_all(db: &Db) -> Result<Vec<RuleResult>, String> {
    // The GPU ops are read once for both rules that need them.
    let groups = gpu_groups(db)?;
    Ok(vec![
        memcpy_async(db)?,
        memcpy_sync(db)?,
        memset_sync(db)?,
        api_sync(db)?,
        gpu_gaps(&groups),
        gpu_time_util(&groups),
    ])
}

/// All results as console text, as `nsys analyze` prints them.
#[must_use]
pub fn render_text(results: &[RuleResult], file_name: &str) -> String {
    let mut out = String::new();
    for r in results {
        let _ = writeln!(
            out,
            "Processing [{file_name}] with [tracelens nsys-compatible rule {}]... \n",
            r.rule
        );
        if let Some(why) = &r.skipped {
            let _ = writeln!(
                out,
                "SKIPPED: {file_name} could not be analyzed because it does not contain {why}.\n"
            );
            continue;
        }
        let _ = writeln!(out, " ** {} ({}):\n", r.title, r.rule);
        if r.rows.is_empty() {
            let _ = writeln!(out, "{}\n", r.no_problem);
            continue;
        }
        let _ = writeln!(out, "{}\n", r.advice);
        out.push_str(&r.table());
        if r.truncated {
            let _ = writeln!(
                out,
                "\nOnly the top {ROW_LIMIT} results are displayed. More data may be available."
            );
        }
        out.push('\n');
    }
    out
}

fn result(
    rule: &'static str,
    title: &'static str,
    advice: &'static str,
    no_problem: &'static str,
    columns: Vec<&'static str>,
) -> RuleResult {
    RuleResult {
        rule,
        title,
        advice,
        no_problem,
        columns,
        rows: Vec::new(),
        truncated: false,
        skipped: None,
    }
}

fn limit(r: &mut RuleResult, mut rows: Vec<Vec<Cell>>) {
    r.truncated = rows.len() > ROW_LIMIT;
    rows.truncate(ROW_LIMIT);
    r.rows = rows;
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(i) => Some(*i),
        Value::Real(f) => Some(crate::db::real_to_int(*f)),
        _ => None,
    }
}

fn opt_int(v: &Value) -> Cell {
    int(v).map_or(Cell::Empty, Cell::Int)
}

/// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Text from the export for one table cell: control characters (line breaks, escape
/// sequences) would break the table or reach the terminal, so they become spaces.
fn cell_text(t: &str) -> String {
    t.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn text(v: &Value) -> Cell {
    match v {
        Value::Text(t) => Cell::Text(cell_text(t)),
        Value::Null => Cell::Empty,
        other => Cell::Text(format!("{other:?}")),
    }
}

/// The message for a failed rule query.
fn sql_problem(e: rusqlite::Error) -> String {
    format!(
        "cannot read the Nsight Systems export: {}",
        crate::db::describe(&e)
    )
}

fn query(db: &Db, sql: &str) -> Result<Vec<Vec<Value>>, String> {
    let mut stmt = db.conn.prepare(sql).map_err(sql_problem)?;
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |row| {
            (0..n)
                .map(|i| row.get::<_, Value>(i))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(sql_problem)?;
    rows.collect::<Result<_, _>>().map_err(sql_problem)
}

/// Runs `sql` and calls `each` with the first `N` columns of every row as integers (0 where
/// NULL or not a number), streaming: nothing is allocated per row.
fn for_each_int_row<const N: usize>(
    db: &Db,
    sql: &str,
    mut each: impl FnMut([i64; N]),
) -> Result<(), String> {
    let mut stmt = db.conn.prepare(sql).map_err(sql_problem)?;
    let mut rows = stmt.query([]).map_err(sql_problem)?;
    while let Some(row) = rows.next().map_err(sql_problem)? {
        let mut cols = [0; N];
        for (i, col) in cols.iter_mut().enumerate() {
            *col = match row.get_ref(i) {
                Ok(ValueRef::Integer(v)) => v,
                Ok(ValueRef::Real(f)) => crate::db::real_to_int(f),
                _ => 0,
            };
        }
        each(cols);
    }
    Ok(())
}

fn missing(db: &Db, tables: &[&str]) -> Option<String> {
    let absent: Vec<&str> = tables.iter().copied().filter(|t| !db.has(t)).collect();
    (!absent.is_empty()).then(|| {
        let noun = if absent.len() == 1 { "table" } else { "tables" };
        format!("the required CUDA data (no {} {noun})", absent.join(", "))
    })
}

const MEMCPY_COLUMNS: [&str; 11] = [
    "Duration (ns)",
    "Start (ns)",
    "Src Kind",
    "Dst Kind",
    "Bytes (MB)",
    "PID",
    "Device ID",
    "Context ID",
    "Green Context ID",
    "Stream ID",
    "API Name",
];

/// Rows of the memory-op `table` (memcpy or memset) behind API calls matching `condition`
/// (SQL over `m` and `api`): duration, start, one label per `kind_columns` entry
/// (`ENUM_CUDA_MEM_KIND`), bytes in MB, PID, device, context, green context, stream, API.
fn memory_op_rows(
    db: &Db,
    table: &str,
    kind_columns: &[&str],
    condition: &str,
) -> Result<Vec<Vec<Cell>>, String> {
    let labelled = db.has("ENUM_CUDA_MEM_KIND");
    let kinds: Vec<String> = kind_columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if labelled {
                format!("coalesce(k{i}.label, CAST(m.{c} AS TEXT))")
            } else {
                format!("CAST(m.{c} AS TEXT)")
            }
        })
        .collect();
    let joins: String = if labelled {
        kind_columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!(" LEFT JOIN ENUM_CUDA_MEM_KIND k{i} ON k{i}.id = m.{c}"))
            .collect()
    } else {
        String::new()
    };
    // 0 means "no green context"; nsys leaves the cell blank.
    let green = if db.has_col(table, "greenContextId") {
        "nullif(m.greenContextId, 0)"
    } else {
        "NULL"
    };
    let sql = format!(
        "SELECT m.end - m.start AS duration, m.start, {kinds}, m.bytes, m.globalPid, m.deviceId, \
         m.contextId, {green}, m.streamId, api.value \
         FROM {table} m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = m.correlationId \
         JOIN StringIds api ON api.id = r.nameId{joins} \
         WHERE {condition} ORDER BY duration DESC, m.start ASC",
        kinds = kinds.join(", "),
    );
    let n = kind_columns.len();
    Ok(query(db, &sql)?
        .iter()
        .map(|r| {
            let mut row = vec![opt_int(&r[0]), opt_int(&r[1])];
            row.extend(r[2..2 + n].iter().map(text));
            let rest = &r[2 + n..];
            row.extend([
                Cell::Fixed(int(&rest[0]).unwrap_or(0) as f64 / 1e6, 3),
                int(&rest[1]).map_or(Cell::Empty, |g| Cell::Int(pid_of(g))),
                opt_int(&rest[2]),
                opt_int(&rest[3]),
                opt_int(&rest[4]),
                opt_int(&rest[5]),
                text(&rest[6]),
            ]);
            row
        })
        .collect())
}

/// The memcpy rows behind API calls matching `condition`.
fn memcpy_rows(db: &Db, condition: &str) -> Result<Vec<Vec<Cell>>, String> {
    memory_op_rows(
        db,
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        &["srcKind", "dstKind"],
        condition,
    )
}

fn memcpy_async(db: &Db) -> Result<RuleResult, String> {
    let mut r = result(
        "cuda_memcpy_async",
        "CUDA Async Memcpy with Pageable Memory",
        "These \"async\" copies use pageable host memory, so the driver stages them and they run\nsynchronously: the host blocks and the copy cannot overlap compute.\n\nSuggestion: use pinned memory (pin_memory=True / cudaHostAlloc) for these buffers.",
        "No asynchronous memcpy used pageable memory.",
        MEMCPY_COLUMNS.to_vec(),
    );
    r.skipped = missing(
        db,
        &[
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "StringIds",
        ],
    );
    if r.skipped.is_none() {
        let rows = memcpy_rows(
            db,
            "(m.srcKind = 0 OR m.dstKind = 0) AND api.value LIKE 'cudaMemcpy%Async%'",
        )?;
        limit(&mut r, rows);
    }
    Ok(r)
}

fn memcpy_sync(db: &Db) -> Result<RuleResult, String> {
    let mut r = result(
        "cuda_memcpy_sync",
        "CUDA Synchronous Memcpy",
        "These synchronous copies block the host until they finish (host-to-device copies of\n64 KB or less are not listed).\n\nSuggestion: use cudaMemcpy*Async() on a stream, with pinned host memory.",
        "No synchronous memcpy found.",
        MEMCPY_COLUMNS.to_vec(),
    );
    r.skipped = missing(
        db,
        &[
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "StringIds",
        ],
    );
    if r.skipped.is_none() {
        let m = "CUPTI_ACTIVITY_KIND_MEMCPY";
        let same_device = if db.has_col(m, "srcDeviceId") && db.has_col(m, "dstDeviceId") {
            "AND NOT (m.srcDeviceId IS NOT NULL AND m.srcDeviceId = m.dstDeviceId)"
        } else {
            ""
        };
        let cond = format!(
            "api.value LIKE 'cudaMemcpy%' AND api.value NOT LIKE '%Async%' \
             AND NOT (m.bytes <= {SMALL_HTOD_BYTES} AND m.copyKind = 1) {same_device}"
        );
        let rows = memcpy_rows(db, &cond)?;
        limit(&mut r, rows);
    }
    Ok(r)
}

fn memset_sync(db: &Db) -> Result<RuleResult, String> {
    let mut r = result(
        "cuda_memset_sync",
        "CUDA Synchronous Memset",
        "These synchronous memsets on pinned or managed memory block the host.\n\nSuggestion: use cudaMemsetAsync() on a stream.",
        "No synchronous memset on pinned or managed memory found.",
        vec!["Duration (ns)", "Start (ns)", "Memory Kind", "Bytes (MB)", "PID", "Device ID", "Context ID", "Green Context ID", "Stream ID", "API Name"],
    );
    r.skipped = missing(
        db,
        &[
            "CUPTI_ACTIVITY_KIND_MEMSET",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "StringIds",
        ],
    );
    if r.skipped.is_some() {
        return Ok(r);
    }
    let rows = memory_op_rows(
        db,
        "CUPTI_ACTIVITY_KIND_MEMSET",
        &["memKind"],
        "api.value LIKE 'cudaMemset%' AND api.value NOT LIKE '%async%' AND m.memKind IN (1, 4)",
    )?;
    limit(&mut r, rows);
    Ok(r)
}

fn api_sync(db: &Db) -> Result<RuleResult, String> {
    let mut r = result(
        "cuda_api_sync",
        "CUDA Synchronization APIs",
        "These calls block the host until all issued CUDA work is complete.\n\nSuggestions:\n   1. Synchronize only where the host needs a result.\n   2. Order GPU work with events and stream waits instead (cudaStreamWaitEvent).",
        "No device or stream synchronization call found.",
        vec!["Duration (ns)", "Start (ns)", "PID", "TID", "API Name"],
    );
    r.skipped = missing(db, &["CUPTI_ACTIVITY_KIND_RUNTIME", "StringIds"]);
    if r.skipped.is_some() {
        return Ok(r);
    }
    let sql = "SELECT r.end - r.start AS duration, r.start, r.globalTid, api.value \
               FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds api ON api.id = r.nameId \
               WHERE api.value LIKE 'cudaDeviceSynchronize%' OR api.value LIKE 'cudaStreamSynchronize%' \
               ORDER BY duration DESC, r.start ASC";
    let rows = query(db, sql)?
        .iter()
        .map(|r| {
            let g = int(&r[2]).unwrap_or(0);
            vec![
                opt_int(&r[0]),
                opt_int(&r[1]),
                Cell::Int(pid_of(g)),
                Cell::Int(tid_of(g)),
                text(&r[3]),
            ]
        })
        .collect();
    limit(&mut r, rows);
    Ok(r)
}

/// (pid, device, context): the unit the gap and utilization rules report on.
type GroupKey = (i64, i64, i64);
/// One group's GPU ops (and overhead) as (start, end).
type GpuGroup = (GroupKey, Vec<(i64, i64)>);
/// A low-utilization region: (mean utilization, duration, start, group).
type Region = (f64, i64, i64, GroupKey);

/// GPU ops (start > 0) grouped by (pid, device, context), plus profiler overhead of the pid
/// inside each group's span: `(group, [(start, end)])`, groups sorted.
fn gpu_groups(db: &Db) -> Result<Vec<GpuGroup>, String> {
    let mut groups: std::collections::BTreeMap<(i64, i64, i64), Vec<(i64, i64)>> =
        Default::default();
    for t in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        if !db.has(t) {
            continue;
        }
        let sql =
            format!("SELECT globalPid, deviceId, contextId, start, end FROM {t} WHERE start > 0");
        for_each_int_row(db, &sql, |[gpid, device, context, start, end]| {
            groups
                .entry((pid_of(gpid), device, context))
                .or_default()
                .push((start, end));
        })?;
    }
    if db.has("PROFILER_OVERHEAD") {
        let mut overhead: Vec<(i64, i64, i64)> = Vec::new();
        for_each_int_row(
            db,
            "SELECT globalTid, start, end FROM PROFILER_OVERHEAD",
            |[gtid, start, end]| overhead.push((pid_of(gtid), start, end)),
        )?;
        for (key, ops) in groups.iter_mut() {
            let first = ops.iter().map(|o| o.0).min().unwrap_or(0);
            let last = ops.iter().map(|o| o.1).max().unwrap_or(0);
            ops.extend(
                overhead
                    .iter()
                    .filter(|o| o.0 == key.0 && o.1 >= first && o.2 <= last)
                    .map(|o| (o.1, o.2)),
            );
        }
    }
    Ok(groups.into_iter().collect())
}

fn gpu_gaps(groups: &[GpuGroup]) -> RuleResult {
    let mut r = result(
        "gpu_gaps",
        "GPU Gaps",
        "The GPU sat idle for more than 500 ms in these ranges.\n\nSuggestions:\n   1. Run `tracelens analyze` without --rules to see what the CPU was doing in each gap.\n   2. Add NVTX ranges (torch.autograd.profiler.emit_nvtx) to attribute CPU time.",
        "No GPU gap longer than 500 ms.",
        vec!["Row#", "Duration (ns)", "Start (ns)", "PID", "Device ID", "Context ID"],
    );
    let mut gaps: Vec<(i64, i64, (i64, i64, i64))> = Vec::new();
    for &(key, ref ops) in groups {
        let mut starts: Vec<i64> = ops.iter().map(|o| o.0).collect();
        let mut ends: Vec<i64> = ops.iter().map(|o| o.1).collect();
        starts.sort_unstable();
        ends.sort_unstable();
        for j in 0..starts.len().saturating_sub(1) {
            let gap = starts[j + 1].saturating_sub(ends[j]);
            if gap > GAP_THRESHOLD_NS {
                gaps.push((gap, ends[j], key));
            }
        }
    }
    gaps.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let rows = gaps
        .iter()
        .enumerate()
        .map(|(i, &(d, s, (pid, dev, ctx)))| {
            vec![
                Cell::Int(i64::try_from(i + 1).unwrap_or(i64::MAX)),
                Cell::Int(d),
                Cell::Int(s),
                Cell::Int(pid),
                Cell::Int(dev),
                Cell::Int(ctx),
            ]
        })
        .collect();
    limit(&mut r, rows);
    r
}

fn gpu_time_util(groups: &[GpuGroup]) -> RuleResult {
    let mut r = result(
        "gpu_time_util",
        "GPU Time Utilization",
        "In these ranges the GPU was busy less than 50 % of the time (time summed over streams).\n\nSuggestions:\n   1. Run `tracelens analyze` without --rules to see why the GPU waited.\n   2. Add NVTX ranges (torch.autograd.profiler.emit_nvtx) to attribute CPU time.",
        "No time range has a GPU utilization below 50 %.",
        vec!["Row#", "In-Use (%)", "Duration (ns)", "Start (ns)", "PID", "Device ID", "Context ID"],
    );
    let mut regions: Vec<Region> = Vec::new();
    for &(key, ref ops) in groups {
        let first = ops.iter().map(|o| o.0).min().unwrap_or(0);
        let last = ops.iter().map(|o| o.1).max().unwrap_or(0);
        let span = last.saturating_sub(first);
        if span <= 0 {
            continue;
        }
        let size = (span + UTIL_CHUNKS - 1) / UTIL_CHUNKS;
        let mut current: Option<(f64, i64, i64)> = None; // (weighted util sum, start, duration)
        let flush = |current: &mut Option<(f64, i64, i64)>, regions: &mut Vec<_>| {
            if let Some((weighted, start, dur)) = current.take() {
                regions.push((weighted / dur as f64, dur, start, key));
            }
        };
        for i in 0..UTIL_CHUNKS {
            let c0 = first.saturating_add(i.saturating_mul(size));
            if c0 >= last {
                break;
            }
            let c1 = c0.saturating_add(size).min(last);
            let busy: i64 = ops
                .iter()
                .map(|&(s, e)| e.min(c1).saturating_sub(s.max(c0)).max(0))
                .fold(0i64, i64::saturating_add);
            let util = busy as f64 * 100.0 / (c1 - c0) as f64;
            if util < UTIL_THRESHOLD_PERCENT {
                let entry = current.get_or_insert((0.0, c0, 0));
                entry.0 += util * (c1 - c0) as f64;
                entry.2 += c1 - c0;
            } else {
                flush(&mut current, &mut regions);
            }
        }
        flush(&mut current, &mut regions);
    }
    regions.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    let rows = regions
        .iter()
        .enumerate()
        .map(|(i, &(u, d, s, (pid, dev, ctx)))| {
            vec![
                Cell::Int(i64::try_from(i + 1).unwrap_or(i64::MAX)),
                Cell::Fixed((u * 10.0).round() / 10.0, 1),
                Cell::Int(d),
                Cell::Int(s),
                Cell::Int(pid),
                Cell::Int(dev),
                Cell::Int(ctx),
            ]
        })
        .collect();
    limit(&mut r, rows);
    r
}
