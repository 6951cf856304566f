//! What an operator was called with and how a kernel was launched: the side tables behind
//! [`crate::Span::detail`] of CPU ops and kernels, and the parsers of their recorded text.
//!
//! Both tables are deduplicated: a training loop calls the same op with the same shapes, and
//! launches the same kernel with the same configuration, every step, so an entry is stored
//! once however many spans point at it.

use crate::names::NameId;

/// A CPU op's `Call stack` and recorded inputs (`record_shapes=True`), each the interned text
/// of the trace's own JSON value (`[[32, 3, 224, 224], [64, 3, 7, 7], []]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OpDetail {
    /// The 2021-era `Call stack` string.
    pub call_stack: Option<NameId>,
    /// `Input Dims`: one shape per input, `[]` for scalars and non-tensors.
    pub input_dims: Option<NameId>,
    /// `Input type`: one dtype per input (`float`, `c10::BFloat16`, `Scalar`, ``).
    pub input_types: Option<NameId>,
    /// `Concrete Inputs` (PyTorch 2.x): scalar and int-list values as text (`[2, 2]`, `True`).
    pub concrete_inputs: Option<NameId>,
}

impl OpDetail {
    /// Whether nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == OpDetail::default()
    }
}

/// How a kernel was launched, as the profiler recorded it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelLaunch {
    /// Blocks per dimension.
    pub grid: [u32; 3],
    /// Threads per block per dimension.
    pub block: [u32; 3],
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Shared memory per block in bytes (static and dynamic).
    pub shared_memory_bytes: u32,
    /// CUPTI's estimated achieved occupancy in percent (Kineto `est. achieved occupancy %`).
    pub est_occupancy_percent: Option<u8>,
}

impl KernelLaunch {
    /// Threads in the whole grid.
    #[must_use]
    pub fn threads(&self) -> u64 {
        let per_block = self
            .block
            .iter()
            .fold(1u64, |a, &b| a.saturating_mul(u64::from(b)));
        self.blocks().saturating_mul(per_block)
    }

    /// Blocks in the grid (saturating: a crafted trace may claim any grid).
    #[must_use]
    pub fn blocks(&self) -> u64 {
        self.grid
            .iter()
            .fold(1u64, |a, &g| a.saturating_mul(u64::from(g)))
    }
}

/// Most shapes, and dimensions per shape, read from one `Input Dims` value; longer ones are
/// cut (an op with more inputs than this has no FLOP model that reads them).
pub const MAX_INPUTS: usize = 64;
/// Most dimensions read per shape.
pub const MAX_DIMS: usize = 16;

/// Parses `Input Dims` text: `[[32, 3, 224, 224], [], [64]]` → one shape per input. Nested
/// lists (a `TensorList` input: `[[[2, 3], [2, 3]]]`) read as their first tensor's shape.
/// `None` on text that is not such a list.
#[must_use]
pub fn parse_dims(text: &str) -> Option<Vec<Vec<i64>>> {
    let body = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    let mut shapes = Vec::new();
    let mut depth = 0usize;
    let mut current: Vec<i64> = Vec::new();
    let mut number = String::new();
    let mut taken = false;
    for c in body.chars() {
        match c {
            '[' => {
                depth += 1;
                if depth == 1 {
                    current.clear();
                    taken = false;
                }
            }
            ']' => {
                flush(&mut number, &mut current, depth, taken)?;
                if depth == 2 {
                    taken = true;
                }
                if depth == 1 && shapes.len() < MAX_INPUTS {
                    shapes.push(std::mem::take(&mut current));
                }
                depth = depth.checked_sub(1)?;
            }
            ',' => flush(&mut number, &mut current, depth, taken)?,
            '-' | '0'..='9' => number.push(c),
            c if c.is_whitespace() => {}
            _ => return None,
        }
    }
    (depth == 0).then_some(shapes)
}

fn flush(number: &mut String, current: &mut Vec<i64>, depth: usize, taken: bool) -> Option<()> {
    if number.is_empty() {
        return Some(());
    }
    let v: i64 = number.parse().ok()?;
    number.clear();
    // Depth 1 is a shape's own dimensions; depth 2 is the first tensor of a list.
    if (depth == 1 || (depth == 2 && !taken)) && current.len() < MAX_DIMS {
        current.push(v);
    }
    Some(())
}

