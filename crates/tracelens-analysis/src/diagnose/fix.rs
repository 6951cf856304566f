//! One fix as findings carry it (the sentence, why, an example), and how a host-blocking
//! call waits: the shapes every fix writer fills in.

/// One fix: the actionable sentence, why, and a short example (empty when no example fits
/// the program).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fix {
    /// What to change.
    pub fix: String,
    /// Why, in full.
    pub advice: String,
    /// A short example in the program's language, or empty.
    pub snippet: String,
}

impl Fix {
    /// A fix from its three texts.
    #[must_use]
    pub fn new(fix: &str, advice: &str, snippet: &str) -> Fix {
        Fix {
            fix: fix.into(),
            advice: advice.into(),
            snippet: snippet.into(),
        }
    }

    /// `(fix, advice, snippet)`, the way findings store them.
    #[must_use]
    pub fn parts(self) -> (String, String, String) {
        (self.fix, self.advice, self.snippet)
    }
}

/// How a host-blocking call waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostWait {
    /// One stream or one event.
    StreamOrEvent,
    /// The whole device, or a synchronous copy or fill.
    DeviceOrCopy,
    /// Freeing device or pinned memory (waits for the device).
    Free,
    /// Synchronous copies that read a few bytes back (a flag, a count, a residual) for the
    /// host to decide on: each waits for all queued work.
    ValueRead,
}
