//! Decides at build time which end-to-end tests cannot run here, so cargo's summary shows
//! them as *ignored* (with the reason) rather than as passed:
//! - `no_corpus`: the trace corpus (`$TRACELENS_CORPUS`, default `../shared/traces`) is absent;
//! - `no_browser`: no Chromium on `PATH` (or `$TRACELENS_CHROMIUM`);
//! - `no_duckdb`: no `$TRACELENS_DUCKDB_PYTHON` (a Python with the duckdb package);
//! - `no_mcp_client`: no `$TRACELENS_MCP_PYTHON` (a Python with the `mcp` SDK);
//! - `no_dask`: no `$TRACELENS_DASK_PYTHON` (a Python with Dask's `distributed`);
//! - `no_moto`: no `$TRACELENS_MOTO_PYTHON` (a Python with `moto[server]`, an S3 server);
//! - `no_azurite`: no `$TRACELENS_AZURITE` (Azurite's `azurite-blob`, an Azure Blob server);
//! - `no_real_traces`: no PyTorch scenario traces recorded under `fixtures/real/` yet (they
//!   need a lent GPU: `scenarios/README.md`).
//!
//! With `TRACELENS_REQUIRE_CORPUS=1` / `TRACELENS_REQUIRE_BROWSER=1` (as `.ci/run` sets) the
//! tests are never ignored: they run and fail loudly when what they need is missing.

use std::path::{Path, PathBuf};

fn required(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v == "1")
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_corpus)");
    println!("cargo::rustc-check-cfg=cfg(no_browser)");
    println!("cargo::rustc-check-cfg=cfg(no_duckdb)");
    println!("cargo::rustc-check-cfg=cfg(no_mcp_client)");
    println!("cargo::rustc-check-cfg=cfg(no_dask)");
    println!("cargo::rustc-check-cfg=cfg(no_moto)");
    println!("cargo::rustc-check-cfg=cfg(no_azurite)");
    println!("cargo::rustc-check-cfg=cfg(no_real_traces)");
    for var in [
        "TRACELENS_CORPUS",
        "TRACELENS_REQUIRE_CORPUS",
        "TRACELENS_REQUIRE_BROWSER",
        "TRACELENS_CHROMIUM",
        "TRACELENS_DUCKDB_PYTHON",
        "TRACELENS_REQUIRE_DUCKDB",
        "TRACELENS_MCP_PYTHON",
        "TRACELENS_REQUIRE_MCP",
        "TRACELENS_DASK_PYTHON",
        "TRACELENS_REQUIRE_DASK",
        "TRACELENS_MOTO_PYTHON",
        "TRACELENS_REQUIRE_MOTO",
        "TRACELENS_AZURITE",
        "TRACELENS_REQUIRE_AZURITE",
        "PATH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let corpus = std::env::var_os("TRACELENS_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/traces"));
    let corpus = if corpus.is_absolute() {
        corpus
    } else {
        root.join(corpus)
    };
    // Re-checked when the folder appears or goes.
    println!("cargo:rerun-if-changed={}", corpus.display());
    if !corpus.is_dir() && !required("TRACELENS_REQUIRE_CORPUS") {
        println!("cargo:rustc-cfg=no_corpus");
    }
    let browser = std::env::var_os("TRACELENS_CHROMIUM").is_some()
        || std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| {
                [
                    "chromium",
                    "chromium-browser",
                    "google-chrome",
                    "google-chrome-stable",
                ]
                .iter()
                .any(|n| dir.join(n).is_file())
            })
        });
    if !browser && !required("TRACELENS_REQUIRE_BROWSER") {
        println!("cargo:rustc-cfg=no_browser");
    }
    if std::env::var_os("TRACELENS_DUCKDB_PYTHON").is_none()
        && !required("TRACELENS_REQUIRE_DUCKDB")
    {
        println!("cargo:rustc-cfg=no_duckdb");
    }
    if std::env::var_os("TRACELENS_MCP_PYTHON").is_none() && !required("TRACELENS_REQUIRE_MCP") {
        println!("cargo:rustc-cfg=no_mcp_client");
    }
    if std::env::var_os("TRACELENS_DASK_PYTHON").is_none() && !required("TRACELENS_REQUIRE_DASK") {
        println!("cargo:rustc-cfg=no_dask");
    }
    if std::env::var_os("TRACELENS_MOTO_PYTHON").is_none() && !required("TRACELENS_REQUIRE_MOTO") {
        println!("cargo:rustc-cfg=no_moto");
    }
    if std::env::var_os("TRACELENS_AZURITE").is_none() && !required("TRACELENS_REQUIRE_AZURITE") {
        println!("cargo:rustc-cfg=no_azurite");
    }
    let real = root.join("fixtures/real");
    println!("cargo:rerun-if-changed={}", real.display());
    let recorded =
        std::fs::read_dir(&real).is_ok_and(|entries| entries.flatten().any(|e| e.path().is_dir()));
    if !recorded {
        println!("cargo:rustc-cfg=no_real_traces");
    }
}
