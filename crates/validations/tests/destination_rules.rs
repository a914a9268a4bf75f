//! DestinationRule checks: one fixture that fires each, one near miss that must not.

mod common;

use common::*;
use meshlens_validations::{ObjectKind, Severity};
use serde_json::json;

const DR: ObjectKind = ObjectKind::DestinationRule;

fn subsets(names: &[&str]) -> serde_json::Value {
    json!(names.iter().map(|n| json!({"name": n, "labels": {"version": n}})).collect::<Vec<_>>())
}

#[test]
fn multimatch_fires_on_both_rules_for_one_host_and_subset() {
    let input = world(vec![
        dr("a", json!({"host": "reviews", "subsets": subsets(&["v1", "v2"])})),
        dr("b", json!({"host": "reviews.bookinfo.svc.cluster.local", "subsets": subsets(&["v2"])})),
    ]);
    for name in ["a", "b"] {
        let v = validation(&input, DR, name);
        assert_checks(&v, &[("destinationrules.multimatch", "spec/host")]);
        assert!(v.valid, "a warning keeps the rule valid");
        assert_eq!(v.checks[0].severity, Severity::Warning);
        assert_eq!(
            v.checks[0].message,
            "More than one DestinationRules for the same host subset combination"
        );
    }
}

#[test]
fn multimatch_counts_a_rule_without_subsets_and_a_wildcard_host_as_covering_all() {
    let input = world(vec![
        dr("whole", json!({"host": "ratings"})),
        dr("v1", json!({"host": "ratings", "subsets": subsets(&["v1"])})),
        dr("wild", json!({"host": "*.bookinfo.svc.cluster.local", "subsets": subsets(&["v3"])})),
        dr("reviews-v3", json!({"host": "reviews", "subsets": subsets(&["v3"])})),
    ]);
    for name in ["whole", "v1", "wild", "reviews-v3"] {
        assert_checks(
            &validation(&input, DR, name),
            &[("destinationrules.multimatch", "spec/host")],
        );
    }
}

#[test]
fn multimatch_near_miss_distinct_subsets_or_hosts() {
    let input = world(vec![
        dr("a", json!({"host": "reviews", "subsets": subsets(&["v1"])})),
        dr("b", json!({"host": "reviews", "subsets": subsets(&["v2", "v3"])})),
        dr("c", json!({"host": "ratings", "subsets": subsets(&["v1"])})),
    ]);
    for name in ["a", "b", "c"] {
        assert_checks(&validation(&input, DR, name), &[]);
    }
}

#[test]
fn no_matching_workload_fires_for_an_unknown_host() {
    let input = world(vec![dr("ghost", json!({"host": "ghost"}))]);
    let v = validation(&input, DR, "ghost");
    assert_checks(&v, &[("destinationrules.nodest.matchingworkload", "spec/host")]);
    assert!(!v.valid);
    assert_eq!(v.checks[0].message, "This host has no matching workloads");
}

#[test]
fn no_matching_workload_fires_for_a_service_of_another_namespace() {
    let input = world(vec![dr("elsewhere", json!({"host": "reviews.other.svc.cluster.local"}))]);
    assert_checks(
        &validation(&input, DR, "elsewhere"),
        &[("destinationrules.nodest.matchingworkload", "spec/host")],
    );
}

#[test]
fn no_matching_workload_near_miss_every_host_form_and_service_entries() {
    let hosts = [
        "reviews",
        "reviews.bookinfo",
        "reviews.bookinfo.svc",
        "reviews.bookinfo.svc.cluster.local",
        "api.books.example.com",
        "x.wild.example.com",
        "*",
        "batch",
    ];
    for host in hosts {
        let mut input = world(vec![
            dr("r", json!({"host": host})),
            obj(
                ObjectKind::ServiceEntry,
                NS,
                "books",
                json!({"hosts": ["api.books.example.com", "*.wild.example.com"], "location": "MESH_EXTERNAL"}),
            ),
        ]);
        // A workload whose app has no Service still counts.
        input.workloads.push(meshlens_validations::WorkloadInfo {
            namespace: NS.into(),
            name: "batch".into(),
            labels: labels(&[("app", "batch")]),
        });
        let v = validation(&input, DR, "r");
        assert_checks(&v, &[]);
        // The ServiceEntry is reported too, clean.
        assert_checks(&validation(&input, ObjectKind::ServiceEntry, "books"), &[]);
    }
}

#[test]
fn subset_labels_fires_for_a_subset_no_workload_carries() {
    let input = world(vec![dr(
        "reviews",
        json!({"host": "reviews", "subsets": subsets(&["v1", "v9", "v2"])}),
    )]);
    let v = validation(&input, DR, "reviews");
    assert_checks(&v, &[("destinationrules.nodest.subsetlabels", "spec/subsets[1]")]);
    assert_eq!(v.checks[0].message, "This subset's labels are not found from any matching host");
}

#[test]
fn subset_labels_near_miss_scaled_to_zero_workload_and_subset_without_labels() {
    let input = world(vec![dr(
        "ratings",
        json!({"host": "ratings", "trafficPolicy": {"connectionPool": {"tcp": {"maxConnections": 1}}},
               "subsets": [{"name": "v1", "labels": {"version": "v1"}}, {"name": "v2", "labels": {"version": "v2", "app": "ratings"}}, {"name": "any"}]}),
    )]);
    assert_checks(&validation(&input, DR, "ratings"), &[]);
}

#[test]
fn subset_labels_must_all_be_on_one_workload_of_that_app() {
    // productpage-v1 has version v1, but it is not a reviews workload; the label pair
    // (version v1, app productpage) is on no reviews workload.
    let input = world(vec![dr(
        "reviews",
        json!({"host": "reviews", "subsets": [{"name": "x", "labels": {"version": "v1", "app": "productpage"}}]}),
    )]);
    assert_checks(
        &validation(&input, DR, "reviews"),
        &[("destinationrules.nodest.subsetlabels", "spec/subsets[0]")],
    );
}
