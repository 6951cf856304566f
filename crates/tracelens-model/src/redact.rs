//! Redaction of credentials: the one place that decides what looks secret, used by the
//! importers for metadata and by [`crate::Trace::redact`] for every other trace string.
//!
//! A *key* is secret when one of its words (split at `_`, `-`, `.`, spaces and camelCase) is
//! TOKEN(S), AUTH, AUTHORIZATION, COOKIE(S), KEY(S), APIKEY, PASS, PW, SIG, SIGNATURE or DSN,
//! or when it contains SECRET, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, PRIVATEKEY, ACCESSKEY,
//! CONNECTIONSTRING, APITOKEN, AUTHTOKEN or SESSIONID (so `HF_TOKEN`, `WANDB_API_KEY`,
//! `apitoken`, `session_id` and `accessToken` are secret;
//! `TOKENIZERS_PARALLELISM`, `KEYBOARD` and `PWD` are not). Everything under a secret key is
//! redacted, at any depth.
//!
//! In *free text* (metadata values, names, command lines, URLs) [`redact_text`] replaces:
//! - `KEY=VALUE` and `KEY:VALUE` pairs with a secret key (env lists, `;`-separated cloud
//!   connection strings such as `AccountKey=…`, `&`-separated query strings such as `?token=…`);
//! - the value after a command-line flag with a secret name (`--password=…`, `--token …`),
//!   after `mysql -p…` and `sshpass -p`;
//! - the value after `Bearer`, `Basic`, `token`, `Authorization:` and a bare `password`,
//!   `passwd` or `passphrase` (a netrc line);
//! - credentials in every URL of a word (`postgres://user:PASSWORD@host`, a comma-separated
//!   list, scheme-relative `//user:PASSWORD@host`) and Slack/Discord webhook paths;
//! - JSON Web Tokens (`eyJ….eyJ….…`), PEM private keys and PuTTY key files;
//! - well-known token prefixes anywhere: `hf_`, `ghp_`/`gho_`/`ghs_`/`ghu_`/`ghr_`,
//!   `github_pat_`, `glpat-`, `glrt-`, `glsa_`, `xox[abposr]-`, `xapp-`, `sk-`/`sk_live_`/
//!   `rk_live_`, `AIza`, Google's `ya29.`, `pypi-`, `npm_`, `dapi`, `hvs.`, `SG.`, `dop_v1_`,
//!   `r8_`, `gsk_`, and AWS access key ids (`AKIA…`/`ASIA…`);
//! - all of the above in percent-encoded text (`password%3Dhunter2`), which is decoded.
//!
//! An Nsight Systems export stores a command line one argument per row: [`redact_argv`]
//! redacts a list of arguments as the command line they form.

use std::borrow::Cow;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Words that make a key secret on their own.
const SECRET_WORDS: [&str; 14] = [
    "TOKEN",
    "TOKENS",
    "AUTH",
    "AUTHORIZATION",
    "COOKIE",
    "COOKIES",
    "KEY",
    "KEYS",
    "APIKEY",
    "PASS",
    "PW",
    "SIG",
    "SIGNATURE",
    "DSN",
];
/// Fragments that make a key secret wherever they appear (after removing separators).
const SECRET_FRAGMENTS: [&str; 11] = [
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "PRIVATEKEY",
    "ACCESSKEY",
    "CONNECTIONSTRING",
    "APITOKEN",
    "AUTHTOKEN",
    "SESSIONID",
];

/// Whether a key (an environment variable, a JSON key, a flag or query parameter name) names
/// a secret. Leading dashes and an `[index]` suffix are ignored.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.trim().trim_start_matches('-');
    let key = key.split('[').next().unwrap_or(key);
    if key.is_empty() || key.len() > 256 {
        return false;
    }
    let squashed: String = key
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if SECRET_FRAGMENTS.iter().any(|f| squashed.contains(f)) {
        return true;
    }
    // A keyboard shortcut (`TRACE_NVTX_RANGE_HOT_KEY`) is not a credential.
    let words: Vec<String> = words(key).collect();
    words
        .iter()
        .enumerate()
        .any(|(i, w)| SECRET_WORDS.contains(&w.as_str()) && !(i > 0 && words[i - 1] == "HOT"))
}

