//! The three operations: shapes, filtering, errors, and the demo's broken VirtualService.

mod common;

use common::*;
use meshlens_validations::*;
use serde_json::json;

/// The demo mesh's config objects (config/demo/README.md): one VirtualService is broken
/// on purpose (ratings: weights 70/20).
fn demo() -> ValidationInput {
    let sub = |v: &str| json!({"name": v, "labels": {"version": v}});
    world(vec![
        vs(
            "bookinfo",
            json!({"hosts": ["*"], "gateways": ["bookinfo-gateway"], "http": [{"route": [{"destination": {"host": "productpage", "port": {"number": 9080}}}]}]}),
        ),
        vs(
            "reviews",
            json!({"hosts": ["reviews"], "http": [{"route": [
            {"destination": {"host": "reviews", "subset": "v1"}, "weight": 50},
            {"destination": {"host": "reviews", "subset": "v2"}, "weight": 30},
            {"destination": {"host": "reviews", "subset": "v3"}, "weight": 20}]}]}),
        ),
        vs(
            "ratings",
            json!({"hosts": ["ratings"], "http": [{"route": [
            {"destination": {"host": "ratings", "subset": "v1"}, "weight": 70},
            {"destination": {"host": "ratings", "subset": "v2"}, "weight": 20}]}]}),
        ),
        dr("reviews", json!({"host": "reviews", "subsets": [sub("v1"), sub("v2"), sub("v3")]})),
        dr(
            "ratings",
            json!({"host": "ratings", "trafficPolicy": {"connectionPool": {"tcp": {"maxConnections": 1}}, "outlierDetection": {"consecutiveErrors": 1}}, "subsets": [sub("v1"), sub("v2")]}),
        ),
        obj(
            ObjectKind::ServiceEntry,
            NS,
            "books-api",
            json!({"hosts": ["api.books.example.com"], "location": "MESH_EXTERNAL", "ports": [{"number": 80, "name": "http", "protocol": "HTTP"}]}),
        ),
    ])
}

#[test]
fn namespace_validations_report_every_object_and_only_the_broken_vs_is_invalid() {
    let out = serde_json::to_value(validate_namespace(NS, &demo())).unwrap();
    let clean = |t: &str, n: &str| json!({"name": n, "objectType": t, "valid": true, "checks": []});
    let expected = json!({NS: {
        "destinationrule": {"ratings": clean("destinationrule", "ratings"), "reviews": clean("destinationrule", "reviews")},
        "gateway": {"bookinfo-gateway": clean("gateway", "bookinfo-gateway")},
        "serviceentry": {"books-api": clean("serviceentry", "books-api")},
        "virtualservice": {
            "bookinfo": clean("virtualservice", "bookinfo"),
            "reviews": clean("virtualservice", "reviews"),
            "ratings": {"name": "ratings", "objectType": "virtualservice", "valid": false, "checks": [
                {"message": "Weight sum should be 100", "severity": "error", "path": "spec/http[0]/route"}]}
        }
    }});
    assert_eq!(out, expected);
}

#[test]
fn an_empty_namespace_has_an_empty_map() {
    let out = serde_json::to_value(validate_namespace("empty", &demo())).unwrap();
    assert_eq!(out, json!({"empty": {}}));
}

#[test]
fn object_validations_return_only_that_object() {
    let out =
        serde_json::to_value(validate_object(NS, "virtualservices", "ratings", &demo()).unwrap())
            .unwrap();
    assert_eq!(out["virtualservice"]["ratings"]["checks"][0]["path"], "spec/http[0]/route");
    assert_eq!(out.as_object().unwrap().len(), 1);
    assert_eq!(out["virtualservice"].as_object().unwrap().len(), 1);

    let se =
        serde_json::to_value(validate_object(NS, "serviceentries", "books-api", &demo()).unwrap())
            .unwrap();
    assert_eq!(
        se,
        json!({"serviceentry": {"books-api": {"name": "books-api", "objectType": "serviceentry", "valid": true, "checks": []}}})
    );
}

