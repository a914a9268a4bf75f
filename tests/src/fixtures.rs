//! Cluster fixtures for the loopback Kubernetes API server.

use std::path::PathBuf;

use serde_json::Value;

/// Parses multi-document YAML fixture files into objects (a `kind: List` is flattened).
pub fn read_fixtures(paths: &[PathBuf]) -> Vec<Value> {
    let mut out = Vec::new();
    for p in paths {
        let mut files: Vec<PathBuf> = if p.is_dir() {
            std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|f| f.extension().is_some_and(|x| x == "yaml"))
                .collect()
        } else {
            vec![p.clone()]
        };
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            for d in docs.into_iter().filter(|d| !d.is_null()) {
                if d["kind"] == "List" {
                    out.extend(d["items"].as_array().cloned().unwrap_or_default());
                } else {
                    out.push(d);
                }
            }
        }
    }
    out
}