/// The upper-cased words of a key: split at non-alphanumerics and lower→upper case changes.
fn words(key: &str) -> impl Iterator<Item = String> + '_ {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_uppercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out.into_iter()
}

/// Whether an environment variable matters for performance and is kept from an environment
/// capture: the GPU, communication, threading and framework settings (`CUDA_*`, `NCCL_*`,
/// `OMP_*`, `PYTORCH_*`, `TORCH_*`, …) and the rank layout. Every other variable (home paths,
/// job ids, tokens) is counted, not copied.
#[must_use]
pub fn is_performance_env(name: &str) -> bool {
    const PREFIXES: [&str; 20] = [
        "CUDA_",
        "CUDNN_",
        "CUBLAS",
        "NCCL_",
        "NVIDIA_",
        "NVTE_",
        "OMP_",
        "KMP_",
        "MKL_",
        "GOMP_",
        "PYTORCH_",
        "TORCH_",
        "TORCHINDUCTOR_",
        "HIP_",
        "HSA_",
        "ROCM_",
        "RCCL_",
        "MIOPEN_",
        "XLA_",
        "TF_",
    ];
    const NAMES: [&str; 5] = [
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GPU_MAX_HW_QUEUES",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) || NAMES.contains(&name)
}

/// Whether a dotted metadata path (`metadata.env.HF_TOKEN.value`, `a[0].b`) passes through a
/// secret key anywhere: the whole subtree under a secret key is secret.
pub fn is_secret_path(path: &str) -> bool {
    path.split('.').any(is_secret_key)
}

/// A command line stored one argument per item (`args[0]` the program or the first
/// argument), redacted as the line they form: an argument after one that announces a secret
/// (`--password`, `--hf-token`, `sshpass -p`, `Bearer`) is replaced whole, and every argument
/// is redacted as text. `program` (the executable, when stored apart) gives the context.
#[must_use]
pub fn redact_argv<'a>(program: &str, args: &[&'a str]) -> Vec<Cow<'a, str>> {
    let mut out = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let announced = i > 0 && {
            // The state machine of `redact_text`, asked whether the word after the previous
            // argument is a secret.
            // The context is the program and the arguments just before (`sshpass -p`).
            let before = args[i.saturating_sub(8)..i].join(" ");
            let probe = format!("{program} {before} x");
            redact_text(&probe).ends_with(&format!(" {REDACTED}"))
        };
        if announced && !arg.starts_with("--") {
            out.push(Cow::Borrowed(REDACTED));
        } else {
            out.push(redact_text(arg));
        }
    }
    out
}

/// `text` with every credential it holds replaced by [`REDACTED`] (see the module docs).
/// Borrowed when nothing was found, which is the common case. A replacement can expose
/// another pattern (a URL whose password ends where a redacted token was), so passes repeat
/// until nothing changes: the result is a fixed point, and redacting it again is a no-op.
#[must_use]
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let Cow::Owned(mut current) = redact_pass(text) else {
        return Cow::Borrowed(text);
    };
    for _ in 0..MAX_PASSES {
        match redact_pass(&current) {
            Cow::Borrowed(_) => break,
            Cow::Owned(next) => current = next,
        }
    }
    Cow::Owned(current)
}

/// Passes after the first; each one only runs when the one before changed something.
const MAX_PASSES: usize = 8;

