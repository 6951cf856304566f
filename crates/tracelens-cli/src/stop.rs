//! Why a command stopped before its end, and the one place that maps it to an exit code.

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code when a gate rule fires (`check`, `--fail-on`).
pub const EXIT_RULE: i32 = 1;
/// Exit code for usage errors, unreadable input, an output that would replace the input, or a
/// failed write.
pub const EXIT_INPUT: i32 = 2;

/// Why a command stopped. The message (one line) is printed where the problem is found; only
/// the exit code is decided here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Bad input, a bad rule, or an output that cannot be written (already said on stderr).
    Refused,
    /// The reader of stdout went away (`| head`): nothing to say.
    ClosedPipe,
    /// A gate rule fired (already said).
    RuleFired,
}

impl Stop {
    /// The process exit code.
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            Stop::Refused | Stop::ClosedPipe => EXIT_INPUT,
            Stop::RuleFired => EXIT_RULE,
        }
    }
}

/// The exit code of a command's result.
pub(crate) fn exit_code(result: Result<(), Stop>) -> i32 {
    result.map_or_else(Stop::exit_code, |()| EXIT_OK)
}
