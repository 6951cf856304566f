//! Tolerant decoding of JSON pieces: object fields, strings, numbers as exact nanoseconds,
//! and a small value tree for top-level metadata.

use crate::scan::{value_extent, Extent};
use std::borrow::Cow;

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// Iterates over the `"key": value` pairs of one object, yielding raw key and value bytes.
/// Stops (returning `None`) at the closing brace; sets `malformed` when the object is broken.
pub struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Set when the object could not be read to its end.
    pub malformed: bool,
    /// Just after the closing brace, once it was reached.
    pub end: Option<usize>,
    /// A bare value held `"`, `{` or `[`, where the byte scanner ([`value_extent`]) would
    /// have seen a string or a container: the object's end is only trusted from the scanner.
    pub irregular: bool,
}

impl<'a> Fields<'a> {
    /// Fields of the object in `bytes` (which must start with `{`).
    #[must_use]
    pub fn new(bytes: &'a [u8]) -> Self {
        let ok = bytes.first() == Some(&b'{');
        Fields {
            bytes,
            pos: 1,
            malformed: !ok,
            end: None,
            irregular: false,
        }
    }

    /// The next key (inside the quotes, undecoded), leaving the walk at its value, which
    /// [`Fields::value`] or [`Fields::object_value`] must then read; `None` at the closing
    /// brace or where the object breaks.
    pub fn key(&mut self) -> Option<&'a [u8]> {
        if self.malformed {
            return None;
        }
        let b = self.bytes;
        loop {
            self.pos = skip_ws(b, self.pos);
            match b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.end = Some(self.pos + 1);
                    return None;
                }
                None => return None,
                Some(b'"') => break,
                Some(_) => {
                    self.malformed = true;
                    return None;
                }
            }
        }
        let Some(key_len) = string_len(&b[self.pos..]) else {
            self.malformed = true;
            return None;
        };
        let key = &b[self.pos + 1..self.pos + key_len - 1];
        self.pos = skip_ws(b, self.pos + key_len);
        if b.get(self.pos) != Some(&b':') {
            self.malformed = true;
            return None;
        }
        self.pos = skip_ws(b, self.pos + 1);
        Some(key)
    }

    /// The raw value after the key just read; `None` where it breaks the object.
    pub fn value(&mut self) -> Option<&'a [u8]> {
        let b = self.bytes;
        let val_len = match b.get(self.pos) {
            Some(b',') | Some(b'}') | None => 0,
            Some(b'"') => match string_len(&b[self.pos..]) {
                Some(n) => n,
                None => {
                    self.malformed = true;
                    return None;
                }
            },
            Some(b'{' | b'[') => match value_extent(&b[self.pos..], true) {
                Extent::Complete(n) => n,
                Extent::Incomplete => {
                    self.malformed = true;
                    return None;
                }
            },
            Some(_) => {
                let n = scalar_len(&b[self.pos..]);
                let token = &b[self.pos..self.pos + n];
                self.irregular |= token.iter().any(|c| matches!(c, b'"' | b'{' | b'['));
                n
            }
        };
        let value = &b[self.pos..self.pos + val_len];
        self.pos += val_len;
        Some(value)
    }

    /// The raw value after the key just read, an object walked by `walk` as it is read, so
    /// its bytes are gone over once, not measured first and walked again. Also says whether
    /// `walk` saw the whole value: not when it is no object, or one that the walk could not
    /// read to its end or found irregular (it is then measured as [`Fields::value`] measures
    /// it, so the raw value is always the same).
    pub fn object_value(&mut self, walk: impl FnOnce(&mut Fields<'a>)) -> Option<(&'a [u8], bool)> {
        if self.bytes.get(self.pos) == Some(&b'{') {
            let mut inner = Fields::new(&self.bytes[self.pos..]);
            walk(&mut inner);
            if let (false, false, Some(n)) = (inner.malformed, inner.irregular, inner.end) {
                let value = &self.bytes[self.pos..self.pos + n];
                self.pos += n;
                return Some((value, true));
            }
        }
        Some((self.value()?, false))
    }
}

impl<'a> Iterator for Fields<'a> {
    /// Raw key (inside the quotes, undecoded) and raw value.
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let key = self.key()?;
        Some((key, self.value()?))
    }
}

/// Length of the bare scalar at the start of `bytes` (`123`, `true`, `N/A`): up to the
/// first comma, closing bracket or whitespace, at least one byte.
fn scalar_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'))
        .unwrap_or(bytes.len())
        .max(1)
}

