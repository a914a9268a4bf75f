use super::*;

const SHIPPED: &str = include_str!("../../../config/meshlens.toml");

fn leaves(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
    match v.as_object() {
        Some(map) if !map.is_empty() => {
            for (k, child) in map {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                leaves(&key, child, out);
            }
        }
        _ => out.push((prefix.to_string(), v.clone())),
    }
}

#[test]
fn the_shipped_file_lists_every_key_with_its_default() {
    let defaults = serde_json::to_value(Config::default()).expect("defaults serialise");
    let mut keys = Vec::new();
    leaves("", &defaults, &mut keys);
    let shipped: Config = Figment::from(Serialized::defaults(Config::default()))
        .merge(Toml::string(SHIPPED))
        .extract()
        .expect("config/meshlens.toml parses");
    let shipped = serde_json::to_value(shipped).expect("serialise");
    for (key, default) in keys {
        let (section, leaf) = key.rsplit_once('.').unwrap_or(("", key.as_str()));
        if section == "appenders" || key == "appenders" {
            continue;
        }
        let header = format!("[{section}]");
        let start = SHIPPED.find(&header).unwrap_or_else(|| panic!("section {header} missing"));
        let body = &SHIPPED[start + header.len()..];
        let body = &body[..body.find("\n[").unwrap_or(body.len())];
        let listed = body.lines().any(|l| {
            let l = l.trim_start_matches('#').trim_start();
            l.starts_with(leaf) && l[leaf.len()..].trim_start().starts_with('=')
        });
        assert!(listed, "`{key}` is not listed in config/meshlens.toml");
        let pointer = format!("/{}", key.replace('.', "/"));
        if !default.is_null() {
            assert_eq!(
                shipped.pointer(&pointer),
                Some(&default),
                "`{key}`: shipped value differs from the default"
            );
        }
    }
}
