//! The map/reduce path for jobs of many ranks: `tracelens analyze TRACE --format parquet -o
//! out/rank-N/` writes one rank's summary as Parquet tables ([`write_rank`]), and
//! `tracelens merge out/*/` reads them back ([`read_rank`]) to build the cross-rank report
//! without the traces. The tables (documented in docs/parquet.md) are also what DuckDB,
//! Spark or pandas query directly.
//!
//! | table | one row per | columns |
//! |---|---|---|
//! | `rank.parquet` | rank | schema_version, rank, world_size, backend, file, window_start_ns, window_end_ns, step_count, step_ns, step_stddev_ns, gpu_busy_percent, gpu_idle_per_step_ns, verdict, results_json |
//! | `steps.parquet` | profiled step | rank, step, dur_ns |
//! | `collectives.parquet` | collective kernel | rank, idx, name, op, process_group, seq, bytes, group_size, algorithm, start_ns, dur_ns |
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
use tracelens_results::job::{Collective, CollectiveOp};
use tracelens_results::{RankSummary, Results};

/// One column of a table.
enum Column {
    I64(Vec<i64>),
    F64(Vec<f64>),
    Text(Vec<String>),
    /// Text already as Parquet values (a test's many references to one buffer).
    #[cfg(test)]
    Bytes(Vec<ByteArray>),
}

/// A count as Parquet's INT64 (saturating: counts never come near `i64::MAX`).
fn signed(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

fn write_table(path: &Path, name: &str, columns: Vec<(&str, Column)>) -> Result<(), String> {
    write_table_with(path, name, columns, WriterProperties::builder().build())
}

fn write_table_with(
    path: &Path,
    name: &str,
    columns: Vec<(&str, Column)>,
    props: WriterProperties,
) -> Result<(), String> {
    let fields: Vec<String> = columns
        .iter()
        .map(|(n, c)| match c {
            Column::I64(_) => format!("REQUIRED INT64 {n};"),
            Column::F64(_) => format!("REQUIRED DOUBLE {n};"),
            Column::Text(_) => format!("REQUIRED BYTE_ARRAY {n} (UTF8);"),
            #[cfg(test)]
            Column::Bytes(_) => format!("REQUIRED BYTE_ARRAY {n} (UTF8);"),
        })
        .collect();
    let schema = parse_message_type(&format!("message {name} {{ {} }}", fields.join(" ")))
        .map_err(|e| e.to_string())?;
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let props = Arc::new(props);
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
            #[cfg(test)]
            Column::Bytes(v) => col.typed::<ByteArrayType>().write_batch(v, None, None),
        }
        .map_err(|e| e.to_string())?;
        col.close().map_err(|e| e.to_string())?;
    }
    group.close().map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(())
}