/// Length of the string at the start of `bytes` (which starts with `"`), quotes included;
/// `None` when it does not end. The same rule as [`value_extent`] (a backslash escapes the
/// next byte), 16 bytes at a time while 16 remain, then byte by byte.
fn string_len(bytes: &[u8]) -> Option<usize> {
    let mut i = 1;
    while let Some(chunk) = bytes.get(i..i + 16) {
        let found = quote_or_backslash(chunk.try_into().expect("16 bytes"));
        if found == 0 {
            i += 16;
            continue;
        }
        let j = i + found.trailing_zeros() as usize;
        if bytes[j] == b'"' {
            return Some(j + 1);
        }
        i = j + 2;
    }
    string_end_by_bytes(bytes, i)
}

/// [`string_len`]'s rule one byte at a time, from byte `i` of the string in `bytes`.
fn string_end_by_bytes(bytes: &[u8], mut i: usize) -> Option<usize> {
    while let Some(&c) = bytes.get(i) {
        match c {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    None
}

/// Bit `i` set where byte `i` of `chunk` is `"` or a backslash, with SSE2 (part of every
/// x86-64 CPU).
#[cfg(target_arch = "x86_64")]
#[expect(
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "ASCII bytes are the same bits as i8 for the SSE2 compares, and movemask sets \
              only the low 16 bits of its i32"
)]
fn quote_or_backslash(chunk: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is in the x86-64 baseline, and the unaligned load reads the 16 bytes of
    // `chunk`.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        let hits = _mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
        );
        _mm_movemask_epi8(hits) as u32
    }
}

/// Bit `i` set where byte `i` of `chunk` is `"` or a backslash (CPUs other than x86-64).
#[cfg(not(target_arch = "x86_64"))]
fn quote_or_backslash(chunk: &[u8; 16]) -> u32 {
    chunk
        .iter()
        .enumerate()
        .filter(|(_, &c)| c == b'"' || c == b'\\')
        .fold(0, |bits, (i, _)| bits | 1 << i)
}

/// Iterates over the raw elements of one array.
#[must_use]
pub fn array_elements(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    if bytes.first() != Some(&b'[') {
        return out;
    }
    let mut i = 1;
    loop {
        i = skip_ws(bytes, i);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b']') | None => return out,
            Some(_) => match value_extent(&bytes[i..], true) {
                Extent::Complete(n) => {
                    out.push(&bytes[i..i + n]);
                    i += n;
                }
                Extent::Incomplete => return out,
            },
        }
    }
}

/// `bytes` as text, invalid UTF-8 replaced; checked with the fast validator first, since
/// almost every string in a trace is valid.
fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Decodes a JSON string (`raw` includes the quotes). Invalid escapes are kept literally,
/// raw control characters are accepted and invalid UTF-8 is replaced.
#[must_use]
pub fn decode_str(raw: &[u8]) -> Option<Cow<'_, str>> {
    if raw.len() < 2 || raw[0] != b'"' || raw[raw.len() - 1] != b'"' {
        return None;
    }
    let inner = &raw[1..raw.len() - 1];
    if !inner.contains(&b'\\') {
        return Some(lossy(inner));
    }
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c != b'\\' || i + 1 >= inner.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = inner[i + 1];
        i += 2;
        match e {
            b'"' => out.push(b'"'),
            b'\\' => out.push(b'\\'),
            b'/' => out.push(b'/'),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'u' => {
                let hex = |s: &[u8]| {
                    std::str::from_utf8(s)
                        .ok()
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                };
                match inner.get(i..i + 4).and_then(hex) {
                    Some(hi) => {
                        i += 4;
                        let mut code = hi;
                        if (0xD800..0xDC00).contains(&hi)
                            && inner.get(i..i + 2) == Some(b"\\u".as_slice())
                        {
                            if let Some(lo) = inner.get(i + 2..i + 6).and_then(hex) {
                                if (0xDC00..0xE000).contains(&lo) {
                                    code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                    i += 6;
                                }
                            }
                        }
                        let ch = char::from_u32(code).unwrap_or('\u{FFFD}');
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                    None => out.extend_from_slice(b"\\u"),
                }
            }
            // Windows paths with unescaped backslashes: keep them as written.
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Some(Cow::Owned(String::from_utf8_lossy(&out).into_owned()))
}

/// The text of a value that is either a JSON string or a bare token (number, `true`, `N/A`).
#[must_use]
pub fn text_of(raw: &[u8]) -> Cow<'_, str> {
    match decode_str(raw) {
        Some(s) => s,
        None => lossy(raw),
    }
}

