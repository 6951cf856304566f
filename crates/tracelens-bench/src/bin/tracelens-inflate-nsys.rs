//! `tracelens-inflate-nsys SRC DST TARGET_MB`: copies an Nsight Systems export and doubles its
//! event rows (runtime calls, GPU ops, NVTX, OS runtime), each copy shifted past the previous
//! one in time and in correlation ids, until the file reaches TARGET_MB; the last copy takes
//! only the rows of the first part of the time span that the size still needs, so the file
//! lands within a few percent of TARGET_MB. For load benchmarks.

use rusqlite::Connection;
use tracelens_nsys::EVENT_TABLES;

fn main() -> rusqlite::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(src), Some(dst), Some(target)) = (
        args.first(),
        args.get(1),
        args.get(2).and_then(|t| t.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: tracelens-inflate-nsys SRC DST TARGET_MB");
        std::process::exit(2);
    };
    std::fs::copy(src, dst).expect("copy the export");
    let conn = Connection::open(dst)?;
    conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")?;
    let tables: Vec<String> = EVENT_TABLES
        .iter()
        .filter(|t| {
            conn.query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = ?1",
                [t],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_or(0)
                > 0
        })
        .map(|t| t.to_string())
        .collect();
    loop {
        let size = std::fs::metadata(dst).map(|m| m.len()).unwrap_or(0);
        if size >= target * 1_000_000 {
            eprintln!("{dst}: {:.0} MB", size as f64 / 1e6);
            return Ok(());
        }
        let span: i64 = conn.query_row(
            "SELECT max(end) - min(start) + 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME",
            [],
            |r| r.get(0),
        )?;
        let corr: i64 = conn.query_row(
            "SELECT max(correlationId) + 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME",
            [],
            |r| r.get(0),
        )?;
        // The share of the rows still needed: the last copy stops part way through time.
        let needed = target * 1_000_000 - size;
        let filter = if needed < size {
            let first: i64 = conn.query_row(
                "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                [],
                |r| r.get(0),
            )?;
            let part = i128::from(span) * i128::from(needed) / i128::from(size);
            format!(
                " WHERE start < {}",
                first.saturating_add(i64::try_from(part).unwrap_or(span))
            )
        } else {
            String::new()
        };
        for t in &tables {
            let cols: Vec<String> = {
                let mut stmt = conn.prepare(&format!("PRAGMA table_info({t})"))?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(1))?;
                rows.collect::<Result<_, _>>()?
            };
            let select: Vec<String> = cols
                .iter()
                .map(|c| match c.as_str() {
                    "start" | "end" => format!("\"{c}\" + {span}"),
                    "correlationId" => format!("\"{c}\" + {corr}"),
                    _ => format!("\"{c}\""),
                })
                .collect();
            conn.execute_batch(&format!(
                "INSERT INTO {t} SELECT {} FROM {t}{filter}",
                select.join(", ")
            ))?;
        }
    }
}
