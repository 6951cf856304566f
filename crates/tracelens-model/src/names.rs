//! Interned strings: every span name, thread name and category text is stored once.

use rustc_hash::FxHashMap;

/// Handle of a string in a [`StringTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameId(pub u32);

/// A position in one of the model's tables as the model stores it (`u32`). No table reaches
/// 2^32 entries: 2^32 spans would take 128 GiB (32 bytes each), names and lanes more still,
/// past the memory of any machine tracelens runs on, so this is an invariant, not an input
/// check.
#[must_use]
pub fn table_index(i: usize) -> u32 {
    u32::try_from(i).expect("a model table of 2^32 entries cannot fit in memory")
}

impl NameId {
    /// The name at position `i` of the table.
    #[must_use]
    pub fn at(i: usize) -> NameId {
        NameId(table_index(i))
    }
}

/// An append-only table of unique strings addressed by [`NameId`].
#[derive(Debug, Default, Clone)]
pub struct StringTable {
    strings: Vec<Box<str>>,
    index: FxHashMap<Box<str>, NameId>,
}

impl StringTable {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `text`, adding it when new.
    pub fn intern(&mut self, text: &str) -> NameId {
        if let Some(&id) = self.index.get(text) {
            return id;
        }
        let id = NameId::at(self.strings.len());
        let boxed: Box<str> = text.into();
        self.strings.push(boxed.clone());
        self.index.insert(boxed, id);
        id
    }

    /// The id of `text` if it was interned.
    #[must_use]
    pub fn lookup(&self, text: &str) -> Option<NameId> {
        self.index.get(text).copied()
    }

    /// The text of `id`.
    #[must_use]
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
                self.index.entry(s.clone()).or_insert(NameId::at(i));
                changed += 1;
            }
        }
        changed
    }

    /// Number of distinct strings.
    #[must_use]
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Whether no string was interned.
    #[must_use]
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
