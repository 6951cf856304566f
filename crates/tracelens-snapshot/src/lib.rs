//! PyTorch memory snapshots (`torch.cuda.memory._record_memory_history()` then
//! `_dump_snapshot("snapshot.pickle")`, plain or gzip-compressed) into the model: the
//! allocation history becomes allocator samples (address, size, the allocator's totals
//! rebuilt from the segments at the snapshot, the Python stack of each allocation), and the
//! segments, the failed requests and the settings become the allocator's state.
//!
//! The pickle is hostile input: [`shape::check`] accepts only plain data and bounds its size,
//! depth and sharing before `pickle` decodes it (memoized parts shared, never copied).
//! `serde-pickle` 1.2 was tried first and refused: on each public snapshot we found it reports a
//! "recursive structure" (its memo reference counting), and with `replace_recursive_structures`
//! it reads one of them as 80,486 values, 4,236 of them `None`, where Python reads 116,380
//! (docs/memory.md).
#![deny(missing_docs)]

mod convert;
mod pickle;
pub mod shape;

use std::io::Read;
use tracelens_model::{ImportFailure, Importer, Input, Trace};

pub use convert::FORMAT;

/// Decoded pickle bytes read at most (a snapshot of 100,000 history entries is ~50 MB).
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

/// What the decoded value may expand to: values per stream byte (a plain pickle has at most
/// one per opcode), nesting (a snapshot nests 5 deep) and values on the stack at once (pickle
/// appends in batches of 1,000; a snapshot's stack holds a few batches).
const LIMITS: shape::Limits = shape::Limits {
    max_values: 1 << 27,
    max_depth: 32,
    max_stack: 1 << 22,
};

/// PyTorch memory snapshots.
pub struct SnapshotImporter;

impl Importer for SnapshotImporter {
    fn format(&self) -> &'static str {
        FORMAT
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[".pickle", ".pickle.gz", ".pkl", ".pkl.gz"]
    }

    fn expects(&self) -> &'static str {
        "a PyTorch memory snapshot (a pickle, protocol 2 to 5)"
    }

    fn sniff(&self, head: &[u8]) -> bool {
        matches!(head, [0x80, 2..=5, ..])
    }

    fn import(&self, input: Input) -> Result<Trace, ImportFailure> {
        let Input {
            path,
            head,
            rest,
            file_bytes,
            compression,
            ..
        } = input;
        let mut bytes = head;
        rest.take(MAX_SNAPSHOT_BYTES + 1 - bytes.len() as u64)
            .read_to_end(&mut bytes)
            .map_err(ImportFailure::Io)?;
        if bytes.len() as u64 > MAX_SNAPSHOT_BYTES {
            return Err(ImportFailure::Format(format!(
                "the memory snapshot decodes past {} GB, the most tracelens reads",
                MAX_SNAPSHOT_BYTES >> 30
            )));
        }
        let shape =
            shape::check(&bytes, LIMITS).map_err(|e| ImportFailure::Format(e.to_string()))?;
        let value = pickle::decode(&bytes)
            .ok_or_else(|| ImportFailure::Format("the pickle is malformed".into()))?;
        if !convert::is_snapshot(&value) {
            return Err(ImportFailure::Format(
                "a pickle, but not a PyTorch memory snapshot (no segments or device_traces): write one with torch.cuda.memory._dump_snapshot".into(),
            ));
        }
        let mut trace = convert::trace(&value, &path, shape);
        trace.source.file_bytes = file_bytes;
        trace.source.decoded_bytes = bytes.len() as u64;
        trace.source.compression = compression.map(|c| c.label().to_string());
        Ok(trace)
    }
}
