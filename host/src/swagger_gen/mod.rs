//! The generator of `host/swagger.json`, the Swagger 2.0 document of the whole API.
//!
//! The document is kept in the repo and served at /api/swagger.json; `api::swagger`'s test
//! checks that every routed operation is documented and every documented path is routed, and
//! the integration tests validate every JSON answer they receive against the schema of its
//! operation and status (tests/src/api_schema.rs). Schemas are closed ([`obj`]), so a response
//! field added or removed on one side only fails the tests.
//!
//! Edit `ops.rs` (operations and parameters) or `defs.rs` (definitions), then write the file:
//!
//! ```sh
//! MESHLENS_WRITE_SWAGGER=1 cargo test -p meshlens --lib swagger_gen
//! ```
//!
//! Without the variable the test fails when the file differs from what this generates. The
//! layout follows the former `scripts/gen_swagger.py` helper for helper (its output is
//! byte-identical), and objects keep their keys in the order written here.

mod defs;
mod ops;
mod params;

use std::fmt::Write as _;

/// A JSON value whose objects keep their keys in insertion order.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    B(bool),
    I(i64),
    S(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl From<&str> for J {
    fn from(s: &str) -> J {
        J::S(s.into())
    }
}
impl From<String> for J {
    fn from(s: String) -> J {
        J::S(s)
    }
}
impl From<bool> for J {
    fn from(b: bool) -> J {
        J::B(b)
    }
}
impl From<Vec<J>> for J {
    fn from(v: Vec<J>) -> J {
        J::Arr(v)
    }
}

/// An object from `(key, value)` pairs, in order.
pub fn o<const N: usize>(pairs: [(&str, J); N]) -> J {
    J::Obj(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

impl J {
    /// Python's `{**self, **other}`: a key already present keeps its place and takes the
    /// new value; a new key goes last.
    pub fn merge(mut self, other: J) -> J {
        if let (J::Obj(a), J::Obj(b)) = (&mut self, other) {
            for (k, v) in b {
                match a.iter_mut().find(|(key, _)| *key == k) {
                    Some(slot) => slot.1 = v,
                    None => a.push((k, v)),
                }
            }
        }
        self
    }

    /// Sets one key (in place if present, else last).
    pub fn with(self, key: &str, value: impl Into<J>) -> J {
        self.merge(J::Obj(vec![(key.to_string(), value.into())]))
    }
}

pub fn r#ref(name: &str) -> J {
    o([("$ref", format!("#/definitions/{name}").into())])
}

pub fn arr(items: J) -> J {
    o([("type", "array".into()), ("items", items)])
}

pub fn mp(values: J) -> J {
    o([("type", "object".into()), ("additionalProperties", values)])
}

pub fn s() -> J {
    o([("type", "string".into())])
}
pub fn i() -> J {
    o([("type", "integer".into()), ("format", "int64".into())])
}
pub fn n() -> J {
    o([("type", "number".into()), ("format", "double".into())])
}
pub fn b() -> J {
    o([("type", "boolean".into())])
}

/// A closed object: every property not in `optional` is always present, and no other
/// property may appear (the test suite validates every answer it gets against this document,
/// so a field added on either side alone fails a test). `open_fields` is the schema of the
/// extra properties an object admits (appenders' own graph fields).
pub fn obj_with<const P: usize>(
    props: [(&str, J); P],
    optional: &[&str],
    open_fields: Option<J>,
) -> J {
    obj_v(props.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), optional, open_fields)
}

/// [`obj_with`] over properties gathered at run time.
pub fn obj_v(props: Vec<(String, J)>, optional: &[&str], open_fields: Option<J>) -> J {
    let required: Vec<J> = props
        .iter()
        .filter(|(k, _)| !optional.contains(&k.as_str()))
        .map(|(k, _)| J::from(k.as_str()))
        .collect();
    let mut out = o([("type", "object".into()), ("properties", J::Obj(props))]);
    if !required.is_empty() {
        out = out.with("required", required);
    }
    out.with("additionalProperties", open_fields.unwrap_or(J::B(false)))
}

/// [`obj_with`] with every property required and no others.
pub fn obj<const P: usize>(props: [(&str, J); P]) -> J {
    obj_with(props, &[], None)
}

pub fn nullable(schema: J) -> J {
    schema.with("x-nullable", true)
}

/// Python's `json.dumps(doc, indent=2)` (ASCII only: other characters as `\uXXXX`).
pub fn to_json(v: &J) -> String {
    let mut out = String::new();
    write_json(v, 0, &mut out);
    out
}

fn write_json(v: &J, depth: usize, out: &mut String) {
    let pad = |d: usize| "  ".repeat(d);
    match v {
        J::Null => out.push_str("null"),
        J::B(b) => out.push_str(if *b { "true" } else { "false" }),
        J::I(i) => {
            let _ = write!(out, "{i}");
        }
        J::S(s) => write_str(s, out),
        J::Arr(items) if items.is_empty() => out.push_str("[]"),
        J::Obj(pairs) if pairs.is_empty() => out.push_str("{}"),
        J::Arr(items) => {
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                out.push_str(if k == 0 { "\n" } else { ",\n" });
                out.push_str(&pad(depth + 1));
                write_json(item, depth + 1, out);
            }
            out.push('\n');
            out.push_str(&pad(depth));
            out.push(']');
        }
        J::Obj(pairs) => {
            out.push('{');
            for (k, (key, value)) in pairs.iter().enumerate() {
                out.push_str(if k == 0 { "\n" } else { ",\n" });
                out.push_str(&pad(depth + 1));
                write_str(key, out);
                out.push_str(": ");
                write_json(value, depth + 1, out);
            }
            out.push('\n');
            out.push_str(&pad(depth));
            out.push('}');
        }
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The whole document, as the file holds it (with its final newline).
pub fn document() -> String {
    let mut paths = Vec::new();
    for op in ops::ops() {
        let mut codes = op.codes.clone();
        let mut params = op.params.clone();
        if op.path.contains("{namespace}") || op.id == "graphNamespaces" {
            codes.push(403);
        }
        // Every namespace-scoped operation reads one cluster (router.rs); a node graph's
        // `clusterName` picks its node's cluster, the graph still spans every cluster.
        if op.path.contains("{namespace}") {
            let param = if op.tag == "graph" {
                params::node_graph_cluster_name()
            } else {
                params::cluster_name()
            };
            params.push(param);
            codes.extend([404, 503]);
        }
        codes.sort_unstable();
        codes.dedup();
        let mut get = o([
            ("operationId", op.id.into()),
            ("tags", vec![J::from(op.tag)].into()),
            ("summary", op.summary.as_str().into()),
            ("produces", vec![J::from("application/json")].into()),
            ("parameters", J::Arr(params)),
            ("responses", ops::responses(op.schema.clone(), &codes, op.extra.clone(), op.id)),
        ]);
        let security = |names: &[&str]| -> J {
            J::Arr(names.iter().map(|n| o([(n, J::Arr(Vec::new()))])).collect())
        };
        if !["Root", "getStatus", "swagger", "GetToken", "healthz", "ready"].contains(&op.id) {
            get = get.with("security", security(&["bearer", "basic"]));
        }
        if op.id == "GetToken" {
            get = get.with("security", security(&["basic", "kubernetes", "proxyHeader"]));
        }
        paths.push((op.path.to_string(), o([("get", get)])));
    }
    let api_key = |name: &str, description: &str| {
        o([
            ("type", "apiKey".into()),
            ("name", name.into()),
            ("in", "header".into()),
            ("description", description.into()),
        ])
    };
    let doc = o([
        ("swagger", "2.0".into()),
        (
            "info",
            o([
                ("title", "meshlens".into()),
                ("description", "Observability service for a service mesh.".into()),
                ("version", "0.1.0".into()),
            ]),
        ),
        ("basePath", "/api".into()),
        ("schemes", vec![J::from("http")].into()),
        ("consumes", vec![J::from("application/json")].into()),
        ("produces", vec![J::from("application/json")].into()),
        (
            "securityDefinitions",
            o([
                (
                    "basic",
                    o([("type", "basic".into()), ("description", "user and password".into())]),
                ),
                (
                    "bearer",
                    api_key(
                        "Authorization",
                        "Bearer <token from GET /token>; with strategy token also Bearer <Kubernetes token>",
                    ),
                ),
                (
                    "kubernetes",
                    api_key(
                        "Authorization",
                        "strategy token: Bearer <Kubernetes token>, exchanged at GET /token",
                    ),
                ),
                (
                    "proxyHeader",
                    api_key(
                        "X-Forwarded-Access-Token",
                        "strategy header: the Kubernetes token set by the authenticating proxy \
                         (header name from auth.header_name)",
                    ),
                ),
            ]),
        ),
        ("paths", J::Obj(paths)),
        ("definitions", defs::defs()),
    ]);
    let mut text = to_json(&doc);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `host/swagger.json` is what [`document`] writes; `MESHLENS_WRITE_SWAGGER=1` writes it.
    #[test]
    fn swagger_json_is_generated() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("swagger.json");
        let generated = document();
        if std::env::var_os("MESHLENS_WRITE_SWAGGER").is_some_and(|v| v == "1") {
            std::fs::write(&path, &generated).expect("write host/swagger.json");
            return;
        }
        let kept = std::fs::read_to_string(&path).expect("read host/swagger.json");
        if kept != generated {
            let line = kept.lines().zip(generated.lines()).position(|(a, b)| a != b);
            panic!(
                "host/swagger.json differs from its generator (host/src/swagger_gen/) from line {}: \
                 run `MESHLENS_WRITE_SWAGGER=1 cargo test -p meshlens --lib swagger_gen`",
                line.map_or(kept.lines().count().min(generated.lines().count()), |l| l + 1)
            );
        }
    }

    #[test]
    fn json_text_is_pythons() {
        let v = o([
            ("a", J::Arr(vec![J::I(1), J::Null])),
            ("b", J::Obj(Vec::new())),
            ("c", "é\"\n".into()),
        ]);
        assert_eq!(
            to_json(&v),
            "{\n  \"a\": [\n    1,\n    null\n  ],\n  \"b\": {},\n  \"c\": \"\\u00e9\\\"\\n\"\n}"
        );
        assert_eq!(
            nullable(s()).merge(o([("type", "integer".into())])),
            o([("type", "integer".into()), ("x-nullable", true.into())])
        );
    }
}
