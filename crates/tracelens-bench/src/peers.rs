//! The peer tools the benchmark measures tracelens against: HTA for Kineto traces and
//! nsys-ai for Nsight Systems exports, each installed at a pinned version into a venv of its
//! own, run on the same file as tracelens, measured the same way.

use crate::measure::{measure, Measure};
use std::path::{Path, PathBuf};
use std::process::Command;

/// HolisticTraceAnalysis as PyPI ships it now (the `hta` package inside `traceinsight`).
pub const HTA_PACKAGE: &str = "traceinsight==0.6.1";
/// nsys-ai, with the DuckDB whose `sqlite_scanner` extension PyPI also ships: nsys-ai builds
/// its Parquet cache through that extension, which DuckDB otherwise downloads on first use
/// (and cannot, offline).
pub const NSYS_AI_PACKAGES: [&str; 3] = [
    "nsys-ai==0.3.0",
    "duckdb==1.5.5",
    "duckdb-extension-sqlite-scanner==1.5.5",
];
const DUCKDB_VERSION: &str = "v1.5.5";

/// The peers that could be installed.
#[derive(Debug, Default)]
pub struct Peers {
    /// A Python that imports `hta`.
    pub hta_python: Option<PathBuf>,
    /// nsys-ai's command and the home folder that holds DuckDB's extension for it.
    pub nsys_ai: Option<NsysAi>,
}

/// An installed nsys-ai.
#[derive(Debug, Clone)]
pub struct NsysAi {
    /// The `nsys-ai` script of its venv.
    pub command: PathBuf,
    /// `HOME` for its runs: DuckDB looks for extensions under `~/.duckdb/extensions`.
    pub home: PathBuf,
}

/// Installs (once; an existing venv is reused) both peers under `dir`. A peer that cannot be
/// installed (no network, no `python3 -m venv`) is left out with one line on stderr: the
/// benchmark never needs them.
#[must_use]
pub fn install(dir: &Path) -> Peers {
    // Absolute paths: the peers run with their own working folder and `HOME`.
    let _ = std::fs::create_dir_all(dir);
    let dir = &std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let hta = venv(
        &dir.join("hta"),
        &[HTA_PACKAGE],
        "import hta.trace_analysis",
    );
    let nsys_ai = venv(&dir.join("nsys-ai"), &NSYS_AI_PACKAGES, "import nsys_ai")
        .and_then(|python| nsys_ai_home(&python, &dir.join("nsys-ai-home")));
    Peers {
        hta_python: hta,
        nsys_ai,
    }
}

/// The venv's Python once `packages` are installed and `check` imports, or `None` (said).
fn venv(at: &Path, packages: &[&str], check: &str) -> Option<PathBuf> {
    let python = at.join("bin/python");
    let works = |python: &Path| {
        Command::new(python)
            .args(["-c", check])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works(&python) {
        return Some(python);
    }
    let step = |cmd: &mut Command| cmd.output().is_ok_and(|o| o.status.success());
    let made = step(Command::new("python3").args(["-m", "venv"]).arg(at))
        && step(
            Command::new(at.join("bin/pip"))
                .args(["install", "-q"])
                .args(packages),
        );
    if made && works(&python) {
        Some(python)
    } else {
        eprintln!(
            "peers: could not install {} into {} (pip install failed or offline); left out",
            packages.join(" "),
            at.display()
        );
        None
    }
}

/// A home folder whose `~/.duckdb/extensions` holds the venv's `sqlite_scanner`.
fn nsys_ai_home(python: &Path, home: &Path) -> Option<NsysAi> {
    let found = Command::new(python)
        .args([
            "-c",
            "import duckdb_extension_sqlite_scanner as m, os; print(os.path.dirname(m.__file__))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let package = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
    let extension = package.join(format!(
        "extensions/{DUCKDB_VERSION}/sqlite_scanner.duckdb_extension"
    ));
    let platform = if cfg!(target_arch = "aarch64") {
        "linux_arm64"
    } else {
        "linux_amd64"
    };
    let target = home.join(format!(".duckdb/extensions/{DUCKDB_VERSION}/{platform}"));
    std::fs::create_dir_all(&target).ok()?;
    std::fs::copy(&extension, target.join("sqlite_scanner.duckdb_extension")).ok()?;
    Some(NsysAi {
        command: python.with_file_name("nsys-ai"),
        home: home.to_path_buf(),
    })
}

/// A folder of its own under `work` holding only a link to `trace` named `file_name`: HTA
/// reads every file of its folder as a rank, and nsys-ai writes its cache beside the export.
fn alone(trace: &Path, work: &Path, folder: &str, file_name: &str) -> PathBuf {
    let dir = work.join(folder);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a folder for the peer");
    let dir = std::fs::canonicalize(&dir).expect("a folder for the peer");
    let link = dir.join(file_name);
    let target = std::fs::canonicalize(trace).expect("trace path");
    std::os::unix::fs::symlink(&target, &link).expect("a link for the peer");
    link
}

/// HTA's idle-time breakdown of `trace` (`TraceAnalysis(trace_dir).get_idle_time_breakdown`),
/// measured: the trace's parse, its per-rank frames and the breakdown.
#[must_use]
pub fn hta_idle_breakdown(python: &Path, trace: &Path, work: &Path) -> Measure {
    let file_name = if trace.extension().is_some_and(|e| e == "gz") {
        "rank0.json.gz"
    } else {
        "rank0.json"
    };
    let link = alone(trace, work, "hta-input", file_name);
    let dir = link.parent().expect("the link's folder").to_path_buf();
    let script = "import sys\nfrom hta.trace_analysis import TraceAnalysis\n\
                  a = TraceAnalysis(trace_dir=sys.argv[1])\n\
                  a.get_idle_time_breakdown(visualize=False)\n";
    let m = measure(Command::new(python).args(["-c", script]).arg(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    m
}

/// nsys-ai on `export`: `warm` (its DuckDB/Parquet cache built from the export, the work
/// every first question pays) and then `summary` (per-GPU utilisation, top kernels and idle
/// gaps, answered from that cache), each measured.
///
/// # Errors
/// When `warm` exits non-zero or leaves no cache (DuckDB without its extension says so on
/// stderr and still exits 0).
pub fn nsys_ai_summary(
    peer: &NsysAi,
    export: &Path,
    work: &Path,
) -> Result<(Measure, Measure), String> {
    let link = alone(export, work, "nsys-ai-input", "export.sqlite");
    let dir = link.parent().expect("the link's folder").to_path_buf();
    let run = |sub: &str| {
        measure(
            Command::new(&peer.command)
                .arg(sub)
                .arg(&link)
                .env("HOME", &peer.home)
                .current_dir(&dir),
        )
    };
    let warm = run("warm");
    let cached = dir.join("export.nsys-cache").is_dir();
    let summary = run("summary");
    let _ = std::fs::remove_dir_all(&dir);
    match (warm.exit_code, cached, summary.exit_code) {
        (Some(0), true, Some(0)) => Ok((warm, summary)),
        (Some(0), false, _) => Err("warm built no cache".into()),
        (w, _, s) => Err(format!("warm exit {w:?}, summary exit {s:?}")),
    }
}
