//! A read-only connection to an export, and what its schema holds: exports are lazy (a table
//! without data is absent) and columns drift between versions, so everything is probed.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};
use rustc_hash::FxHashMap;
use std::path::Path;

/// An open export with its tables and their columns.
pub struct Db {
    /// The connection (read-only, immutable: no lock, journal or write ever touches the file).
    pub conn: Connection,
    tables: FxHashMap<String, Vec<String>>,
    /// Views: never read (a view runs arbitrary SQL), but named when one stands where a
    /// table should.
    views: Vec<String>,
    /// Tables refused, with why: virtual tables (a module runs on every read) and tables with
    /// generated or hidden columns (SQL evaluated on every row). Nsight never writes them.
    refused: Vec<(String, &'static str)>,
    /// Triggers in the file: never run by a read-only connection, but named.
    triggers: usize,
    /// A write-ahead log beside the file (`FILE-wal`) and its size: immutable mode does not
    /// read it, so rows in it are missing.
    pub wal: Option<(std::path::PathBuf, u64)>,
}

impl Db {
    /// Opens `path` read-only and reads its schema.
    pub fn open(path: &Path) -> rusqlite::Result<Db> {
        let mut uri = String::from("file:");
        for c in path.to_string_lossy().chars() {
            match c {
                '?' => uri.push_str("%3f"),
                '#' => uri.push_str("%23"),
                '%' => uri.push_str("%25"),
                c => uri.push(c),
            }
        }
        uri.push_str("?mode=ro&immutable=1");
        let conn = Connection::open_with_flags(
            &uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // No memory map: SQLite's page reads. A map of the whole file made every page read
        // resident (RSS past 2.4 GB while reading a 1 GB export, against 1.36 GB without)
        // and read no faster once the analyses stopped dominating (12.1 and 13.4 s against
        // 11.7 and 13.0 s on that export, alternating runs).
        let _ = conn.pragma_update(None, "mmap_size", 0i64);
        limit_work(&conn, path);
        let mut refused = Vec::new();
        let mut triggers = 0;
        let (names, views) = {
            let mut stmt = conn.prepare(
                "SELECT name, type, coalesce(sql, '') FROM sqlite_master WHERE type IN ('table', 'view', 'trigger')",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?;
            let mut t = Vec::new();
            let mut v = Vec::new();
            for row in rows {
                let (name, kind, sql) = row?;
                match kind.as_str() {
                    "view" => v.push(name),
                    "trigger" => triggers += 1,
                    _ if is_virtual_table(&sql) => {
                        refused.push((name, "is a virtual table (its module runs on every read)"));
                    }
                    _ => t.push(name),
                }
            }
            (t, v)
        };
        let mut wal_path = path.as_os_str().to_owned();
        wal_path.push("-wal");
        let wal_path = std::path::PathBuf::from(wal_path);
        let wal = std::fs::metadata(&wal_path)
            .ok()
            .filter(|m| m.is_file() && m.len() > 0)
            .map(|m| (wal_path, m.len()));
        let mut tables = FxHashMap::default();
        for name in names {
            // `table_xinfo`, not `table_info`: the latter leaves out generated and hidden
            // columns, whose expressions run on every row read.
            let cols: Vec<(String, i64)> = {
                let mut stmt = conn.prepare(&format!(
                    "PRAGMA table_xinfo(\"{}\")",
                    name.replace('"', "\"\"")
                ))?;
                let rows = stmt.query_map([], |r| {
                    Ok((
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<i64>>(6)?.unwrap_or(0),
                    ))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            if cols.iter().any(|(_, hidden)| *hidden != 0) {
                refused.push((
                    name,
                    "has generated or hidden columns (their SQL runs on every row read)",
                ));
                continue;
            }
            tables.insert(name, cols.into_iter().map(|(c, _)| c).collect());
        }
        Ok(Db {
            conn,
            tables,
            views,
            refused,
            triggers,
            wal,
        })
    }

    /// Of `names`, those that are views rather than tables in this export.
    pub fn views_among<'a>(&self, names: &[&'a str]) -> Vec<&'a str> {
        names
            .iter()
            .copied()
            .filter(|n| self.views.iter().any(|v| v == n))
            .collect()
    }

    /// Warnings about what the file holds but is not read: a write-ahead log beside it, and
    /// views standing where the tables tracelens reads should be.
    pub fn unread_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((wal, bytes)) = &self.wal {
            out.push(format!(
                "{} ({bytes} bytes) beside the export was not read: rows written since the last checkpoint are missing (checkpoint it with `sqlite3 FILE 'PRAGMA wal_checkpoint'`, or re-export)",
                wal.display()
            ));
        }
        let mut wanted: Vec<&str> = EVENT_TABLES.to_vec();
        wanted.extend(["StringIds", "TARGET_INFO_GPU", "ENUM_CUDA_MEM_KIND"]);
        for v in self.views_among(&wanted) {
            out.push(format!(
                "{v} is a view, not a table, in this export: it was not read (a view runs arbitrary SQL)"
            ));
        }
        for (table, why) in &self.refused {
            out.push(format!(
                "{table} was not read: it {why}, which Nsight Systems never writes"
            ));
        }
        if self.triggers > 0 {
            out.push(format!(
                "the export holds {} triggers: none ran (tracelens only reads), but Nsight Systems never writes one",
                self.triggers
            ));
        }
        out
    }

    /// Whether the export has `table`.
    pub fn has(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    /// Whether a table or view's name starts with `prefix` (tells other tools' databases).
    pub fn has_name_starting(&self, prefix: &str) -> bool {
        self.tables
            .keys()
            .chain(self.views.iter())
            .any(|n| n.starts_with(prefix))
    }

    /// Whether `table` has `column`.
    pub fn has_col(&self, table: &str, column: &str) -> bool {
        self.tables
            .get(table)
            .is_some_and(|c| c.iter().any(|x| x == column))
    }

    /// `column` for a SELECT list, or `NULL` when the table lacks it.
    pub fn col(&self, table: &str, column: &str) -> String {
        if self.has_col(table, column) {
            format!("\"{column}\"")
        } else {
            "NULL".to_string()
        }
    }

    /// Number of rows of `table` (0 when absent).
    pub fn count(&self, table: &str) -> u64 {
        if !self.has(table) {
            return 0;
        }
        self.conn
            .query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| u64::try_from(n).unwrap_or(0))
            .unwrap_or(0)
    }

    /// `id → label` of an `ENUM_*` table (empty when absent).
    pub fn enum_labels(&self, table: &str) -> FxHashMap<i64, String> {
        let mut out = FxHashMap::default();
        if !self.has(table) {
            return out;
        }
        if let Ok(mut stmt) = self
            .conn
            .prepare(&format!("SELECT id, label FROM \"{table}\""))
        {
            if let Ok(rows) =
                stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            {
                out.extend(rows.flatten());
            }
        }
        out
    }

    /// `name → value` of the export metadata (`META_DATA_EXPORT`, or `EXPORT_META_DATA` before 2023.4).
    pub fn export_meta(&self) -> Vec<(String, String)> {
        self.name_values(if self.has("META_DATA_EXPORT") {
            "META_DATA_EXPORT"
        } else {
            "EXPORT_META_DATA"
        })
    }

    /// All `(name, value)` rows of a name/value table.
    pub fn name_values(&self, table: &str) -> Vec<(String, String)> {
        if !self.has(table) {
            return Vec::new();
        }
        let Ok(mut stmt) = self
            .conn
            .prepare(&format!("SELECT name, value FROM \"{table}\""))
        else {
            return Vec::new();
        };
        stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            ))
        })
        .map(|rows| rows.flatten().collect())
        .unwrap_or_default()
    }
}

