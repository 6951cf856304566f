//! Bytes drive a generated Nsight Systems export (which tables exist, their rows, extreme
//! values, strings with any bytes), then the importer and the nsys-compatible rules run on
//! it. Nothing may panic; a query error must come back as an error. The bytes may also give
//! the export SQL of its own (issue 40): a VIRTUAL generated column with a costly
//! expression, a trigger, a view in place of a table: each is refused or read within the
//! progress budget, never run unbounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rusqlite::{params, Connection};

const DDL: &str = "
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, syncType INTEGER, eventId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
";

/// Reads fuzz bytes as a stream of small numbers and occasional extremes.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn int(&mut self) -> Option<i64> {
        Some(match self.byte()? {
            0 => i64::MAX,
            1 => i64::MIN,
            2 => -1,
            b => (b as i64) * 1_000 + self.byte()? as i64,
        })
    }
    fn text(&mut self) -> Option<String> {
        let n = self.byte()? as usize % 24;
        let take = n.min(self.0.len());
        let s = String::from_utf8_lossy(&self.0[..take]).into_owned();
        self.0 = &self.0[take..];
        Some(s)
    }
}

fn fill(conn: &Connection, b: &mut Bytes) -> Option<()> {
    let mut next_string = 1i64;
    while let Some(op) = b.byte() {
        match op % 10 {
            0 => {
                let s = b.text()?;
                conn.execute(
                    "INSERT OR IGNORE INTO StringIds VALUES (?1, ?2)",
                    params![next_string, s],
                )
                .ok()?;
                next_string += 1;
            }
            1 => {
                conn.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, 0, ?3, ?4, ?5, 0, NULL)",
                    params![b.int()?, b.int()?, b.int()?, b.int()?, b.int()? % 8],
                )
                .ok()?;
            }
            2 => {
                conn.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?7)",
                    params![b.int()?, b.int()?, b.int()? % 4, b.int()? % 4, b.int()?, b.int()?, b.int()? % 8],
                )
                .ok()?;
            }
            3 => {
                conn.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?1, ?2, 0, 1, 7, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![b.int()?, b.int()?, b.int()?, b.int()?, b.int()?, b.int()? % 12, b.int()? % 5, b.int()? % 5],
                )
                .ok()?;
            }
            4 => {
                conn.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?1, ?2, 0, 1, 7, ?3, ?4, ?5, 0)",
                    params![b.int()?, b.int()?, b.int()?, b.int()?, b.int()? % 5],
                )
                .ok()?;
            }
            5 => {
                conn.execute(
                    "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, 59, ?3, ?4)",
                    params![b.int()?, b.int()?, b.text()?, b.int()?],
                )
                .ok()?;
            }
            7 => {
                // A generated column evaluated on every row read.
                let t = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "StringIds"]
                    [b.byte()? as usize % 3];
                let n = i64::from(b.byte()?) * 100_000;
                conn.execute_batch(&format!(
                    "ALTER TABLE {t} ADD COLUMN g{n} INTEGER GENERATED ALWAYS AS (length(hex(zeroblob({n})))) VIRTUAL"
                ))
                .ok()?;
            }
            8 => {
                let t = ["CUPTI_ACTIVITY_KIND_KERNEL", "StringIds", "META_DATA_EXPORT"]
                    [b.byte()? as usize % 3];
                conn.execute_batch(&format!(
                    "CREATE TRIGGER IF NOT EXISTS tr_{t} AFTER DELETE ON {t} BEGIN SELECT 1; END"
                ))
                .ok()?;
            }
            9 => {
                // A view in place of the kernel table, costly to compute.
                conn.execute_batch(
                    "DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_KERNEL; CREATE VIEW IF NOT EXISTS CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000000) SELECT x AS start, x + 1 AS end, 0 AS deviceId, 1 AS contextId, 7 AS streamId, x AS correlationId, 1 AS globalPid, 1 AS demangledName, 1 AS shortName FROM c",
                )
                .ok()?;
            }
            _ => {
                let t = ["CUPTI_ACTIVITY_KIND_MEMCPY", "NVTX_EVENTS", "StringIds"]
                    [b.byte()? as usize % 3];
                conn.execute_batch(&format!("DROP TABLE IF EXISTS {t}"))
                    .ok()?;
            }
        }
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    let path = std::path::PathBuf::from(format!(
        "{dir}/tracelens-fuzz-{}.sqlite",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(DDL).unwrap();
        conn.execute_batch(
            "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.7.2')",
        )
        .unwrap();
        let _ = fill(&conn, &mut Bytes(data));
    }
    if let Ok(trace) = tracelens_nsys::import_file(&path) {
        let report = tracelens_report::Report::build(&trace);
        let _ = tracelens_report::render_text(&report, false);
        let _ = tracelens_report::render_json(&report);
    }
    if let Ok(db) = tracelens_nsys::open(&path) {
        if let Ok(results) = tracelens_nsys::rules::run_all(&db) {
            let _ = tracelens_nsys::rules::render_text(&results, "fuzz.sqlite");
        }
    }
    let _ = std::fs::remove_file(&path);
});
