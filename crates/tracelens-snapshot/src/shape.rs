//! A bounded check of a pickle stream before anything decodes it: only the opcodes of plain
//! data are accepted (numbers, strings, bytes, lists, tuples, dicts, sets, the memo; protocols
//! 0 to 5) — no global, reduce, build or persistent id, so decoding constructs nothing but data
//! — and the value is measured without being built: its size as a decoder that copies shared
//! (memoized) parts will expand it, its nesting depth, and no container that holds itself.
//! One pass over the opcodes, memory linear in the stream.

use std::collections::HashMap;

/// What a stream may expand to.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Values (containers and scalars) after shared parts are copied.
    pub max_values: u64,
    /// Nesting depth of containers.
    pub max_depth: u32,
    /// Values on the pickle stack at once: data a stream leaves there (never reaching the
    /// root) still costs the decoder memory, up to one value per opcode byte.
    pub max_stack: u64,
}

/// Why a stream is refused: one line's worth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// An opcode that constructs objects or reads outside data (its name).
    Refused(&'static str),
    /// An opcode byte pickle does not define.
    Unknown(u8),
    /// The stream ends inside an opcode or before STOP.
    Truncated,
    /// The stack or memo is used inconsistently (popping an empty stack, a missing memo id).
    Malformed(&'static str),
    /// It expands past the limit.
    TooLarge(u64),
    /// It nests deeper than the limit.
    TooDeep(u32),
    /// A container holds itself.
    Recursive,
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShapeError::Refused(op) => write!(
                f,
                "the pickle constructs objects ({op}): only plain data is read"
            ),
            ShapeError::Unknown(b) => write!(f, "the pickle has an unknown opcode 0x{b:02x}"),
            ShapeError::Truncated => f.write_str("the pickle is cut short"),
            ShapeError::Malformed(why) => write!(f, "the pickle is malformed ({why})"),
            ShapeError::TooLarge(n) => write!(f, "the pickle expands to more than {n} values"),
            ShapeError::TooDeep(n) => write!(f, "the pickle nests deeper than {n} levels"),
            ShapeError::Recursive => f.write_str("the pickle holds a container inside itself"),
        }
    }
}

/// The measured value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Values after shared parts are copied.
    pub values: u64,
    /// Nesting depth.
    pub depth: u32,
}

/// A stack item: a scalar, a container (its index), or a mark.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Item {
    Scalar,
    Node(u32),
    Mark,
}

/// Children of containers: scalars are `SCALAR`.
const SCALAR: u32 = u32::MAX;

struct Machine {
    stack: Vec<Item>,
    children: Vec<Vec<u32>>,
    memo: HashMap<u64, Item>,
}

impl Machine {
    fn pop(&mut self) -> Result<Item, ShapeError> {
        match self.stack.pop() {
            Some(Item::Mark) | None => Err(ShapeError::Malformed("pop past a mark")),
            Some(i) => Ok(i),
        }
    }

    fn pop_to_mark(&mut self) -> Result<Vec<Item>, ShapeError> {
        let at = self
            .stack
            .iter()
            .rposition(|i| *i == Item::Mark)
            .ok_or(ShapeError::Malformed("no mark"))?;
        let items = self.stack.split_off(at + 1);
        self.stack.pop();
        Ok(items)
    }

    fn new_node(&mut self, items: &[Item]) -> Result<Item, ShapeError> {
        let id = u32::try_from(self.children.len())
            .map_err(|_| ShapeError::TooLarge(u64::from(u32::MAX)))?;
        self.children.push(items.iter().map(|&i| code(i)).collect());
        Ok(Item::Node(id))
    }

    /// Adds `items` to the container on top of the stack.
    fn extend_top(&mut self, items: &[Item]) -> Result<(), ShapeError> {
        match self.stack.last() {
            Some(Item::Node(id)) => {
                let id = *id as usize;
                self.children[id].extend(items.iter().map(|&i| code(i)));
                Ok(())
            }
            _ => Err(ShapeError::Malformed(
                "adding to something that is not a container",
            )),
        }
    }
}

fn code(i: Item) -> u32 {
    match i {
        Item::Node(n) => n,
        Item::Scalar | Item::Mark => SCALAR,
    }
}

