//! AuthorizationPolicy, PeerAuthentication, RequestAuthentication and Sidecar checks: each
//! fires on an object that breaks it, and a valid look-alike gets no finding.

mod common;

use common::*;
use meshlens_validations::{ObjectKind, ValidationInput, WorkloadInfo};
use serde_json::{Value, json};

const AP: ObjectKind = ObjectKind::AuthorizationPolicy;
const PA: ObjectKind = ObjectKind::PeerAuthentication;
const RA: ObjectKind = ObjectKind::RequestAuthentication;
const SC: ObjectKind = ObjectKind::Sidecar;

fn with(kind: ObjectKind, objects: &[(&str, Value)]) -> ValidationInput {
    world(objects.iter().map(|(n, s)| obj(kind, NS, n, s.clone())).collect())
}

#[test]
fn selector_without_workload_warns_on_every_selecting_kind() {
    // A workload of another namespace carries the label: selectors read their own namespace.
    let elsewhere = |mut input: ValidationInput| {
        input.workloads.push(WorkloadInfo {
            namespace: "istio-system".into(),
            name: "typo".into(),
            labels: labels(&[("app", "reviewz")]),
        });
        input
    };
    let broken = json!({"selector": {"matchLabels": {"app": "reviewz"}}});
    let fine = json!({"selector": {"matchLabels": {"app": "reviews", "version": "v2"}}});
    for kind in [AP, PA, RA] {
        let input = elsewhere(with(kind, &[("broken", broken.clone()), ("fine", fine.clone())]));
        let v = validation(&input, kind, "broken");
        assert_checks(&v, &[("generic.selector.workloadnotfound", "spec/selector/matchLabels")]);
        assert!(v.valid, "a warning leaves {kind:?} valid");
        assert_eq!(v.checks[0].code, Some("KIA0004"));
        assert_checks(&validation(&input, kind, "fine"), &[]);
    }
    let input = elsewhere(with(
        SC,
        &[
            ("broken", json!({"workloadSelector": {"labels": {"app": "reviewz"}}})),
            ("fine", json!({"workloadSelector": {"labels": {"app": "ratings"}}})),
        ],
    ));
    assert_checks(
        &validation(&input, SC, "broken"),
        &[("generic.selector.workloadnotfound", "spec/workloadSelector/labels")],
    );
    assert_checks(&validation(&input, SC, "fine"), &[]);
}

#[test]
fn authorization_policy_source_namespace_not_found() {
    let rules = |nss: &[&str]| json!({"rules": [{"from": [{"source": {"principals": ["x"]}}, {"source": {"namespaces": nss}}]}]});
    let input = with(
        AP,
        &[
            ("broken", rules(&["istio-system", "ghost", "prod-*"])),
            ("fine", rules(&["bookinfo", "istio-system"])),
        ],
    );
    let v = validation(&input, AP, "broken");
    assert_checks(
        &v,
        &[(
            "authorizationpolicy.source.namespacenotfound",
            "spec/rules[0]/from[1]/source/namespaces[1]",
        )],
    );
    assert!(v.valid);
    assert_eq!(v.checks[0].code, Some("KIA0101"));
    assert_checks(&validation(&input, AP, "fine"), &[]);
}

