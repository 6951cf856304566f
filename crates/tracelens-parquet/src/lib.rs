//! The map/reduce path for jobs of many ranks: `tracelens analyze TRACE --format parquet -o
//! out/rank-N/` writes one rank's summary as Parquet tables ([`write_rank`]), and
//! `tracelens merge out/*/` reads them back ([`read_rank`]) to build the cross-rank report
//! without the traces. The tables (documented in docs/parquet.md) are also what DuckDB,
//! Spark or pandas query directly.
//!
//! | table | one row per | columns |
//! |---|---|---|
//! | `rank.parquet` | rank | rank, world_size, file, step_count, step_ns, step_stddev_ns, gpu_busy_percent, gpu_idle_per_step_ns, verdict, results_json |
//! | `steps.parquet` | profiled step | rank, step, dur_ns |
//! | `collectives.parquet` | collective kernel | rank, idx, name, start_ns, dur_ns |
//! | `findings.parquet` | finding | rank, key, kind, title, win_per_step_ns, win_percent, count, call_site |
//! | `idle.parquet` | idle cause | rank, cause, per_step_ns, percent_of_step |
//!
//! Unknown values are `-1` (numbers) or `""` (text); every column is required.
#![deny(missing_docs)]

use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::{Row, RowAccessor};
use parquet::schema::parser::parse_message_type;
use std::path::Path;
use std::sync::Arc;
use tracelens_results::job::Collective;
use tracelens_results::{RankSummary, Results};

/// One column of a table.
enum Column {
    I64(Vec<i64>),
    F64(Vec<f64>),
    Text(Vec<String>),
}

