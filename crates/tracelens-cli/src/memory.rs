//! A memory budget for the whole process: the global allocator counts live bytes, and an
//! allocation that would pass the budget ends the run with one clear line and exit 2
//! instead of the allocator's abort (or the kernel's OOM killer).
//!
//! The budget is `TRACELENS_MAX_MEMORY` (`512M`, `8G`, or bytes) or, by default, 90 % of the
//! machine's memory (the smaller of `MemTotal` and a cgroup v2 `memory.max`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The system allocator with a budget on live bytes.
pub struct BudgetAllocator;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static BUDGET_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);
static OVER_BUDGET: AtomicBool = AtomicBool::new(false);
static INPUT_LABEL: OnceLock<String> = OnceLock::new();

impl BudgetAllocator {
    fn charge(size: usize) {
        let live = LIVE_BYTES.fetch_add(size, Ordering::Relaxed) + size;
        if live > BUDGET_BYTES.load(Ordering::Relaxed) && !OVER_BUDGET.swap(true, Ordering::SeqCst)
        {
            over_budget(live);
        }
    }
}

// SAFETY: every call is forwarded to `System` unchanged; only a counter is kept beside it.
unsafe impl GlobalAlloc for BudgetAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::charge(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::charge(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            Self::charge(new_size - layout.size());
        } else {
            LIVE_BYTES.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

/// Prints the one-line error and exits 2. Runs inside the allocator, on whichever thread
/// passed the budget, while other threads may hold locks or wait on this one: it takes no
/// lock and no heap (the line is formatted into a stack buffer and written with one
/// `write(2)`), removes the output file being written, and ends the process with `_exit`,
/// which runs no exit handler (the standard library's flush of stdout would wait for a
/// lock another thread may hold). Later allocations on other threads pass unchecked.
fn over_budget(live: usize) -> ! {
    let budget = BUDGET_BYTES.load(Ordering::Relaxed);
    let label = INPUT_LABEL.get().map(String::as_str).unwrap_or("tracelens");
    let mut buf = [0u8; 1024];
    let mut line = std::io::Cursor::new(&mut buf[..]);
    // A label longer than the buffer is cut: the line must fit.
    let mut cut = label.len().min(300);
    while !label.is_char_boundary(cut) {
        cut -= 1;
    }
    let label = &label[..cut];
    let _ = write!(line, "tracelens: error: {label}: needs more than ");
    let _ = if budget >= 1_000_000_000 {
        write!(line, "{:.1} GB", budget as f64 / 1e9)
    } else {
        write!(line, "{} MB", budget / 1_000_000)
    };
    let _ = writeln!(
        line,
        " of memory ({} MB live when it stopped; the budget is TRACELENS_MAX_MEMORY, or 90 % of this machine's memory): raise it, or profile fewer steps",
        live / 1_000_000
    );
    let len = usize::try_from(line.position()).unwrap_or(0);
    crate::output::signal_cleanup::remove_now();
    end_now(&buf[..len])
}

/// Writes `line` to stderr and ends the process with exit status 2, taking no lock.
#[cfg(unix)]
fn end_now(line: &[u8]) -> ! {
    // SAFETY: `write` and `_exit` are async-signal-safe libc calls on a valid buffer.
    unsafe {
        libc::write(libc::STDERR_FILENO, line.as_ptr().cast(), line.len());
        libc::_exit(crate::EXIT_INPUT)
    }
}

/// Writes `line` to stderr and ends the process with exit status 2.
#[cfg(not(unix))]
fn end_now(line: &[u8]) -> ! {
    let _ = std::io::stderr().write_all(line);
    std::process::exit(crate::EXIT_INPUT)
}

/// Parses `512M`, `8G`, `1.5G`, `100000` (bytes).
fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (number, scale) = match t.char_indices().last()? {
        (i, 'k' | 'K') => (&t[..i], 1e3),
        (i, 'm' | 'M') => (&t[..i], 1e6),
        (i, 'g' | 'G') => (&t[..i], 1e9),
        (i, 't' | 'T') => (&t[..i], 1e12),
        _ => (t, 1.0),
    };
    let v: f64 = number.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(bytes_of(v * scale))
}

/// A positive byte count written as a float, as whole bytes (saturating).
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "the value is finite and positive; Rust's float-to-int cast saturates"
)]
fn bytes_of(v: f64) -> usize {
    v as usize
}

/// 90 % of the memory this process may use, when the system says.
fn default_budget() -> Option<usize> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let total_kb: usize = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let mut limit = total_kb * 1024;
    if let Ok(max) = std::fs::read_to_string("/sys/fs/cgroup/memory.max") {
        if let Ok(bytes) = max.trim().parse::<usize>() {
            limit = limit.min(bytes);
        }
    }
    Some(limit / 10 * 9)
}

/// Names the input in the out-of-memory message.
pub fn name_input(label: &str) {
    let _ = INPUT_LABEL.set(label.to_string());
}

/// glibc heap arenas the threads share.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_ARENAS: libc::c_int = 2;

/// Has the threads share two heap arenas instead of glibc's default of up to eight per core.
/// The decoding and analysis threads free lists another thread allocated and leave freed
/// blocks in many arenas, whose pages stay resident beside what the analyses allocate after:
/// the peak then counts memory nothing uses. A limit set in `MALLOC_ARENA_MAX` is left as it
/// is. Call first, before any other thread starts.
pub fn share_heap_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; no other thread exists yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}

/// Sets the budget, from `TRACELENS_MAX_MEMORY` or the machine. Call once, first.
pub fn set_budget() -> Result<(), String> {
    let budget = match std::env::var("TRACELENS_MAX_MEMORY") {
        Ok(v) => parse_size(&v)
            .ok_or_else(|| format!("TRACELENS_MAX_MEMORY={v:?} is not a size (like 512M or 8G)"))?,
        Err(_) => default_budget().unwrap_or(usize::MAX),
    };
    BUDGET_BYTES.store(budget, Ordering::Relaxed);
    Ok(())
}

/// The process's peak resident memory so far in MB (`VmHWM`; Linux only, else `None`).
pub(crate) fn peak_rss_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M"), Some(512_000_000));
        assert_eq!(parse_size("1.5G"), Some(1_500_000_000));
        assert_eq!(parse_size("100000"), Some(100_000));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("-1G"), None);
    }
}
