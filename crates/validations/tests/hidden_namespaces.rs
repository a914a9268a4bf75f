//! References into namespaces the caller may not list: the answer is the same `info`
//! check whether or not the Service, DestinationRule or Gateway exists there, and nothing
//! of such a namespace changes any other check.

mod common;

use common::*;
use meshlens_validations::*;
use serde_json::json;

const SECRET: &str = "payments";

/// The bookinfo world plus, when `present`, a Service with workloads, a DestinationRule
/// and a Gateway in `payments` that bookinfo's objects point to.
fn input(present: bool, hidden: bool) -> ValidationInput {
    let mut input = world(vec![
        vs(
            "to-payments",
            json!({"hosts": ["reviews"], "gateways": ["payments/edge"], "http": [{"route": [
                {"destination": {"host": "ledger.payments.svc.cluster.local", "subset": "v1"}}]}]}),
        ),
        dr(
            "ledger",
            json!({"host": "ledger.payments.svc.cluster.local", "subsets": [
            {"name": "v1", "labels": {"version": "v1"}}]}),
        ),
    ]);
    if present {
        input.services.push(ServiceInfo {
            namespace: SECRET.into(),
            name: "ledger".into(),
            labels: labels(&[("app", "ledger")]),
            selector: labels(&[("app", "ledger")]),
        });
        input.workloads.push(WorkloadInfo {
            namespace: SECRET.into(),
            name: "ledger-v1".into(),
            labels: labels(&[("app", "ledger"), ("version", "v1")]),
        });
        input.objects.push(obj(
            ObjectKind::DestinationRule,
            SECRET,
            "ledger",
            json!({"host": "ledger", "subsets": [{"name": "v1", "labels": {"version": "v1"}}]}),
        ));
        // Same host and port as bookinfo's gateway: it would make a multimatch warning.
        input.gateways.push(gw(
            SECRET,
            "edge",
            json!({"servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}]}),
        ));
    }
    if hidden {
        input.hidden_namespaces.insert(SECRET.into());
    }
    input
}

#[test]
fn references_into_a_hidden_namespace_read_the_same_whether_or_not_the_target_exists() {
    let with = validate_namespace(NS, &input(true, true));
    let without = validate_namespace(NS, &input(false, true));
    assert_eq!(
        serde_json::to_value(&with).unwrap(),
        serde_json::to_value(&without).unwrap(),
        "the answer tells whether payments holds the objects"
    );
    let v = serde_json::to_value(&with).unwrap();
    let vs = &v[NS]["virtualservice"]["to-payments"];
    let unverified = |checks: &serde_json::Value| -> Vec<String> {
        checks
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["severity"] == "info")
            .map(|c| c["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        unverified(&vs["checks"]),
        [
            "spec/http[0]/route[0]/destination/host",
            "spec/gateways[0]",
            "spec/http[0]/route[0]/destination"
        ],
        "{vs}"
    );
    assert!(
        vs["checks"].as_array().unwrap().iter().all(|c| c["severity"] == "info"
            || !c["path"].as_str().unwrap().contains("destination")
                && !c["path"].as_str().unwrap().contains("gateways")),
        "{vs}"
    );
    let dr = &v[NS]["destinationrule"]["ledger"];
    assert_eq!(
        dr["checks"],
        json!([{"message": catalog::UNVERIFIABLE.message, "severity": "info", "path": "spec/host"}])
    );
    assert_eq!(dr["valid"], true, "an info check leaves the object valid");
    // bookinfo's gateway gets no multimatch from the hidden one.
    assert_eq!(v[NS]["gateway"]["bookinfo-gateway"]["checks"], json!([]));
}

#[test]
fn visible_namespaces_are_checked_as_before() {
    // Visible and present: no finding on these references.
    let v = serde_json::to_value(validate_namespace(NS, &input(true, false))).unwrap();
    let dr = &v[NS]["destinationrule"]["ledger"];
    assert_eq!(dr["checks"], json!([]), "{dr}");
    // Visible and absent: errors, as a caller who may list the namespace may learn.
    let v = serde_json::to_value(validate_namespace(NS, &input(false, false))).unwrap();
    let vs = &v[NS]["virtualservice"]["to-payments"];
    let keys: Vec<&str> =
        vs["checks"].as_array().unwrap().iter().map(|c| c["message"].as_str().unwrap()).collect();
    assert!(keys.contains(&catalog::VS_HOST_NOT_FOUND.message), "{vs}");
    assert!(keys.contains(&catalog::VS_NO_GATEWAY.message), "{vs}");
    assert_eq!(v[NS]["destinationrule"]["ledger"]["valid"], false);
}