/// Shapes as one compact line: `[1, 141, 512], [512, 512], [512]` (scalars, `[]`, left out).
#[must_use]
pub fn format_dims(dims: &[Vec<i64>]) -> String {
    dims.iter()
        .filter(|d| !d.is_empty())
        .map(|d| {
            let inner: Vec<String> = d.iter().map(i64::to_string).collect();
            format!("[{}]", inner.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Recorded `Input Dims` text as [`format_dims`] writes it (the text itself when it does not
/// parse), so the same shapes read alike however the file spaced them.
#[must_use]
pub fn dims_text(raw: &str) -> String {
    parse_dims(raw).map_or_else(|| raw.to_string(), |d| format_dims(&d))
}

/// Parses a JSON list of strings (`Input type`, `Concrete Inputs`): `["float", "", "Scalar"]`.
/// Escapes are kept as written; `None` on text that is not such a list.
#[must_use]
pub fn parse_strings(text: &str) -> Option<Vec<String>> {
    let body = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    let mut out = Vec::new();
    let mut chars = body.chars();
    loop {
        match chars.by_ref().find(|c| !c.is_whitespace() && *c != ',') {
            None => return Some(out),
            Some('"') => {}
            Some(_) => return None,
        }
        let mut s = String::new();
        let mut escaped = false;
        loop {
            let c = chars.next()?;
            if escaped {
                s.push(c);
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                break;
            } else {
                s.push(c);
            }
        }
        if out.len() < MAX_INPUTS {
            out.push(s);
        }
    }
}

/// Parses an int list written as a concrete input (`[2, 2]`, `2`): `None` when it is not one.
#[must_use]
pub fn parse_int_list(text: &str) -> Option<Vec<i64>> {
    let t = text.trim();
    let body = t.strip_prefix('[').and_then(|b| b.strip_suffix(']'));
    match body {
        Some(b) if b.trim().is_empty() => Some(Vec::new()),
        Some(b) => b.split(',').map(|x| x.trim().parse().ok()).collect(),
        None => t.parse().ok().map(|v| vec![v]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_read_shapes_scalars_and_tensor_lists() {
        assert_eq!(
            parse_dims("[[32, 3, 224, 224], [64, 3, 7, 7], [], []]").unwrap(),
            vec![vec![32, 3, 224, 224], vec![64, 3, 7, 7], vec![], vec![]]
        );
        assert_eq!(
            parse_dims("[[[2, 3], [4, 5]], [7]]").unwrap(),
            vec![vec![2, 3], vec![7]]
        );
        assert_eq!(parse_dims("[]").unwrap(), Vec::<Vec<i64>>::new());
        assert!(parse_dims("[[1, 2]").is_none());
        assert!(parse_dims("[[1, x]]").is_none());
        assert!(parse_dims("]]][[").is_none());
    }

    #[test]
    fn strings_and_int_lists() {
        assert_eq!(
            parse_strings(r#"["float", "", "c10::BFloat16"]"#).unwrap(),
            vec!["float", "", "c10::BFloat16"]
        );
        assert_eq!(parse_strings(r#"["a\"b"]"#).unwrap(), vec!["a\"b"]);
        assert!(parse_strings(r#"["open"#).is_none());
        assert!(parse_strings("[1]").is_none());
        assert_eq!(parse_int_list("[2, 2]").unwrap(), vec![2, 2]);
        assert_eq!(parse_int_list("3").unwrap(), vec![3]);
        assert_eq!(parse_int_list("[]").unwrap(), Vec::<i64>::new());
        assert!(parse_int_list("True").is_none());
    }

    #[test]
    fn launch_counts_threads() {
        let k = KernelLaunch {
            grid: [564, 1, 1],
            block: [128, 1, 1],
            ..KernelLaunch::default()
        };
        assert_eq!(k.threads(), 564 * 128);
        assert_eq!(k.blocks(), 564);
        let crafted = KernelLaunch {
            grid: [u32::MAX; 3],
            block: [u32::MAX; 3],
            ..KernelLaunch::default()
        };
        assert_eq!(crafted.threads(), u64::MAX);
    }
}
