//! Helpers shared by the end-to-end tests: running the CLI in-process, locating fixtures and
//! the real-trace corpus, and matching JSON documents against expectation subsets.

pub mod consistency;
pub mod nsys_export;
pub mod scenario;
pub mod synthetic_job;

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Output of one in-process CLI run.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `tracelens` with `args` (without the program name).
pub fn tracelens<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut argv: Vec<OsString> = vec!["tracelens".into()];
    argv.extend(args.into_iter().map(Into::into));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tracelens_cli::run(argv, &mut out, &mut err);
    Run {
        code,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
    }
}

/// The repository root.
#[must_use]
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository root")
        .to_path_buf()
}

/// The project's fixture folder.
#[must_use]
pub fn fixtures_dir() -> PathBuf {
    repo_root().join("fixtures")
}

/// The real-trace corpus: `$TRACELENS_CORPUS` (a relative path counts from the repository
/// root), default `../shared/traces`. When it is absent the test says so loudly on stderr and
/// is skipped, unless `TRACELENS_REQUIRE_CORPUS=1` (set by `.ci/run`) makes that a failure.
pub fn corpus_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("TRACELENS_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/traces"));
    let dir = if dir.is_absolute() {
        dir
    } else {
        repo_root().join(dir)
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        if std::env::var_os("TRACELENS_REQUIRE_CORPUS").is_some_and(|v| v == "1") {
            panic!(
                "{test}: TRACELENS_REQUIRE_CORPUS=1 but no corpus at {}",
                dir.display()
            );
        }
        eprintln!(
            "\n*** SKIPPED {test}: trace corpus not found at {} — set TRACELENS_CORPUS to the shared/traces folder ***\n",
            dir.display()
        );
        None
    }
}

/// Checks that `actual` contains `expected`: objects by key (extra keys allowed), arrays
/// element by element with equal length, scalars equal. Returns the differences.
#[must_use]
pub fn subset_mismatches(expected: &Value, actual: &Value, path: &str) -> Vec<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .flat_map(|(k, ev)| match a.get(k) {
                Some(av) => subset_mismatches(ev, av, &format!("{path}.{k}")),
                None => vec![format!("{path}.{k}: missing")],
            })
            .collect(),
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return vec![format!(
                    "{path}: expected {} elements, got {}: {}",
                    e.len(),
                    a.len(),
                    actual
                )];
            }
            e.iter()
                .zip(a)
                .enumerate()
                .flat_map(|(i, (ev, av))| subset_mismatches(ev, av, &format!("{path}[{i}]")))
                .collect()
        }
        _ if expected == actual => Vec::new(),
        _ => vec![format!("{path}: expected {expected}, got {actual}")],
    }
}

/// A free TCP port on 127.0.0.1 for a local server a test starts (the OS picks it).
#[must_use]
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

/// Waits up to a minute for a local server to accept connections on `port`.
pub fn wait_for_port(port: u16, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "{what} did not start");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `dir/bin`, holding `tracelens` → `binary` (the test build of the CLI): put first on a
/// PATH, it is the binary a Python process or a worker finds, as the wheel's scripts folder.
#[must_use]
pub fn bin_with_tracelens(dir: &Path, binary: &str) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(binary, bin.join("tracelens")).unwrap();
    bin
}
