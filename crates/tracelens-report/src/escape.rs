//! Making trace strings inert for the output they go to: GitHub-flavoured Markdown, the
//! terminal and HTML. (HTML markup is escaped by askama, JSON by serde; askama leaves bidi
//! controls in, so every HTML page passes through [`html_output`].) Every renderer that puts
//! a trace-derived string into Markdown or onto a terminal goes through these functions.

use std::borrow::Cow;

/// Characters that reorder text on screen (bidi overrides and isolates): shown text would
/// differ from the bytes.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// Text for one line of a terminal: control characters (C0, DEL, C1: ESC, OSC, CSI, BEL,
/// backspace, carriage return) and bidi controls are removed, newlines and tabs become
/// spaces, so a trace can neither send escape sequences nor forge output lines.
#[must_use]
pub fn terminal_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() || is_bidi_control(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .filter_map(|c| match c {
                '\n' | '\t' => Some(' '),
                c if c.is_control() || is_bidi_control(c) => None,
                c => Some(c),
            })
            .collect(),
    )
}

/// The whole terminal output, as a last line of defence: every control character except
/// `\n` is removed, and with `color` our own SGR colour sequences (`ESC [ digits ; m`) stay.
#[must_use]
pub fn terminal_output(text: String, color: bool) -> String {
    let clean = |c: char| c == '\n' || !(c.is_control() || is_bidi_control(c));
    if text.chars().all(clean) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' && color {
            let body = rest[1..].strip_prefix('[').map(|b| {
                b.bytes()
                    .take_while(|x| x.is_ascii_digit() || *x == b';')
                    .count()
            });
            if let Some(n) = body {
                if rest.as_bytes().get(2 + n) == Some(&b'm') {
                    out.push_str(&rest[..3 + n]);
                    rest = &rest[3 + n..];
                    continue;
                }
            }
        }
        if clean(c) {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Invisible format characters (zero-width spaces and joiners, soft hyphen, word joiner, BOM,
/// bidi marks): a comparison that ignores them could still see a command through them.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
    )
}

/// Output that a CI runner reads line by line (GitHub Actions, Azure Pipelines) can carry no
/// workflow command: a line whose first visible characters are `::` gets a space between the
/// colons (`: :`), and `##[` anywhere becomes `## [`, invisible characters between them
/// included. Applied to everything tracelens prints except its own `--annotations` lines.
#[must_use]
pub fn workflow_command_safe(text: &str) -> Cow<'_, str> {
    if !text.contains(':') && !text.contains('[') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        // Where the first visible character is.
        let mut at_start = true;
        let mut after_lead_colon = false;
        let mut hashes = 0_u8;
        for c in line.chars() {
            let skip = c.is_whitespace() || c.is_control() || is_invisible(c);
            if c == '[' && hashes >= 2 {
                out.push(' ');
                changed = true;
            }
            if after_lead_colon && !skip {
                if c == ':' {
                    out.push(' ');
                    changed = true;
                }
                after_lead_colon = false;
            }
            if at_start && !skip {
                at_start = false;
                after_lead_colon = c == ':';
            }
            if c == '#' {
                hashes = hashes.saturating_add(1);
            } else if !is_invisible(c) {
                hashes = 0;
            }
            out.push(c);
        }
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// The most characters of one trace string shown in Markdown; longer ones end in `…` (the JSON
/// has them in full).
pub const MAX_MARKDOWN_CHARS: usize = 1000;