fn redact_pass(text: &str) -> Cow<'_, str> {
    if !might_hold_secret(text) {
        return Cow::Borrowed(text);
    }
    if let Some(at) = text.find("-----BEGIN") {
        if text[at..].contains("PRIVATE KEY") {
            return Cow::Owned(format!("{}{REDACTED}", redact_pass(&text[..at])));
        }
    }
    if let Some(at) = text.find("PuTTY-User-Key-File-") {
        return Cow::Owned(format!("{}{REDACTED}", redact_pass(&text[..at])));
    }
    let mut out = String::with_capacity(text.len());
    let mut redact_next = false;
    // A command whose password flag is `-p` (glued to the value for mysql).
    let mut program = Program::Other;
    let mut rest = text;
    while !rest.is_empty() {
        let ws = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..ws]);
        rest = &rest[ws..];
        if rest.is_empty() {
            break;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        let lower = word.to_ascii_lowercase();
        let bare = lower.trim_end_matches(':');
        if matches!(bare, "authorization" | "password" | "passwd" | "passphrase") {
            out.push_str(word);
            redact_next = true;
            continue;
        }
        if matches!(bare, "bearer" | "basic" | "token") {
            out.push_str(word);
            // After `Authorization` the scheme's token is secret whatever it looks like;
            // alone, the word announces one only when the next word looks like a credential
            // (`Qt bearer thread` is a thread name, `import basic` a module).
            if redact_next
                || rest
                    .split_whitespace()
                    .next()
                    .is_some_and(looks_like_credential)
            {
                redact_next = true;
            }
            continue;
        }
        match Program::of(&lower) {
            Program::Other => {}
            p => program = p,
        }
        if program != Program::Other && word.starts_with("-p") && !word.starts_with("--") {
            out.push_str("-p");
            match &word[2..] {
                "" if program == Program::Sshpass => redact_next = true,
                "" => {}
                _ => out.push_str(REDACTED),
            }
            continue;
        }
        // `KEY: value` (YAML, HTTP headers, a dumped dict or JSON object: `'db_password':`,
        // `"api_key":`) and `KEY = value`: a secret key whose value is the next word.
        if let Some(key) = spaced_key(word, rest) {
            if is_secret_key(key) {
                out.push_str(word);
                redact_next = true;
                continue;
            }
        }
        if std::mem::take(&mut redact_next) && !word.starts_with("--") {
            // `KEY = value`: the lone separator is not the value.
            if word == "=" || word == ":" {
                out.push_str(word);
                redact_next = true;
                continue;
            }
            out.push_str(&redact_quoted(word));
            continue;
        }
        // Decided on the redacted word, so a second pass decides the same (idempotence).
        let redacted = redact_word(word);
        if redacted.starts_with('-') && !redacted.contains('=') && is_secret_key(&redacted) {
            redact_next = true;
        }
        // `Authorization:Bearer TOKEN`: the scheme glued to the header, the token after it.
        if lower.ends_with(":bearer") || lower.ends_with(":basic") || lower.ends_with("=bearer") {
            redact_next = true;
        }
        out.push_str(&redacted);
    }
    if out == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(out)
    }
}

/// Whether a word after `Bearer`, `Basic` or `token` looks like a credential rather than a
/// word of prose: 8 or more token characters with both a letter and a digit, or 20 or more.
fn looks_like_credential(word: &str) -> bool {
    let w = word.trim_matches(|c: char| matches!(c, '"' | '\'' | ',' | ';' | ')' | ']' | '}'));
    let token_chars = w
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '+' | '/' | '=' | '-'));
    let letter = w.chars().any(|c| c.is_ascii_alphabetic());
    let digit = w.chars().any(|c| c.is_ascii_digit());
    token_chars && (w.len() >= 20 || (w.len() >= 8 && letter && digit))
}

/// A program whose password is given with `-p`: mysql's glued to it (`-pSECRET`), sshpass's
/// glued or as the next argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Program {
    Mysql,
    Sshpass,
    Other,
}

impl Program {
    /// The program a lower-cased word names (its file name), if one of these.
    fn of(lower_word: &str) -> Program {
        let name = lower_word.rsplit(['/', '\\']).next().unwrap_or(lower_word);
        match name {
            "mysql" | "mysqldump" | "mysqladmin" | "mysqlimport" | "mysqlshow" | "mysqlcheck"
            | "mariadb" | "mariadb-dump" => Program::Mysql,
            "sshpass" => Program::Sshpass,
            _ => Program::Other,
        }
    }
}