/// A cursor over the stream.
/// A cursor over a pickle stream, for the check and the decoder alike.
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor { data, at: 0 }
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: u64) -> Result<&'a [u8], ShapeError> {
        let n = usize::try_from(n).map_err(|_| ShapeError::Truncated)?;
        let end = self.at.checked_add(n).ok_or(ShapeError::Truncated)?;
        let out = self.data.get(self.at..end).ok_or(ShapeError::Truncated)?;
        self.at = end;
        Ok(out)
    }

    /// A little-endian unsigned integer of `n` bytes.
    pub(crate) fn le(&mut self, n: u64) -> Result<u64, ShapeError> {
        let b = self.take(n)?;
        Ok(b.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    /// The bytes of a length-prefixed argument whose length takes `len_bytes` bytes.
    pub(crate) fn sized(&mut self, len_bytes: u64) -> Result<&'a [u8], ShapeError> {
        let n = self.le(len_bytes)?;
        self.take(n)
    }

    /// A newline-terminated argument, without the newline.
    pub(crate) fn line(&mut self) -> Result<&'a [u8], ShapeError> {
        let rest = self.data.get(self.at..).ok_or(ShapeError::Truncated)?;
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or(ShapeError::Truncated)?;
        self.at += n + 1;
        Ok(&rest[..n])
    }
}

fn decimal(line: &[u8]) -> Result<u64, ShapeError> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or(ShapeError::Malformed("a memo id is not a number"))
}

/// Checks `data`, a whole pickle stream, against `limits`.
///
/// # Errors
/// Why the stream is refused.
pub fn check(data: &[u8], limits: Limits) -> Result<Shape, ShapeError> {
    let mut m = Machine {
        stack: Vec::new(),
        children: Vec::new(),
        memo: HashMap::new(),
    };
    let mut c = Cursor::new(data);
    loop {
        if m.stack.len() as u64 > limits.max_stack {
            return Err(ShapeError::TooLarge(limits.max_stack));
        }
        let op = *c.take(1)?.first().ok_or(ShapeError::Truncated)?;
        match op {
            b'.' => {
                let root = m.pop()?;
                return measure(&m.children, root, limits);
            }
            // Scalars.
            b'N' | 0x88 | 0x89 => m.stack.push(Item::Scalar),
            b'I' | b'L' | b'F' | b'S' | b'V' => {
                c.line()?;
                m.stack.push(Item::Scalar);
            }
            b'J' => scalar(&mut m, &mut c, 4)?,
            b'K' => scalar(&mut m, &mut c, 1)?,
            b'M' => scalar(&mut m, &mut c, 2)?,
            b'G' => scalar(&mut m, &mut c, 8)?,
            0x8a | b'U' | b'C' | 0x8c => sized(&mut m, &mut c, 1)?,
            0x8b | b'T' | b'X' | b'B' => sized(&mut m, &mut c, 4)?,
            0x8d | 0x8e | 0x96 => sized(&mut m, &mut c, 8)?,
            // Containers.
            b']' | b'}' | b')' | 0x8f => {
                let node = m.new_node(&[])?;
                m.stack.push(node);
            }
            b'l' | b't' | b'd' | 0x91 => {
                let items = m.pop_to_mark()?;
                let node = m.new_node(&items)?;
                m.stack.push(node);
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                if m.stack.len() < n || m.stack[m.stack.len() - n..].contains(&Item::Mark) {
                    return Err(ShapeError::Malformed("a tuple of missing items"));
                }
                let items = m.stack.split_off(m.stack.len() - n);
                let node = m.new_node(&items)?;
                m.stack.push(node);
            }
            b'a' => {
                let v = m.pop()?;
                m.extend_top(&[v])?;
            }
            b's' => {
                let v = m.pop()?;
                let k = m.pop()?;
                m.extend_top(&[k, v])?;
            }
            b'e' | b'u' | 0x90 => {
                let items = m.pop_to_mark()?;
                m.extend_top(&items)?;
            }
            // The stack.
            b'(' => m.stack.push(Item::Mark),
            b'0' => {
                m.stack
                    .pop()
                    .ok_or(ShapeError::Malformed("pop of an empty stack"))?;
            }
            b'1' => {
                m.pop_to_mark()?;
            }
            b'2' => {
                let top = *m
                    .stack
                    .last()
                    .ok_or(ShapeError::Malformed("dup of an empty stack"))?;
                m.stack.push(top);
            }
            // The memo.
            b'p' => {
                let id = decimal(c.line()?)?;
                memoize(&mut m, id)?;
            }
            b'q' => {
                let id = c.le(1)?;
                memoize(&mut m, id)?;
            }
            b'r' => {
                let id = c.le(4)?;
                memoize(&mut m, id)?;
            }
            0x94 => {
                let id = m.memo.len() as u64;
                memoize(&mut m, id)?;
            }
            b'g' => {
                let id = decimal(c.line()?)?;
                recall(&mut m, id)?;
            }
            b'h' => {
                let id = c.le(1)?;
                recall(&mut m, id)?;
            }
            b'j' => {
                let id = c.le(4)?;
                recall(&mut m, id)?;
            }
            // Framing.
            0x80 => {
                c.take(1)?;
            }
            0x95 => {
                c.take(8)?;
            }
            other => return Err(refused(other)),
        }
    }
}

