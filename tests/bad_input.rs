//! Bad input gets one clear line naming the file and the problem, exit code 2, no panic and
//! no output file.

use std::path::{Path, PathBuf};
use tracelens_tests::{fixtures_dir, tracelens};

fn refused(path: &Path) -> String {
    let out = std::env::temp_dir().join(format!(
        "tracelens-bad-{}-{}.json",
        std::process::id(),
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let run = tracelens([
        "analyze".into(),
        path.as_os_str().to_owned(),
        "-o".into(),
        out.clone().into_os_string(),
    ]);
    assert_eq!(
        run.code,
        2,
        "{}: expected exit 2, stderr: {}",
        path.display(),
        run.stderr
    );
    assert!(
        run.stdout.is_empty(),
        "stdout should be empty: {}",
        run.stdout
    );
    assert!(
        !out.exists(),
        "no output file may be written for {}",
        path.display()
    );
    assert_eq!(run.stderr.lines().count(), 1, "one line: {:?}", run.stderr);
    run.stderr.trim_end().to_string()
}

fn bad(name: &str) -> PathBuf {
    fixtures_dir().join("bad").join(name)
}

fn expect(name: &str, problem: &str) {
    let path = bad(name);
    assert_eq!(
        refused(&path),
        format!("tracelens: error: {}: {problem}", path.display())
    );
}

#[test]
fn empty_file() {
    expect("empty.json", "file is empty");
}

#[test]
fn text_that_is_not_json() {
    expect(
        "not_json.txt",
        "not a trace: expected an Nsight Systems SQLite export or Chrome-trace JSON ('{' or '[') or a PyTorch memory snapshot (a pickle, protocol 2 to 5) but found 'h' at byte 0",
    );
}

#[test]
fn binary_junk() {
    expect(
        "binary.bin",
        "not a trace: expected an Nsight Systems SQLite export or Chrome-trace JSON ('{' or '[') or a PyTorch memory snapshot (a pickle, protocol 2 to 5) but found byte 0x00 at byte 0",
    );
}

#[test]
fn json_object_that_is_not_a_trace() {
    expect(
        "not_a_trace.json",
        "not a Chrome/Kineto trace: the JSON object has no \"traceEvents\" array (top-level keys: foo, bar)",
    );
}

#[test]
fn json_array_of_non_events() {
    expect(
        "array_of_non_events.json",
        "not a Chrome/Kineto trace: a JSON array of 1 values, none of them a trace event (no \"ph\" field)",
    );
}

#[test]
fn execution_trace() {
    expect(
        "execution_trace.json",
        "a PyTorch execution trace (ExecutionTraceObserver 'nodes' graph), not a profiler trace: it has no timings; pass the Kineto trace recorded alongside it",
    );
}

#[test]
fn truncated_before_any_event() {
    expect(
        "truncated_before_events.json",
        "truncated: the file ends at byte 37, before the first complete trace event",
    );
}

#[test]
fn corrupt_gzip() {
    expect(
        "corrupt.json.gz",
        "corrupt gzip data: corrupt deflate stream",
    );
}

#[test]
fn nsight_systems_report() {
    expect(
        "profile.nsys-rep",
        "an Nsight Systems report (.nsys-rep/.qdrep), a proprietary container: export it with `nsys export --type sqlite` and pass the .sqlite file",
    );
}

#[test]
fn corrupt_sqlite_file() {
    expect(
        "export.sqlite",
        "cannot read the SQLite database: file is not a database",
    );
}

#[test]
fn missing_file() {
    let path = bad("does-not-exist.json");
    assert_eq!(
        refused(&path),
        format!("tracelens: error: {}: no such file", path.display())
    );
}

#[test]
fn directory() {
    // A folder is read as its workers' newest traces; one without traces is refused, by
    // `analyze` and `check` alike.
    let path = std::env::temp_dir().join(format!("tracelens-emptydir-{}", std::process::id()));
    std::fs::create_dir_all(&path).unwrap();
    let message = refused(&path);
    let check = tracelens_tests::tracelens(["check", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&path).unwrap();
    assert_eq!(
        message,
        format!(
            "tracelens: error: {}: is a directory with no trace files (.json, .json.gz, .sqlite); a folder is read as the newest trace of each worker, several workers as the ranks of one job",
            path.display()
        )
    );
    assert_eq!(check.code, 2);
    assert!(
        check.stderr.contains("is a directory with no trace files"),
        "{}",
        check.stderr
    );
}

#[cfg(unix)]
#[test]
fn permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::temp_dir().join(format!("tracelens-noperm-{}.json", std::process::id()));
    std::fs::write(&path, b"{\"traceEvents\": []}").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&path).is_ok() {
        // Root reads anything; the mapping itself is unit-tested in the CLI crate.
        eprintln!("*** SKIPPED permission_denied: running as a user who can read mode-000 files (root) ***");
        std::fs::remove_file(&path).unwrap();
        return;
    }
    let message = refused(&path);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        message,
        format!("tracelens: error: {}: permission denied", path.display())
    );
}

#[test]
fn usage_errors_exit_2() {
    let run = tracelens(["analyze"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("Usage"), "{}", run.stderr);
    let run = tracelens(["analyze", "x.json", "--format", "yaml"]);
    assert_eq!(run.code, 2);
}