/// The layout of the tables: 2 added the collectives' identity and sizes (`op`,
/// `process_group`, `seq`, `bytes`, `group_size`, `algorithm`) and the rank's `backend` and
/// window; version 1 folders have no `schema_version` column and are refused.
pub const TABLES_VERSION: i64 = 2;

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
            ("schema_version", Column::I64(vec![TABLES_VERSION])),
            ("rank", Column::I64(vec![rank])),
            ("world_size", Column::I64(vec![r.world_size.unwrap_or(-1)])),
            (
                "backend",
                Column::Text(vec![r.backend.clone().unwrap_or_default()]),
            ),
            ("file", Column::Text(vec![r.file.clone()])),
            (
                "window_start_ns",
                Column::I64(vec![r.window.map_or(-1, |w| w.0)]),
            ),
            (
                "window_end_ns",
                Column::I64(vec![r.window.map_or(-1, |w| w.1)]),
            ),
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
                "op",
                Column::Text(
                    r.collectives
                        .iter()
                        .map(|c| c.op.label().to_string())
                        .collect(),
                ),
            ),
            (
                "process_group",
                Column::Text(
                    r.collectives
                        .iter()
                        .map(|c| c.group.clone().unwrap_or_default())
                        .collect(),
                ),
            ),
            (
                "seq",
                Column::I64(r.collectives.iter().map(|c| c.seq.unwrap_or(-1)).collect()),
            ),
            (
                "bytes",
                Column::I64(
                    r.collectives
                        .iter()
                        .map(|c| c.bytes.map_or(-1, signed))
                        .collect(),
                ),
            ),
            (
                "group_size",
                Column::I64(
                    r.collectives
                        .iter()
                        .map(|c| c.group_size.unwrap_or(-1))
                        .collect(),
                ),
            ),
            (
                "algorithm",
                Column::Text(
                    r.collectives
                        .iter()
                        .map(|c| c.algorithm.clone().unwrap_or_default())
                        .collect(),
                ),
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

/// The most bytes one table file may have: a rank summary is kilobytes to a few megabytes.
pub const MAX_TABLE_BYTES: u64 = 256 << 20;
/// The most bytes one table may hold once decompressed (as its row groups declare).
pub const MAX_UNPACKED_BYTES: i64 = 1 << 30;
/// The most steps one rank's `steps.parquet` may list.
pub const MAX_STEP_ROWS: i64 = 1_000_000;
/// The most collectives one rank's `collectives.parquet` may list.
pub const MAX_COLLECTIVE_ROWS: i64 = 2_000_000;
/// The most bytes of one text value read back (a rank's results JSON included).
pub const MAX_TEXT_BYTES: usize = 64 << 20;
/// The most bytes of text one table may materialise as it is decoded, all rows together:
/// what decoding builds, not what the footer declares — a dictionary page lets one stored
/// value stand for every row (2 million real collectives' names take about 200 MB).
pub const MAX_DECODED_BYTES: usize = 256 << 20;

/// A column a reader needs: its name and physical type.
type Wanted = (&'static str, parquet::basic::Type);

/// Opens a table after checking it is a regular file within [`MAX_TABLE_BYTES`], holds at most
/// `max_rows` rows and has every `wanted` column with its type; returns the reader and the
/// position of each wanted column, in `wanted` order.
fn open_table(
    path: &Path,
    wanted: &[Wanted],
    max_rows: i64,
) -> Result<(SerializedFileReader<std::fs::File>, Vec<usize>), String> {
    let at = |why: String| format!("{}: {why}", path.display());
    let meta = std::fs::metadata(path).map_err(|e| at(e.to_string()))?;
    if !meta.is_file() {
        return Err(at("not a regular file".into()));
    }
    if meta.len() > MAX_TABLE_BYTES {
        return Err(at(format!(
            "{} bytes, more than a rank summary holds (at most {MAX_TABLE_BYTES})",
            meta.len()
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| at(e.to_string()))?;
    let reader = SerializedFileReader::new(file).map_err(|e| at(e.to_string()))?;
    let file_meta = reader.metadata().file_metadata();
    let rows = file_meta.num_rows();
    if rows > max_rows {
        return Err(at(format!(
            "{rows} rows, more than a rank summary holds (at most {max_rows})"
        )));
    }
    let unpacked: i64 = reader
        .metadata()
        .row_groups()
        .iter()
        .map(parquet::file::metadata::RowGroupMetaData::total_byte_size)
        .sum();
    if unpacked > MAX_UNPACKED_BYTES {
        return Err(at(format!(
            "{unpacked} bytes once decompressed, more than a rank summary holds (at most {MAX_UNPACKED_BYTES})"
        )));
    }
    let schema = file_meta.schema_descr();
    let mut positions = Vec::with_capacity(wanted.len());
    for (name, ty) in wanted {
        let found = (0..schema.num_columns())
            .map(|i| (i, schema.column(i)))
            .find(|(_, c)| c.name() == *name)
            .ok_or_else(|| at(format!("no column '{name}'")))?;
        if found.1.physical_type() != *ty || found.1.max_rep_level() > 0 {
            return Err(at(format!(
                "column '{name}' is {}, expected {ty}",
                found.1.physical_type()
            )));
        }
        positions.push(found.0);
    }
    // The row reader numbers top-level fields: every column must be one.
    if schema.num_columns() != schema.root_schema().get_fields().len() {
        return Err(at("nested columns".into()));
    }
    Ok((reader, positions))
}

/// Every row of a checked table, mapped by `each` as it streams (never all rows at once).
/// Only the wanted columns are decoded, and the text they materialise is counted against
/// [`MAX_DECODED_BYTES`] row by row.
fn each_row<T>(
    path: &Path,
    wanted: &[Wanted],
    max_rows: i64,
    mut each: impl FnMut(&Row, &[usize]) -> Result<T, parquet::errors::ParquetError>,
) -> Result<Vec<T>, String> {
    let (reader, positions) = open_table(path, wanted, max_rows)?;
    let at = |e: parquet::errors::ParquetError| format!("{}: {e}", path.display());
    // Decode the wanted columns alone, in `wanted` order: a column nobody reads costs nothing.
    let root = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema();
    let fields = positions
        .iter()
        .map(|&i| root.get_fields()[i].clone())
        .collect();
    let projection = parquet::schema::types::Type::group_type_builder(root.name())
        .with_fields(fields)
        .build()
        .map_err(at)?;
    let iter = reader.get_row_iter(Some(projection)).map_err(at)?;
    let in_order: Vec<usize> = (0..positions.len()).collect();
    let mut out = Vec::new();
    let mut decoded_bytes = 0usize;
    for row in iter {
        // The row count in the footer can lie: count as rows arrive too.
        if i64::try_from(out.len()).unwrap_or(i64::MAX) >= max_rows {
            return Err(format!(
                "{}: more rows than a rank summary holds (at most {max_rows})",
                path.display()
            ));
        }
        let row = row.map_err(at)?;
        decoded_bytes = decoded_bytes.saturating_add(text_bytes(&row));
        if decoded_bytes > MAX_DECODED_BYTES {
            return Err(format!(
                "{}: more than {MAX_DECODED_BYTES} bytes of text once decoded (by row {}), more than a rank summary holds",
                path.display(),
                out.len() + 1
            ));
        }
        out.push(each(&row, &in_order).map_err(at)?);
    }
    Ok(out)
}

/// The bytes of text and binary values one decoded row holds.
fn text_bytes(row: &Row) -> usize {
    use parquet::record::Field;
    row.get_column_iter()
        .map(|(_, f)| match f {
            Field::Str(s) => s.len(),
            Field::Bytes(b) => b.len(),
            _ => 0,
        })
        .sum()
}

/// A text value, refused past [`MAX_TEXT_BYTES`].
fn text(row: &Row, i: usize) -> Result<String, parquet::errors::ParquetError> {
    let s = row.get_string(i)?;
    if s.len() > MAX_TEXT_BYTES {
        return Err(parquet::errors::ParquetError::General(format!(
            "a text value of {} bytes (at most {MAX_TEXT_BYTES})",
            s.len()
        )));
    }
    Ok(s.clone())
}

/// Reads one rank's tables back from `dir`: every table checked by column name and type and
/// bounded in size and rows before it is read (a folder or a FIFO in place of a table is an
/// error, not a hang).
pub fn read_rank(dir: &Path) -> Result<RankSummary, String> {
    use parquet::basic::Type::{BYTE_ARRAY, INT64};
    let rank_path = dir.join("rank.parquet");
    // A folder of the first layout has no schema_version column: say so, not "no column".
    let version = each_row(&rank_path, &[("schema_version", INT64)], 1, |r, c| {
        r.get_long(c[0])
    })
    .map_err(|e| {
        if e.ends_with("no column 'schema_version'") {
            format!(
                "{}: written by an older tracelens (tables version 1): re-run `tracelens analyze TRACE --format parquet -o DIR` with this one",
                rank_path.display()
            )
        } else {
            e
        }
    })?;
    match version.first() {
        Some(&TABLES_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "{}: tables version {v}, this tracelens reads version {TABLES_VERSION}",
                rank_path.display()
            ))
        }
        None => return Err(format!("{}: no row", rank_path.display())),
    }
    let ranks = each_row(
        &rank_path,
        &[
            ("rank", INT64),
            ("world_size", INT64),
            ("backend", BYTE_ARRAY),
            ("file", BYTE_ARRAY),
            ("window_start_ns", INT64),
            ("window_end_ns", INT64),
            ("results_json", BYTE_ARRAY),
        ],
        1,
        |r, c| {
            Ok((
                (r.get_long(c[0])?, r.get_long(c[1])?, text(r, c[2])?),
                text(r, c[3])?,
                (r.get_long(c[4])?, r.get_long(c[5])?),
                text(r, c[6])?,
            ))
        },
    )?;
    let ((rank, world, backend), file, window, results_json) = ranks
        .into_iter()
        .next()
        .ok_or_else(|| format!("{}: no row", rank_path.display()))?;
    let results =
        Results::from_json(&results_json).map_err(|e| format!("{}: {e}", rank_path.display()))?;
    let steps = each_row(
        &dir.join("steps.parquet"),
        &[("step", INT64), ("dur_ns", INT64)],
        MAX_STEP_ROWS,
        |r, c| Ok((r.get_long(c[0])?, r.get_long(c[1])?)),
    )?;
    let some_text = |t: String| (!t.is_empty()).then_some(t);
    let collectives = each_row(
        &dir.join("collectives.parquet"),
        &[
            ("name", BYTE_ARRAY),
            ("op", BYTE_ARRAY),
            ("process_group", BYTE_ARRAY),
            ("seq", INT64),
            ("bytes", INT64),
            ("group_size", INT64),
            ("algorithm", BYTE_ARRAY),
            ("start_ns", INT64),
            ("dur_ns", INT64),
        ],
        MAX_COLLECTIVE_ROWS,
        |r, c| {
            let op = text(r, c[1])?;
            Ok(Collective {
                name: text(r, c[0])?,
                op: CollectiveOp::ALL
                    .into_iter()
                    .find(|o| o.label() == op)
                    .unwrap_or_default(),
                group: some_text(text(r, c[2])?),
                seq: Some(r.get_long(c[3])?).filter(|&s| s >= 0),
                bytes: u64::try_from(r.get_long(c[4])?).ok(),
                group_size: Some(r.get_long(c[5])?).filter(|&n| n > 0),
                algorithm: some_text(text(r, c[6])?),
                start_ns: r.get_long(c[7])?,
                dur_ns: r.get_long(c[8])?,
            })
        },
    )?;
    Ok(RankSummary {
        file,
        rank_in_trace: (rank >= 0).then_some(rank),
        world_size: (world >= 0).then_some(world),
        backend: some_text(backend),
        window: (window.0 >= 0 && window.1 >= window.0).then_some(window),
        results,
        collectives,
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tracelens-parquet-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_rank(
            &dir,
            &RankSummary {
                file: "rank0.json".into(),
                rank_in_trace: Some(0),
                world_size: Some(2),
                results: Results::empty(),
                collectives: vec![Collective {
                    name: "ncclKernel_AllReduce".into(),
                    op: CollectiveOp::AllReduce,
                    group: Some("0".into()),
                    seq: Some(3),
                    bytes: Some(4096),
                    group_size: Some(2),
                    start_ns: 10,
                    dur_ns: 5,
                    ..Collective::default()
                }],
                steps: vec![(0, 100), (1, 110)],
                ..RankSummary::default()
            },
        )
        .unwrap();
        dir
    }

    #[test]
    fn a_written_rank_reads_back() {
        let dir = rank_dir("roundtrip");
        let r = read_rank(&dir).unwrap();
        assert_eq!(r.steps, vec![(0, 100), (1, 110)]);
        assert_eq!(r.collectives.len(), 1);
        let c = &r.collectives[0];
        assert_eq!(
            (c.op, c.group.as_deref(), c.seq, c.bytes, c.group_size),
            (
                CollectiveOp::AllReduce,
                Some("0"),
                Some(3),
                Some(4096),
                Some(2)
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hostile_tables_are_refused_by_schema_rows_and_kind() {
        let dir = rank_dir("hostile");
        // A rank table with two columns: refused by name, no index out of bounds.
        write_table(
            &dir.join("rank.parquet"),
            "rank",
            vec![
                ("schema_version", Column::I64(vec![TABLES_VERSION])),
                ("rank", Column::I64(vec![0])),
                ("x", Column::I64(vec![0])),
            ],
        )
        .unwrap();
        let e = read_rank(&dir).unwrap_err();
        assert!(e.contains("no column 'world_size'"), "{e}");
        // The first layout (no schema_version): refused with what to do.
        write_table(
            &dir.join("rank.parquet"),
            "rank",
            vec![("rank", Column::I64(vec![0])), ("x", Column::I64(vec![0]))],
        )
        .unwrap();
        let e = read_rank(&dir).unwrap_err();
        assert!(e.contains("older tracelens (tables version 1)"), "{e}");
        // A column of the wrong type.
        let dir = rank_dir("hostile-type");
        write_table(
            &dir.join("steps.parquet"),
            "steps",
            vec![
                ("rank", Column::I64(vec![0])),
                ("step", Column::I64(vec![0])),
                ("dur_ns", Column::F64(vec![1.0])),
            ],
        )
        .unwrap();
        let e = read_rank(&dir).unwrap_err();
        assert!(
            e.contains("column 'dur_ns' is DOUBLE, expected INT64"),
            "{e}"
        );
        // More steps than a rank holds, in a small file: refused before reading.
        let n = usize::try_from(MAX_STEP_ROWS).unwrap() + 1;
        write_table(
            &dir.join("steps.parquet"),
            "steps",
            vec![
                ("rank", Column::I64(vec![0; n])),
                ("step", Column::I64(vec![0; n])),
                ("dur_ns", Column::I64(vec![1; n])),
            ],
        )
        .unwrap();
        let bytes = std::fs::metadata(dir.join("steps.parquet")).unwrap().len();
        assert!(bytes < 1 << 20, "{bytes}");
        let e = read_rank(&dir).unwrap_err();
        assert!(e.contains("1000001 rows"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_dictionary_bomb_is_refused_by_what_it_decodes_to() {
        let dir = rank_dir("dictionary-bomb");
        // One 1 MiB name stored once in a dictionary page and referenced by 4,000 rows: a
        // 1 MiB file that decodes to 4 GB.
        let rows = 4_000;
        let name = ByteArray::from(vec![b'n'; 1 << 20]);
        let text = |s: &str| Column::Text(vec![s.to_string(); rows]);
        let props = WriterProperties::builder()
            .set_dictionary_page_size_limit(4 << 20)
            .build();
        write_table_with(
            &dir.join("collectives.parquet"),
            "collectives",
            vec![
                ("rank", Column::I64(vec![0; rows])),
                ("idx", Column::I64((0..).take(rows).collect())),
                ("name", Column::Bytes(vec![name; rows])),
                ("op", text("all_reduce")),
                ("process_group", text("")),
                ("seq", Column::I64(vec![-1; rows])),
                ("bytes", Column::I64(vec![-1; rows])),
                ("group_size", Column::I64(vec![-1; rows])),
                ("algorithm", text("")),
                ("start_ns", Column::I64(vec![0; rows])),
                ("dur_ns", Column::I64(vec![1; rows])),
            ],
            props,
        )
        .unwrap();
        let bytes = std::fs::metadata(dir.join("collectives.parquet"))
            .unwrap()
            .len();
        assert!(bytes < 4 << 20, "{bytes}");
        let e = read_rank(&dir).unwrap_err();
        assert!(e.contains("bytes of text once decoded (by row 256)"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_column_nobody_reads_is_not_decoded() {
        let dir = rank_dir("unread-column");
        // An extra column of 1 MiB per row beside the steps: never decoded, never counted.
        let rows = 400;
        write_table(
            &dir.join("steps.parquet"),
            "steps",
            vec![
                ("padding", Column::Text(vec!["p".repeat(1 << 20); rows])),
                ("rank", Column::I64(vec![0; rows])),
                ("step", Column::I64((0..).take(rows).collect())),
                ("dur_ns", Column::I64(vec![5; rows])),
            ],
        )
        .unwrap();
        let r = read_rank(&dir).unwrap();
        assert_eq!(r.steps.len(), rows);
        assert_eq!(r.steps[399], (399, 5));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_folder_in_place_of_a_table_is_an_error_not_a_hang() {
        let dir = rank_dir("fifo");
        let rank = dir.join("rank.parquet");
        std::fs::remove_file(&rank).unwrap();
        let c = std::ffi::CString::new(rank.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_rank(&dir).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        std::fs::remove_file(&rank).unwrap();
        std::fs::create_dir(&rank).unwrap();
        let e = read_rank(&dir).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