#[test]
fn object_validations_see_group_checks() {
    let mut input = demo();
    input.objects.push(dr("ratings-again", json!({"host": "ratings"})));
    let out = validate_object(NS, "destinationrules", "ratings-again", &input).unwrap();
    assert_eq!(
        out["destinationrule"]["ratings-again"].checks[0].key,
        "destinationrules.multimatch"
    );
}

#[test]
fn object_validations_errors() {
    let err = validate_object(NS, "widgets", "x", &demo()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Object type not managed: widgets. Known types: destinationrules, virtualservices, gateways, serviceentries, rules, quotaspecs, quotaspecbindings, authorizationpolicies, peerauthentications, requestauthentications, sidecars, k8sgateways, k8shttproutes, k8sgrpcroutes, k8sreferencegrants"
    );
    let missing = validate_object(NS, "virtualservices", "nope", &demo()).unwrap_err();
    assert_eq!(missing, ValidationError::NotFound("virtualservice"));
    assert_eq!(missing.to_string(), "virtualservice not found");
    // The name exists, but as another kind.
    assert!(matches!(
        validate_object(NS, "gateways", "ratings", &demo()),
        Err(ValidationError::NotFound(_))
    ));
    assert!(matches!(
        validate_object("other", "virtualservices", "ratings", &demo()),
        Err(ValidationError::NotFound(_))
    ));
}

#[test]
fn service_validations_keep_the_objects_that_refer_to_the_service() {
    let out = validate_service(NS, "ratings", &demo()).unwrap();
    let names: Vec<(String, Vec<String>)> =
        out.iter().map(|(t, m)| (t.clone(), m.keys().cloned().collect())).collect();
    assert_eq!(
        names,
        vec![
            ("destinationrule".to_string(), vec!["ratings".to_string()]),
            ("virtualservice".to_string(), vec!["ratings".to_string()])
        ]
    );
    assert!(!out["virtualservice"]["ratings"].valid);

    // The wildcard VirtualService routes to productpage: it refers to productpage.
    let pp = validate_service(NS, "productpage", &demo()).unwrap();
    assert_eq!(pp["virtualservice"].keys().collect::<Vec<_>>(), vec!["bookinfo"]);
    assert!(!pp.contains_key("destinationrule"));

    assert_eq!(
        validate_service(NS, "nope", &demo()).unwrap_err(),
        ValidationError::NotFound("service")
    );
}

#[test]
fn object_kind_names_round_trip() {
    for k in ObjectKind::ALL {
        assert_eq!(ObjectKind::from_plural(k.plural()), Some(k));
        // `Gateway` reads as Istio's; the Gateway API's has the same kind in another group.
        let expected = if k == ObjectKind::K8sGateway { ObjectKind::Gateway } else { k };
        assert_eq!(ObjectKind::from_k8s_kind(k.k8s_kind()), Some(expected));
    }
    // The seed's 14 checks and the hidden-namespace `info` carry no code; the 12 of Kiali v2
    // each carry theirs.
    assert_eq!(catalog::ALL.len(), 27);
    assert_eq!(catalog::ALL.iter().filter(|r| r.code.is_none()).count(), 15);
    assert!(catalog::ALL[14..26].iter().all(|r| r.code.is_some_and(|c| c.starts_with("KIA"))));
    assert_eq!(catalog::ALL[26].key, "validation.unable.cross-namespace");
}

#[test]
fn referenced_namespaces_follow_rule_and_route_hosts() {
    let objects = vec![
        dr("a", json!({"host": "reviews.other.svc.cluster.local"})),
        dr("b", json!({"host": "api.books.example.com"})),
        vs(
            "c",
            json!({"hosts": ["x"], "http": [{"route": [{"destination": {"host": "ratings.third"}}, {"destination": {"host": "*"}}]}]}),
        ),
        obj(
            ObjectKind::VirtualService,
            "elsewhere",
            "d",
            json!({"http": [{"route": [{"destination": {"host": "x.fourth"}}]}]}),
        ),
    ];
    let got: Vec<String> =
        referenced_namespaces(NS, &objects, "svc.cluster.local").into_iter().collect();
    assert_eq!(got, vec!["bookinfo", "other", "third"]);
}
