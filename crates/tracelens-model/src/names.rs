//! Interned strings: every span name, thread name and category text is stored once.

use rustc_hash::FxHashMap;

/// Handle of a string in a [`StringTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameId(pub u32);

/// An append-only table of unique strings addressed by [`NameId`].
#[derive(Debug, Default, Clone)]
pub struct StringTable {
    strings: Vec<Box<str>>,
    index: FxHashMap<Box<str>, NameId>,
}

impl StringTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `text`, adding it when new.
    pub fn intern(&mut self, text: &str) -> NameId {
        if let Some(&id) = self.index.get(text) {
            return id;
        }
        let id = NameId(self.strings.len() as u32);
        let boxed: Box<str> = text.into();
        self.strings.push(boxed.clone());
        self.index.insert(boxed, id);
        id
    }

    /// The id of `text` if it was interned.
    pub fn lookup(&self, text: &str) -> Option<NameId> {
        self.index.get(text).copied()
    }

    /// The text of `id`.
    pub fn get(&self, id: NameId) -> &str {
        &self.strings[id.0 as usize]
    }

    /// Replaces every string with `f(string)` where `f` returns a new text; ids stay valid.
    /// Returns how many strings changed.
    pub fn rewrite(&mut self, mut f: impl FnMut(&str) -> Option<String>) -> usize {
        let mut changed = 0;
        for (i, s) in self.strings.iter_mut().enumerate() {
            if let Some(new) = f(s) {
                self.index.remove(&**s);
                *s = new.into_boxed_str();
                self.index.entry(s.clone()).or_insert(NameId(i as u32));
                changed += 1;
            }
        }
        changed
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Whether no string was interned.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_returns_the_same_id_for_the_same_text() {
        let mut t = StringTable::new();
        let a = t.intern("aten::mm");
        let b = t.intern("aten::add");
        assert_ne!(a, b);
        assert_eq!(t.intern("aten::mm"), a);
        assert_eq!(t.get(b), "aten::add");
        assert_eq!(t.lookup("aten::add"), Some(b));
        assert_eq!(t.lookup("missing"), None);
        assert_eq!(t.len(), 2);
    }
}