/// A number written in microseconds (`1689179597343666`, `1419117003011.565`, `1.4e12`, or
/// the same inside a string) as exact integer nanoseconds, rounding half away from zero.
/// No `f64` is involved. `None` for anything that is not a finite number in range.
#[must_use]
pub fn micros_to_ns(raw: &[u8]) -> Option<i64> {
    decimal_scaled(unquote(raw), 3)
}

/// An integer (`42`, `"42"`, `"0x2a"`, `42.0`), for ids, counts and sizes.
#[must_use]
pub fn to_i64(raw: &[u8]) -> Option<i64> {
    let t = unquote(raw);
    let s = std::str::from_utf8(t).ok()?.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return i64::from_str_radix(hex, 16).ok();
    }
    s.parse::<i64>().ok().or_else(|| decimal_scaled(t, 0))
}

/// A non-negative integer that may exceed `i64` (correlation ids, byte counts).
#[must_use]
pub fn to_u64(raw: &[u8]) -> Option<u64> {
    let t = unquote(raw);
    let s = std::str::from_utf8(t).ok()?.trim();
    s.parse::<u64>()
        .ok()
        .or_else(|| to_i64(raw).and_then(|v| u64::try_from(v).ok()))
}

fn unquote(raw: &[u8]) -> &[u8] {
    if raw.len() >= 2 && raw[0] == b'"' && raw[raw.len() - 1] == b'"' {
        &raw[1..raw.len() - 1]
    } else {
        raw
    }
}

/// Parses a decimal number and multiplies it by 10^`scale`, rounding to an integer.
fn decimal_scaled(text: &[u8], scale: i32) -> Option<i64> {
    let mut i = 0;
    let neg = match text.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut mantissa: i128 = 0;
    let mut exp10: i32 = scale;
    let mut digits = 0;
    // Up to 30 significant digits are kept; further integer digits only scale the value
    // and further fraction digits are below any resolution we need.
    let push_digit = |d: u8, frac: bool, mantissa: &mut i128, exp10: &mut i32| {
        if *mantissa < 10i128.pow(30) {
            *mantissa = *mantissa * 10 + i128::from(d);
            if frac {
                *exp10 -= 1;
            }
        } else if !frac {
            *exp10 += 1;
        }
    };
    while let Some(&c) = text.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        push_digit(c - b'0', false, &mut mantissa, &mut exp10);
        digits += 1;
        i += 1;
    }
    if text.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&c) = text.get(i) {
            if !c.is_ascii_digit() {
                break;
            }
            push_digit(c - b'0', true, &mut mantissa, &mut exp10);
            digits += 1;
            i += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(text.get(i), Some(b'e') | Some(b'E')) {
        i += 1;
        let exp_text = std::str::from_utf8(&text[i..]).ok()?;
        let e: i32 = exp_text.parse().ok()?;
        exp10 = exp10.checked_add(e)?;
        i = text.len();
    }
    if i != text.len() {
        return None;
    }
    let value: i128 = if exp10 >= 0 {
        if exp10 > 38 {
            return if mantissa == 0 { Some(0) } else { None };
        }
        mantissa.checked_mul(10i128.checked_pow(exp10.unsigned_abs())?)?
    } else {
        let div_exp = exp10.unsigned_abs();
        if div_exp > 38 {
            0
        } else {
            let div = 10i128.pow(div_exp);
            let q = mantissa / div;
            let r = mantissa % div;
            if r * 2 >= div {
                q + 1
            } else {
                q
            }
        }
    };
    let signed = if neg { -value } else { value };
    i64::try_from(signed).ok()
}

/// Whether a raw number has a fractional part (`.` present): the ns-precision float scheme.
#[must_use]
pub fn has_fraction(raw: &[u8]) -> bool {
    raw.contains(&b'.')
}

/// Nesting kept in a metadata [`Value`]; real metadata nests 3-4 levels.
pub const MAX_VALUE_DEPTH: usize = 16;
/// Longest object key kept in a metadata [`Value`], in bytes.
const MAX_KEY_BYTES: usize = 256;

