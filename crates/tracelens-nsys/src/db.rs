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
        let (names, views) = {
            let mut stmt = conn
                .prepare("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')")?;
            let rows =
                stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            let all: Vec<(String, String)> = rows.collect::<Result<_, _>>()?;
            let (t, v): (Vec<_>, Vec<_>) = all.into_iter().partition(|(_, kind)| kind == "table");
            (
                t.into_iter().map(|(n, _)| n).collect::<Vec<_>>(),
                v.into_iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
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
            let cols: Vec<String> = {
                let mut stmt = conn.prepare(&format!(
                    "PRAGMA table_info(\"{}\")",
                    name.replace('"', "\"\"")
                ))?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(1))?;
                rows.collect::<Result<_, _>>()?
            };
            tables.insert(name, cols);
        }
        Ok(Db {
            conn,
            tables,
            views,
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

/// The event tables the importer reads, one row per span (row counts size the model up
/// front).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_ids_unpack() {
        let g = (1i64 << 48) | (26601 << 24) | 26605;
        assert_eq!(pid_of(g), 26601);
        assert_eq!(tid_of(g), 26605);
    }
}
