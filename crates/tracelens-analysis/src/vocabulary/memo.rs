//! A name's meaning asked once per distinct name: a trace repeats the same few names
//! millions of times, and the vocabulary's tests scan text.

use tracelens_model::{NameId, Trace};

/// What a test says of each name of one trace, computed on first ask.
pub struct PerName<T> {
    known: Vec<Option<T>>,
    test: fn(&str) -> T,
}

impl<T: Copy> PerName<T> {
    /// A memo of `test` over the names of `trace`.
    #[must_use]
    pub fn new(trace: &Trace, test: fn(&str) -> T) -> Self {
        PerName {
            known: vec![None; trace.names.len()],
            test,
        }
    }

    /// What the test says of `name` (a name of the trace this memo was made for).
    pub fn of(&mut self, trace: &Trace, name: NameId) -> T {
        let i = name.0 as usize;
        match self.known.get(i) {
            Some(Some(v)) => *v,
            Some(None) => {
                let v = (self.test)(trace.names.get(name));
                self.known[i] = Some(v);
                v
            }
            None => (self.test)(trace.names.get(name)),
        }
    }
}
