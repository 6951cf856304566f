//! The input step, below every format: compression is undone before an importer looks (gzip
//! and zstd, for JSON traces and Nsight exports alike), and an input no importer reads gets
//! one line saying what it most likely is.

use std::io::Write;
use std::path::{Path, PathBuf};
use tracelens_model::Trace;
use tracelens_tests::nsys_export::Export;
use tracelens_tests::{fixtures_dir, tracelens};

fn temp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("input");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

/// What a trace holds, without the fields that name the file it came from.
fn content(t: &Trace) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{}",
        t.spans, t.lanes, t.warnings, t.source.records_kept
    )
}

fn refusal(path: &Path) -> String {
    let run = tracelens([
        "analyze".into(),
        path.as_os_str().to_owned(),
        "--no-report".into(),
    ]);
    assert_eq!(run.code, 2, "{}: {}", path.display(), run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let prefix = format!("tracelens: error: {}: ", path.display());
    run.stderr
        .trim_end()
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{}", run.stderr))
        .to_string()
}

#[test]
fn a_json_trace_reads_the_same_plain_gzipped_and_zstd_compressed() {
    let plain = fixtures_dir().join("scenarios/dataloader_single_process.json");
    let bytes = std::fs::read(&plain).unwrap();
    let expected = tracelens_load::open(&plain).unwrap();
    assert_eq!(expected.source.compression, None);
    for (name, packed, label) in [
        ("t.json.gz", gzip(&bytes), "gzip"),
        ("t.json.zst", zstd(&bytes), "zstd"),
    ] {
        let path = temp(name);
        std::fs::write(&path, &packed).unwrap();
        let t = tracelens_load::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(content(&t), content(&expected), "{name}");
        assert_eq!(t.source.compression.as_deref(), Some(label));
        assert_eq!(t.source.file_bytes, packed.len() as u64);
        assert_eq!(t.source.decoded_bytes, bytes.len() as u64);
        // The same bytes through memory, as the fuzz target reads them.
        let t = tracelens_load::open_bytes(packed, &path).unwrap();
        assert_eq!(content(&t), content(&expected), "{name} in memory");
    }
}

#[test]
fn a_compressed_nsight_export_reads_as_the_export() {
    let path = temp("export.sqlite");
    let mut e = Export::create(&path, "META_DATA_EXPORT", "3.7.2");
    e.runtime("cudaLaunchKernel_v7000", 111, 111, 100, 110, 5);
    e.kernel("k", 111, 0, 7, 300, 400, 5);
    drop(e);
    let bytes = std::fs::read(&path).unwrap();
    let expected = tracelens_load::open(&path).unwrap();
    for (name, packed, label) in [
        ("export.sqlite.gz", gzip(&bytes), "gzip"),
        ("export.sqlite.zst", zstd(&bytes), "zstd"),
    ] {
        let packed_path = temp(name);
        std::fs::write(&packed_path, &packed).unwrap();
        assert!(tracelens_load::is_trace_file_name(&packed_path), "{name}");
        let t = tracelens_load::open(&packed_path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(content(&t), content(&expected), "{name}");
        assert_eq!(t.source.compression.as_deref(), Some(label));
        assert_eq!(t.source.path, packed_path.display().to_string());
        assert_eq!(t.source.file_bytes, packed.len() as u64);
    }
}

#[test]
fn compression_inside_compression_is_named_with_the_command_that_undoes_it() {
    let plain = std::fs::read(fixtures_dir().join("kineto/modern_base_ns.json")).unwrap();
    let path = temp("twice.json.gz");
    std::fs::write(&path, gzip(&gzip(&plain))).unwrap();
    assert_eq!(
        refusal(&path),
        "gzip inside gzip: the decompressed data is itself compressed; decompress it once (`gunzip -c FILE > trace.json.gz`) and pass the result"
    );
    let path = temp("gz_in_zst.json.zst");
    std::fs::write(&path, zstd(&gzip(&plain))).unwrap();
    assert!(refusal(&path).starts_with("gzip inside zstd"));
}

#[test]
fn a_corrupt_or_empty_zstd_stream_is_one_line() {
    let path = temp("cut.json.zst");
    let packed = zstd(b"{\"traceEvents\": []}");
    std::fs::write(&path, &packed[..6]).unwrap();
    assert!(
        refusal(&path).starts_with("corrupt zstd data: "),
        "{}",
        refusal(&path)
    );
    let path = temp("empty.json.zst");
    std::fs::write(&path, zstd(b"")).unwrap();
    assert_eq!(refusal(&path), "the zstd data decompresses to nothing");
}

#[test]
fn a_result_document_points_to_tracelens_report() {
    let stored = tracelens_tests::repo_root().join("tests/snapshots/item_every_step.json");
    let path = temp("stored.json.gz");
    std::fs::write(&path, gzip(&std::fs::read(stored).unwrap())).unwrap();
    assert_eq!(
        refusal(&path),
        "a tracelens result document, not a trace: render it with `tracelens report FILE`, or analyse the trace it came from"
    );
}

#[test]
fn archives_and_other_tools_databases_are_named() {
    let path = temp("trace.zip");
    std::fs::write(&path, b"PK\x03\x04\x14\x00\x00\x00").unwrap();
    assert_eq!(
        refusal(&path),
        "a ZIP archive, not a trace: unzip it and pass the trace inside"
    );
    let path = temp("run.rocpd.db");
    let _ = std::fs::remove_file(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE rocpd_kernel_dispatch_0a1b (id INTEGER, start INTEGER, end INTEGER);
         CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch_0a1b;",
    )
    .unwrap();
    drop(conn);
    assert!(refusal(&path).starts_with(
        "a ROCm profiler database (rocprofv3 rocpd SQLite), not an Nsight Systems export"
    ));
    // nvprof's database: CUPTI's table names, API calls by callback id.
    let path = temp("prof.nvvp");
    let _ = std::fs::remove_file(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE StringTable (_id_ INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (_id_ INTEGER PRIMARY KEY, cbid INT, start INT, end INT, processId INT, threadId INT, correlationId INT, returnValue INT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (_id_ INTEGER PRIMARY KEY, start INT, end INT, name INT);",
    )
    .unwrap();
    drop(conn);
    assert!(
        refusal(&path)
            .starts_with("an nvprof database (nvprof -o / .nvvp), not an Nsight Systems export"),
        "{}",
        refusal(&path)
    );
}

/// A zstd frame, written by hand: `prefix` as a raw block, then `blocks` run-length blocks
/// of 128 KiB of `fill` each (4 bytes apiece: a bomb).
fn zstd_rle_frame(prefix: &[u8], fill: u8, blocks: usize) -> Vec<u8> {
    let header = |size: usize, kind: usize, last: bool| {
        let v = u32::try_from((size << 3) | (kind << 1) | usize::from(last)).unwrap();
        let [b0, b1, b2, _] = v.to_le_bytes();
        [b0, b1, b2]
    };
    // No single segment, no checksum; window descriptor 0x38: a 128 KiB window.
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    frame.extend(header(prefix.len(), 0, false));
    frame.extend_from_slice(prefix);
    for i in 0..blocks {
        frame.extend(header(128 << 10, 1, i + 1 == blocks));
        frame.push(fill);
    }
    frame
}

#[test]
fn annotate_refuses_a_zstd_bomb_at_its_bound() {
    // 80 MB of spaces inside an object, from 3 KB: past annotate's 64 MB floor.
    let path = temp("bomb.json.zst");
    std::fs::write(&path, zstd_rle_frame(b"{\"traceEvents\": [", b' ', 640)).unwrap();
    let err = tracelens_load::open_annotatable(&path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("refusing a likely zstd bomb"), "{err}");
    // The same frame, short of the bound, is decoded whole: the trace is then blank JSON.
    let path = temp("short.json.zst");
    std::fs::write(&path, zstd_rle_frame(b"{\"traceEvents\": [", b' ', 8)).unwrap();
    let err = tracelens_load::open_annotatable(&path)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("truncated"), "{err}");
}
