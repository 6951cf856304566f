//! Trace-level metadata: devices, distributed setup, tool versions, and redacted extras.

use crate::redact::{is_secret_key, is_secret_path, redact_text, REDACTED};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Most free-form metadata entries kept; the rest are counted.
pub const MAX_EXTRA_ENTRIES: usize = 512;
/// Longest free-form metadata value kept, in characters.
pub const MAX_EXTRA_VALUE_CHARS: usize = 240;

/// Properties of one GPU as the trace's `deviceProperties` lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct DistributedInfo {
    /// Communication backend (`nccl`, `gloo`).
    pub backend: Option<String>,
    /// This trace's rank.
    pub rank: Option<i64>,
    /// Number of ranks.
    pub world_size: Option<i64>,
}

/// Everything the trace says about itself, with secrets removed.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
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
    /// API calls that returned an error code, by call and code (the first
    /// [`MAX_API_ERRORS`] pairs; where the trace records return values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_errors: Vec<ApiError>,
    /// NVTX domains the program created (Nsight Systems; the first [`MAX_NVTX_DOMAINS`],
    /// each cut to [`MAX_NVTX_DOMAIN_CHARS`]): a library that annotates its own calls
    /// (libcudf, cudf_python) names itself here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvtx_domains: Vec<String>,
}

/// Distinct (call, code) pairs of failed API calls kept.
pub const MAX_API_ERRORS: usize = 32;

/// NVTX domain names kept.
pub const MAX_NVTX_DOMAINS: usize = 32;

/// Characters kept of one NVTX domain name.
pub const MAX_NVTX_DOMAIN_CHARS: usize = 128;

/// API calls of one name that returned one error code.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ApiError {
    /// The call (`cudaLaunchKernel`).
    pub call: String,
    /// The code it returned (the runtime's or the driver's error enum).
    pub code: i64,
    /// How many calls returned it.
    pub count: u64,
}

impl Metadata {
    /// Counts one call of `call` that returned `code` (not 0).
    pub fn add_api_error(&mut self, call: &str, code: i64) {
        if let Some(e) = self
            .api_errors
            .iter_mut()
            .find(|e| e.code == code && e.call == call)
        {
            e.count += 1;
        } else if self.api_errors.len() < MAX_API_ERRORS {
            self.api_errors.push(ApiError {
                call: shorten(call, MAX_EXTRA_VALUE_CHARS),
                code,
                count: 1,
            });
        }
    }

    /// Records an NVTX domain the program created (once each, bounded).
    pub fn add_nvtx_domain(&mut self, name: &str) {
        let name = shorten(&crate::redact::redact_text(name), MAX_NVTX_DOMAIN_CHARS);
        if self.nvtx_domains.len() < MAX_NVTX_DOMAINS && !self.nvtx_domains.contains(&name) {
            self.nvtx_domains.push(name);
        }
    }
}

impl Metadata {
    /// Records the arguments of one command line stored one per entry (`(path, value)`, in
    /// order; `program` the executable when stored apart), redacted as the line they form:
    /// the value after `--password` is its own entry (see [`crate::redact::redact_argv`]).
    pub fn add_extra_argv(&mut self, program: &str, args: &[(String, String)]) {
        let values: Vec<&str> = args.iter().map(|(_, v)| v.as_str()).collect();
        let redacted = crate::redact::redact_argv(program, &values);
        for ((path, value), kept) in args.iter().zip(redacted) {
            if kept == value.as_str() {
                self.add_extra(path, value);
            } else {
                self.add_extra(path, &kept);
                let path = redact_text(path).into_owned();
                if !self.redacted.contains(&path) {
                    self.redacted.push(path);
                }
            }
        }
    }

    /// Records a free-form entry, redacting secret-looking values and shortening long ones.
    pub fn add_extra(&mut self, path: &str, value: &str) {
        if self.extra.len() >= MAX_EXTRA_ENTRIES && !self.extra.contains_key(path) {
            self.extra_dropped += 1;
            return;
        }
        let path = redact_text(path).into_owned();
        let kept = if is_secret_path(&path) && !value.is_empty() && value != "null" {
            REDACTED.to_string()
        } else {
            redact_text(value).into_owned()
        };
        if kept != value {
            self.redacted.push(path.clone());
        }
        self.extra
            .insert(path, shorten(&kept, MAX_EXTRA_VALUE_CHARS));
    }

    /// Redacts the fields that importers fill directly (names, versions, flags); free-form
    /// entries were redacted by [`Metadata::add_extra`].
    pub fn redact(&mut self) {
        let mut found = Vec::new();
        let clean = |found: &mut Vec<String>, label: &str, text: &mut String| {
            if let Cow::Owned(r) = redact_text(text) {
                *text = r;
                found.push(label.to_string());
            }
        };
        if let Some(t) = self.trace_name.as_mut() {
            clean(&mut found, "traceName", t);
        }
        if let Some(t) = self.display_time_unit.as_mut() {
            clean(&mut found, "displayTimeUnit", t);
        }
        for map in [&mut self.versions, &mut self.profiler_flags] {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                let k = redact_text(&k).into_owned();
                if is_secret_key(&k) && !v.is_empty() {
                    v = REDACTED.into();
                    found.push(k.clone());
                } else {
                    clean(&mut found, &k, &mut v);
                }
                map.insert(k, v);
            }
        }
        for d in &mut self.device_properties {
            clean(&mut found, "deviceProperties.name", &mut d.name);
        }
        if let Some(b) = self.distributed.as_mut().and_then(|d| d.backend.as_mut()) {
            clean(&mut found, "distributedInfo.backend", b);
        }
        self.redacted.extend(found);
    }
}

/// Shortens `text` to at most `max_chars` characters, marking the cut with `…`.
#[must_use]
pub fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtrees_under_secret_keys_and_secret_values_are_redacted() {
        let mut m = Metadata::default();
        m.add_extra("metadata.env.HF_TOKEN.value", "abc");
        m.add_extra("metadata.env[0]", "WANDB_API_KEY=xyz");
        m.add_extra("metadata.env.PATH", "/usr/bin:/bin");
        m.add_extra("metadata.env.TOKENIZERS_PARALLELISM", "false");
        assert_eq!(m.extra["metadata.env.HF_TOKEN.value"], "<redacted>");
        assert_eq!(m.extra["metadata.env[0]"], "WANDB_API_KEY=<redacted>");
        assert_eq!(m.extra["metadata.env.PATH"], "/usr/bin:/bin");
        assert_eq!(m.extra["metadata.env.TOKENIZERS_PARALLELISM"], "false");
        m.versions.insert(
            "tokenizer_version".into(),
            "hf_abcdefghijklmnopqrstuvwx".into(),
        );
        m.trace_name = Some("run?token=abc".into());
        m.redact();
        assert_eq!(m.versions["tokenizer_version"], "<redacted>");
        assert_eq!(m.trace_name.as_deref(), Some("run?token=<redacted>"));
        assert_eq!(m.redacted.len(), 4);
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
