//! Where a command's results go: stdout made safe for CI runners, files written atomically and
//! never over the input, and the one-line error that names the file.

use crate::output;
use crate::stop::Stop;
use std::io::Write;
use std::path::Path;
use tracelens_load as input;
use tracelens_report::escape::terminal_text;

/// Prints `tracelens: error: PATH: PROBLEM` (both made safe for a terminal) and returns the
/// input-error exit code.
pub(crate) fn fail(stderr: &mut dyn Write, path: &Path, problem: impl std::fmt::Display) -> Stop {
    let line = format!("{}: {problem}", path.display());
    let _ = writeln!(stderr, "tracelens: error: {}", terminal_text(&line));
    Stop::Refused
}

/// Where results go, and the one input they must never replace.
pub(crate) struct Sink<'a> {
    pub(crate) stdout: &'a mut dyn Write,
    pub(crate) stderr: &'a mut dyn Write,
    pub(crate) input: &'a Path,
    pub(crate) input_identity: Option<input::FileIdentity>,
}

impl Sink<'_> {
    /// Writes to stdout, [workflow-command safe](tracelens_report::escape::workflow_command_safe):
    /// no line of it can be a CI runner command. A failure (a full device, a closed pipe) ends
    /// the run with exit 2.
    pub(crate) fn print(&mut self, text: &str) -> Result<(), Stop> {
        let safe = tracelens_report::escape::workflow_command_safe(text);
        self.print_commands(&safe)
    }

    /// Writes to stdout as is: only for tracelens's own `--annotations` workflow commands,
    /// whose trace-derived parts are escaped by the command format.
    pub(crate) fn print_commands(&mut self, text: &str) -> Result<(), Stop> {
        match self.stdout.write_all(text.as_bytes()) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stdout_failed(&e)),
        }
    }

    /// Flushes stdout, reporting a failure as [`Sink::print`] does.
    pub(crate) fn flush(&mut self) -> Result<(), Stop> {
        match self.stdout.flush() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stdout_failed(&e)),
        }
    }

    fn stdout_failed(&mut self, e: &std::io::Error) -> Stop {
        // A reader that went away (`| head`) needs no message.
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Stop::ClosedPipe;
        }
        let why = format!("cannot write output: {}", input::write_problem(e));
        fail(self.stderr, Path::new("<stdout>"), why)
    }

    /// Refuses a path that is the input (same file through any name or link).
    pub(crate) fn check_not_input(&mut self, path: &Path) -> Result<(), Stop> {
        if self.input_identity.is_some() && input::identity(path) == self.input_identity {
            let why = format!(
                "refusing to write the output over the input trace {} (choose another -o path)",
                self.input.display()
            );
            return Err(fail(self.stderr, path, why));
        }
        Ok(())
    }

    /// Writes `text` to `path` atomically, or reports why it could not.
    pub(crate) fn write_file(&mut self, path: &Path, text: &str) -> Result<(), Stop> {
        self.check_not_input(path)?;
        output::write_atomically(path, text).map_err(|e| {
            let why = format!("cannot write output: {}", input::write_problem(&e));
            fail(self.stderr, path, why)
        })
    }

    /// `wrote PATH` / `report: PATH` on stdout.
    pub(crate) fn announce(&mut self, label: &str, path: &Path) -> Result<(), Stop> {
        let line = format!("{label}{}\n", terminal_text(&path.display().to_string()));
        self.print(&line)
    }
}
