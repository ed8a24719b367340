//! A run's config (`runs/<run>/config.json`, beside its graph): the settings it was run with
//! (learning rate, seed, batch size, …) as one JSON object, so that runs can be grouped and
//! told apart by them. Optional; written whole (a temporary file renamed into place).

use super::error::{Result, StoreError};
use super::fs::StoreFs;
use super::{format, names};
use serde_json::{Map, Value};

/// The config file of a run, in its folder.
pub const CONFIG_FILE: &str = format::CONFIG_FILE;
/// The largest config file read.
pub const MAX_CONFIG: u64 = 1 << 20;

/// A run's settings: names to JSON values.
pub type Config = Map<String, Value>;

/// Where run `run`'s config is in a store.
pub fn path(run: &str) -> String {
    format!("{}/{CONFIG_FILE}", format::run_dir(run))
}

/// Run `run`'s config, `None` when it has none. A file over [`MAX_CONFIG`] or that is not a
/// JSON object is refused.
pub fn read<F: StoreFs + ?Sized>(fs: &F, run: &str) -> Result<Option<Config>> {
    names::run(run)?;
    let p = path(run);
    let len = match fs.len(&p) {
        Err(StoreError::NotFound { .. }) => return Ok(None),
        other => other?,
    };
    if len > MAX_CONFIG {
        return Err(StoreError::Refused {
            what: format!("{p} is {len} bytes, over {MAX_CONFIG}"),
        });
    }
    let bytes = fs.read_range(&p, 0, len)?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        _ => Err(StoreError::Refused {
            what: format!("{p} is not a JSON object"),
        }),
    }
}

/// The value of `field` in `config` as a group's name: a string as it is, anything else as its
/// JSON; a dotted name (`optim.lr`) reaches into nested objects when no key is the whole name.
/// `None` when the config does not have it (or it is `null`).
pub fn value_text(config: &Config, field: &str) -> Option<String> {
    let v = config.get(field).or_else(|| {
        let mut parts = field.split('.');
        let mut v = config.get(parts.next()?)?;
        for p in parts {
            v = v.as_object()?.get(p)?;
        }
        Some(v)
    })?;
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// `KEY=VALUE` as a config entry: the value as JSON when it is (`0.1`, `true`, `[1, 2]`), else as
/// a string (`adam`).
pub fn entry(text: &str) -> std::result::Result<(String, Value), String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("a config entry is KEY=VALUE, not {text:?}"))?;
    if k.is_empty() {
        return Err(format!("a config entry needs a name: {text:?}"));
    }
    let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
    Ok((k.to_string(), value))
}

/// Write run `run`'s config into the store at `root` (the store and the run's folder created
/// as needed), replacing the one it had: written to a temporary file, synced, renamed. On
/// object storage (`root` an `s3://…` URL) it is one put.
#[cfg(not(target_arch = "wasm32"))]
pub fn write(root: &std::path::Path, run: &str, config: &Config) -> Result<()> {
    use std::io::Write;
    names::run(run)?;
    if let Some(url) = root.to_str().filter(|s| super::object::is_url(s)) {
        let bytes = serde_json::to_vec(config).unwrap_or_default();
        return super::object::put_run_file(url, run, format::CONFIG_FILE, bytes);
    }
    super::writer::ensure_store(root)?;
    let dir = root.join(format::run_dir(run));
    let target = root.join(path(run));
    let io = |op: &'static str| {
        let name = target.display().to_string();
        move |e: std::io::Error| StoreError::io(name, op, e)
    };
    std::fs::create_dir_all(&dir).map_err(io("create the run folder"))?;
    let tmp = dir.join(format!("{CONFIG_FILE}.{}.tmp", std::process::id()));
    let text = serde_json::to_vec_pretty(config).unwrap_or_default();
    let mut f = std::fs::File::create(&tmp).map_err(io("create"))?;
    f.write_all(&text).map_err(io("write"))?;
    f.sync_all().map_err(io("sync"))?;
    std::fs::rename(&tmp, &target).map_err(io("rename"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_name_groups_and_entries_parse_as_json_or_text() {
        let c: Config = serde_json::from_value(json!({
            "lr": 0.1, "optim": {"name": "adam", "beta": 0.9}, "tag": "a", "none": null, "a.b": 1
        }))
        .unwrap();
        assert_eq!(value_text(&c, "lr").as_deref(), Some("0.1"));
        assert_eq!(value_text(&c, "tag").as_deref(), Some("a"));
        assert_eq!(value_text(&c, "optim.name").as_deref(), Some("adam"));
        assert_eq!(value_text(&c, "a.b").as_deref(), Some("1"));
        assert_eq!(value_text(&c, "none"), None);
        assert_eq!(value_text(&c, "missing"), None);
        assert_eq!(value_text(&c, "optim.missing"), None);
        assert_eq!(entry("lr=0.01").unwrap(), ("lr".into(), json!(0.01)));
        assert_eq!(entry("opt=adam").unwrap(), ("opt".into(), json!("adam")));
        assert_eq!(entry("x==1").unwrap(), ("x".into(), json!("=1")));
        assert!(entry("novalue").is_err());
        assert!(entry("=1").is_err());
    }
}
