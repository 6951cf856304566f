//! A query's rows read cell by cell through SQLite's C interface: each cell's value is taken
//! from the statement once and its type and contents read from it, without the checks
//! rusqlite's `Row` makes on every cell (column count, bounds, the value's conversion into
//! `ValueRef`), which were a fifth of the reading thread's time on a 1 GB export.
//!
//! Safety rests on three rules kept in this file alone: the statement lives no longer than its
//! connection (the `'conn` borrow), a row's cells are read only while the statement stands on
//! that row (`Cells` borrows the query mutably, so it cannot step meanwhile), and a value is
//! read only through the accessor of the type SQLite reports for it (no conversion ever
//! invalidates a text pointer handed out). Values are SQLite's unprotected ones: a connection
//! is used on one thread only.

use rusqlite::{ffi, Connection};
use std::ffi::c_int;
use std::marker::PhantomData;

/// One prepared query, stepped row by row.
pub(crate) struct Query<'conn> {
    stmt: *mut ffi::sqlite3_stmt,
    db: *mut ffi::sqlite3,
    columns: c_int,
    _conn: PhantomData<&'conn Connection>,
}

impl<'conn> Query<'conn> {
    /// Prepares `sql` (one statement) on `conn`.
    pub(crate) fn new(conn: &'conn Connection, sql: &str) -> rusqlite::Result<Self> {
        let len = c_int::try_from(sql.len()).map_err(|_| rusqlite::Error::InvalidQuery)?;
        // SAFETY: the handle is the open connection's, borrowed for 'conn; `sql` is valid for
        // `len` bytes and SQLite copies what it needs.
        let (db, stmt, rc) = unsafe {
            let db = conn.handle();
            let mut stmt = std::ptr::null_mut();
            let rc = ffi::sqlite3_prepare_v2(
                db,
                sql.as_ptr().cast(),
                len,
                &mut stmt,
                std::ptr::null_mut(),
            );
            (db, stmt, rc)
        };
        if rc != ffi::SQLITE_OK {
            // SAFETY: a failed prepare leaves no statement to finalize.
            return Err(unsafe { error(db, rc) });
        }
        if stmt.is_null() {
            // Only blanks or a comment: nothing to run.
            return Err(rusqlite::Error::InvalidQuery);
        }
        // SAFETY: `stmt` was just prepared.
        let columns = unsafe { ffi::sqlite3_column_count(stmt) };
        Ok(Query {
            stmt,
            db,
            columns,
            _conn: PhantomData,
        })
    }

    /// The next row, or `None` once the query is done.
    pub(crate) fn next(&mut self) -> rusqlite::Result<Option<Cells<'_>>> {
        // SAFETY: the statement is live (finalized only on drop).
        match unsafe { ffi::sqlite3_step(self.stmt) } {
            ffi::SQLITE_ROW => Ok(Some(Cells {
                stmt: self.stmt,
                columns: self.columns,
                _row: PhantomData,
            })),
            ffi::SQLITE_DONE => Ok(None),
            // SAFETY: the connection outlives the statement.
            rc => Err(unsafe { error(self.db, rc) }),
        }
    }
}

impl Drop for Query<'_> {
    fn drop(&mut self) {
        // SAFETY: finalized once, here; the connection is still open ('conn).
        unsafe {
            ffi::sqlite3_finalize(self.stmt);
        }
    }
}

/// The error SQLite reports for `rc` on `db`, as rusqlite builds it (so
/// [`crate::db::describe`] reads it the same way).
///
/// # Safety
/// `db` must be an open connection.
unsafe fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    let message = ffi::sqlite3_errmsg(db);
    let message = (!message.is_null()).then(|| {
        std::ffi::CStr::from_ptr(message)
            .to_string_lossy()
            .into_owned()
    });
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), message)
}

/// The cells of the row a [`Query`] stands on.
pub(crate) struct Cells<'row> {
    stmt: *mut ffi::sqlite3_stmt,
    columns: c_int,
    _row: PhantomData<&'row mut ()>,
}