/// The key of a `KEY:` word whose value follows after a space, or of a `KEY` word followed by a
/// lone `=` or `:`; quotes and an opening brace are not part of the key.
fn spaced_key<'a>(word: &'a str, rest: &str) -> Option<&'a str> {
    let key = if let Some(k) = word.strip_suffix(':') {
        k
    } else {
        let next = rest.trim_start();
        let lone = |sep: char| {
            next.strip_prefix(sep)
                .is_some_and(|after| after.starts_with(char::is_whitespace))
        };
        if !(lone('=') || lone(':')) || word.contains(['=', ':']) {
            return None;
        }
        word
    };
    let key = key
        .trim_start_matches(['{', '(', '[', ','])
        .trim_matches(['"', '\'']);
    let identifier = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    identifier.then_some(key)
}

/// A cheap test that rules out most strings (kernel and operator names) at once.
fn might_hold_secret(text: &str) -> bool {
    // Every form needs one of these bytes (`Bearer T`: a space; `hvs.…`: a dot), a
    // prefix without punctuation (`dapi…`, `AKIA…`), or a JWT.
    let b = text.as_bytes();
    b.iter().any(|&c| {
        matches!(c, b'=' | b'@' | b'-' | b'_' | b':' | b'.' | b'%' | b'/')
            || c.is_ascii_whitespace()
    }) || text.contains("eyJ")
        || text.contains("AKIA")
        || text.contains("ASIA")
        || text.contains("AIza")
        || text.contains("dapi")
}

/// A value after `--token` or `Bearer`, keeping surrounding quotes.
fn redact_quoted(word: &str) -> String {
    let open = usize::from(word.starts_with(['"', '\'']));
    let closers = ['"', '\'', ',', ';', '}', ']', ')'];
    let body = &word[open..];
    let close = body.len() - body.trim_end_matches(closers).len();
    let mut s = String::new();
    s.push_str(&word[..open]);
    s.push_str(REDACTED);
    s.push_str(&body[body.len() - close..]);
    s
}

/// One whitespace-free word: pairs, URLs, JWTs and prefixed tokens.
fn redact_word(word: &str) -> String {
    let redacted = {
        let word = redact_url_credentials(word);
        let word = redact_pairs(&word);
        redact_tokens(&word)
    };
    if redacted != word {
        return redacted;
    }
    // Percent-encoded credentials (`password%3Dhunter2`, `user%3Apass%40host`): the decoded
    // word, redacted, when that finds one.
    match percent_decoded(word) {
        Some(decoded) => {
            let again = redact_pass(&decoded);
            if again == decoded {
                redacted
            } else {
                again.into_owned()
            }
        }
        None => redacted,
    }
}

/// `word` with its `%XX` escapes decoded, when it has one and decodes to UTF-8.
fn percent_decoded(word: &str) -> Option<String> {
    let b = word.as_bytes();
    if !b.contains(&b'%') {
        return None;
    }
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut any = false;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 3;
                any = true;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    if !any {
        return None;
    }
    String::from_utf8(out).ok()
}

