//! Nsight Systems SQLite exports (`nsys export --type sqlite`) into the tracelens model, so
//! every diagnosis and report works on them unchanged; plus [`rules`], a compatibility mode
//! that reproduces the six CUDA rules of `nsys analyze` over the same file.
//!
//! The export is opened read-only and immutable. Its schema is probed (exports are lazy and
//! columns drift across versions 3.0 → 3.25); a missing table means no data of that kind.
//! API calls join GPU ops on `(pid, correlationId)`: correlation ids are unique per process
//! only. PyTorch's NVTX ranges (`aten::add, op_id = …`) become CPU ops, so `.item()`,
//! `.to()` and DataLoader triggers are recognised as in a Kineto trace.
#![deny(missing_docs)]

mod cells;
mod db;
mod import;
pub mod rules;

pub use db::{pid_of, tid_of, Db, EVENT_TABLES, FORMAT};
pub use import::{correlation_key, pytorch_op_name};

use std::path::{Path, PathBuf};
use tracelens_model::{ImportFailure, Importer, Input, Trace};

/// The first bytes of every SQLite database.
pub const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Tables at least one of which every Nsight Systems export has.
const NSYS_TABLES: [&str; 5] = [
    "StringIds",
    "META_DATA_EXPORT",
    "EXPORT_META_DATA",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
];

/// The name prefix of every table and view of a ROCm `rocpd` database (rocprofv3
/// `--output-format rocpd`: `rocpd_kernel_dispatch`, `rocpd_info_agent_<uuid>`, …), told apart
/// so that one is named rather than called "not an export".
const ROCPD_PREFIX: &str = "rocpd_";

/// Opens an export, checking that it is one. The error is one line, without the path.
pub fn open(path: &Path) -> Result<Db, String> {
    let db = Db::open(path).map_err(|e| {
        format!(
            "cannot read the SQLite database: {}",
            crate::db::describe(&e)
        )
    })?;
    // nvprof's database (`nvprof -o`, `.nvvp`) shares CUPTI's table names but names its API
    // calls by callback id (`cbid`) and its strings in `StringTable`: read as an export, its
    // kernels and calls would be missed while the report looked complete.
    if db.has_col("CUPTI_ACTIVITY_KIND_RUNTIME", "cbid")
        && !db.has_col("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId")
    {
        return Err(
            "an nvprof database (nvprof -o / .nvvp), not an Nsight Systems export: tracelens does not read nvprof's schema; record the program again with nsys profile (or open this file in NVIDIA Visual Profiler)"
                .into(),
        );
    }
    if !NSYS_TABLES.iter().any(|t| db.has(t)) {
        if db.has_name_starting(ROCPD_PREFIX) {
            return Err(
                "a ROCm profiler database (rocprofv3 rocpd SQLite), not an Nsight Systems export: tracelens does not read rocpd yet (nor its Perfetto or OTF2 conversions); for a PyTorch program, a torch.profiler trace recorded on ROCm is read"
                    .into(),
            );
        }
        return Err(
            "an SQLite database, but not an Nsight Systems export (none of its StringIds, META_DATA_EXPORT, CUPTI or NVTX tables)"
                .into(),
        );
    }
    Ok(db)
}

/// The Nsight Systems SQLite importer.
pub struct NsysImporter;

impl Importer for NsysImporter {
    fn format(&self) -> &'static str {
        FORMAT
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[".sqlite", ".sqlite.gz", ".sqlite.zst"]
    }

    fn expects(&self) -> &'static str {
        "an Nsight Systems SQLite export"
    }

    fn sniff(&self, head: &[u8]) -> bool {
        head.starts_with(SQLITE_MAGIC)
    }

    fn import(&self, input: Input) -> Result<Trace, ImportFailure> {
        let (path, bytes, compression) = (input.path.clone(), input.file_bytes, input.compression);
        let export = open_input(input)?;
        let decoded_bytes = std::fs::metadata(&export.file).map_or(0, |m| m.len());
        let mut trace = import::import(&export.db, &export.file, decoded_bytes).map_err(|e| {
            ImportFailure::Format(format!(
                "cannot read the Nsight Systems export: {}",
                crate::db::describe(&e)
            ))
        })?;
        // A piped or compressed export was read from a private copy: name the input as given.
        trace.source.path = path.display().to_string();
        if compression.is_some() {
            trace.source.file_bytes = bytes;
        } else {
            trace.source.file_bytes = bytes.max(trace.source.file_bytes);
        }
        trace.source.compression = compression.map(|c| c.label().to_string());
        Ok(trace)
    }
}

/// An open export, with the private copy it may live on (removed when dropped).
pub struct OpenExport {
    /// The database.
    pub db: Db,
    /// The file SQLite reads: the input's path, or the private copy of a piped export.
    pub file: PathBuf,
    _spooled: Option<Spooled>,
}

/// Opens an export from an input: by its path when it is a regular, uncompressed file, else
/// from a private copy of the decoded stream (SQLite needs a file it can seek in).
pub fn open_input(input: Input) -> Result<OpenExport, ImportFailure> {
    if input.regular_file && input.compression.is_none() {
        let db = open(&input.path).map_err(ImportFailure::Format)?;
        return Ok(OpenExport {
            db,
            file: input.path,
            _spooled: None,
        });
    }
    let spooled = Spooled::new(input)?;
    let db = open(&spooled.0).map_err(ImportFailure::Format)?;
    Ok(OpenExport {
        db,
        file: spooled.0.clone(),
        _spooled: Some(spooled),
    })
}

/// A private copy of a piped or compressed export; removed when dropped.
struct Spooled(PathBuf);

impl Spooled {
    fn new(input: Input) -> Result<Spooled, ImportFailure> {
        let path = std::env::temp_dir().join(format!(
            "tracelens-export-{}-{}.sqlite",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let spooled = Spooled(path);
        let copy_failed =
            |e: std::io::Error| ImportFailure::Format(format!("cannot copy the export: {e}"));
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&spooled.0)
            .map_err(copy_failed)?;
        std::io::copy(&mut input.into_stream(), &mut out).map_err(copy_failed)?;
        Ok(spooled)
    }
}

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Imports the export at `path`. The error is one line, without the path.
pub fn import_file(path: &Path) -> Result<Trace, String> {
    let db = open(path)?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    import::import(&db, path, bytes).map_err(|e| {
        format!(
            "cannot read the Nsight Systems export: {}",
            crate::db::describe(&e)
        )
    })
}