/// A JSON value tree, used only for the small top-level metadata values.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`, and the bare tokens `N/A`, `NaN`, `inf`, `Infinity`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number, kept as its text.
    Number(String),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, in file order (duplicate keys kept; readers take the last).
    Object(Vec<(String, Value)>),
}

impl Value {
    /// Parses a raw value tolerantly; broken parts become `Null`, and so does anything
    /// nested deeper than [`MAX_VALUE_DEPTH`] (so the work stays linear in the size and the
    /// stack shallow, whatever the input).
    #[must_use]
    pub fn parse(raw: &[u8]) -> Value {
        Value::parse_at(raw, 0)
    }

    fn parse_at(raw: &[u8], depth: usize) -> Value {
        let raw = {
            let start = skip_ws(raw, 0);
            &raw[start..]
        };
        match raw.first() {
            Some(b'{' | b'[') if depth >= MAX_VALUE_DEPTH => Value::Null,
            Some(b'{') => Value::Object(
                Fields::new(raw)
                    .map(|(k, v)| {
                        let key = text_of_key(&k[..k.len().min(MAX_KEY_BYTES)]);
                        (key, Value::parse_at(v, depth + 1))
                    })
                    .collect(),
            ),
            Some(b'[') => Value::Array(
                array_elements(raw)
                    .into_iter()
                    .map(|v| Value::parse_at(v, depth + 1))
                    .collect(),
            ),
            Some(b'"') => Value::String(text_of(raw).into_owned()),
            Some(_) => {
                let t = String::from_utf8_lossy(raw).trim().to_string();
                match t.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "null" | "N/A" | "NaN" | "nan" | "inf" | "-inf" | "Infinity" | "-Infinity" => {
                        Value::Null
                    }
                    _ if t.parse::<f64>().is_ok() => Value::Number(t),
                    _ => Value::Null,
                }
            }
            None => Value::Null,
        }
    }

    /// The field `key` of an object (the last one when duplicated).
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(fields) => fields.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// An integer value (numbers and numeric strings).
    #[must_use]
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) | Value::String(n) => to_i64(n.as_bytes()),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// A scalar as text (`None` for arrays, objects and null).
    #[must_use]
    pub fn as_text(&self) -> Option<String> {
        match self {
            Value::Number(n) | Value::String(n) => Some(n.clone()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
}

/// Decodes an object key given without its quotes.
pub fn text_of_key(key: &[u8]) -> String {
    let mut quoted = Vec::with_capacity(key.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(key);
    quoted.push(b'"');
    decode_str(&quoted).map(Cow::into_owned).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_ends_found_sixteen_bytes_at_a_time_match_the_byte_rule() {
        // Every placement of a quote, an escaped quote and a double backslash around the
        // 16-byte chunk edges, in strings that end and strings cut short.
        for len in 1..48 {
            for at in 0..len {
                for piece in [&b"\""[..], b"\\\"", b"\\\\\"", b"\\"] {
                    let mut s = vec![b'"'];
                    s.extend(std::iter::repeat_n(b'x', at));
                    s.extend_from_slice(piece);
                    s.extend(std::iter::repeat_n(b'y', len - at));
                    for cut in [s.len(), s.len().saturating_sub(1), s.len() / 2] {
                        let bytes = &s[..cut.max(1)];
                        assert_eq!(
                            string_len(bytes),
                            string_end_by_bytes(bytes, 1),
                            "{:?}",
                            String::from_utf8_lossy(bytes)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn an_object_walked_as_it_is_read_gives_the_plain_walk_and_falls_back_when_unusual() {
        let plain = |raw: &[u8]| -> Vec<(Vec<u8>, Vec<u8>)> {
            Fields::new(raw)
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect()
        };
        for raw in [
            &br#"{"a": 1, "args": {"x": "}", "y": [1, {"z": 2}]}, "b": 2}"#[..],
            br#"{"args": {"x": 1 2}, "b": 2}"#,
            br#"{"args": {"x": N"A}, "b": 2}"#,
            br#"{"args": {"x": "unended}, "b": 2}"#,
            br#"{"args": "text", "b": {"c": 1}}"#,
            br#"{"args": {}, "b": 3}"#,
        ] {
            let mut fields = Fields::new(raw);
            let mut walked = Vec::new();
            let mut inner = Vec::new();
            while let Some(k) = fields.key() {
                let mut keys = Vec::new();
                let Some((v, whole)) =
                    fields.object_value(|f| keys.extend(f.map(|(k, _)| k.to_vec())))
                else {
                    break;
                };
                walked.push((k.to_vec(), v.to_vec()));
                inner.push(whole.then_some(keys));
            }
            assert_eq!(walked, plain(raw), "{}", String::from_utf8_lossy(raw));
            let mut again = Fields::new(raw);
            again.by_ref().for_each(drop);
            assert_eq!(
                (fields.end, fields.malformed, fields.irregular),
                (again.end, again.malformed, again.irregular)
            );
            let keys_of = |v: &[u8]| plain(v).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
            for ((_, v), made) in walked.iter().zip(&inner) {
                if let Some(keys) = made {
                    assert_eq!(keys, &keys_of(v), "walked keys are the value's own");
                }
            }
        }
        let mut fields = Fields::new(br#"{"args": {"x": 1 2}}"#);
        fields.key().expect("a key");
        let (_, whole) = fields.object_value(|_| ()).expect("a value");
        assert!(!whole, "a broken inner object is left to be read again");
    }

    #[test]
    fn microseconds_become_exact_nanoseconds() {
        assert_eq!(
            micros_to_ns(b"1689179597343666"),
            Some(1_689_179_597_343_666_000)
        );
        assert_eq!(
            micros_to_ns(b"1419117003011.565"),
            Some(1_419_117_003_011_565)
        );
        assert_eq!(
            micros_to_ns(b"2204338329788.649"),
            Some(2_204_338_329_788_649)
        );
        assert_eq!(micros_to_ns(b"1.4191e+12"), Some(1_419_100_000_000_000));
        assert_eq!(micros_to_ns(b"-5"), Some(-5_000));
        assert_eq!(
            micros_to_ns(b"0.0005"),
            Some(1),
            "half rounds away from zero"
        );
        assert_eq!(micros_to_ns(b"0.0004"), Some(0));
        assert_eq!(micros_to_ns(b"\"12.5\""), Some(12_500));
        assert_eq!(micros_to_ns(b"N/A"), None);
        assert_eq!(micros_to_ns(b"1e400"), None);
        assert_eq!(micros_to_ns(b"99999999999999999999999"), None);
        assert_eq!(micros_to_ns(b""), None);
    }

    #[test]
    fn integers_from_numbers_and_strings() {
        assert_eq!(to_i64(b"42"), Some(42));
        assert_eq!(to_i64(b"\"0x10\""), Some(16));
        assert_eq!(to_i64(b"\"4093687616\""), Some(4_093_687_616));
        assert_eq!(to_i64(b"\"stream 7\""), None);
        assert_eq!(to_u64(b"18446744073709551615"), Some(u64::MAX));
    }

    #[test]
    fn strings_decode_tolerantly() {
        assert_eq!(decode_str(br#""plain""#).unwrap(), "plain");
        assert_eq!(decode_str(br#""a\"b\n\u00e9""#).unwrap(), "a\"b\n\u{e9}");
        assert_eq!(decode_str(br#""C:\path\x""#).unwrap(), "C:\\path\\x");
        assert_eq!(decode_str(br#""\ud83d\ude00""#).unwrap(), "\u{1F600}");
        assert_eq!(
            decode_str(b"\"bad \xff byte\"").unwrap(),
            "bad \u{FFFD} byte"
        );
    }

    #[test]
    fn fields_and_values() {
        let obj = br#"{"ph": "X", "ts": 1.5, "args": {"a": [1, 2]}, "x": N/A, }"#;
        let fields: Vec<_> = Fields::new(obj).collect();
        assert_eq!(fields.len(), 4);
        assert_eq!(fields[1], (&b"ts"[..], &b"1.5"[..]));
        let v = Value::parse(obj);
        assert_eq!(v.get("x"), Some(&Value::Null));
        let deep = [b"[".repeat(100_000), b"]".repeat(100_000)].concat();
        let mut inner = Value::parse(&deep);
        let mut levels = 0;
        while let Value::Array(items) = inner {
            levels += 1;
            inner = items.into_iter().next().unwrap_or(Value::Bool(false));
        }
        assert_eq!((levels, inner), (MAX_VALUE_DEPTH, Value::Null));
        assert_eq!(
            v.get("args").and_then(|a| a.get("a")),
            Some(&Value::Array(vec![
                Value::Number("1".into()),
                Value::Number("2".into())
            ]))
        );
        let mut broken = Fields::new(br#"{"a" 1}"#);
        assert!(broken.next().is_none());
        assert!(broken.malformed);
    }
}
