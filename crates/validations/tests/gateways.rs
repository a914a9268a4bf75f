//! Gateway multi-match across namespaces: fires and near misses.

mod common;

use common::*;
use meshlens_validations::{ObjectKind, validate_namespace};
use serde_json::{Value, json};

const GW: ObjectKind = ObjectKind::Gateway;

fn server(port: u64, hosts: &[&str]) -> Value {
    json!({"port": {"number": port, "name": "p", "protocol": "HTTP"}, "hosts": hosts})
}

#[test]
fn multimatch_fires_across_namespaces_on_each_shared_host() {
    let mut input = world(vec![gw(
        NS,
        "second",
        json!({"servers": [server(443, &["a.com"]), server(80, &["b.com", "c.com"])]}),
    )]);
    // A gateway of another namespace on the same port: only given in `gateways`.
    input.gateways.push(gw("istio-system", "edge", json!({"servers": [server(80, &["*.com"])]})));
    let v = validation(&input, GW, "second");
    assert_checks(
        &v,
        &[
            ("gateways.multimatch", "spec/servers[1]/hosts[0]"),
            ("gateways.multimatch", "spec/servers[1]/hosts[1]"),
        ],
    );
    assert!(v.valid);
    assert_eq!(v.checks[0].message, "More than one Gateway for the same host port combination");
    // bookinfo-gateway serves `*` on port 80: it clashes with both.
    assert_checks(
        &validation(&input, GW, "bookinfo-gateway"),
        &[("gateways.multimatch", "spec/servers[0]/hosts[0]")],
    );
    // The other namespace's gateway is reported in its own namespace only.
    let out = validate_namespace(NS, &input);
    assert!(out[NS]["gateway"].keys().all(|n| n != "edge"));
    let other = validate_namespace("istio-system", &input);
    assert_eq!(other["istio-system"].len(), 1);
    assert_checks(
        &other["istio-system"]["gateway"]["edge"],
        &[("gateways.multimatch", "spec/servers[0]/hosts[0]")],
    );
}

#[test]
fn multimatch_near_miss_other_ports_other_hosts_and_one_gateway_repeating_itself() {
    let mut input = world(vec![gw(
        NS,
        "second",
        json!({"servers": [server(443, &["a.com"]), server(8080, &["a.com", "*.a.com"]), server(8080, &["a.com"])]}),
    )]);
    input.gateways.push(gw(
        "istio-system",
        "edge",
        json!({"servers": [server(443, &["b.com", "*.b.a.com.org"])]}),
    ));
    input.objects.push(gw(NS, "third", json!({"servers": [server(9000, &["x.a.com"])]})));
    for name in ["second", "bookinfo-gateway", "third"] {
        assert_checks(&validation(&input, GW, name), &[]);
    }
}

#[test]
fn multimatch_reads_namespace_qualified_hosts() {
    let input = world(vec![
        gw(NS, "second", json!({"servers": [server(81, &["./reviews.example.com"])]})),
        gw(NS, "third", json!({"servers": [server(81, &["bookinfo/reviews.example.com"])]})),
    ]);
    for name in ["second", "third"] {
        assert_checks(
            &validation(&input, GW, name),
            &[("gateways.multimatch", "spec/servers[0]/hosts[0]")],
        );
    }
}
