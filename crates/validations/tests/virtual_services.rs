//! VirtualService checks: one fixture that fires each, one near miss that must not.

mod common;

use common::*;
use meshlens_validations::{ObjectKind, Severity};
use serde_json::{Value, json};

const VS: ObjectKind = ObjectKind::VirtualService;

/// A DestinationRule defining reviews v1..v3, so that subset references resolve.
fn reviews_dr() -> meshlens_validations::MeshObject {
    dr(
        "reviews",
        json!({"host": "reviews", "subsets": [
            {"name": "v1", "labels": {"version": "v1"}},
            {"name": "v2", "labels": {"version": "v2"}},
            {"name": "v3", "labels": {"version": "v3"}}]}),
    )
}

/// A VirtualService for `reviews` with one http route of the given (subset, weight) pairs.
fn weighted(weights: &[(&str, Value)]) -> Value {
    let route: Vec<Value> = weights
        .iter()
        .map(|(subset, w)| {
            let mut d = json!({"destination": {"host": "reviews", "subset": subset}});
            if !w.is_null() {
                d["weight"] = w.clone();
            }
            d
        })
        .collect();
    json!({"hosts": ["reviews"], "http": [{"route": route}]})
}

fn check_vs(spec: Value, expected: &[(&str, &str)]) -> meshlens_validations::Validation {
    let input = world(vec![reviews_dr(), vs("v", spec)]);
    let v = validation(&input, VS, "v");
    assert_checks(&v, expected);
    v
}

#[test]
fn nogateway_fires_on_the_first_missing_gateway() {
    let v = check_vs(
        json!({"hosts": ["reviews"], "gateways": ["mesh", "nowhere", "also-missing"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]}),
        &[("virtualservices.nogateway", "spec/gateways[1]")],
    );
    assert_eq!(v.checks[0].message, "VirtualService is pointing to a non-existent gateway");
    assert!(!v.valid);
}

#[test]
fn nogateway_fires_for_a_gateway_of_another_namespace_named_short() {
    // A short name means the VirtualService's own namespace.
    let mut input = world(vec![vs(
        "v",
        json!({"hosts": ["reviews"], "gateways": ["edge"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]}),
    )]);
    input.gateways.push(gw("istio-system", "edge", json!({"servers": []})));
    assert_checks(
        &validation(&input, VS, "v"),
        &[("virtualservices.nogateway", "spec/gateways[0]")],
    );
}

#[test]
fn nogateway_near_miss_reserved_mesh_and_known_gateways() {
    let mut input = world(vec![vs(
        "v",
        json!({"hosts": ["*"], "gateways": ["mesh", "bookinfo-gateway", "istio-system/edge", "edge.istio-system.svc.cluster.local"],
               "http": [{"route": [{"destination": {"host": "productpage", "port": {"number": 9080}}}]}]}),
    )]);
    input.gateways.push(gw("istio-system", "edge", json!({"servers": []})));
    assert_checks(&validation(&input, VS, "v"), &[]);
}

#[test]
fn hostnotfound_points_at_the_destination_host() {
    let v = check_vs(
        json!({"hosts": ["reviews"], "http": [
            {"route": [{"destination": {"host": "reviews"}}]},
            {"route": [{"destination": {"host": "nope"}}]}],
            "tcp": [{"route": [{"destination": {"host": "reviews.other.svc.cluster.local"}}]}]}),
        &[
            ("virtualservices.nohost.hostnotfound", "spec/http[1]/route[0]/destination/host"),
            ("virtualservices.nohost.hostnotfound", "spec/tcp[0]/route[0]/destination/host"),
        ],
    );
    assert_eq!(
        v.checks[0].message,
        "DestinationWeight on route doesn't have a valid service (host not found)"
    );
}

#[test]
fn hostnotfound_near_miss_host_forms_and_service_entry_hosts() {
    let input = world(vec![
        obj(ObjectKind::ServiceEntry, NS, "books", json!({"hosts": ["api.books.example.com"]})),
        vs(
            "v",
            json!({"hosts": ["reviews"], "http": [{"route": [
                {"destination": {"host": "reviews"}, "weight": 25},
                {"destination": {"host": "ratings.bookinfo"}, "weight": 25},
                {"destination": {"host": "productpage.bookinfo.svc.cluster.local"}, "weight": 25},
                {"destination": {"host": "api.books.example.com"}, "weight": 25}]}]}),
        ),
    ]);
    assert_checks(&validation(&input, VS, "v"), &[]);
}

