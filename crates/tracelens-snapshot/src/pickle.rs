//! The decoder of a pickle stream that [`crate::shape::check`] accepted: plain data only,
//! memoized parts shared (never copied), so a value costs what its stream holds. Floats and
//! integers beyond 64 bits are skipped (sizes, addresses and times fit 64 bits).

use crate::shape::Cursor;
use std::cell::RefCell;
use std::rc::Rc;

/// A decoded value.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// A float, or an integer past 64 bits: no snapshot field a reader needs is either.
    Float,
    Str(Rc<str>),
    Bytes,
    List(Rc<RefCell<Vec<Value>>>),
    Dict(Rc<RefCell<Vec<(Value, Value)>>>),
    Mark,
}

impl Value {
    /// The integer, if it is one (a bool counts, as in Python).
    pub(crate) fn int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    pub(crate) fn str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The items of a list or tuple (empty for anything else).
    pub(crate) fn items(&self) -> Vec<Value> {
        match self {
            Value::List(l) => l.borrow().clone(),
            _ => Vec::new(),
        }
    }

    /// The value under string key `key` of a dict.
    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        match self {
            Value::Dict(d) => d
                .borrow()
                .iter()
                .find(|(k, _)| k.str() == Some(key))
                .map(|(_, v)| v.clone()),
            _ => None,
        }
    }

    pub(crate) fn is_dict(&self) -> bool {
        matches!(self, Value::Dict(_))
    }

    /// The address of a list's or dict's shared storage: the same for every use of one
    /// memoized container, so work on it can be done once.
    pub(crate) fn shared_id(&self) -> Option<usize> {
        match self {
            Value::List(l) => Some(Rc::as_ptr(l) as usize),
            Value::Dict(d) => Some(Rc::as_ptr(d) as usize),
            _ => None,
        }
    }
}

fn list(items: Vec<Value>) -> Value {
    Value::List(Rc::new(RefCell::new(items)))
}

fn pairs(items: Vec<Value>) -> Vec<(Value, Value)> {
    let mut it = items.into_iter();
    let mut out = Vec::new();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

/// Little-endian signed integer of `b` (LONG1/LONG4), when it fits 64 bits.
fn long(b: &[u8]) -> Value {
    if b.is_empty() {
        return Value::Int(0);
    }
    if b.len() > 8 {
        return Value::Float;
    }
    let mut v: u64 = 0;
    for &x in b.iter().rev() {
        v = (v << 8) | u64::from(x);
    }
    let bits = 8 * b.len();
    // Sign-extend from the top bit of the last byte.
    let v = if bits < 64 && b[b.len() - 1] & 0x80 != 0 {
        v | (!0u64 << bits)
    } else {
        v
    };
    Value::Int(i64::from_ne_bytes(v.to_ne_bytes()))
}

/// A newline-terminated argument as text.
fn text_line<'a>(c: &mut Cursor<'a>) -> Option<&'a str> {
    std::str::from_utf8(c.line().ok()?).ok()
}

fn text(b: &[u8]) -> Value {
    Value::Str(Rc::from(String::from_utf8_lossy(b).as_ref()))
}

