//! Gateway API checks (Gateway, HTTPRoute, GRPCRoute, ReferenceGrant): each fires on an
//! object that breaks it, and a valid look-alike gets no finding.

mod common;

use common::*;
use meshlens_validations::{ObjectKind, ServiceInfo, ValidationInput, validate_namespace};
use serde_json::{Value, json};

const GW: ObjectKind = ObjectKind::K8sGateway;
const HR: ObjectKind = ObjectKind::K8sHTTPRoute;
const GR: ObjectKind = ObjectKind::K8sGRPCRoute;
const RG: ObjectKind = ObjectKind::K8sReferenceGrant;

fn listener(name: &str, host: Option<&str>, port: u64, protocol: &str) -> Value {
    let mut l = json!({"name": name, "port": port, "protocol": protocol});
    if let Some(h) = host {
        l["hostname"] = json!(h);
    }
    l
}

fn gateway(ns: &str, name: &str, listeners: Vec<Value>) -> meshlens_validations::MeshObject {
    obj(GW, ns, name, json!({"gatewayClassName": "istio", "listeners": listeners}))
}

#[test]
fn listener_clash_across_gateways_warns_and_look_alikes_do_not() {
    let mut input = world(vec![
        gateway(
            NS,
            "web",
            vec![
                listener("a", Some("a.example.com"), 80, "HTTP"),
                listener("b", Some("b.example.com"), 80, "HTTP"),
            ],
        ),
        gateway(
            NS,
            "near",
            vec![
                listener("a", Some("a.example.com"), 8080, "HTTP"),
                listener("b", Some("b.example.com"), 80, "HTTPS"),
                listener("c", None, 80, "HTTP"),
            ],
        ),
    ]);
    // The clashing one is in another namespace, known only from the all-namespaces list.
    input.gateways.push(gateway(
        "istio-system",
        "edge",
        vec![listener("x", Some("a.example.com"), 80, "HTTP")],
    ));
    let v = validation(&input, GW, "web");
    assert_checks(&v, &[("k8sgateways.multimatch.listener", "spec/listeners[0]/hostname")]);
    assert!(v.valid);
    assert_eq!(v.checks[0].code, Some("KIA1501"));
    assert_checks(&validation(&input, GW, "near"), &[]);
    // The Istio Gateway of the world is not a Gateway API one, and vice versa.
    let out = validate_namespace(NS, &input);
    assert!(out[NS]["gateway"].contains_key("bookinfo-gateway"));
    assert!(!out[NS]["gateway"].contains_key("web"));
    assert_eq!(out[NS]["k8sgateway"].keys().collect::<Vec<_>>(), ["near", "web"]);
    let other = validate_namespace("istio-system", &input);
    assert_checks(
        &other["istio-system"]["k8sgateway"]["edge"],
        &[("k8sgateways.multimatch.listener", "spec/listeners[0]/hostname")],
    );
}

#[test]
fn duplicate_listener_names_are_both_errors() {
    let input = world(vec![
        gateway(
            NS,
            "dup",
            vec![
                listener("http", None, 80, "HTTP"),
                listener("https", None, 443, "HTTPS"),
                listener("http", None, 8080, "HTTP"),
            ],
        ),
        gateway(
            NS,
            "unique",
            vec![listener("http", None, 80, "HTTP"), listener("http-alt", None, 80, "HTTP")],
        ),
    ]);
    let v = validation(&input, GW, "dup");
    assert_checks(
        &v,
        &[
            ("k8sgateways.unique.listener", "spec/listeners[0]/name"),
            ("k8sgateways.unique.listener", "spec/listeners[2]/name"),
        ],
    );
    assert!(!v.valid);
    assert_eq!(v.checks[0].code, Some("KIA1503"));
    assert_checks(&validation(&input, GW, "unique"), &[]);
}

