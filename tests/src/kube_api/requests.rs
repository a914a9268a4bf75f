//! Answering one request: discovery, get, list (selectors, `limit`/`continue`), or a watch.

use std::{collections::HashMap, sync::Arc, sync::atomic::Ordering};

use serde_json::{Value, json};
use warp::http::StatusCode;

use super::resources::{api_version, def_by_plural, groups, resource_list};
use super::watch::watch;
use super::{Shared, meta_str};

fn reply(code: StatusCode, body: &Value) -> warp::reply::Response {
    let mut r = warp::reply::Response::new(body.to_string().into());
    *r.status_mut() = code;
    r.headers_mut()
        .insert("content-type", warp::http::HeaderValue::from_static("application/json"));
    r
}

pub(super) fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code})
}

fn not_found(msg: &str) -> warp::reply::Response {
    reply(StatusCode::NOT_FOUND, &status(404, "NotFound", msg))
}

pub(super) fn handle(
    path: &str,
    q: &HashMap<String, String>,
    s: &Arc<Shared>,
) -> warp::reply::Response {
    if !s.available.load(Ordering::SeqCst) {
        return reply(
            StatusCode::SERVICE_UNAVAILABLE,
            &status(503, "ServiceUnavailable", "the server is not ready"),
        );
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|x| !x.is_empty()).collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["version"] => {
            let v = s.opts.git_version.trim_start_matches('v');
            let mut parts = v.split('.');
            let major = parts.next().unwrap_or("1");
            let minor = parts.next().unwrap_or("0");
            return reply(
                StatusCode::OK,
                &json!({"major": major, "minor": minor, "gitVersion": s.opts.git_version,
                "gitCommit": "0000000", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"}),
            );
        }
        ["api"] => {
            let addr = s.addr.lock().unwrap().map(|a| a.to_string()).unwrap_or_default();
            return reply(
                StatusCode::OK,
                &json!({"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]}),
            );
        }
        ["apis"] => {
            return reply(
                StatusCode::OK,
                &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups(s.opts.resources)}),
            );
        }
        ["apis", g] => {
            return match groups(s.opts.resources).into_iter().find(|x| x["name"] == *g) {
                Some(mut grp) => {
                    grp["kind"] = json!("APIGroup");
                    grp["apiVersion"] = json!("v1");
                    reply(StatusCode::OK, &grp)
                }
                None => not_found("the server could not find the requested resource"),
            };
        }
        ["api", "v1"] => return reply(StatusCode::OK, &resource_list(s.opts.resources, "", "v1")),
        ["apis", g, v] => {
            let list = resource_list(s.opts.resources, g, v);
            return if list["resources"].as_array().is_some_and(|a| !a.is_empty()) {
                reply(StatusCode::OK, &list)
            } else {
                not_found("the server could not find the requested resource")
            };
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return not_found("the server could not find the requested resource"),
    };
    // rest: [plural] | [plural, name] | [namespaces, ns, plural] | [namespaces, ns, plural, name]
    let (ns, plural, name) = match rest {
        [p] => (None, *p, None),
        ["namespaces", n] if group.is_empty() => (None, "namespaces", Some(*n)),
        [p, n] => (None, *p, Some(*n)),
        ["namespaces", ns, p] => (Some(*ns), *p, None),
        ["namespaces", ns, p, n] => (Some(*ns), *p, Some(*n)),
        _ => return not_found("the server could not find the requested resource"),
    };
    let Some(def) = def_by_plural(s.opts.resources, group, version, plural) else {
        return not_found("the server could not find the requested resource");
    };
    if s.forbidden.lock().unwrap().iter().any(|p| p == def.plural) {
        let msg = format!(
            "{}.{} is forbidden: User \"tester\" cannot list resource \"{}\" in API group \"{}\"",
            def.plural, def.group, def.plural, def.group
        );
        return reply(StatusCode::FORBIDDEN, &status(403, "Forbidden", &msg));
    }
    let av = api_version(def.group, version);
    if let Some(name) = name {
        let st = s.store.lock().unwrap();
        let key = (def.group, def.plural, ns.unwrap_or("").to_string(), name.to_string());
        return match st.objects.get(&key) {
            Some(o) => {
                let mut o = o.clone();
                o["apiVersion"] = json!(av);
                reply(StatusCode::OK, &o)
            }
            None => not_found(&format!("{}.{} \"{name}\" not found", def.plural, def.group)),
        };
    }
    let filter = match Filter_::parse(ns, q) {
        Ok(f) => f,
        Err(e) => return reply(StatusCode::BAD_REQUEST, &status(400, "BadRequest", &e)),
    };
    if q.get("watch").is_some_and(|w| w == "true" || w == "1") {
        return watch(s, def, av, filter, q);
    }
    let st = s.store.lock().unwrap();
    let mut items: Vec<Value> = st
        .objects
        .iter()
        .filter(|((g, p, _, _), o)| *g == def.group && *p == def.plural && filter.matches(o))
        .map(|(_, o)| {
            let mut o = o.clone();
            // Real servers leave the type fields off the items of built-in kinds' lists.
            if let Value::Object(m) = &mut o {
                if def.group.is_empty() || !def.group.contains('.') {
                    m.remove("apiVersion");
                    m.remove("kind");
                } else {
                    m.insert("apiVersion".into(), json!(av));
                }
            }
            o
        })
        .collect();
    let start: usize = q.get("continue").and_then(|c| c.parse().ok()).unwrap_or(0);
    let limit: usize =
        q.get("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(usize::MAX);
    let total = items.len();
    let page: Vec<Value> = items.drain(start.min(total)..).take(limit).collect();
    let mut meta = json!({"resourceVersion": st.rv.to_string()});
    if start.saturating_add(limit) < total {
        meta["continue"] = json!((start + limit).to_string());
    }
    reply(
        StatusCode::OK,
        &json!({"kind": format!("{}List", def.kind), "apiVersion": av, "metadata": meta, "items": page}),
    )
}

/// Label (`a=b`, `a==b`, `a!=b`, `a`, `!a`) and field (`metadata.name`, `metadata.namespace`)
/// selectors plus the namespace of the path.
pub(super) struct Filter_ {
    ns: Option<String>,
    labels: Vec<(String, String, String)>, // key, op, value
    fields: Vec<(String, bool, String)>,   // path, equal, value
}

impl Filter_ {
    fn parse(ns: Option<&str>, q: &HashMap<String, String>) -> Result<Filter_, String> {
        let mut labels = Vec::new();
        for term in q
            .get("labelSelector")
            .map(String::as_str)
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            if let Some((k, v)) = term.split_once("!=") {
                labels.push((k.trim().into(), "!=".into(), v.trim().into()));
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                labels.push((k.trim().into(), "=".into(), v.trim().into()));
            } else if let Some(k) = term.strip_prefix('!') {
                labels.push((k.trim().into(), "!".into(), String::new()));
            } else if term.contains(' ') {
                return Err(format!("unsupported label selector term {term:?}"));
            } else {
                labels.push((term.into(), "exists".into(), String::new()));
            }
        }
        let mut fields = Vec::new();
        for term in q
            .get("fieldSelector")
            .map(String::as_str)
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            let (k, eq, v) = if let Some((k, v)) = term.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (k, true, v)
            } else {
                return Err(format!("invalid field selector {term:?}"));
            };
            if !matches!(k, "metadata.name" | "metadata.namespace") {
                return Err(format!("field label not supported: {k}"));
            }
            fields.push((k.to_string(), eq, v.to_string()));
        }
        Ok(Filter_ { ns: ns.map(str::to_string), labels, fields })
    }

    pub(super) fn matches(&self, o: &Value) -> bool {
        if self.ns.as_deref().is_some_and(|n| meta_str(o, "namespace") != n) {
            return false;
        }
        let labels = o.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.labels.iter().all(|(k, op, v)| match op.as_str() {
            "=" => get(k) == Some(v.as_str()),
            "!=" => get(k) != Some(v.as_str()),
            "!" => get(k).is_none(),
            _ => get(k).is_some(),
        }) && self.fields.iter().all(|(k, eq, v)| {
            let actual = meta_str(o, k.trim_start_matches("metadata."));
            (actual == v) == *eq
        })
    }
}
