//! How a kernel name reads to a person: without `void`, its parameter list and nested
//! template arguments (reports, findings and verdicts show it; the full name stays in the data).

use crate::shorten;

/// Longest kernel name a table shows before its template arguments are folded.
const KERNEL_NAME_CHARS: usize = 60;

/// A kernel name as a table shows it (the full name goes in the cell's hover title and the
/// JSON): without `void` and the parameter list, template arguments nested in others folded
/// to `<…>`, and when still long every template argument list folded too, unless it is one
/// plain name (`cutlass::Kernel<cutlass_80_tensorop_…>` keeps it: that is the kernel's
/// identity); a long name without template arguments keeps its first 72 characters.
/// `void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, …> >(…)` reads
/// `at::native::reduce_kernel<512, 1, at::native::ReduceOp<…>>`.
#[must_use]
pub fn kernel_display_name(name: &str) -> String {
    let name = name.trim();
    let name = name.strip_prefix("void ").unwrap_or(name);
    // The parameter list: the first `(` outside template arguments, unless it starts the name.
    let mut depth = 0usize;
    let mut end = name.len();
    // Bytes of a scope group already looked at: each byte is scanned at most twice.
    let mut skip_to = 0;
    for (i, c) in name.char_indices() {
        if i < skip_to {
            continue;
        }
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            // A parenthesised scope (`(anonymous namespace)::`) is part of the name: only a
            // `(` whose group is not followed by `::` opens the parameter list.
            '(' if depth == 0 && i > 0 => match scope_length(&name[i..]) {
                Some(len) => skip_to = i + len,
                None => {
                    end = i;
                    break;
                }
            },
            _ => {}
        }
    }
    let name = name[..end].trim_end();
    let nested = fold_templates(name, 2);
    if nested.chars().count() <= KERNEL_NAME_CHARS {
        return nested;
    }
    // One long name without template arguments (`Cijk_Alik_Bljk_…`): its start, then `…`.
    if !name.contains('<') {
        return shorten(name, KERNEL_NAME_CHARS + 12);
    }
    let outer = fold_templates(name, 1);
    // One plain argument (`Kernel<cutlass_80_…>`) is the name: keep it.
    let plain_argument = name
        .find('<')
        .and_then(|at| name[at + 1..].strip_suffix('>'))
        .is_some_and(|arg| !arg.contains([',', '<', ' ']));
    if plain_argument {
        shorten(&nested, KERNEL_NAME_CHARS + 36)
    } else {
        shorten(&outer, KERNEL_NAME_CHARS + 12)
    }
}

/// The length of the parenthesised group `text` starts with when `::` follows it (a scope,
/// not a parameter list); `None` otherwise.
fn scope_length(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return text[i + 1..].starts_with("::").then_some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// `name` with the template arguments at `depth` and deeper replaced by `…` (`<…>`), and
/// commas followed by one space.
fn fold_templates(name: &str, depth: usize) -> String {
    let mut out = String::with_capacity(name.len());
    let mut level = 0usize;
    for c in name.chars() {
        match c {
            '<' => {
                level += 1;
                if level == depth {
                    out.push_str("<…");
                } else if level < depth {
                    out.push('<');
                }
            }
            '>' => {
                if level == depth {
                    out.push('>');
                } else if level < depth {
                    // `> >` (C++03 spacing) closes as `>>`.
                    while out.ends_with(' ') {
                        out.pop();
                    }
                    out.push('>');
                }
                level = level.saturating_sub(1);
            }
            _ if level < depth => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::kernel_display_name as shown;

    #[test]
    fn kernel_names_fold_their_template_arguments_for_display() {
        assert_eq!(
            shown("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)"),
            "at::native::vectorized_elementwise_kernel<…>"
        );
        assert_eq!(
            shown("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, unsigned int, float, 4>)"),
            "at::native::reduce_kernel<512, 1, at::native::ReduceOp<…>>"
        );
        assert_eq!(
            shown("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1})"),
            "at::native::elementwise_kernel<…>"
        );
        assert_eq!(shown("volta_sgemm_128x64_nt"), "volta_sgemm_128x64_nt");
        // Deeply nested scopes stay linear (a crafted name), and still read as a name.
        let nested = format!("k{}x{}::f(int)", "(".repeat(20_000), ")".repeat(20_000));
        assert!(shown(&nested).ends_with('…'));
        assert_eq!(
            shown("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"),
            "at::native::(anonymous namespace)::cunn_SoftMaxForward<…>"
        );
        assert_eq!(
            shown("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8::Params)"),
            "cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>"
        );
        assert_eq!(
            shown("(anonymous namespace)::softmax_warp_forward<float>(float*)"),
            "(anonymous namespace)::softmax_warp_forward<float>"
        );
    }
}
