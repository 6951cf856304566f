//! Small Nsight Systems exports for tests, written with the real DDL of nsys 2023.4.4
//! (schema 3.7.2, `shared/notes/nsys-format.md` §1.4), trimmed to the tables used.

use rusqlite::{params, Connection};
use std::path::Path;

/// The tables tracelens reads, as nsys 2023.4.4 creates them.
pub const DDL: &str = "
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
    registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
    blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
    dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
    gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
    srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
    graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,
    color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
    int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER,
    nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, nestingLevel INTEGER, callchainId INTEGER NOT NULL);
CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL, isSchedIn INTEGER NOT NULL, globalTid INTEGER, threadState INTEGER, threadBlock INTEGER);
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT NOT NULL);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),(1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'),
    (2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),(3,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'),(4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),
    (5,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),(6,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static'),
    (7,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown');
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, totalMemory INTEGER, smCount INTEGER,
    computeMajor INTEGER, computeMinor INTEGER, threadsPerWarp INTEGER);
";

/// `globalTid` of (pid, tid) on host 1.
#[must_use]
pub fn gtid(pid: i64, tid: i64) -> i64 {
    (1 << 48) | (pid << 24) | tid
}

/// Builds an export row by row.
pub struct Export {
    /// The database being written.
    pub conn: Connection,
    next_string: i64,
}

impl Export {
    /// A new export at `path` with `meta_table` (`META_DATA_EXPORT` or the pre-2023.4
    /// `EXPORT_META_DATA`) saying schema `schema`.
    #[must_use]
    pub fn create(path: &Path, meta_table: &str, schema: &str) -> Export {
        let _ = std::fs::remove_file(path);
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(DDL).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE {meta_table} (name TEXT NOT NULL, value TEXT);"
        ))
        .unwrap();
        conn.execute(&format!("INSERT INTO {meta_table} VALUES ('EXPORT_PRODUCT_VERSION', '2023.4.4.54'), ('EXPORT_SCHEMA_VERSION', ?1)"), [schema])
            .unwrap();
        Export {
            conn,
            next_string: 1,
        }
    }

    /// Interns a string into StringIds.
    pub fn string(&mut self, s: &str) -> i64 {
        let id = self.next_string;
        self.next_string += 1;
        self.conn
            .execute("INSERT INTO StringIds VALUES (?1, ?2)", params![id, s])
            .unwrap();
        id
    }

    /// A CUDA runtime call.
    pub fn runtime(&mut self, name: &str, pid: i64, tid: i64, start: i64, end: i64, corr: i64) {
        let n = self.string(name);
        self.conn
            .execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, 0, ?3, ?4, ?5, 0, NULL)",
                params![start, end, gtid(pid, tid), corr, n],
            )
            .unwrap();
    }

    /// A kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn kernel(
        &mut self,
        name: &str,
        pid: i64,
        device: i64,
        stream: i64,
        start: i64,
        end: i64,
        corr: i64,
    ) {
        let n = self.string(name);
        self.conn
            .execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid,
                 demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
                 dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)
                 VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?7, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 1)",
                params![start, end, device, stream, corr, gtid(pid, 0), n],
            )
            .unwrap();
    }

    /// A memcpy (`copy_kind`, `src`, `dst` as the ENUM tables number them).
    #[allow(clippy::too_many_arguments)]
    pub fn memcpy(
        &mut self,
        pid: i64,
        device: i64,
        stream: i64,
        start: i64,
        end: i64,
        corr: i64,
        bytes: i64,
        copy_kind: i64,
        src: i64,
        dst: i64,
    ) {
        self.conn
            .execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid,
                 bytes, copyKind, srcKind, dstKind) VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![start, end, device, stream, corr, gtid(pid, 0), bytes, copy_kind, src, dst],
            )
            .unwrap();
    }

    /// An NVTX push/pop range with plain text (`end` None = never closed).
    pub fn nvtx(&mut self, text: &str, pid: i64, tid: i64, start: i64, end: Option<i64>) {
        self.conn
            .execute(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?1, ?2, 59, ?3, ?4, 0)",
                params![start, end, text, gtid(pid, tid)],
            )
            .unwrap();
    }

    /// An NVTX push/pop range whose text is a registered string (`textId`).
    pub fn nvtx_registered(&mut self, text: &str, pid: i64, tid: i64, start: i64, end: i64) {
        let id = self.string(text);
        self.conn
            .execute(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid, domainId) VALUES (?1, ?2, 59, ?3, ?4, 1)",
                params![start, end, id, gtid(pid, tid)],
            )
            .unwrap();
    }

    /// An OS runtime call (eventClass 27).
    pub fn osrt(&mut self, name: &str, pid: i64, tid: i64, start: i64, end: i64) {
        let n = self.string(name);
        self.conn
            .execute(
                "INSERT INTO OSRT_API VALUES (?1, ?2, 27, ?3, ?4, 0, 0, 0)",
                params![start, end, gtid(pid, tid), n],
            )
            .unwrap();
    }

    /// The thread is switched out at `out` and back in at `back`.
    pub fn off_cpu(&mut self, pid: i64, tid: i64, out: i64, back: i64) {
        self.off_cpu_in_state(pid, tid, out, back, 1);
    }

    /// A switch-out in `state` (`ENUM_SAMPLING_THREAD_STATE`: 0 unknown, 1 running, i.e.
    /// preempted, 2 interruptible wait) and the switch back in.
    pub fn off_cpu_in_state(&mut self, pid: i64, tid: i64, out: i64, back: i64, state: i64) {
        for (at, sched_in, state) in [(out, 0, state), (back, 1, 0)] {
            self.conn
                .execute(
                    "INSERT INTO SCHED_EVENTS VALUES (?1, 3, ?2, ?3, ?4, NULL)",
                    params![at, sched_in, gtid(pid, tid), state],
                )
                .unwrap();
        }
    }

    /// Names a GPU.
    pub fn gpu(&mut self, id: i64, name: &str) {
        self.conn
            .execute(
                "INSERT INTO TARGET_INFO_GPU VALUES (1, ?1, ?2, 85899345920, 132, 9, 0, 32)",
                params![id, name],
            )
            .unwrap();
    }
}
