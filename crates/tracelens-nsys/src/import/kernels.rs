//! The kernel table, the largest GPU table: decoded on a second read-only connection while the
//! main one reads the runtime table, and handed over in blocks that the importer adds between
//! blocks of runtime rows. A few blocks wait at most (the reader pauses when they are not
//! taken), never the whole table: on a 1 GB export the table held 650 MB of rows at once.

use crate::cells::{Cells, Query};
use crate::db::Db;
use std::sync::mpsc::{Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};
use tracelens_model::KernelLaunch;

pub(super) const TABLE: &str = "CUPTI_ACTIVITY_KIND_KERNEL";

/// Kernel rows per block handed over; the importer takes one after as many runtime rows.
pub(super) const BLOCK_ROWS: usize = 8192;

/// Blocks read ahead of the importer at most.
const BLOCKS_AHEAD: usize = 8;

/// The kernels as they are read, block by block, in the table's order.
pub(super) struct KernelFeed<'scope> {
    blocks: Option<Receiver<rusqlite::Result<Vec<KernelRow>>>>,
    reader: Option<ScopedJoinHandle<'scope, ()>>,
}

impl<'scope> KernelFeed<'scope> {
    /// Starts reading the kernel table of `path` on a second connection.
    pub(super) fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        path: &'env std::path::Path,
    ) -> Self {
        let (send, blocks) = std::sync::mpsc::sync_channel(BLOCKS_AHEAD);
        let reader = scope.spawn(move || {
            if let Err(e) = Db::open(path).and_then(|db| read_kernel_rows(&db, &send)) {
                let _ = send.send(Err(e));
            }
        });
        KernelFeed {
            blocks: Some(blocks),
            reader: Some(reader),
        }
    }

    /// The next block of kernels (waiting for it); `None` once the table is done.
    pub(super) fn next_block(&mut self) -> rusqlite::Result<Option<Vec<KernelRow>>> {
        let Some(blocks) = &self.blocks else {
            return Ok(None);
        };
        match blocks.recv() {
            Ok(Ok(rows)) => Ok(Some(rows)),
            Ok(Err(e)) => {
                self.blocks = None;
                Err(e)
            }
            Err(_) => {
                self.blocks = None;
                match self.reader.take().map(ScopedJoinHandle::join) {
                    Some(Err(_)) => Err(rusqlite::Error::InvalidQuery),
                    _ => Ok(None),
                }
            }
        }
    }
}

impl Drop for KernelFeed<'_> {
    /// An import that stops early (an error elsewhere) lets the reader go: its next block
    /// finds no taker, and it is joined here, so a reader that panicked ends as the import's
    /// error rather than a panic of the whole scope.
    fn drop(&mut self) {
        self.blocks = None;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// One kernel row, as read on the second connection.
pub(super) struct KernelRow {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) device: i64,
    pub(super) stream: i64,
    pub(super) correlation: i64,
    pub(super) global_pid: i64,
    pub(super) name: i64,
    pub(super) launch: Option<KernelLaunch>,
}

/// Reads the kernel table on its own connection, handing its rows over in blocks; stops
/// when the importer no longer takes them.
fn read_kernel_rows(
    db: &Db,
    blocks: &SyncSender<rusqlite::Result<Vec<KernelRow>>>,
) -> rusqlite::Result<()> {
    let t = TABLE;
    if !db.has(t) {
        return Ok(());
    }
    let sql = format!(
        "SELECT start, end, {}, {}, {}, {}, coalesce({}, {}), {} FROM {t}",
        db.col(t, "deviceId"),
        db.col(t, "streamId"),
        db.col(t, "correlationId"),
        db.col(t, "globalPid"),
        db.col(t, "demangledName"),
        db.col(t, "shortName"),
        [
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "registersPerThread",
            "staticSharedMemory",
            "dynamicSharedMemory",
        ]
        .map(|c| db.col(t, c))
        .join(", ")
    );
    let mut rows = Vec::with_capacity(BLOCK_ROWS);
    let mut cursor = Query::new(&db.conn, &sql)?;
    while let Some(r) = cursor.next()? {
        if rows.len() == BLOCK_ROWS {
            let full = std::mem::replace(&mut rows, Vec::with_capacity(BLOCK_ROWS));
            if blocks.send(Ok(full)).is_err() {
                return Ok(());
            }
        }
        let (Some(start), Some(end)) = (r.int(0), r.int(1)) else {
            continue;
        };
        rows.push(KernelRow {
            start,
            end,
            device: r.int(2).unwrap_or(0),
            stream: r.int(3).unwrap_or(-1),
            correlation: r.int(4).unwrap_or(-1),
            global_pid: r.int(5).unwrap_or(0),
            name: r.int(6).unwrap_or(-1),
            launch: launch_of(&r, 7),
        });
    }
    if !rows.is_empty() {
        let _ = blocks.send(Ok(rows));
    }
    Ok(())
}

/// A kernel's launch configuration from the nine columns at `first` (grid, block, registers,
/// static and dynamic shared memory); `None` when the export lacks the grid or block.
fn launch_of(r: &Cells, first: usize) -> Option<KernelLaunch> {
    let small = |i: usize| r.int(first + i).and_then(|v| u32::try_from(v).ok());
    let dims = |at: usize| Some([small(at)?, small(at + 1)?, small(at + 2)?]);
    Some(KernelLaunch {
        grid: dims(0)?,
        block: dims(3)?,
        registers_per_thread: small(6).unwrap_or(0),
        shared_memory_bytes: small(7).unwrap_or(0).saturating_add(small(8).unwrap_or(0)),
        est_occupancy_percent: None,
    })
}
