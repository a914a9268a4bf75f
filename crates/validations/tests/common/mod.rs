//! A small bookinfo-like world for the checker tests, and helpers to read results.
#![allow(dead_code)]

use std::collections::BTreeMap;

use meshlens_validations::*;
use serde_json::{Value, json};

pub const NS: &str = "bookinfo";

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

pub fn obj(kind: ObjectKind, ns: &str, name: &str, spec: Value) -> MeshObject {
    MeshObject { kind, namespace: ns.into(), name: name.into(), spec }
}

pub fn dr(name: &str, spec: Value) -> MeshObject {
    obj(ObjectKind::DestinationRule, NS, name, spec)
}

pub fn vs(name: &str, spec: Value) -> MeshObject {
    obj(ObjectKind::VirtualService, NS, name, spec)
}

pub fn gw(ns: &str, name: &str, spec: Value) -> MeshObject {
    obj(ObjectKind::Gateway, ns, name, spec)
}

/// Services reviews, ratings, productpage; workloads reviews v1..v3, ratings v1 and v2
/// (v2 without pods still has its Deployment), productpage v1; Gateway bookinfo-gateway.
pub fn world(objects: Vec<MeshObject>) -> ValidationInput {
    let svc = |name: &str| ServiceInfo {
        namespace: NS.into(),
        name: name.into(),
        labels: labels(&[("app", name)]),
        selector: labels(&[("app", name)]),
    };
    let wl = |app: &str, version: &str| WorkloadInfo {
        namespace: NS.into(),
        name: format!("{app}-{version}"),
        labels: labels(&[("app", app), ("version", version)]),
    };
    let gateway = gw(
        NS,
        "bookinfo-gateway",
        json!({"selector": {"istio": "ingressgateway"}, "servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}]}),
    );
    let mut all_objects = vec![gateway.clone()];
    all_objects.extend(objects);
    ValidationInput {
        objects: all_objects,
        services: vec![svc("reviews"), svc("ratings"), svc("productpage")],
        workloads: vec![
            wl("reviews", "v1"),
            wl("reviews", "v2"),
            wl("reviews", "v3"),
            wl("ratings", "v1"),
            wl("ratings", "v2"),
            wl("productpage", "v1"),
        ],
        gateways: vec![gateway],
        namespaces: ["bookinfo", "istio-system"]
            .into_iter()
            .map(|n| NamespaceInfo { name: n.into(), labels: labels(&[("name", n)]) })
            .collect(),
        ..ValidationInput::default()
    }
}

/// The validation of one object of namespace [`NS`].
pub fn validation(input: &ValidationInput, kind: ObjectKind, name: &str) -> Validation {
    let out = validate_namespace(NS, input);
    out[NS][kind.singular()][name].clone()
}

/// (key, path) of each check, in order.
pub fn keys(v: &Validation) -> Vec<(&'static str, String)> {
    v.checks.iter().map(|c| (c.key, c.path.clone())).collect()
}

/// Asserts that the validation has exactly these checks, and a validity that follows
/// from their severities.
pub fn assert_checks(v: &Validation, expected: &[(&str, &str)]) {
    let got: Vec<(&str, &str)> = v.checks.iter().map(|c| (c.key, c.path.as_str())).collect();
    assert_eq!(got, expected, "checks of {} {}", v.object_type, v.name);
    let any_error = v.checks.iter().any(|c| c.severity == Severity::Error);
    assert_eq!(v.valid, !any_error, "validity of {}", v.name);
    for c in &v.checks {
        let rule = catalog::ALL.iter().find(|r| r.key == c.key).expect("known key");
        assert_eq!(c.message, rule.message);
        assert_eq!(c.severity, rule.severity);
        assert_eq!(c.code, rule.code);
    }
}