fn scalar(m: &mut Machine, c: &mut Cursor<'_>, n: u64) -> Result<(), ShapeError> {
    c.take(n)?;
    m.stack.push(Item::Scalar);
    Ok(())
}

fn sized(m: &mut Machine, c: &mut Cursor<'_>, len_bytes: u64) -> Result<(), ShapeError> {
    c.sized(len_bytes)?;
    m.stack.push(Item::Scalar);
    Ok(())
}

fn memoize(m: &mut Machine, id: u64) -> Result<(), ShapeError> {
    match m.stack.last() {
        Some(Item::Mark) | None => Err(ShapeError::Malformed("memoizing nothing")),
        Some(&top) => {
            m.memo.insert(id, top);
            Ok(())
        }
    }
}

fn recall(m: &mut Machine, id: u64) -> Result<(), ShapeError> {
    let item = *m
        .memo
        .get(&id)
        .ok_or(ShapeError::Malformed("a memo id never stored"))?;
    m.stack.push(item);
    Ok(())
}

/// The opcodes that construct objects or need outside data, by name.
fn refused(op: u8) -> ShapeError {
    let name = match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'b' => "BUILD",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        0x82..=0x84 => "EXT",
        b'P' | b'Q' => "PERSID",
        0x97 | 0x98 => "out-of-band buffer",
        other => return ShapeError::Unknown(other),
    };
    ShapeError::Refused(name)
}

