//! The snapshot source: Kubernetes manifests on disk (multi-document YAML or JSON,
//! `kind: List` and typed lists such as `PodList` included).

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use k8s_openapi::{
    api::autoscaling::{v1 as hpa1, v2 as hpa2},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    ClusterError,
    mesh::{MeshKind, MeshObject},
    raw::{Autoscaler, RawObjects},
    trim::{Trim, trim_meta},
};

/// Loads every manifest under `paths`. A path that does not exist is a config error; a bad
/// document is skipped and reported as a warning naming the file and the document index
/// (1-based), and everything else still loads.
pub fn load(paths: &[PathBuf]) -> Result<(RawObjects, Vec<String>), ClusterError> {
    let mut files = Vec::new();
    for p in paths {
        if !p.exists() {
            return Err(ClusterError::BadConfig(format!(
                "cluster.snapshot: {} does not exist",
                p.display()
            )));
        }
        collect_files(p, &mut files);
    }
    let mut raw = RawObjects::default();
    let mut warnings = Vec::new();
    for f in files {
        match std::fs::read_to_string(&f) {
            Ok(text) => load_text(&text, &f.display().to_string(), &mut raw, &mut warnings),
            Err(e) => warnings.push(format!("{}: cannot read: {e}", f.display())),
        }
    }
    for w in &warnings {
        tracing::warn!("snapshot: {w}");
    }
    Ok((raw, warnings))
}

fn collect_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(p) {
            Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(e) => {
                tracing::warn!("snapshot: cannot list {}: {e}", p.display());
                return;
            }
        };
        entries.sort();
        for e in entries {
            let manifest = e
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| matches!(x, "yaml" | "yml" | "json"));
            if e.is_dir() || manifest {
                collect_files(&e, out);
            }
        }
    } else {
        out.push(p.to_path_buf());
    }
}

/// Splits a YAML stream at `---` lines; each piece keeps its position for messages.
fn split_documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        let marker =
            line.starts_with("---") && line[3..].chars().next().is_none_or(char::is_whitespace);
        if marker {
            docs.push(line[3..].to_string());
            if let Some(d) = docs.last_mut() {
                d.push('\n')
            }
        } else if line.trim_end() == "..." {
            // End-of-document marker: the next `---` starts a new one.
        } else if let Some(d) = docs.last_mut() {
            d.push_str(line);
            d.push('\n');
        }
    }
    // A stream that opens with `---` leaves an empty first piece: not a document.
    if docs.len() > 1 && is_blank(&docs[0]) {
        docs.remove(0);
    }
    docs
}

fn is_blank(doc: &str) -> bool {
    doc.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    })
}

/// Loads one file's text (`origin` names it in warnings).
pub fn load_text(text: &str, origin: &str, raw: &mut RawObjects, warnings: &mut Vec<String>) {
    for (i, doc) in split_documents(text).into_iter().enumerate() {
        if is_blank(&doc) {
            continue;
        }
        let at = format!("{origin}: document {}", i + 1);
        let value: Value = match serde_saphyr::from_str(&doc) {
            Ok(v) => v,
            Err(e) => {
                let first = e.to_string();
                let first = first.lines().next().unwrap_or("").to_string();
                warnings.push(format!("{at}: invalid YAML: {first}"));
                continue;
            }
        };
        if value.is_null() {
            continue;
        }
        ingest_document(value, &at, raw, warnings);
    }
}

