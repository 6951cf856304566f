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

mod db;
mod import;
pub mod rules;

pub use db::{pid_of, tid_of, Db};
pub use import::{correlation_key, pytorch_op_name};

use std::path::Path;
use tracelens_model::Trace;

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

/// The event tables the importer reads, one row per span (row counts size the model up
/// front).
pub const EVENT_TABLES: [&str; 7] = [
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "NVTX_EVENTS",
    "OSRT_API",
];

/// Opens an export, checking that it is one. The error is one line, without the path.
pub fn open(path: &Path) -> Result<Db, String> {
    let db = Db::open(path).map_err(|e| format!("cannot read the SQLite database: {e}"))?;
    if !NSYS_TABLES.iter().any(|t| db.has(t)) {
        return Err(
            "an SQLite database, but not an Nsight Systems export (none of its StringIds, META_DATA_EXPORT, CUPTI or NVTX tables)"
                .into(),
        );
    }
    Ok(db)
}

/// Imports the export at `path`. The error is one line, without the path.
pub fn import_file(path: &Path) -> Result<Trace, String> {
    let db = open(path)?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    import::import(&db, path, bytes)
        .map_err(|e| format!("cannot read the Nsight Systems export: {e}"))
}