#[test]
fn authorization_policy_host_not_found_is_an_error() {
    let hosts = |hs: &[&str]| json!({"rules": [{"to": [{"operation": {"methods": ["GET"]}}, {"operation": {"hosts": hs}}]}]});
    let mut input = with(
        AP,
        &[
            ("broken", hosts(&["reviews", "nowhere", "ratings.ghost"])),
            (
                "fine",
                hosts(&[
                    "reviews",
                    "ratings.bookinfo",
                    "productpage.bookinfo.svc.cluster.local",
                    "api.books.example.com",
                    "shop.example.com",
                    "*",
                ]),
            ),
        ],
    );
    input.objects.push(obj(
        ObjectKind::ServiceEntry,
        "istio-system",
        "books",
        json!({"hosts": ["api.books.example.com"]}),
    ));
    input.objects.push(vs("shop", json!({"hosts": ["shop.example.com"], "http": [{"route": [{"destination": {"host": "productpage"}}]}]})));
    let v = validation(&input, AP, "broken");
    assert_checks(
        &v,
        &[
            (
                "authorizationpolicy.nodest.matchingregistry",
                "spec/rules[0]/to[1]/operation/hosts[1]",
            ),
            (
                "authorizationpolicy.nodest.matchingregistry",
                "spec/rules[0]/to[1]/operation/hosts[2]",
            ),
        ],
    );
    assert!(!v.valid, "KIA0104 is an error: no ALLOW_ANY downgrade");
    assert_eq!(v.checks[0].code, Some("KIA0104"));
    assert_checks(&validation(&input, AP, "fine"), &[]);
}

#[test]
fn peer_authentications_selector_less_twice_in_a_namespace() {
    let mut input = with(
        PA,
        &[
            ("a", json!({"mtls": {"mode": "STRICT"}})),
            ("b", json!({"selector": {"matchLabels": {}}, "mtls": {"mode": "STRICT"}})),
            ("c", json!({"selector": {"matchLabels": {"app": "ratings"}}})),
        ],
    );
    // Another namespace's selector-less one is no duplicate.
    input.objects.push(obj(PA, "istio-system", "mesh", json!({"mtls": {"mode": "STRICT"}})));
    for name in ["a", "b"] {
        let v = validation(&input, PA, name);
        assert_checks(&v, &[("generic.multimatch.selectorless", "spec/selector")]);
        assert!(!v.valid);
        assert_eq!(v.checks[0].code, Some("KIA0002"));
    }
    assert_checks(&validation(&input, PA, "c"), &[]);
    // The look-alike: one selector-less per namespace.
    input.objects.retain(|o| o.name != "b");
    assert_checks(&validation(&input, PA, "a"), &[]);
}

#[test]
fn peer_authentications_selecting_one_workload_twice() {
    let sel = |l: Value| json!({"selector": {"matchLabels": l}, "mtls": {"mode": "STRICT"}});
    let input = with(
        PA,
        &[
            ("by-app", sel(json!({"app": "reviews"}))),
            ("by-version", sel(json!({"version": "v1", "app": "ratings"}))),
            ("v3", sel(json!({"app": "reviews", "version": "v3"}))),
            ("productpage", sel(json!({"app": "productpage"}))),
        ],
    );
    // reviews-v3 is picked by `by-app` and `v3`.
    for name in ["by-app", "v3"] {
        let v = validation(&input, PA, name);
        assert_checks(&v, &[("generic.multimatch.selector", "spec/selector")]);
        assert_eq!(v.checks[0].code, Some("KIA0003"));
    }
    for name in ["by-version", "productpage"] {
        assert_checks(&validation(&input, PA, name), &[]);
    }
}

