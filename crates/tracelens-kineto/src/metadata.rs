//! Kineto's top-level keys: the metadata a PyTorch profiler trace carries beside its events
//! (schema version, base time, device properties, distributed info, versions, profiler
//! flags), filed into the model's [`Metadata`]; anything else is flattened, redacting as it
//! goes.

use tracelens_chrome_json::json::Value;
use tracelens_model::{DeviceProperties, DistributedInfo, Metadata};

/// Most `deviceProperties` entries kept.
const MAX_DEVICES: usize = 1024;

const VERSION_KEYS: [&str; 8] = [
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "roctracer_version",
    "hip_runtime_version",
    "hip_driver_version",
    "pytorch_version",
    "torch_version",
];
const PROFILER_FLAGS: [&str; 6] = [
    "with_stack",
    "record_shapes",
    "profile_memory",
    "with_flops",
    "with_modules",
    "experimental_config",
];

/// Files one top-level entry into the metadata.
pub(crate) fn read_top_level(key: &str, value: &Value, meta: &mut Metadata) {
    match key {
        "schemaVersion" => meta.schema_version = value.as_i64(),
        "baseTimeNanoseconds" => meta.base_time_ns = value.as_i64(),
        "displayTimeUnit" => meta.display_time_unit = value.as_text(),
        "traceName" => meta.trace_name = value.as_text(),
        "deviceProperties" => {
            if let Value::Array(items) = value {
                meta.device_properties = items
                    .iter()
                    .take(MAX_DEVICES)
                    .map(device_properties)
                    .collect();
            }
        }
        "distributedInfo" => {
            meta.distributed = Some(DistributedInfo {
                backend: value.get("backend").and_then(Value::as_text),
                rank: value.get("rank").and_then(Value::as_i64),
                world_size: value.get("world_size").and_then(Value::as_i64),
            });
            flatten(key, value, meta);
        }
        k if VERSION_KEYS.contains(&k) || k.ends_with("_version") => {
            if let Some(v) = value.as_text() {
                meta.versions.insert(k.to_string(), v);
            } else {
                flatten(key, value, meta);
            }
        }
        k if PROFILER_FLAGS.contains(&k) => {
            if let Some(v) = value.as_text() {
                meta.profiler_flags.insert(k.to_string(), v);
            }
        }
        _ => flatten(key, value, meta),
    }
}

fn device_properties(v: &Value) -> DeviceProperties {
    DeviceProperties {
        id: v.get("id").and_then(Value::as_i64).unwrap_or(0),
        name: v.get("name").and_then(Value::as_text).unwrap_or_default(),
        total_global_mem_bytes: v
            .get("totalGlobalMem")
            .and_then(Value::as_i64)
            .and_then(|b| u64::try_from(b).ok()),
        compute_major: v.get("computeMajor").and_then(Value::as_i64),
        compute_minor: v.get("computeMinor").and_then(Value::as_i64),
        num_sms: v.get("numSms").and_then(Value::as_i64),
        warp_size: v.get("warpSize").and_then(Value::as_i64),
    }
}

/// Flattens a value to `a.b.c` entries (arrays as `a[0]`), redacting as it goes.
fn flatten(path: &str, value: &Value, meta: &mut Metadata) {
    match value {
        Value::Object(fields) => {
            for (k, v) in fields {
                flatten(&format!("{path}.{k}"), v, meta);
            }
        }
        Value::Array(items) => {
            if items
                .iter()
                .all(|i| !matches!(i, Value::Object(_) | Value::Array(_)))
            {
                let joined: Vec<String> = items
                    .iter()
                    .map(|i| i.as_text().unwrap_or_else(|| "null".into()))
                    .collect();
                meta.add_extra(path, &format!("[{}]", joined.join(", ")));
            } else {
                for (i, v) in items.iter().enumerate() {
                    flatten(&format!("{path}[{i}]"), v, meta);
                }
            }
        }
        Value::Null => meta.add_extra(path, "null"),
        other => meta.add_extra(path, &other.as_text().unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_filed_and_secrets_redacted() {
        let mut m = Metadata::default();
        let v = Value::parse(br#"{"env": {"HF_TOKEN": "hf_abc", "PATH": "/bin"}, "list": [1, 2]}"#);
        read_top_level("metadata", &v, &mut m);
        read_top_level("cuda_runtime_version", &Value::parse(b"12040"), &mut m);
        read_top_level("with_stack", &Value::parse(b"1"), &mut m);
        assert_eq!(m.extra["metadata.env.HF_TOKEN"], "<redacted>");
        assert_eq!(m.extra["metadata.env.PATH"], "/bin");
        assert_eq!(m.extra["metadata.list"], "[1, 2]");
        assert_eq!(m.versions["cuda_runtime_version"], "12040");
        assert_eq!(m.profiler_flags["with_stack"], "1");
    }
}