#[test]
fn invalidprotocol_fires_without_http_tcp_or_tls() {
    let v =
        check_vs(json!({"hosts": ["reviews"]}), &[("virtualservices.nohost.invalidprotocol", "")]);
    assert_eq!(v.checks[0].message, "VirtualService doesn't define any valid route protocol");
}

#[test]
fn invalidprotocol_near_miss_tls_only() {
    check_vs(
        json!({"hosts": ["reviews"], "tls": [{"match": [{"port": 443, "sniHosts": ["reviews"]}], "route": [{"destination": {"host": "reviews"}}]}]}),
        &[],
    );
}

#[test]
fn numericweight_keeps_the_raw_value_in_the_path() {
    let v = check_vs(
        weighted(&[("v1", json!(50)), ("v2", json!("half")), ("v3", json!(50))]),
        &[("virtualservices.route.numericweight", "spec/http[0]/route[1]/weight/half")],
    );
    assert_eq!(v.checks[0].message, "Weight must be a number");
}

#[test]
fn numericweight_near_miss_whole_float_weights() {
    check_vs(weighted(&[("v1", json!(50.0)), ("v2", json!(50))]), &[]);
}

#[test]
fn weightrange_fires_below_zero_and_above_one_hundred() {
    // 150 + -50 sums to 100: only the range is wrong.
    let v = check_vs(
        weighted(&[("v1", json!(150)), ("v2", json!(-50))]),
        &[
            ("virtualservices.route.weightrange", "spec/http[0]/route[0]/weight/150"),
            ("virtualservices.route.weightrange", "spec/http[0]/route[1]/weight/-50"),
        ],
    );
    assert_eq!(v.checks[0].message, "Weight should be between 0 and 100");
}

#[test]
fn weightrange_near_miss_bounds_are_inclusive() {
    check_vs(weighted(&[("v1", json!(100)), ("v2", json!(0))]), &[]);
}

#[test]
fn weightsum_fires_when_weights_miss_one_hundred() {
    let v = check_vs(
        weighted(&[("v1", json!(70)), ("v2", json!(20))]),
        &[("virtualservices.route.weightsum", "spec/http[0]/route")],
    );
    assert_eq!(v.checks[0].message, "Weight sum should be 100");
    assert_eq!(v.checks[0].severity, Severity::Error);
    assert!(!v.valid);
}

#[test]
fn weightsum_near_miss_three_weights_adding_up() {
    check_vs(weighted(&[("v1", json!(50)), ("v2", json!(30)), ("v3", json!(20))]), &[]);
}

#[test]
fn allweightspresent_warns_when_a_short_sum_leaves_a_destination_unweighted() {
    let v = check_vs(
        json!({"hosts": ["reviews"], "http": [
            {"route": [{"destination": {"host": "reviews", "subset": "v1"}}]},
            {"route": [{"destination": {"host": "reviews", "subset": "v1"}, "weight": 60},
                       {"destination": {"host": "reviews", "subset": "v2"}}]}]}),
        &[
            ("virtualservices.route.weightsum", "spec/http[1]/route"),
            ("virtualservices.route.allweightspresent", "spec/http[1]/route"),
        ],
    );
    assert_eq!(v.checks[1].severity, Severity::Warning);
    assert_eq!(v.checks[1].message, "All routes should have weight");
}

#[test]
fn allweightspresent_near_miss_sum_of_one_hundred_with_one_weight_missing_is_valid() {
    let v = check_vs(weighted(&[("v1", json!(100)), ("v2", Value::Null)]), &[]);
    assert!(v.valid);
}

#[test]
fn singlehost_warns_each_vs_without_gateways_sharing_a_host() {
    let input = world(vec![
        vs(
            "a",
            json!({"hosts": ["reviews"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]}),
        ),
        vs(
            "b",
            json!({"hosts": ["reviews.bookinfo.svc.cluster.local"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]}),
        ),
        vs(
            "c",
            json!({"hosts": ["reviews"], "gateways": ["bookinfo-gateway"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]}),
        ),
    ]);
    for name in ["a", "b"] {
        let v = validation(&input, VS, name);
        assert_checks(&v, &[("virtualservices.singlehost", "spec/hosts")]);
        assert!(v.valid);
        assert_eq!(v.checks[0].message, "More than one Virtual Service for same host");
    }
    assert_checks(&validation(&input, VS, "c"), &[]);
}