/// The pid packed in a `globalTid`/`globalPid`: `(id >> 24) & 0xFFFFFF`.
#[must_use]
pub fn pid_of(global: i64) -> i64 {
    (global >> 24) & 0xFF_FFFF
}

/// The tid packed in a `globalTid`: `id & 0xFFFFFF`.
#[must_use]
pub fn tid_of(global: i64) -> i64 {
    global & 0xFF_FFFF
}

/// A SQLite `REAL` where an integer is expected (exports store some ids and times as
/// floats): truncated toward zero, saturating at the `i64` range, NaN as 0.
#[expect(
    clippy::cast_possible_truncation,
    reason = "Rust's float-to-int cast saturates, which is the intent"
)]
pub(crate) fn real_to_int(f: f64) -> i64 {
    f as i64
}

/// The format id in [`tracelens_model::SourceInfo::format`].
pub const FORMAT: &str = "nsys_sqlite";

/// The event tables the importer reads, one row per span.
pub const EVENT_TABLES: [&str; 7] = [
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "NVTX_EVENTS",
    "OSRT_API",
];

/// Column `i` as an integer (exports store numbers as text in places).
pub(crate) fn int(row: &Row, i: usize) -> Option<i64> {
    match row.get_ref(i).ok()? {
        ValueRef::Integer(v) => Some(v),
        ValueRef::Real(f) => Some(real_to_int(f)),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// Column `i` as text.
pub(crate) fn text<'a>(row: &'a Row, i: usize) -> Option<&'a str> {
    match row.get_ref(i).ok()? {
        ValueRef::Text(t) => std::str::from_utf8(t).ok(),
        _ => None,
    }
}