/// Decodes `data`; `None` when the stream is not what the shape check accepted.
pub(crate) fn decode(data: &[u8]) -> Option<Value> {
    let mut stack: Vec<Value> = Vec::new();
    let mut memo: std::collections::HashMap<u64, Value> = std::collections::HashMap::new();
    let mut c = Cursor::new(data);
    let pop_mark = |stack: &mut Vec<Value>| -> Option<Vec<Value>> {
        let at = stack.iter().rposition(|v| matches!(v, Value::Mark))?;
        let items = stack.split_off(at + 1);
        stack.pop();
        Some(items)
    };
    loop {
        let op = *c.take(1).ok()?.first()?;
        let v = match op {
            b'.' => return stack.pop(),
            b'N' => Value::None,
            0x88 => Value::Bool(true),
            0x89 => Value::Bool(false),
            b'I' | b'L' => {
                let t = text_line(&mut c)?.trim_end_matches('L');
                match t {
                    "00" => Value::Bool(false),
                    "01" => Value::Bool(true),
                    _ => t.parse().map_or(Value::None, Value::Int),
                }
            }
            b'F' => {
                text_line(&mut c)?;
                Value::Float
            }
            b'S' | b'V' => Value::Str(Rc::from(
                text_line(&mut c)?.trim_matches(|ch| ch == '\'' || ch == '"'),
            )),
            b'J' => Value::Int(i64::from(i32::from_le_bytes(
                c.take(4).ok()?.try_into().ok()?,
            ))),
            b'K' => Value::Int(i64::try_from(c.le(1).ok()?).ok()?),
            b'M' => Value::Int(i64::try_from(c.le(2).ok()?).ok()?),
            b'G' => {
                c.take(8).ok()?;
                Value::Float
            }
            0x8a => long(c.sized(1).ok()?),
            0x8b => long(c.sized(4).ok()?),
            b'U' | 0x8c => text(c.sized(1).ok()?),
            b'T' | b'X' => text(c.sized(4).ok()?),
            0x8d => text(c.sized(8).ok()?),
            b'C' => {
                c.sized(1).ok()?;
                Value::Bytes
            }
            b'B' => {
                c.sized(4).ok()?;
                Value::Bytes
            }
            0x8e | 0x96 => {
                c.sized(8).ok()?;
                Value::Bytes
            }
            b']' | b')' | 0x8f => list(Vec::new()),
            b'}' => Value::Dict(Rc::new(RefCell::new(Vec::new()))),
            b'l' | b't' | 0x91 => list(pop_mark(&mut stack)?),
            b'd' => Value::Dict(Rc::new(RefCell::new(pairs(pop_mark(&mut stack)?)))),
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let items = stack.split_off(stack.len().checked_sub(n)?);
                list(items)
            }
            b'a' => {
                let v = stack.pop()?;
                add(stack.last()?, vec![v])?;
                continue;
            }
            b'e' | 0x90 => {
                let items = pop_mark(&mut stack)?;
                add(stack.last()?, items)?;
                continue;
            }
            b's' | b'u' => {
                let items = if op == b's' {
                    let v = stack.pop()?;
                    let k = stack.pop()?;
                    vec![k, v]
                } else {
                    pop_mark(&mut stack)?
                };
                match stack.last()? {
                    Value::Dict(d) => d.borrow_mut().extend(pairs(items)),
                    _ => return None,
                }
                continue;
            }
            b'(' => Value::Mark,
            b'0' => {
                stack.pop()?;
                continue;
            }
            b'1' => {
                pop_mark(&mut stack)?;
                continue;
            }
            b'2' => stack.last()?.clone(),
            b'p' | b'q' | b'r' | 0x94 => {
                let id = match op {
                    b'p' => text_line(&mut c)?.trim().parse().ok()?,
                    b'q' => c.le(1).ok()?,
                    b'r' => c.le(4).ok()?,
                    _ => memo.len() as u64,
                };
                memo.insert(id, stack.last()?.clone());
                continue;
            }
            b'g' | b'h' | b'j' => {
                let id = match op {
                    b'g' => text_line(&mut c)?.trim().parse().ok()?,
                    b'h' => c.le(1).ok()?,
                    _ => c.le(4).ok()?,
                };
                memo.get(&id)?.clone()
            }
            0x80 => {
                c.take(1).ok()?;
                continue;
            }
            0x95 => {
                c.take(8).ok()?;
                continue;
            }
            _ => return None,
        };
        stack.push(v);
    }
}

fn add(target: &Value, items: Vec<Value>) -> Option<()> {
    match target {
        Value::List(l) => {
            l.borrow_mut().extend(items);
            Some(())
        }
        _ => None,
    }
}
