//! The export's metadata: product and schema versions, capture settings (secrets redacted
//! later with all metadata), the session start, and device properties.

use crate::db::{int, text, Db};
use tracelens_model::{DeviceProperties, Metadata};

/// Files the export's metadata into `meta`; returns the `TARGET_INFO_GPU` rows read, when the
/// export has that table.
pub(super) fn read_metadata(db: &Db, meta: &mut Metadata) -> rusqlite::Result<Option<u64>> {
    let mut gpu_rows = None;
    for (name, value) in db.export_meta() {
        match name.as_str() {
            "EXPORT_PRODUCT_VERSION" => {
                meta.versions.insert("nsys_product_version".into(), value);
            }
            "EXPORT_SCHEMA_VERSION" => {
                meta.versions
                    .insert("nsys_export_schema_version".into(), value);
            }
            _ => meta.add_extra(&format!("export.{name}"), &value),
        }
    }
    // The capture settings include the profiled process's whole environment: only the
    // variables that matter for performance are kept (and redacted); the rest are counted.
    let mut env_not_kept = 0_u64;
    // `PROCESS_N:ARGUMENT_K` rows: one command line, one argument per row, redacted together.
    let mut argv: std::collections::BTreeMap<&str, Vec<(u64, String, String)>> =
        std::collections::BTreeMap::new();
    let mut commands: std::collections::BTreeMap<String, String> = Default::default();
    let capture = db.name_values("META_DATA_CAPTURE");
    for (name, value) in &capture {
        if let Some((process, k)) = name.split_once(":ARGUMENT_") {
            if let Ok(k) = k.parse::<u64>() {
                let path = format!("capture.{name}");
                argv.entry(process)
                    .or_default()
                    .push((k, path, value.clone()));
                continue;
            }
        }
        if let Some(process) = name.strip_suffix(":COMMAND") {
            commands.insert(process.to_string(), value.clone());
        }
        if name.ends_with("ENVIRONMENT_VARIABLE") {
            let (key, val) = value.split_once('=').unwrap_or((value.as_str(), ""));
            if tracelens_model::redact::is_performance_env(key) {
                meta.add_extra(&format!("capture.env.{key}"), val);
            } else {
                env_not_kept += 1;
            }
        } else {
            meta.add_extra(&format!("capture.{name}"), value);
        }
    }
    for (process, mut args) in argv {
        args.sort_by_key(|(k, _, _)| *k);
        let args: Vec<(String, String)> = args.into_iter().map(|(_, p, v)| (p, v)).collect();
        let program = commands.get(process).map_or("", String::as_str);
        meta.add_extra_argv(program, &args);
    }
    if env_not_kept > 0 {
        meta.add_extra(
            "capture.env_not_kept",
            &format!("{env_not_kept} variables that do not bear on performance"),
        );
    }
    if db.has("TARGET_INFO_SESSION_START_TIME") {
        let utc = db.col("TARGET_INFO_SESSION_START_TIME", "utcEpochNs");
        if let Ok(v) = db.conn.query_row(
            &format!("SELECT {utc} FROM TARGET_INFO_SESSION_START_TIME"),
            [],
            |r| r.get::<_, Option<i64>>(0),
        ) {
            meta.base_time_ns = v;
        }
    }
    // The target's operating system and kernel release (WSL2 shows in the release), and
    // nothing else of the table: it also holds the host name and the whole environment.
    if db.has("TARGET_INFO_SYSTEM_ENV") {
        let t = "TARGET_INFO_SYSTEM_ENV";
        let sql = format!(
            "SELECT {}, {} FROM {t} WHERE {} IN ('OsDescription', 'SoftwareReleaseVersion') LIMIT 4",
            db.col(t, "name"),
            db.col(t, "value"),
            db.col(t, "name")
        );
        if let Ok(mut stmt) = db.conn.prepare(&sql) {
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            });
            for (name, value) in rows.into_iter().flatten().flatten() {
                let value: String = value.unwrap_or_default().chars().take(128).collect();
                match name.as_str() {
                    "OsDescription" => meta.add_extra("system.os", &value),
                    _ => meta.add_extra("system.kernel_release", &value),
                }
            }
        }
    }
    if db.has("TARGET_INFO_GPU") {
        let t = "TARGET_INFO_GPU";
        let sql = format!(
            "SELECT {}, {}, {}, {}, {}, {}, {} FROM TARGET_INFO_GPU",
            db.col(t, "id"),
            db.col(t, "name"),
            db.col(t, "totalMemory"),
            db.col(t, "smCount"),
            db.col(t, "computeMajor"),
            db.col(t, "computeMinor"),
            db.col(t, "threadsPerWarp")
        );
        let mut props = Vec::new();
        let mut stmt = db.conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        let mut count = 0;
        while let Some(r) = rows.next()? {
            count += 1;
            props.push(DeviceProperties {
                id: int(r, 0).unwrap_or(0),
                name: text(r, 1).unwrap_or_default().to_string(),
                total_global_mem_bytes: int(r, 2).and_then(|v| u64::try_from(v).ok()),
                num_sms: int(r, 3),
                compute_major: int(r, 4),
                compute_minor: int(r, 5),
                warp_size: int(r, 6),
            });
        }
        gpu_rows = Some(count);
        props.sort_by_key(|p| p.id);
        props.dedup_by_key(|p| p.id);
        meta.device_properties = props;
    }
    Ok(gpu_rows)
}