/// Gateways: `own` in bookinfo; in istio-system `shared` (All), `private` (default Same),
/// `picky` (Selector name=bookinfo), `other` (Selector name=prod).
fn gateways() -> Vec<meshlens_validations::MeshObject> {
    let allowed = |from: Value| json!({"gatewayClassName": "istio", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": from}}]});
    vec![
        gateway(NS, "own", vec![listener("http", None, 80, "HTTP")]),
        obj(GW, "istio-system", "shared", allowed(json!({"from": "All"}))),
        gateway("istio-system", "private", vec![listener("http", None, 80, "HTTP")]),
        obj(
            GW,
            "istio-system",
            "picky",
            allowed(json!({"from": "Selector", "selector": {"matchLabels": {"name": "bookinfo"}}})),
        ),
        obj(
            GW,
            "istio-system",
            "other",
            allowed(json!({"from": "Selector", "selector": {"matchLabels": {"name": "prod"}}})),
        ),
    ]
}

fn route_input(kind: ObjectKind, routes: &[(&str, Value)]) -> ValidationInput {
    let mut input = world(routes.iter().map(|(n, s)| obj(kind, NS, n, s.clone())).collect());
    input.gateways.extend(gateways());
    input
}

#[test]
fn routes_to_missing_or_closed_gateways_are_errors() {
    let parents = |refs: Value| json!({"parentRefs": refs, "rules": [{"backendRefs": [{"name": "reviews", "port": 9080}]}]});
    for kind in [HR, GR] {
        let input = route_input(
            kind,
            &[
                (
                    "broken",
                    parents(json!([
                        {"name": "own"},
                        {"name": "missing"},
                        {"name": "private", "namespace": "istio-system"},
                        {"name": "other", "namespace": "istio-system"},
                        {"name": "own", "namespace": "istio-system"}
                    ])),
                ),
                (
                    "fine",
                    parents(json!([
                        {"name": "own", "sectionName": "http"},
                        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "shared", "namespace": "istio-system"},
                        {"name": "picky", "namespace": "istio-system"},
                        {"group": "", "kind": "Service", "name": "reviews"}
                    ])),
                ),
            ],
        );
        let v = validation(&input, kind, "broken");
        assert_checks(
            &v,
            &[
                ("k8sroutes.nok8sgateway", "spec/parentRefs[1]/name/missing"),
                ("k8sroutes.nok8sgateway", "spec/parentRefs[2]/name/private"),
                ("k8sroutes.nok8sgateway", "spec/parentRefs[3]/name/other"),
                ("k8sroutes.nok8sgateway", "spec/parentRefs[4]/name/own"),
            ],
        );
        assert!(!v.valid);
        assert_eq!(v.checks[0].code, Some("KIA1401"));
        assert_checks(&validation(&input, kind, "fine"), &[]);
    }
}

#[test]
fn routes_to_missing_or_ungranted_services_are_errors() {
    let backends = |refs: Value| json!({"parentRefs": [{"name": "own"}], "rules": [{"matches": [{"path": {"value": "/"}}]}, {"backendRefs": refs}]});
    for (kind, kind_name, other_kind) in
        [(HR, "HTTPRoute", "GRPCRoute"), (GR, "GRPCRoute", "HTTPRoute")]
    {
        let mut input = route_input(
            kind,
            &[
                (
                    "broken",
                    backends(json!([
                        {"name": "reviews", "port": 9080},
                        {"name": "nope", "port": 80},
                        {"name": "reviews.bookinfo", "port": 9080},
                        {"name": "echo", "namespace": "echo", "port": 80},
                        {"name": "grpc", "namespace": "grpc", "port": 80},
                        {"name": "ghost", "namespace": "echo", "port": 80}
                    ])),
                ),
                (
                    "fine",
                    backends(json!([
                        {"name": "ratings", "port": 9080, "weight": 90},
                        {"group": "", "kind": "Service", "name": "productpage", "namespace": "bookinfo"},
                        {"name": "echo", "namespace": "echo", "port": 80},
                        {"group": "example.com", "kind": "Bucket", "name": "not-a-service"}
                    ])),
                ),
            ],
        );
        // `echo` grants this route kind; `grpc` only the other kind.
        for ns in ["echo", "grpc"] {
            input.services.push(ServiceInfo {
                namespace: ns.into(),
                name: ns.into(),
                ..Default::default()
            });
        }
        let grant = |ns: &str, from_kind: &str| {
            obj(
                RG,
                ns,
                "allow",
                json!({"from": [{"group": "gateway.networking.k8s.io", "kind": from_kind, "namespace": NS}], "to": [{"group": "", "kind": "Service"}]}),
            )
        };
        input.objects.push(grant("echo", kind_name));
        input.objects.push(grant("grpc", other_kind));
        let v = validation(&input, kind, "broken");
        assert_checks(
            &v,
            &[
                ("k8sroutes.nohost.namenotfound", "spec/rules[1]/backendRefs[1]/name"),
                ("k8sroutes.nohost.namenotfound", "spec/rules[1]/backendRefs[2]/name"),
                ("k8sroutes.nohost.namenotfound", "spec/rules[1]/backendRefs[4]/name"),
                ("k8sroutes.nohost.namenotfound", "spec/rules[1]/backendRefs[5]/name"),
            ],
        );
        assert!(!v.valid);
        assert_eq!(v.checks[0].code, Some("KIA1402"));
        assert_checks(&validation(&input, kind, "fine"), &[]);
    }
}

#[test]
fn reference_grant_from_a_missing_namespace_is_an_error() {
    let from = |nss: &[&str]| {
        let from: Vec<Value> = nss.iter().map(|n| json!({"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": n})).collect();
        json!({"from": from, "to": [{"group": "", "kind": "Service"}]})
    };
    let input = world(vec![
        obj(RG, NS, "broken", from(&["istio-system", "ghost"])),
        obj(RG, NS, "fine", from(&["istio-system", "bookinfo"])),
    ]);
    let v = validation(&input, RG, "broken");
    assert_checks(&v, &[("k8sreferencegrants.from.namespacenotfound", "spec/from[1]/namespace")]);
    assert!(!v.valid);
    assert_eq!(v.checks[0].code, Some("KIA1601"));
    assert_checks(&validation(&input, RG, "fine"), &[]);
}