/// Text for GitHub-flavoured Markdown, inline (a table cell, a heading, a paragraph):
/// nothing in it can end the cell or line, start markup, open a link or image, become HTML,
/// math or a live `@mention`. Control characters go, newlines become spaces, Markdown
/// punctuation that opens markup (emphasis, code, links and images, headings, tables,
/// strikethrough, math) is backslash-escaped, `<`, `>` and `&` become entities, `@` is followed by
/// a zero-width space and bare URLs (`://`, `www.`) get one inside, so none is a live link.
#[must_use]
pub fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * MAX_MARKDOWN_CHARS) + 8);
    for (i, (at, c)) in text.char_indices().enumerate() {
        // GitHub drops a step summary over 1 MiB whole: one crafted name must not fill it.
        if i == MAX_MARKDOWN_CHARS {
            out.push('…');
            break;
        }
        // Bare URLs (`https://…`, `www.…`) would become live links: a zero-width space breaks
        // the pattern GitHub links.
        let rest = &text[at..];
        if c == ':' && rest.starts_with("://") {
            out.push_str(":\u{200B}");
            continue;
        }
        if c == '.' && text[..at].to_ascii_lowercase().ends_with("www") {
            out.push_str("\u{200B}.");
            continue;
        }
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() || is_bidi_control(c) => {}
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '@' => out.push_str("@\u{200B}"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '!' | '|' | '~' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A whole HTML page, as a last line of defence: bidi controls are removed, so a kernel name
/// cannot show reversed text in the report (askama escapes markup, not these).
#[must_use]
pub fn html_output(page: String) -> String {
    if !page.chars().any(is_bidi_control) {
        return page;
    }
    page.chars().filter(|&c| !is_bidi_control(c)).collect()
}

/// A fenced code block holding `code` verbatim: the fence is longer than any run of
/// backticks inside, so the code cannot close it; control characters other than newlines
/// are removed.
pub fn markdown_code_block(lang: &str, code: &str) -> String {
    let longest_run = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest_run + 1).max(3));
    let body: String = code
        .chars()
        .filter(|&c| c == '\n' || !(c.is_control() || is_bidi_control(c)))
        .collect();
    // The info string comes from the document too: a language name, nothing else.
    let lang: String = lang
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(16)
        .collect();
    format!("{fence}{lang}\n{body}\n{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_output_drops_bidi_controls_and_keeps_the_rest() {
        let page = "<td>evil\u{202E}lmth.exe\u{2066}x\u{2069}</td> ▶ é".to_owned();
        assert_eq!(html_output(page), "<td>evillmth.exex</td> ▶ é");
        let clean = "<p>plain</p>".to_owned();
        assert_eq!(html_output(clean), "<p>plain</p>");
    }

    #[test]
    fn terminal_text_drops_escapes_and_newlines() {
        assert_eq!(
            terminal_text("gpu\x1b]52;c;ZXZpbA==\x07 name\nforged"),
            "gpu]52;c;ZXZpbA== name forged"
        );
        assert_eq!(terminal_text("plain"), "plain");
        assert_eq!(terminal_text("a\u{9b}2Jb\u{202E}c"), "a2Jbc");
        assert_eq!(
            terminal_output("\x1b[1mok\x1b[0m \x1b]0;title\x07".into(), true),
            "\x1b[1mok\x1b[0m ]0;title"
        );
        assert_eq!(
            terminal_output("\x1b[1mok\x1b[0m".into(), false),
            "[1mok[0m"
        );
    }

    #[test]
    fn no_line_can_carry_a_workflow_command() {
        let attacks = [
            "::error::pwned",
            "  ::add-mask::secret",
            "\t::set-output name=verdict::pass",
            "\u{200B}::stop-commands::x",
            "kernel at::native\n::warning::x",
            "##[set-output name=x;]y",
            "name ##\u{200B}[error]z",
        ];
        for a in attacks {
            let safe = workflow_command_safe(a);
            for line in safe.lines() {
                // What a runner sees: leading blanks trimmed, invisible characters ignored.
                let seen: String = line
                    .trim_start_matches(|c: char| {
                        c.is_whitespace() || c.is_control() || is_invisible(c)
                    })
                    .chars()
                    .filter(|&c| !is_invisible(c))
                    .collect();
                assert!(!seen.starts_with("::"), "{a:?} -> {safe:?}");
                assert!(!seen.contains("##["), "{a:?} -> {safe:?}");
            }
        }
        // C++ names keep their colons inside a line.
        assert_eq!(
            workflow_command_safe("void at::native::kernel"),
            "void at::native::kernel"
        );
        assert_eq!(workflow_command_safe("::x"), ": :x");
    }

    #[test]
    fn markdown_text_is_inert() {
        assert_eq!(
            markdown_text("a|b\n# h <script>x</script> @team ![i](http://x/p.png) `c`"),
            "a\\|b \\# h &lt;script&gt;x&lt;/script&gt; @\u{200B}team \\!\\[i\\](http:\u{200B}//x/p.png) \\`c\\`"
        );
        assert_eq!(
            markdown_text("see https://evil.example/x and www.evil.example"),
            "see https:\u{200B}//evil.example/x and www\u{200B}.evil.example"
        );
        assert_eq!(
            markdown_code_block("python", "x = 1\n```\nevil"),
            "````python\nx = 1\n```\nevil\n````"
        );
    }
}