impl<'row> Cells<'row> {
    /// Column `i`'s value and its SQLite type, `None` past the last column. One call into the
    /// statement per cell: the value is then read without going through the statement again.
    fn value(&self, i: usize) -> Option<(*mut ffi::sqlite3_value, c_int)> {
        let i = c_int::try_from(i).ok().filter(|&i| i < self.columns)?;
        // SAFETY: the statement stands on a row and `i` is one of its columns. The value is
        // unprotected (no mutex): it is read on this thread alone, while the row stands.
        unsafe {
            let value = ffi::sqlite3_column_value(self.stmt, i);
            (!value.is_null()).then(|| (value, ffi::sqlite3_value_type(value)))
        }
    }

    /// Column `i` as an integer (exports store numbers as text in places; a real is
    /// truncated as [`crate::db::real_to_int`] does).
    pub(crate) fn int(&self, i: usize) -> Option<i64> {
        match self.value(i)? {
            // SAFETY (both): the value holds this type, so no conversion happens.
            (value, ffi::SQLITE_INTEGER) => Some(unsafe { ffi::sqlite3_value_int64(value) }),
            (value, ffi::SQLITE_FLOAT) => Some(crate::db::real_to_int(unsafe {
                ffi::sqlite3_value_double(value)
            })),
            (_, ffi::SQLITE_TEXT) => self.text(i)?.trim().parse().ok(),
            _ => None,
        }
    }

    /// Column `i` as text, when it holds valid UTF-8 text.
    pub(crate) fn text(&self, i: usize) -> Option<&'row str> {
        let (value, ffi::SQLITE_TEXT) = self.value(i)? else {
            return None;
        };
        // SAFETY: the value holds text, so SQLite hands out its own bytes (no conversion), and
        // they stay valid until the statement steps, which `'row` forbids meanwhile. The length
        // is taken after the pointer, as SQLite's documentation asks.
        let bytes = unsafe {
            let at = ffi::sqlite3_value_text(value);
            let len = usize::try_from(ffi::sqlite3_value_bytes(value)).unwrap_or(0);
            if at.is_null() {
                return Some("");
            }
            std::slice::from_raw_parts(at, len)
        };
        std::str::from_utf8(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cell type reads as rusqlite's `Row` read it through `db::int` and `db::text`, and
    /// errors and past-the-end columns are handled.
    #[test]
    fn cells_read_as_rows_do() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (a, b); INSERT INTO t VALUES (7, 'x'), (2.9, ' 42 '), (-3.5, NULL), \
             (X'3132', 'é'), ('nope', CAST(X'FF' AS TEXT)), (9223372036854775807, '')",
        )
        .unwrap();
        let mut stmt = conn.prepare("SELECT a, b FROM t").unwrap();
        let mut rows = stmt.query([]).unwrap();
        let mut expected = Vec::new();
        while let Some(r) = rows.next().unwrap() {
            expected.push((
                crate::db::int(r, 0),
                crate::db::int(r, 1),
                crate::db::text(r, 0).map(str::to_string),
                crate::db::text(r, 1).map(str::to_string),
            ));
        }
        let mut q = Query::new(&conn, "SELECT a, b FROM t").unwrap();
        let mut got = Vec::new();
        while let Some(c) = q.next().unwrap() {
            assert_eq!(c.int(2), None);
            assert_eq!(c.text(usize::MAX), None);
            got.push((
                c.int(0),
                c.int(1),
                c.text(0).map(str::to_string),
                c.text(1).map(str::to_string),
            ));
        }
        assert_eq!(got, expected);
        assert_eq!(got[1].1, Some(42));
        assert_eq!(got[3].3.as_deref(), Some("é"));
        let missing = Query::new(&conn, "SELECT x FROM nowhere").err();
        assert!(
            missing
                .as_ref()
                .is_some_and(|e| e.to_string().contains("no such table")),
            "{missing:?}"
        );
        assert!(Query::new(&conn, "  -- only a comment").is_err());
        let mut q = Query::new(&conn, "SELECT abs(-9223372036854775807 - 1)").unwrap();
        assert!(q.next().is_err());
    }
}