/// `scheme://user:password@host` → `scheme://user:<redacted>@host`, for every URL in the
/// word (a comma-separated list holds several) and scheme-relative `//user:password@host`;
/// webhook paths.
fn redact_url_credentials(word: &str) -> Cow<'_, str> {
    if !word.contains("//") {
        return Cow::Borrowed(word);
    }
    let mut out = String::with_capacity(word.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = word[from..].find("//") {
        let slashes = from + found;
        let auth_start = slashes + 2;
        let scheme = word[..slashes].ends_with(':');
        let after = &word[auth_start..];
        let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    out.push_str(&word[copied..auth_start + colon + 1]);
                    out.push_str(REDACTED);
                    copied = auth_start + at;
                }
                // A bare user part of a token URL (`https://TOKEN@github.com`).
                None if scheme && userinfo.len() >= 16 => {
                    out.push_str(&word[copied..auth_start]);
                    out.push_str(REDACTED);
                    copied = auth_start + at;
                }
                None => {}
            }
        }
        let path_start = auth_start + authority_end;
        let path = &word[path_start..];
        let lower_host = authority.to_ascii_lowercase();
        let webhook = if !scheme {
            None
        } else if lower_host.ends_with("hooks.slack.com") {
            path.find("/services/").map(|i| i + "/services/".len())
        } else if lower_host.ends_with("discord.com") || lower_host.ends_with("discordapp.com") {
            path.find("/webhooks/").map(|i| i + "/webhooks/".len())
        } else {
            None
        };
        if let Some(cut) = webhook {
            out.push_str(&word[copied..path_start + cut]);
            out.push_str(REDACTED);
            // The webhook's secret path runs to the end of the URL (the next space or comma).
            let end = path[cut..]
                .find(',')
                .map_or(word.len(), |e| path_start + cut + e);
            copied = end;
            from = end;
            continue;
        }
        from = path_start.max(auth_start);
    }
    if copied == 0 {
        return Cow::Borrowed(word);
    }
    out.push_str(&word[copied..]);
    Cow::Owned(out)
}

/// `KEY=VALUE` / `KEY:VALUE` pieces of a word split at `;`, `&`, `?`, `,`: secret keys lose
/// their value.
fn redact_pairs(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut start = 0;
    for (i, c) in word.char_indices().chain([(word.len(), ';')]) {
        if i < word.len() && !matches!(c, ';' | '&' | '?' | ',') {
            continue;
        }
        let piece = &word[start..i];
        out.push_str(&redact_pair(piece));
        if i < word.len() {
            out.push(c);
        }
        start = i + c.len_utf8();
    }
    out
}

fn redact_pair(piece: &str) -> Cow<'_, str> {
    let split = piece
        .find('=')
        .or_else(|| piece.find(':').filter(|&i| !piece[i..].starts_with("://")));
    let Some(at) = split else {
        return Cow::Borrowed(piece);
    };
    let key = piece[..at].trim_start_matches(['"', '\'', '{', '(', '[']);
    let key = key.trim_end_matches(['"', '\'']);
    let value = &piece[at + 1..];
    // `name==1.2` is a version pin, and a key is a name, not a path (`/etc/keys/x:y`).
    let identifier = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if value.is_empty()
        || value == REDACTED
        || value.starts_with('=')
        || !identifier
        || !is_secret_key(key)
    {
        return Cow::Borrowed(piece);
    }
    Cow::Owned(format!("{}{REDACTED}", &piece[..at + 1]))
}

