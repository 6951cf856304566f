//! The AWS shared config files (`~/.aws/credentials`, `~/.aws/config`): the settings of one
//! profile, for what the environment leaves unset (object_store reads the environment only).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The keys of one profile, lower-cased (`aws_access_key_id`, `region`, `endpoint_url`, …),
/// credentials file first, then the config file for keys it lacks.
#[must_use]
pub fn aws_profile() -> BTreeMap<String, String> {
    let name = std::env::var("AWS_PROFILE")
        .or_else(|_| std::env::var("AWS_DEFAULT_PROFILE"))
        .unwrap_or_else(|_| "default".into());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(default)))
    };
    let mut keys = BTreeMap::new();
    if let Some(text) = file("AWS_SHARED_CREDENTIALS_FILE", "credentials").and_then(read_small) {
        keys = section(&text, &name);
    }
    if let Some(text) = file("AWS_CONFIG_FILE", "config").and_then(read_small) {
        // In the config file every profile but the default is `[profile NAME]`.
        let header = if name == "default" {
            name.clone()
        } else {
            format!("profile {name}")
        };
        for (k, v) in section(&text, &header) {
            keys.entry(k).or_insert(v);
        }
    }
    keys
}

/// A config file's text, when it is a readable file of at most 1 MiB.
fn read_small(path: PathBuf) -> Option<String> {
    let meta = std::fs::metadata(&path).ok()?;
    (meta.is_file() && meta.len() <= 1 << 20)
        .then(|| std::fs::read_to_string(&path).ok())
        .flatten()
}

/// The `key = value` lines of the INI section `[header]` (keys lower-cased, values trimmed).
fn section(text: &str, header: &str) -> BTreeMap<String, String> {
    let mut keys = BTreeMap::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.split_whitespace().collect::<Vec<_>>().join(" ") == header;
            continue;
        }
        if inside {
            if let Some((k, v)) = line.split_once('=') {
                keys.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::section;

    #[test]
    fn a_profile_section_is_read_and_others_are_not() {
        let text = "[default]\naws_access_key_id = A\n# note\n[profile ci]\nregion=eu-west-1\nAWS_SECRET_ACCESS_KEY = s = t\n";
        let d = section(text, "default");
        assert_eq!(d.get("aws_access_key_id").map(String::as_str), Some("A"));
        assert_eq!(d.len(), 1);
        let ci = section(text, "profile ci");
        assert_eq!(ci.get("region").map(String::as_str), Some("eu-west-1"));
        assert_eq!(
            ci.get("aws_secret_access_key").map(String::as_str),
            Some("s = t")
        );
    }
}