/// A count as Parquet's INT64 (saturating: counts never come near `i64::MAX`).
fn signed(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

fn write_table(path: &Path, name: &str, columns: Vec<(&str, Column)>) -> Result<(), String> {
    let fields: Vec<String> = columns
        .iter()
        .map(|(n, c)| match c {
            Column::I64(_) => format!("REQUIRED INT64 {n};"),
            Column::F64(_) => format!("REQUIRED DOUBLE {n};"),
            Column::Text(_) => format!("REQUIRED BYTE_ARRAY {n} (UTF8);"),
        })
        .collect();
    let schema = parse_message_type(&format!("message {name} {{ {} }}", fields.join(" ")))
        .map_err(|e| e.to_string())?;
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let props = Arc::new(WriterProperties::builder().build());
    let mut writer =
        SerializedFileWriter::new(file, Arc::new(schema), props).map_err(|e| e.to_string())?;
    let mut group = writer.next_row_group().map_err(|e| e.to_string())?;
    for (_, column) in &columns {
        let mut col = group
            .next_column()
            .map_err(|e| e.to_string())?
            .ok_or("fewer columns than the schema")?;
        match column {
            Column::I64(v) => col.typed::<Int64Type>().write_batch(v, None, None),
            Column::F64(v) => col.typed::<DoubleType>().write_batch(v, None, None),
            Column::Text(v) => {
                let bytes: Vec<ByteArray> = v.iter().map(|s| ByteArray::from(s.as_str())).collect();
                col.typed::<ByteArrayType>().write_batch(&bytes, None, None)
            }
        }
        .map_err(|e| e.to_string())?;
        col.close().map_err(|e| e.to_string())?;
    }
    group.close().map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(())
}

/// The rank number written into every table: the trace's, or -1.
fn rank_of(r: &RankSummary) -> i64 {
    r.rank_in_trace.unwrap_or(-1)
}

/// Writes one rank's tables into `dir` (created if needed).
pub fn write_rank(dir: &Path, r: &RankSummary) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let rank = rank_of(r);
    let res = &r.results;
    let json = serde_json::to_string(res).map_err(|e| e.to_string())?;
    write_table(
        &dir.join("rank.parquet"),
        "rank",
        vec![
            ("rank", Column::I64(vec![rank])),
            ("world_size", Column::I64(vec![r.world_size.unwrap_or(-1)])),
            ("file", Column::Text(vec![r.file.clone()])),
            ("step_count", Column::I64(vec![signed(res.step_count)])),
            ("step_ns", Column::I64(vec![res.step_ns])),
            ("step_stddev_ns", Column::I64(vec![res.step_stddev_ns])),
            ("gpu_busy_percent", Column::F64(vec![res.gpu_busy_percent])),
            (
                "gpu_idle_per_step_ns",
                Column::I64(vec![res.gpu_idle_per_step_ns]),
            ),
            ("verdict", Column::Text(vec![res.verdict_text.clone()])),
            ("results_json", Column::Text(vec![json])),
        ],
    )?;
    let n = r.steps.len();
    write_table(
        &dir.join("steps.parquet"),
        "steps",
        vec![
            ("rank", Column::I64(vec![rank; n])),
            ("step", Column::I64(r.steps.iter().map(|s| s.0).collect())),
            ("dur_ns", Column::I64(r.steps.iter().map(|s| s.1).collect())),
        ],
    )?;
    let n = r.collectives.len();
    write_table(
        &dir.join("collectives.parquet"),
        "collectives",
        vec![
            ("rank", Column::I64(vec![rank; n])),
            ("idx", Column::I64((0..n).map(signed).collect())),
            (
                "name",
                Column::Text(r.collectives.iter().map(|c| c.name.clone()).collect()),
            ),
            (
                "start_ns",
                Column::I64(r.collectives.iter().map(|c| c.start_ns).collect()),
            ),
            (
                "dur_ns",
                Column::I64(r.collectives.iter().map(|c| c.dur_ns).collect()),
            ),
        ],
    )?;
    let f = &res.findings;
    let n = f.len();
    write_table(
        &dir.join("findings.parquet"),
        "findings",
        vec![
            ("rank", Column::I64(vec![rank; n])),
            (
                "key",
                Column::Text(f.iter().map(|x| x.key.clone()).collect()),
            ),
            (
                "kind",
                Column::Text(f.iter().map(|x| x.kind.label().to_string()).collect()),
            ),
            (
                "title",
                Column::Text(f.iter().map(|x| x.title.clone()).collect()),
            ),
            (
                "win_per_step_ns",
                Column::I64(f.iter().map(|x| x.win_per_step_ns).collect()),
            ),
            (
                "win_percent",
                Column::F64(f.iter().map(|x| x.win_percent).collect()),
            ),
            (
                "count",
                Column::I64(f.iter().map(|x| signed(x.count)).collect()),
            ),
            (
                "call_site",
                Column::Text(
                    f.iter()
                        .map(|x| x.call_site.clone().unwrap_or_default())
                        .collect(),
                ),
            ),
        ],
    )?;
    let c = &res.idle_by_cause;
    let n = c.len();
    write_table(
        &dir.join("idle.parquet"),
        "idle",
        vec![
            ("rank", Column::I64(vec![rank; n])),
            (
                "cause",
                Column::Text(c.iter().map(|x| x.cause.label().to_string()).collect()),
            ),
            (
                "per_step_ns",
                Column::I64(c.iter().map(|x| x.per_step_ns).collect()),
            ),
            (
                "percent_of_step",
                Column::F64(c.iter().map(|x| x.percent_of_step).collect()),
            ),
        ],
    )
}

fn rows(path: &Path) -> Result<Vec<Row>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reader = SerializedFileReader::new(file).map_err(|e| format!("{}: {e}", path.display()))?;
    let iter = reader.get_row_iter(None).map_err(|e| e.to_string())?;
    iter.map(|r| r.map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

/// Reads one rank's tables back from `dir`.
pub fn read_rank(dir: &Path) -> Result<RankSummary, String> {
    let rank_rows = rows(&dir.join("rank.parquet"))?;
    let row = rank_rows.first().ok_or("rank.parquet is empty")?;
    let err = |e: parquet::errors::ParquetError| e.to_string();
    let rank = row.get_long(0).map_err(err)?;
    let world = row.get_long(1).map_err(err)?;
    let file = row.get_string(2).map_err(err)?.clone();
    let results = Results::from_json(row.get_string(9).map_err(err)?)?;
    let steps = rows(&dir.join("steps.parquet"))?
        .iter()
        .map(|r| Ok((r.get_long(1).map_err(err)?, r.get_long(2).map_err(err)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let collectives = rows(&dir.join("collectives.parquet"))?
        .iter()
        .map(|r| {
            Ok(Collective {
                name: r.get_string(2).map_err(err)?.clone(),
                start_ns: r.get_long(3).map_err(err)?,
                dur_ns: r.get_long(4).map_err(err)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(RankSummary {
        file,
        rank_in_trace: (rank >= 0).then_some(rank),
        world_size: (world >= 0).then_some(world),
        results,
        collectives,
        steps,
    })
}