#[test]
fn singlehost_warns_a_namespace_wildcard_beside_other_hosts() {
    let input = world(vec![
        vs(
            "all",
            json!({"hosts": ["*.bookinfo.svc.cluster.local"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]}),
        ),
        vs(
            "ratings",
            json!({"hosts": ["ratings"], "http": [{"route": [{"destination": {"host": "ratings"}}]}]}),
        ),
    ]);
    for name in ["all", "ratings"] {
        assert_checks(
            &validation(&input, VS, name),
            &[("virtualservices.singlehost", "spec/hosts")],
        );
    }
}

#[test]
fn singlehost_near_miss_distinct_hosts_and_the_gateway_wildcard() {
    let input = world(vec![
        vs(
            "bookinfo",
            json!({"hosts": ["*"], "gateways": ["bookinfo-gateway"], "http": [{"route": [{"destination": {"host": "productpage"}}]}]}),
        ),
        vs(
            "reviews",
            json!({"hosts": ["reviews", "reviews.bookinfo"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]}),
        ),
        vs(
            "ratings",
            json!({"hosts": ["ratings"], "http": [{"route": [{"destination": {"host": "ratings"}}]}]}),
        ),
    ]);
    for name in ["bookinfo", "reviews", "ratings"] {
        assert_checks(&validation(&input, VS, name), &[]);
    }
}

#[test]
fn destinationmandatory_fires_for_a_route_entry_without_destination() {
    let v = check_vs(
        json!({"hosts": ["reviews"], "http": [{"route": [{"destination": {"host": "reviews"}, "weight": 100}]},
                                                {"route": [{"weight": 100}]}]}),
        &[("virtualservices.subsetpresent.destinationmandatory", "spec/http[1]/route[0]")],
    );
    assert_eq!(v.checks[0].message, "Destination field is mandatory");
    assert!(!v.valid);
}

#[test]
fn subsetnotfound_warns_on_the_destination() {
    let v = check_vs(
        weighted(&[("v1", json!(50)), ("v9", json!(50))]),
        &[("virtualservices.subsetpresent.subsetnotfound", "spec/http[0]/route[1]/destination")],
    );
    assert!(v.valid, "a missing subset is a warning");
    assert_eq!(v.checks[0].message, "Subset not found");
}

#[test]
fn subsetnotfound_fires_when_the_rule_is_for_another_host() {
    let input = world(vec![
        reviews_dr(),
        vs(
            "v",
            json!({"hosts": ["ratings"], "tcp": [{"route": [{"destination": {"host": "ratings", "subset": "v1"}}]}]}),
        ),
    ]);
    assert_checks(
        &validation(&input, VS, "v"),
        &[("virtualservices.subsetpresent.subsetnotfound", "spec/tcp[0]/route[0]/destination")],
    );
}

#[test]
fn subsetnotfound_near_miss_subset_defined_under_another_host_form() {
    let input = world(vec![
        reviews_dr(),
        vs(
            "v",
            json!({"hosts": ["reviews"], "http": [{"route": [{"destination": {"host": "reviews.bookinfo.svc.cluster.local", "subset": "v3"}}]}]}),
        ),
    ]);
    assert_checks(&validation(&input, VS, "v"), &[]);
}

#[test]
fn checks_of_several_checkers_merge_on_one_object() {
    let v = check_vs(
        json!({"hosts": ["reviews"], "gateways": ["missing"], "http": [{"route": [
            {"destination": {"host": "nope", "subset": "v9"}, "weight": 90}]}]}),
        &[
            ("virtualservices.nohost.hostnotfound", "spec/http[0]/route[0]/destination/host"),
            ("virtualservices.nogateway", "spec/gateways[0]"),
            ("virtualservices.route.weightsum", "spec/http[0]/route"),
            ("virtualservices.subsetpresent.subsetnotfound", "spec/http[0]/route[0]/destination"),
        ],
    );
    assert!(!v.valid);
}
