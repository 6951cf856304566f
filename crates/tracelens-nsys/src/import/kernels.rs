//! The kernel table, the largest GPU table: decoded on a second read-only connection while the
//! main one reads the runtime table, and handed over in blocks that the importer adds between
//! blocks of runtime rows. A few blocks wait at most (the reader pauses when they are not
//! taken), never the whole table: on a 1 GB export the table held 650 MB of rows at once.

use super::{correlation_key, Importer};
use crate::db::{int, pid_of, Db};
use rusqlite::Row;
use std::sync::mpsc::{Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};
use tracelens_model::{KernelLaunch, LaneKey, SpanInput, SpanKind, NO_DETAIL};

const TABLE: &str = "CUPTI_ACTIVITY_KIND_KERNEL";

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

    /// Adds the next block of kernels (waiting for it); `false` once the table is done.
    pub(super) fn add_next(&mut self, imp: &mut Importer) -> rusqlite::Result<bool> {
        let Some(blocks) = &self.blocks else {
            return Ok(false);
        };
        match blocks.recv() {
            Ok(Ok(rows)) => {
                add_kernels(imp, rows);
                Ok(true)
            }
            Ok(Err(e)) => {
                self.blocks = None;
                Err(e)
            }
            Err(_) => {
                // The reader is done: the table counts as read even when empty or absent.
                self.blocks = None;
                imp.rows_by_table.entry(TABLE.to_string()).or_default();
                match self.reader.take().map(ScopedJoinHandle::join) {
                    Some(Err(_)) => Err(rusqlite::Error::InvalidQuery),
                    _ => Ok(false),
                }
            }
        }
    }
}

/// One kernel row, as read on the second connection.
pub(super) struct KernelRow {
    start: i64,
    end: i64,
    device: i64,
    stream: i64,
    correlation: i64,
    global_pid: i64,
    name: i64,
    launch: Option<KernelLaunch>,
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
    let mut stmt = db.conn.prepare(&sql)?;
    let mut cursor = stmt.query([])?;
    while let Some(r) = cursor.next()? {
        if rows.len() == BLOCK_ROWS {
            let full = std::mem::replace(&mut rows, Vec::with_capacity(BLOCK_ROWS));
            if blocks.send(Ok(full)).is_err() {
                return Ok(());
            }
        }
        let (Some(start), Some(end)) = (int(r, 0), int(r, 1)) else {
            continue;
        };
        rows.push(KernelRow {
            start,
            end,
            device: int(r, 2).unwrap_or(0),
            stream: int(r, 3).unwrap_or(-1),
            correlation: int(r, 4).unwrap_or(-1),
            global_pid: int(r, 5).unwrap_or(0),
            name: int(r, 6).unwrap_or(-1),
            launch: launch_of(r, 7),
        });
    }
    if !rows.is_empty() {
        let _ = blocks.send(Ok(rows));
    }
    Ok(())
}

/// A kernel's launch configuration from the nine columns at `first` (grid, block, registers,
/// static and dynamic shared memory); `None` when the export lacks the grid or block.
fn launch_of(r: &Row, first: usize) -> Option<KernelLaunch> {
    let small = |i: usize| int(r, first + i).and_then(|v| u32::try_from(v).ok());
    let dims = |at: usize| Some([small(at)?, small(at + 1)?, small(at + 2)?]);
    Some(KernelLaunch {
        grid: dims(0)?,
        block: dims(3)?,
        registers_per_thread: small(6).unwrap_or(0),
        shared_memory_bytes: small(7).unwrap_or(0).saturating_add(small(8).unwrap_or(0)),
        est_occupancy_percent: None,
    })
}

/// Adds a block of kernels read by [`read_kernel_rows`].
fn add_kernels(imp: &mut Importer, rows: Vec<KernelRow>) {
    *imp.rows_by_table.entry(TABLE.to_string()).or_default() += rows.len() as u64;
    for k in rows {
        let name = imp.name((k.name >= 0).then_some(k.name));
        let lane = imp.b.lane(LaneKey::Gpu {
            device: k.device,
            stream: k.stream,
        });
        let pid = pid_of(k.global_pid);
        let detail = k.launch.map_or(NO_DETAIL, |l| imp.b.add_kernel_launch(l));
        imp.b.add_span(SpanInput {
            kind: SpanKind::Kernel,
            lane,
            start_ns: k.start,
            dur_ns: k.end.saturating_sub(k.start),
            name,
            correlation: (k.correlation >= 0).then(|| correlation_key(pid, k.correlation)),
            external_id: None,
            detail,
        });
    }
}