/// Prefixed tokens and JWTs anywhere in a word.
fn redact_tokens(word: &str) -> String {
    // (prefix, fewest body characters, whether the body may hold dots)
    const PREFIXES: [(&str, usize, bool); 31] = [
        ("github_pat_", 16, false),
        ("pypi-", 16, false),
        ("npm_", 30, false),
        ("ya29.", 16, true),
        ("xapp-", 8, false),
        ("glrt-", 16, false),
        ("glsa_", 24, false),
        ("hf_", 16, false),
        ("ghp_", 16, false),
        ("gho_", 16, false),
        ("ghs_", 16, false),
        ("ghu_", 16, false),
        ("ghr_", 16, false),
        ("glpat-", 16, false),
        ("xoxa-", 8, false),
        ("xoxb-", 8, false),
        ("xoxp-", 8, false),
        ("xoxo-", 8, false),
        ("xoxr-", 8, false),
        ("xoxs-", 8, false),
        ("sk_live_", 16, false),
        ("rk_live_", 16, false),
        ("sk-", 16, false),
        ("AIza", 30, false),
        ("dapi", 32, false),
        ("hvs.", 20, true),
        ("SG.", 20, true),
        ("dop_v1_", 40, false),
        ("r8_", 24, false),
        ("gsk_", 32, false),
        ("eyJ", 0, false),
    ];
    let bytes = word.as_bytes();
    let token_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
    let mut out = String::with_capacity(word.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        // Tokens are ASCII: only ASCII bytes can start one (and are char boundaries). A
        // token right after a redacted one starts a token too, as it will once the first
        // is `<redacted>`: redaction is idempotent.
        let boundary =
            i == 0 || (i == copied && copied > 0) || !bytes[i - 1].is_ascii_alphanumeric();
        if !boundary || !bytes[i].is_ascii() {
            i += 1;
            continue;
        }
        let rest = &word[i..];
        let mut matched = None;
        if let Some(n) = aws_key_len(rest) {
            matched = Some(n);
        } else if rest.starts_with("eyJ") {
            matched = jwt_len(rest);
        } else {
            for (prefix, min_body, dots) in PREFIXES {
                if prefix != "eyJ" && rest.starts_with(prefix) {
                    let body = rest[prefix.len()..]
                        .bytes()
                        .take_while(|&c| token_char(c) || (dots && c == b'.'))
                        .count();
                    if body >= min_body {
                        matched = Some(prefix.len() + body);
                    }
                    break;
                }
            }
        }
        match matched {
            Some(n) => {
                out.push_str(&word[copied..i]);
                out.push_str(REDACTED);
                i += n;
                copied = i;
            }
            None => i += 1,
        }
    }
    out.push_str(&word[copied..]);
    out
}

/// `AKIA`/`ASIA` followed by 16 upper-case letters or digits.
fn aws_key_len(rest: &str) -> Option<usize> {
    if !(rest.starts_with("AKIA") || rest.starts_with("ASIA")) {
        return None;
    }
    let body = rest[4..]
        .bytes()
        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        .count();
    (body == 16).then_some(20)
}

