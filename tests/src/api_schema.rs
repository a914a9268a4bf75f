//! Every JSON answer a test receives from meshlens is checked against the Swagger document's
//! schema for its operation and status (`host/swagger.json`, the document the binary serves),
//! so the document cannot drift from the response types: the schemas are closed
//! (`additionalProperties: false`) and list the fields always present as `required`.
//!
//! [`crate::server::request_within`] calls [`check`] on every GET answer with a JSON body
//! whose path is a documented operation (under `/api` or without it; paths below another web
//! root are not matched). Validation is the `jsonschema` crate's, draft 4 (Swagger 2.0's
//! schema dialect is a subset of it, plus `x-nullable`, translated here).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

use serde_json::{Value, json};

/// The document, its paths as segment templates, and compiled validators by (path, status).
struct Document {
    doc: Value,
    templates: Vec<(String, Vec<Option<String>>)>,
    validators: Mutex<HashMap<(String, String), Arc<jsonschema::Validator>>>,
}

fn document() -> &'static Document {
    static DOC: OnceLock<Document> = OnceLock::new();
    DOC.get_or_init(|| {
        let file = crate::server::workspace_root().join("host/swagger.json");
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        let doc: Value = serde_json::from_str(&text).expect("swagger.json is JSON");
        let templates = doc["paths"]
            .as_object()
            .expect("swagger paths")
            .keys()
            .map(|p| {
                let segs =
                    segments(p).map(|s| (!s.starts_with('{')).then(|| s.to_string())).collect();
                (p.clone(), segs)
            })
            .collect();
        Document { doc, templates, validators: Mutex::new(HashMap::new()) }
    })
}

/// The document's text as the tests read it (the binary embeds the same file).
pub fn document_text() -> String {
    document().doc.to_string()
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// The documented path template a request path is an instance of, if any. Like the
/// router, a template with more literal segments wins.
pub fn operation_path(request_path: &str) -> Option<&'static str> {
    let path = request_path.split('?').next().unwrap_or("");
    let path = match path.strip_prefix("/api") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => path,
    };
    let segs: Vec<&str> = segments(path).collect();
    document()
        .templates
        .iter()
        .filter(|(_, t)| {
            t.len() == segs.len()
                && t.iter().zip(&segs).all(|(t, s)| t.as_deref().is_none_or(|t| t == *s))
        })
        .max_by_key(|(_, t)| t.iter().filter(|s| s.is_some()).count())
        .map(|(p, _)| p.as_str())
}

/// Swagger 2.0's `x-nullable: true` as JSON Schema (`type` also allows `null`).
fn to_json_schema(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out: serde_json::Map<String, Value> =
                m.iter().map(|(k, v)| (k.clone(), to_json_schema(v))).collect();
            if out.remove("x-nullable") == Some(Value::Bool(true))
                && let Some(Value::String(t)) = out.get("type")
            {
                let t = t.clone();
                out.insert("type".into(), json!([t, "null"]));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(to_json_schema).collect()),
        other => other.clone(),
    }
}

fn validator(path: &str, status: u16) -> Result<Option<Arc<jsonschema::Validator>>, String> {
    let d = document();
    let responses = &d.doc["paths"][path]["get"]["responses"];
    let (key, response) = match responses.get(status.to_string()) {
        Some(r) => (status.to_string(), r),
        None => ("default".to_string(), &responses["default"]),
    };
    let Some(schema) = response.get("schema") else {
        return Ok(None);
    };
    let cache_key = (path.to_string(), key);
    if let Some(v) = d.validators.lock().unwrap().get(&cache_key) {
        return Ok(Some(v.clone()));
    }
    let mut root = to_json_schema(schema);
    root["definitions"] = to_json_schema(&d.doc["definitions"]);
    let v = jsonschema::draft4::new(&root).map_err(|e| format!("schema of {path}: {e}"))?;
    let v = Arc::new(v);
    d.validators.lock().unwrap().insert(cache_key, v.clone());
    Ok(Some(v))
}

/// Where `body`, answered with `status` at `request_path`, disagrees with the document
/// (empty when it agrees, or when the path is not a documented operation).
pub fn violations(request_path: &str, status: u16, body: &Value) -> Vec<String> {
    let Some(path) = operation_path(request_path) else { return Vec::new() };
    match validator(path, status) {
        Ok(Some(v)) => v
            .iter_errors(body)
            .map(|e| format!("{path} {status}: at {}: {e}", e.instance_path()))
            .collect(),
        // A status the document gives no body (204).
        Ok(None) => Vec::new(),
        Err(e) => vec![e],
    }
}

/// Panics, naming every disagreement, when a JSON answer does not match the document.
pub fn check(request_path: &str, status: u16, content_type: Option<&str>, body: &[u8]) {
    if !content_type.is_some_and(|c| c.starts_with("application/json")) {
        return;
    }
    if operation_path(request_path).is_none() {
        return;
    }
    let value: Value = serde_json::from_slice(body).unwrap_or_else(|e| {
        panic!(
            "{request_path}: JSON content type, body not JSON ({e}): {}",
            String::from_utf8_lossy(body)
        )
    });
    let errors = violations(request_path, status, &value);
    assert!(
        errors.is_empty(),
        "the answer to GET {request_path} ({status}) disagrees with host/swagger.json:\n{}\nbody: {}",
        errors.join("\n"),
        String::from_utf8_lossy(body).chars().take(2000).collect::<String>()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_paths_find_their_operation_with_or_without_api() {
        assert_eq!(operation_path("/api/status"), Some("/status"));
        assert_eq!(operation_path("/status?x=1"), Some("/status"));
        assert_eq!(operation_path("/api"), Some("/"));
        assert_eq!(operation_path("/api/namespaces/graph?namespaces=a"), Some("/namespaces/graph"));
        assert_eq!(
            operation_path("/api/namespaces/bookinfo/apps/reviews/health"),
            Some("/namespaces/{namespace}/apps/{app}/health")
        );
        assert_eq!(operation_path("/metrics"), None);
        assert_eq!(operation_path("/console/index.html"), None);
    }
}