fn ingest_document(value: Value, at: &str, raw: &mut RawObjects, warnings: &mut Vec<String>) {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    if kind.ends_with("List") && value.get("items").is_some_and(Value::is_array) {
        let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string();
        let item_kind = kind.strip_suffix("List").unwrap_or("").to_string();
        let items = match value {
            Value::Object(mut m) => match m.remove("items") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        for (j, mut item) in items.into_iter().enumerate() {
            // Real API servers leave apiVersion/kind off the items of a typed list.
            if let Value::Object(m) = &mut item
                && !item_kind.is_empty()
            {
                m.entry("kind").or_insert_with(|| Value::String(item_kind.clone()));
                m.entry("apiVersion").or_insert_with(|| Value::String(api_version.clone()));
            }
            if let Err(e) = ingest(item, raw) {
                warnings.push(format!("{at}, item {}: {e}", j + 1));
            }
        }
    } else if let Err(e) = ingest(value, raw) {
        warnings.push(format!("{at}: {e}"));
    }
}

fn typed<T: DeserializeOwned>(mut v: Value) -> Result<T, String> {
    // Old group versions (extensions/v1beta1, apps/v1beta2, ...) carry the same fields we
    // read; dropping the type fields lets the current types accept them.
    if let Value::Object(m) = &mut v {
        m.remove("apiVersion");
        m.remove("kind");
    }
    serde_json::from_value(v).map_err(|e| format!("cannot read: {e}"))
}

/// A typed object as the model keeps it: read, then trimmed like the `kube` source's.
fn kept<T: DeserializeOwned + Trim>(v: Value) -> Result<Arc<T>, String> {
    let mut o: T = typed(v)?;
    o.trim();
    Ok(Arc::new(o))
}

/// Adds one object (with `apiVersion` and `kind`) to `raw`.
pub fn ingest(mut v: Value, raw: &mut RawObjects) -> Result<(), String> {
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string();
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    if kind.is_empty() {
        return Err("no kind".into());
    }
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, ver)) => (g.to_string(), ver.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let name_ok =
        v.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    if !name_ok {
        return Err(format!("{kind} without metadata.name"));
    }
    if kind != "Namespace"
        && let Some(Value::Object(meta)) = v.get_mut("metadata")
    {
        // What `kubectl apply` does with a manifest that names no namespace.
        meta.entry("namespace").or_insert_with(|| Value::String("default".into()));
    }
    match (group.as_str(), kind.as_str()) {
        ("", "Namespace") => raw.namespaces.push(kept(v)?),
        ("", "Pod") => raw.pods.push(kept(v)?),
        ("", "Service") => raw.services.push(kept(v)?),
        ("", "ReplicationController") => raw.replication_controllers.push(kept(v)?),
        ("apps" | "extensions", "Deployment") => raw.deployments.push(kept(v)?),
        ("apps" | "extensions", "ReplicaSet") => raw.replica_sets.push(kept(v)?),
        ("apps", "StatefulSet") => raw.stateful_sets.push(kept(v)?),
        ("apps" | "extensions", "DaemonSet") => raw.daemon_sets.push(kept(v)?),
        ("batch", "Job") => raw.jobs.push(kept(v)?),
        ("batch", "CronJob") => raw.cron_jobs.push(kept(v)?),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            let a = if version == "v1" {
                Autoscaler::from_v1(&typed::<hpa1::HorizontalPodAutoscaler>(v)?)
            } else {
                Autoscaler::from_v2(&typed::<hpa2::HorizontalPodAutoscaler>(v)?)
            };
            raw.autoscalers.push(a);
        }
        (g, k) => match MeshKind::from_group_kind(g, k) {
            Some(mk) => raw.mesh.push(Arc::new(mesh_object(mk, v)?)),
            None => return Err(format!("unknown kind {k} ({api_version})")),
        },
    }
    Ok(())
}

/// A mesh object from its JSON (metadata trimmed, only `spec` kept).
pub fn mesh_object(kind: MeshKind, mut v: Value) -> Result<MeshObject, String> {
    let meta = v.get_mut("metadata").map(Value::take).unwrap_or(Value::Null);
    let mut metadata: ObjectMeta =
        serde_json::from_value(meta).map_err(|e| format!("bad metadata: {e}"))?;
    trim_meta(&mut metadata);
    let spec = match v.get_mut("spec").map(Value::take) {
        Some(s @ Value::Object(_)) => s,
        _ => Value::Object(Default::default()),
    };
    Ok(MeshObject { kind, metadata, spec })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_split_at_markers_only() {
        let docs = split_documents("---\na: 1\n--- \nb: '---'\n...\n---\n# only a comment\n");
        assert_eq!(docs.len(), 3);
        assert!(docs[1].contains("'---'"));
        assert!(is_blank(&docs[2]));
    }

    #[test]
    fn bad_documents_are_reported_and_the_rest_loads() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkind: [unclosed\n---\n\
                    apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: Service\nmetadata: {namespace: a}\n";
        let mut raw = RawObjects::default();
        let mut w = Vec::new();
        load_text(text, "f.yaml", &mut raw, &mut w);
        assert_eq!(raw.namespaces.len(), 1);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].starts_with("f.yaml: document 2: invalid YAML"), "{w:?}");
        assert!(w[1].starts_with("f.yaml: document 3: unknown kind ConfigMap"), "{w:?}");
        assert!(w[2].starts_with("f.yaml: document 4: Service without metadata.name"), "{w:?}");
    }

    #[test]
    fn typed_lists_give_their_items_a_kind() {
        let text = r#"{"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "p", "namespace": "n"}}]}"#;
        let mut raw = RawObjects::default();
        let mut w = Vec::new();
        load_text(text, "pods.json", &mut raw, &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(raw.pods.len(), 1);
    }
}