/// A JSON Web Token: three base64url parts, the first two starting with `eyJ`.
fn jwt_len(rest: &str) -> Option<usize> {
    let b64 = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'=';
    let bytes = rest.as_bytes();
    let part = |from: usize| bytes[from..].iter().take_while(|&&c| b64(c)).count();
    let first = part(0);
    if first < 10 || bytes.get(first) != Some(&b'.') {
        return None;
    }
    let second_at = first + 1;
    if !rest[second_at..].starts_with("eyJ") {
        return None;
    }
    let second = part(second_at);
    let mut end = second_at + second;
    if bytes.get(end) == Some(&b'.') {
        end += 1 + part(end + 1);
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> String {
        redact_text(s).into_owned()
    }

    #[test]
    fn secret_keys() {
        for k in [
            "HF_TOKEN",
            "WANDB_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "accessToken",
            "apiKey",
            "--password",
            "x-auth",
            "SENTRY_DSN",
            "AZURE_STORAGE_CONNECTION_STRING",
            "HF_TOKEN[0]",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in [
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD",
            "PWD",
            "PATH",
            "monkey",
            "passage",
            "cuda_runtime_version",
            "TRACE_NVTX_RANGE_HOT_KEY",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
        assert!(is_secret_path("metadata.env.HF_TOKEN.value"));
        assert!(!is_secret_path("metadata.env.PATH"));
    }

    #[test]
    fn free_text_credentials() {
        assert_eq!(r("HF_TOKEN=abc PATH=/bin"), "HF_TOKEN=<redacted> PATH=/bin");
        assert_eq!(
            r("python train.py --password=hunter2 --lr 3 --token abc123 --epochs 2"),
            "python train.py --password=<redacted> --lr 3 --token <redacted> --epochs 2"
        );
        assert_eq!(
            r("Authorization: Bearer abc.def"),
            "Authorization: Bearer <redacted>"
        );
        assert_eq!(
            r("postgres://user:pw123@db:5432/x"),
            "postgres://user:<redacted>@db:5432/x"
        );
        assert_eq!(
            r("tcp://root:s3cret@10.0.0.1:29500"),
            "tcp://root:<redacted>@10.0.0.1:29500"
        );
        assert_eq!(
            r("https://x.io/trace?token=abc&page=2"),
            "https://x.io/trace?token=<redacted>&page=2"
        );
        assert_eq!(
            r("https://hooks.slack.com/services/T000/B000/XXXX"),
            "https://hooks.slack.com/services/<redacted>"
        );
        assert_eq!(
            r("DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Zm9v==;EndpointSuffix=core"),
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=<redacted>;EndpointSuffix=core"
        );
        assert_eq!(r("v1.2+hf_abcdefghijklmnopqrstu"), "v1.2+<redacted>");
        assert_eq!(r("key AKIAABCDEFGHIJKLMNOP!"), "key <redacted>!");
        // Found by fuzzing: a token glued to the end of another.
        assert_eq!(
            r("ASIA9999999999999999sk_live_abcdefghijklmnopqr"),
            "<redacted><redacted>"
        );
        assert_eq!(
            r("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_x-y"),
            "jwt <redacted>"
        );
        assert_eq!(
            r("-----BEGIN RSA PRIVATE KEY-----\nMII"),
            "<redacted>".to_string()
        );
    }

    #[test]
    fn secrets_by_shape() {
        // A config dumped as a string: a Python dict, a JSON object.
        assert_eq!(
            r("{'db_password': 'hunter2', 'lr': 3}"),
            "{'db_password': '<redacted>', 'lr': 3}"
        );
        assert_eq!(
            r(r#"{"api_key": "abc123", "model": "x"}"#),
            r#"{"api_key": "<redacted>", "model": "x"}"#
        );
        // YAML and HTTP headers, and `KEY = value`.
        assert_eq!(r("api_key: abc123"), "api_key: <redacted>");
        assert_eq!(r("X-Api-Key: abc123"), "X-Api-Key: <redacted>");
        assert_eq!(r("password = hunter2"), "password = <redacted>");
        assert_eq!(
            r("Authorization:Bearer TOKEN123"),
            "Authorization:<redacted> <redacted>"
        );
        // Prefixed tokens.
        for t in [
            "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAw",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "ya29.a0AfH6SMBxxxxxxxxxxxxxxxxxx",
        ] {
            assert_eq!(r(&format!("t {t} x")), "t <redacted> x", "{t}");
        }
        // Ordinary text with colons and equals stays.
        assert_eq!(r("step: 3 loss = 0.5"), "step: 3 loss = 0.5");
        assert_eq!(r("at::native::add_kernel"), "at::native::add_kernel");
        // Idempotent.
        for t in [
            "{'db_password': 'hunter2'}",
            "Authorization:Bearer T",
            "password = x",
        ] {
            assert_eq!(r(&r(t)), r(t), "{t}");
        }
    }

    /// Issue 40: forms that escaped, as a table of (input, output).
    #[test]
    fn secrets_in_every_form() {
        let putty = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\nAAAAIBx\nPrivate-MAC: ab";
        let table: &[(&str, &str)] = &[
            // Forms without `= @ - _ :`: the prefilter let them through.
            ("NVIDIA Bearer T0ken123", "NVIDIA Bearer <redacted>"),
            ("Authorization Bearer T", "Authorization Bearer <redacted>"),
            ("token ghx7Q2vL9pZ", "token <redacted>"),
            ("basic dXNlcjpwYXNzd29yZA==", "basic <redacted>"),
            // Every URL of a list, and scheme-relative ones.
            (
                "https://a:p1@h1,https://b:p2@h2",
                "https://a:<redacted>@h1,https://b:<redacted>@h2",
            ),
            ("//user:pass@host/db", "//user:<redacted>@host/db"),
            // netrc, and keys that are one word.
            (
                "machine h login u password X",
                "machine h login u password <redacted>",
            ),
            ("PASSPHRASE=x", "PASSPHRASE=<redacted>"),
            ("apitoken=x", "apitoken=<redacted>"),
            ("authtoken=x", "authtoken=<redacted>"),
            ("sessionid=x", "sessionid=<redacted>"),
            ("session_id=x", "session_id=<redacted>"),
            // Programs whose password flag is -p.
            ("mysql -uroot -pS3cret db", "mysql -uroot -p<redacted> db"),
            (
                "/usr/bin/mysqldump -pS3cret db",
                "/usr/bin/mysqldump -p<redacted> db",
            ),
            (
                "sshpass -p S3cret ssh host",
                "sshpass -p <redacted> ssh host",
            ),
            ("sshpass -pS3cret ssh host", "sshpass -p<redacted> ssh host"),
            // Percent-encoded.
            (
                "cb?next=%2Flogin%3Fpassword%3Dhunter2",
                "cb?next=/login?password=<redacted>",
            ),
            (
                "postgres%3A%2F%2Fuser%3Apass%40host",
                "postgres://user:<redacted>@host",
            ),
            // Prefixes.
            ("x dapi0123456789abcdef0123456789abcdef y", "x <redacted> y"),
            ("x hvs.CAESIJ1aBcDeFgHiJkLmNoPqRsTuV y", "x <redacted> y"),
            (
                "x 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 y",
                "x <redacted> y",
            ),
            (
                "x glsa_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345_abcdef01 y",
                "x <redacted> y",
            ),
            (
                "x dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef y",
                "x <redacted> y",
            ),
            (
                "x r8_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789a y",
                "x <redacted> y",
            ),
            (
                "x gsk_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmn y",
                "x <redacted> y",
            ),
            (
                "x ya29.c.b0AXv0zTO2abcdefghijklmnopqrstuvwx y",
                "x <redacted> y",
            ),
            // A PuTTY key file.
            (putty, "<redacted>"),
        ];
        for (input, want) in table {
            assert_eq!(&r(input), want, "{input}");
            assert_eq!(r(want), *want, "idempotent: {want}");
        }
        // Look-alikes stay.
        for s in [
            "MSG.send_batch_kernel",
            "sessions=4",
            "password_policy_check",
            "50% of 3",
            "mysql_kernel -p",
            // Found on the corpus: a Qt thread name and a Python traceback.
            "Qt bearer threa",
            "import basic  # Import your module",
            "token embedding lookup",
            "Microsoft Basic Render Driver",
        ] {
            assert_eq!(r(s), s, "{s}");
        }
    }

    /// An Nsight Systems export's argv, one argument per row: the value after a secret flag
    /// is its own row.
    #[test]
    fn argv_rows_are_redacted_as_the_command_line_they_form() {
        let args = [
            "train.py",
            "--hf-token",
            "abc123",
            "--lr",
            "3",
            "--password",
            "hunter2",
            "--db=postgres://u:pw@h/x",
        ];
        let out: Vec<String> = redact_argv("python", &args)
            .into_iter()
            .map(Cow::into_owned)
            .collect();
        assert_eq!(
            out,
            [
                "train.py",
                "--hf-token",
                "<redacted>",
                "--lr",
                "3",
                "--password",
                "<redacted>",
                "--db=postgres://u:<redacted>@h/x"
            ]
        );
        let out = redact_argv("", &["sshpass", "-p", "S3cret", "ssh", "host"]);
        assert_eq!(out[2], REDACTED);
        assert_eq!(out[3], "ssh");
    }

    #[test]
    fn ordinary_names_are_untouched() {
        for s in [
            "aten::mm",
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >",
            "train.py(42): step",
            "cudaLaunchKernel",
            "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize96x64x32_stage3",
            "ProfilerStep#3",
            "/usr/lib/python3/site-packages/torch/nn/modules/module.py(1501): _call_impl",
            "nccl:all_reduce",
            "PYTHONPATH=/src",
            "tokenizer=bert-base",
            "google-auth==2.40.3",
            "file:///etc/keys/ima:/etc/ima",
            "2022-04…2024-02 é_x-hf_ü",
        ] {
            assert!(matches!(redact_text(s), Cow::Borrowed(_)), "{s}");
        }
    }
}