#[test]
fn namespace_wide_disable_against_mutual_destination_rules() {
    let pa = |name: &str, spec: Value| obj(PA, NS, name, spec);
    let dr_at = |ns: &str, host: &str, mode: &str| {
        obj(
            ObjectKind::DestinationRule,
            ns,
            &format!("dr-{}", mode.to_lowercase()),
            json!({"host": host, "trafficPolicy": {"tls": {"mode": mode}}}),
        )
    };
    let disable = json!({"mtls": {"mode": "DISABLE"}});
    let ns_host = "*.bookinfo.svc.cluster.local";
    // Broken: the namespace's DestinationRule says ISTIO_MUTUAL.
    let input =
        world(vec![pa("off", disable.clone()), dr_at("istio-system", ns_host, "ISTIO_MUTUAL")]);
    let v = validation(&input, PA, "off");
    assert_checks(&v, &[("peerauthentications.mtls.disabledestinationrulemissing", "spec/mtls")]);
    assert_eq!(v.checks[0].code, Some("KIA0505"));
    // Broken: only a mesh-wide MUTUAL one.
    let input = world(vec![pa("off", disable.clone()), dr_at("istio-system", "*.local", "MUTUAL")]);
    assert_checks(
        &validation(&input, PA, "off"),
        &[("peerauthentications.mtls.disabledestinationrulemissing", "spec/mtls")],
    );
    // Look-alikes: the namespace's rule disables it too; a workload-scoped DISABLE; STRICT.
    let input = world(vec![
        pa("off", disable.clone()),
        dr_at(NS, ns_host, "DISABLE"),
        dr_at("istio-system", "*.local", "ISTIO_MUTUAL"),
    ]);
    assert_checks(&validation(&input, PA, "off"), &[]);
    let input = world(vec![
        pa(
            "scoped",
            json!({"selector": {"matchLabels": {"app": "reviews"}}, "mtls": {"mode": "DISABLE"}}),
        ),
        pa("strict", json!({"mtls": {"mode": "STRICT"}})),
        dr_at(NS, ns_host, "ISTIO_MUTUAL"),
    ]);
    assert_checks(&validation(&input, PA, "scoped"), &[]);
    assert_checks(&validation(&input, PA, "strict"), &[]);
}

#[test]
fn sidecar_egress_hosts_and_selector_less_duplicates() {
    let egress = |hosts: &[&str]| json!({"workloadSelector": {"labels": {"app": "reviews"}}, "egress": [{"hosts": ["./*"]}, {"hosts": hosts}]});
    let mut input = with(
        SC,
        &[
            (
                "broken",
                egress(&[
                    "istio-system/*",
                    "./nowhere.bookinfo.svc.cluster.local",
                    "*/api.ghost.example.com",
                ]),
            ),
            (
                "fine",
                egress(&[
                    "*/*",
                    "~/*",
                    "istio-system/*",
                    "./ratings.bookinfo.svc.cluster.local",
                    "./reviews",
                    "*/api.books.example.com",
                ]),
            ),
            ("default-a", json!({"egress": [{"hosts": ["./*"]}]})),
            ("default-b", json!({"egress": [{"hosts": ["istio-system/*"]}]})),
        ],
    );
    input.objects.push(obj(
        ObjectKind::ServiceEntry,
        "istio-system",
        "books",
        json!({"hosts": ["api.books.example.com"]}),
    ));
    let v = validation(&input, SC, "broken");
    assert_checks(
        &v,
        &[
            ("sidecar.egress.servicenotfound", "spec/egress[1]/hosts[1]"),
            ("sidecar.egress.servicenotfound", "spec/egress[1]/hosts[2]"),
        ],
    );
    assert!(v.valid);
    assert_eq!(v.checks[0].code, Some("KIA1004"));
    assert_checks(&validation(&input, SC, "fine"), &[]);
    for name in ["default-a", "default-b"] {
        let v = validation(&input, SC, name);
        assert_checks(&v, &[("generic.multimatch.selectorless", "spec/workloadSelector")]);
        assert!(!v.valid);
    }
    input.objects.retain(|o| o.name != "default-b");
    assert_checks(&validation(&input, SC, "default-a"), &[]);
}

#[test]
fn codes_are_in_the_json_of_new_kinds_only() {
    let mut input = with(AP, &[("ap", json!({"selector": {"matchLabels": {"app": "nope"}}}))]);
    input.objects.push(vs("bad", json!({"hosts": ["reviews"]})));
    let ap = serde_json::to_value(validation(&input, AP, "ap")).unwrap();
    assert_eq!(
        ap["checks"],
        json!([{"message": "No matching workload found for the selector in this namespace",
                "severity": "warning", "path": "spec/selector/matchLabels", "code": "KIA0004"}])
    );
    let seed = serde_json::to_value(validation(&input, ObjectKind::VirtualService, "bad")).unwrap();
    assert!(!seed["checks"].as_array().unwrap().is_empty());
    for c in seed["checks"].as_array().unwrap() {
        assert!(c.get("code").is_none(), "{c}");
    }
}