/// The longest string or blob SQLite will make for this connection: no value an export holds
/// comes near it, and an expression cannot build a larger one.
const MAX_VALUE_BYTES: i32 = 64 << 20;

/// SQLite virtual machine steps allowed per byte of the file, and at least: reading a real
/// export whole takes under 0.5 steps per byte on every export of the corpus (0.23 at most,
/// counted with the progress handler), so 100 per byte stops only an export crafted to make
/// SQLite compute (an expression evaluated per row, a huge join) — within about a second
/// for a small file.
const WORK_STEPS_PER_BYTE: u64 = 100;
const MIN_WORK_STEPS: u64 = 200_000_000;
/// Steps between two calls of the progress handler.
const STEPS_PER_CHECK: i32 = 100_000;

/// Bounds what one connection may make SQLite do: the length of any value, and the virtual
/// machine steps of all its statements together (in proportion to the file's size). A
/// statement past the budget fails with SQLite's "interrupted", which [`describe`] explains.
fn limit_work(conn: &Connection, path: &Path) {
    let _ = conn.set_limit(
        rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
        MAX_VALUE_BYTES,
    );
    let file_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let budget_steps = file_bytes
        .saturating_mul(WORK_STEPS_PER_BYTE)
        .max(MIN_WORK_STEPS);
    let checks_allowed = budget_steps / u64::from(STEPS_PER_CHECK.unsigned_abs());
    let mut checks = 0_u64;
    conn.progress_handler(
        STEPS_PER_CHECK,
        Some(move || {
            checks += 1;
            checks > checks_allowed
        }),
    );
}

/// Whether a `CREATE TABLE` statement makes a virtual table.
fn is_virtual_table(sql: &str) -> bool {
    let words: Vec<String> = sql
        .split_whitespace()
        .take(3)
        .map(str::to_ascii_uppercase)
        .collect();
    words.len() == 3 && words[0] == "CREATE" && words[1] == "VIRTUAL" && words[2] == "TABLE"
}

/// A SQLite error in words a user can act on: an interrupted statement ran past the work
/// budget of [`limit_work`], a value past [`MAX_VALUE_BYTES`] is too big.
pub fn describe(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::OperationInterrupted) => format!(
            "SQLite ran past its work budget for a file of this size ({WORK_STEPS_PER_BYTE} steps per byte): the export makes it compute, which Nsight Systems exports never do"
        ),
        Some(rusqlite::ErrorCode::TooBig) => format!(
            "a value in the export is larger than {} MB, which Nsight Systems exports never hold",
            MAX_VALUE_BYTES >> 20
        ),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_ids_unpack() {
        let g = (1i64 << 48) | (26601 << 24) | 26605;
        assert_eq!(pid_of(g), 26601);
        assert_eq!(tid_of(g), 26605);
    }

    /// A small file that makes SQLite compute is stopped by the work budget, and a value
    /// larger than the length limit cannot be built; both errors say why in words.
    #[test]
    fn sqlite_work_and_value_sizes_are_bounded() {
        let path =
            std::env::temp_dir().join(format!("tracelens-db-budget-{}.sqlite", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
        let db = Db::open(&path).unwrap();
        let spin = db.conn.query_row(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
            [],
            |r| r.get::<_, i64>(0),
        );
        let e = spin.expect_err("an endless query is stopped");
        assert!(describe(&e).contains("work budget"), "{}", describe(&e));
        let db = Db::open(&path).unwrap();
        let big = db
            .conn
            .query_row("SELECT length(zeroblob(100000000))", [], |r| {
                r.get::<_, i64>(0)
            });
        let e = big.expect_err("a 100 MB value is refused");
        assert!(
            describe(&e).contains("larger than 64 MB"),
            "{}",
            describe(&e)
        );
        // A real read stays far inside both.
        assert_eq!(db.count("t"), 1);
        std::fs::remove_file(&path).unwrap();
    }
}