/// The expanded size and depth of `root`, each container's figures computed once (an
/// iterative walk; a container met again on its own path is recursive). Every other container
/// the stream built is measured too: one left on the stack or in the memo is decoded and
/// dropped like the root's, so a chain of a million lists the root never reaches is as deep.
fn measure(children: &[Vec<u32>], root: Item, limits: Limits) -> Result<Shape, ShapeError> {
    // 0: not seen, 1: on the path, 2: done.
    let mut state = vec![0u8; children.len()];
    let mut size = vec![0u64; children.len()];
    let mut depth = vec![0u32; children.len()];
    let roots = match root {
        Item::Node(r) => Some(r),
        _ => None,
    };
    let all = u32::try_from(children.len()).map_err(|_| ShapeError::TooLarge(limits.max_values))?;
    for start in roots.into_iter().chain(0..all) {
        if state[start as usize] != 0 {
            continue;
        }
        let mut path: Vec<(u32, usize)> = vec![(start, 0)];
        state[start as usize] = 1;
        while let Some(&mut (node, ref mut next)) = path.last_mut() {
            let kids = &children[node as usize];
            if let Some(&kid) = kids.get(*next) {
                *next += 1;
                if kid == SCALAR {
                    continue;
                }
                match state[kid as usize] {
                    1 => return Err(ShapeError::Recursive),
                    2 => {}
                    _ => {
                        if path.len() as u64 > u64::from(limits.max_depth) {
                            return Err(ShapeError::TooDeep(limits.max_depth));
                        }
                        state[kid as usize] = 1;
                        path.push((kid, 0));
                    }
                }
                continue;
            }
            // All children done.
            let (mut s, mut d) = (1u64, 1u32);
            for &kid in kids {
                if kid == SCALAR {
                    s = s.saturating_add(1);
                } else {
                    s = s.saturating_add(size[kid as usize]);
                    d = d.max(depth[kid as usize].saturating_add(1));
                }
            }
            if s > limits.max_values {
                return Err(ShapeError::TooLarge(limits.max_values));
            }
            if d > limits.max_depth {
                return Err(ShapeError::TooDeep(limits.max_depth));
            }
            size[node as usize] = s;
            depth[node as usize] = d;
            state[node as usize] = 2;
            path.pop();
        }
    }
    Ok(match roots {
        Some(r) => Shape {
            values: size[r as usize],
            depth: depth[r as usize],
        },
        None => Shape {
            values: 1,
            depth: 0,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_values: 500,
        max_depth: 16,
        max_stack: 64,
    };

    #[test]
    fn plain_data_is_measured() {
        // {'a': [1, 2]} in protocol 2: PROTO 2, EMPTY_DICT, BINPUT 0, SHORT_BINSTRING 'a',
        // EMPTY_LIST, MARK, BININT1 1, BININT1 2, APPENDS, SETITEM, STOP.
        let p = b"\x80\x02}q\x00U\x01a](K\x01K\x02es.";
        assert_eq!(
            check(p, LIMITS),
            Ok(Shape {
                values: 5,
                depth: 2
            })
        );
    }

    /// A chain of `n` lists, each appended into the one before (memo ids 0..=n), then `root`.
    fn chain_then(n: u32, root: &[u8]) -> Vec<u8> {
        let mut p = b"\x80\x04]r\x00\x00\x00\x00".to_vec();
        for i in 0..n {
            p.push(b'j');
            p.extend(i.to_le_bytes());
            p.extend(b"]r");
            p.extend((i + 1).to_le_bytes());
            p.extend(b"a0");
        }
        p.extend(root);
        p
    }

    #[test]
    fn a_deep_chain_the_root_never_reaches_is_refused() {
        // The chain is popped and a small dict is the root: the decoder still builds the
        // chain (it stays in the memo) and would drop it level by level.
        let hidden = chain_then(20, b"0}.");
        assert_eq!(check(&hidden, LIMITS), Err(ShapeError::TooDeep(16)));
        // The fixed twin: a shallow chain beside the same root is measured and passes.
        let shallow = chain_then(3, b"0}.");
        assert_eq!(
            check(&shallow, LIMITS),
            Ok(Shape {
                values: 1,
                depth: 1
            })
        );
    }

    #[test]
    fn values_left_on_the_stack_are_bounded() {
        // 100 Nones pushed and never consumed, then a small root.
        let mut p = b"\x80\x04".to_vec();
        p.extend(std::iter::repeat_n(b'N', 100));
        p.extend(b"}.");
        assert_eq!(check(&p, LIMITS), Err(ShapeError::TooLarge(64)));
        // The twin with a few: fine.
        let mut p = b"\x80\x04".to_vec();
        p.extend(std::iter::repeat_n(b'N', 10));
        p.extend(b"}.");
        assert!(check(&p, LIMITS).is_ok());
    }

    #[test]
    fn globals_and_reduce_are_refused() {
        let p = b"\x80\x02cos\nsystem\nq\x00.";
        assert_eq!(check(p, LIMITS), Err(ShapeError::Refused("GLOBAL")));
        let p = b"\x80\x04N\x93.";
        assert_eq!(check(p, LIMITS), Err(ShapeError::Refused("STACK_GLOBAL")));
    }

    #[test]
    fn shared_parts_count_as_often_as_they_are_used() {
        // a = [0]*8 (memo 0); b = [a]*8 (memo 1); c = [b]*8: 8*8*8 scalars once copied.
        let mut p = b"\x80\x02](".to_vec();
        p.extend(std::iter::repeat_n(&b"K\x00"[..], 8).flatten());
        p.extend(b"eq\x00](");
        p.extend(std::iter::repeat_n(&b"h\x00"[..], 8).flatten());
        p.extend(b"eq\x01](");
        p.extend(std::iter::repeat_n(&b"h\x01"[..], 8).flatten());
        p.extend(b"e.");
        assert_eq!(check(&p, LIMITS), Err(ShapeError::TooLarge(500)));
        let roomy = Limits {
            max_values: 1_000_000,
            max_depth: 16,
            max_stack: 64,
        };
        assert_eq!(
            check(&p, roomy),
            Ok(Shape {
                values: 1 + 8 * (1 + 8 * (1 + 8)),
                depth: 3
            })
        );
    }

    #[test]
    fn deep_recursive_and_cut_streams_are_refused() {
        let deep = [&b"\x80\x02"[..], &[b']'; 20], &[b'a'; 19], b"."].concat();
        assert_eq!(check(&deep, LIMITS), Err(ShapeError::TooDeep(16)));
        // l = []; l.append(l)
        let rec = b"\x80\x02]q\x00h\x00a.";
        assert_eq!(check(rec, LIMITS), Err(ShapeError::Recursive));
        assert_eq!(
            check(b"\x80\x02X\xff\xff\xff\x7fab", LIMITS),
            Err(ShapeError::Truncated)
        );
        assert_eq!(check(b"\x80\x02]", LIMITS), Err(ShapeError::Truncated));
        assert_eq!(
            check(b"\x80\x02h\x05.", LIMITS),
            Err(ShapeError::Malformed("a memo id never stored"))
        );
        assert_eq!(
            check(b"\x80\x02a.", LIMITS),
            Err(ShapeError::Malformed("pop past a mark"))
        );
    }
}
