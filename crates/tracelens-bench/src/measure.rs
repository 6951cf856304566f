//! Running a command and measuring it: wall time, exit code and the child's peak RSS.

use std::process::{Command, Stdio};
use std::time::Instant;

/// What one run cost.
#[derive(Clone, Copy, Debug)]
pub struct Measure {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Peak resident set of the child, in kB.
    pub peak_rss_kb: i64,
    /// CPU time of the child, user plus system, in seconds.
    pub cpu_seconds: f64,
    /// Exit code, or `None` when a signal ended it (an abort, the OOM killer).
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
}

/// Runs `cmd` with stdout and stderr discarded and measures it (wait4).
// The child is reaped by wait4 below, which std cannot do while also returning rusage.
#[allow(clippy::zombie_processes)]
pub fn measure(cmd: &mut Command) -> Measure {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pid = libc::pid_t::try_from(child.id()).expect("process ids fit pid_t");
    let mut status: libc::c_int = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child with valid out-pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(rc, pid, "wait4 failed");
    Measure {
        seconds,
        peak_rss_kb: usage.ru_maxrss,
        cpu_seconds: (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) as f64
            + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) as f64 / 1e6,
        exit_code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
    }
}
