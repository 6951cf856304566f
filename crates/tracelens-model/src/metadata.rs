//! Trace-level metadata: devices, distributed setup, tool versions, and redacted extras.

use serde::Serialize;
use std::collections::BTreeMap;

/// Most free-form metadata entries kept; the rest are counted.
pub const MAX_EXTRA_ENTRIES: usize = 512;
/// Longest free-form metadata value kept, in characters.
pub const MAX_EXTRA_VALUE_CHARS: usize = 240;

/// Properties of one GPU as the trace's `deviceProperties` lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceProperties {
    /// Device id.
    pub id: i64,
    /// Marketing name (`NVIDIA H100 80GB HBM3`, `AMD Instinct MI300X VF`); may be empty.
    pub name: String,
    /// Global memory in bytes.
    pub total_global_mem_bytes: Option<u64>,
    /// Compute capability major.
    pub compute_major: Option<i64>,
    /// Compute capability minor.
    pub compute_minor: Option<i64>,
    /// Number of multiprocessors (SMs / CUs).
    pub num_sms: Option<i64>,
    /// Warp (wavefront) size: 32 on NVIDIA, 64 on AMD.
    pub warp_size: Option<i64>,
}

/// `distributedInfo`: the rank this trace belongs to.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DistributedInfo {
    /// Communication backend (`nccl`, `gloo`).
    pub backend: Option<String>,
    /// This trace's rank.
    pub rank: Option<i64>,
    /// Number of ranks.
    pub world_size: Option<i64>,
}

/// Everything the trace says about itself, with secrets removed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Metadata {
    /// `schemaVersion`.
    pub schema_version: Option<i64>,
    /// `baseTimeNanoseconds`: absolute time = base + span time.
    pub base_time_ns: Option<i64>,
    /// `displayTimeUnit` (a viewer hint; never changes the unit of timestamps).
    pub display_time_unit: Option<String>,
    /// `traceName`.
    pub trace_name: Option<String>,
    /// Tool and library versions (`cupti_version`, `cuda_runtime_version`, `hip_runtime_version`, …).
    pub versions: BTreeMap<String, String>,
    /// Profiler switches that were on (`with_stack`, `record_shapes`, `profile_memory`, …).
    pub profiler_flags: BTreeMap<String, String>,
    /// `deviceProperties`: every GPU of the node, not only the traced ones.
    pub device_properties: Vec<DeviceProperties>,
    /// `distributedInfo`.
    pub distributed: Option<DistributedInfo>,
    /// Other metadata, flattened to `a.b.c` paths, values redacted and shortened.
    pub extra: BTreeMap<String, String>,
    /// Paths whose values were redacted because they looked secret.
    pub redacted: Vec<String>,
    /// Entries dropped past [`MAX_EXTRA_ENTRIES`].
    pub extra_dropped: u64,
}

impl Metadata {
    /// Records a free-form entry, redacting secret-looking values and shortening long ones.
    pub fn add_extra(&mut self, path: &str, value: &str) {
        if self.extra.len() >= MAX_EXTRA_ENTRIES && !self.extra.contains_key(path) {
            self.extra_dropped += 1;
            return;
        }
        let kept = if is_secret(path, value) {
            self.redacted.push(path.to_string());
            "<redacted>".to_string()
        } else {
            shorten(value, MAX_EXTRA_VALUE_CHARS)
        };
        self.extra.insert(path.to_string(), kept);
    }
}

/// Shortens `text` to at most `max_chars` characters, marking the cut with `…`.
pub fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// Whether a metadata entry looks like a credential, by its key or by its value.
///
/// Keys: the last path segment contains SECRET, PASSWORD, PASSWD or CREDENTIAL, or one of its
/// `_`/`-`-separated words is TOKEN, AUTH, COOKIE, KEY or APIKEY (so `HF_TOKEN` and
/// `WANDB_API_KEY` are secret, `TOKENIZERS_PARALLELISM` and `KEYBOARD` are not). Values:
/// well-known token prefixes (`hf_`, `ghp_`, `github_pat_`, `sk-`, `xoxb-`, `AKIA…`, PEM).
pub fn is_secret(path: &str, value: &str) -> bool {
    let key = path.rsplit('.').next().unwrap_or(path).to_ascii_uppercase();
    let by_key = ["SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|w| key.contains(w))
        || key
            .split(['_', '-', ' '])
            .any(|w| matches!(w, "TOKEN" | "TOKENS" | "AUTH" | "COOKIE" | "KEY" | "APIKEY"));
    if by_key {
        return !value.is_empty();
    }
    let v = value.trim();
    const PREFIXES: [&str; 9] = [
        "hf_",
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "sk-",
        "xoxb-",
        "xoxp-",
        "glpat-",
    ];
    let token_like = |rest: &str| {
        rest.len() >= 16
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    PREFIXES
        .iter()
        .any(|p| v.strip_prefix(p).is_some_and(token_like))
        || (v.len() == 20
            && v.starts_with("AKIA")
            && v.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
        || v.starts_with("-----BEGIN")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_by_key_and_by_value() {
        assert!(is_secret("metadata.env.HF_TOKEN", "hf_REDACTED"));
        assert!(is_secret("metadata.env.AWS_SECRET_ACCESS_KEY", "x"));
        assert!(is_secret("metadata.env.WANDB_API_KEY", "abc"));
        assert!(is_secret(
            "metadata.env.SOMETHING",
            "hf_abcdefghijklmnopqrstuv"
        ));
        assert!(is_secret("x", "AKIAABCDEFGHIJKLMNOP"));
        assert!(!is_secret("metadata.env.PATH", "/usr/bin:/bin"));
        assert!(!is_secret("metadata.env.HF_TOKEN", ""));
        assert!(!is_secret("metadata.env.TOKENIZERS_PARALLELISM", "false"));
        assert!(!is_secret("metadata.env.KEYBOARD", "us"));
        assert!(is_secret("metadata.env.DB_PASSWORD", "x"));
        assert!(is_secret("metadata.env.GITHUB_TOKEN", "x"));
    }

    #[test]
    fn extra_entries_are_redacted_and_shortened() {
        let mut m = Metadata::default();
        m.add_extra("metadata.env.HF_TOKEN", "hf_live_secret_value_123456");
        m.add_extra("metadata.note", &"x".repeat(1000));
        assert_eq!(m.extra["metadata.env.HF_TOKEN"], "<redacted>");
        assert_eq!(m.redacted, vec!["metadata.env.HF_TOKEN".to_string()]);
        assert_eq!(
            m.extra["metadata.note"].chars().count(),
            MAX_EXTRA_VALUE_CHARS + 1
        );
    }
}
