//! VirtualService checks: gateways and destination hosts exist, route weights add up,
//! destinations and subsets are present, one VirtualService per host.

use std::collections::HashMap;

use plugin_api::mesh::parse_host;
use serde_json::Value;

use super::{GroupCheck, KindCheckers, SingleCheck};
use crate::catalog::*;
use crate::index::Index;
use crate::model::{Check, MeshObject, ObjectKind};
use crate::spec::{PROTOCOLS, arr, route_destinations, str_at};

pub(crate) struct VirtualServices;

impl KindCheckers for VirtualServices {
    const KIND: ObjectKind = ObjectKind::VirtualService;
    const SINGLE: &'static [SingleCheck] = &[no_host, no_gateway, route_weights, subset_presence];
    const GROUP: &'static [GroupCheck] = &[single_host];
}

/// Istio's reserved gateway name for the sidecars of the mesh; always valid.
const MESH_GATEWAY: &str = "mesh";

/// Every route destination host must be a Service or a ServiceEntry host; a
/// VirtualService needs at least one http, tcp or tls route.
fn no_host(vs: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    if PROTOCOLS.iter().all(|p| arr(&vs.spec, p).is_empty()) {
        out.push(VS_INVALID_PROTOCOL.at(""));
        return;
    }
    for rd in route_destinations(&vs.spec) {
        let Some(host) = rd.entry.get("destination").and_then(|d| str_at(d, "host")) else {
            continue;
        };
        if !host_exists(host, &vs.namespace, idx) {
            let path = format!("spec/{}[{}]/route[{}]/destination/host", rd.proto, rd.r, rd.d);
            let p = parse_host(host, &vs.namespace, idx.domain);
            let rule = if p.internal && idx.hidden(&p.namespace) {
                UNVERIFIABLE
            } else {
                VS_HOST_NOT_FOUND
            };
            out.push(rule.at(path));
        }
    }
}

fn host_exists(host: &str, ns: &str, idx: &Index<'_>) -> bool {
    if idx.has_service_entry(host) {
        return true;
    }
    let p = parse_host(host, ns, idx.domain);
    p.internal && (p.service == "*" || idx.service(&p.namespace, &p.service).is_some())
}

/// A gateway reference: `ns/name`, `name.ns[.svc...]`, or `name` in the VirtualService's
/// own namespace.
pub(crate) fn gateway_ref<'a>(reference: &'a str, vs_ns: &'a str) -> (&'a str, &'a str) {
    if let Some((ns, name)) = reference.split_once('/') {
        return (if ns == "." { vs_ns } else { ns }, name);
    }
    let mut parts = reference.split('.');
    match (parts.next(), parts.next()) {
        (Some(name), Some(ns)) => (ns, name),
        _ => (vs_ns, reference),
    }
}

/// Every gateway named in `spec.gateways` must exist; the first missing one is reported.
fn no_gateway(vs: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    for (i, g) in arr(&vs.spec, "gateways").iter().enumerate() {
        let Some(reference) = g.as_str() else { continue };
        if reference == MESH_GATEWAY {
            continue;
        }
        let (ns, name) = gateway_ref(reference, &vs.namespace);
        if idx.hidden(ns) {
            out.push(UNVERIFIABLE.at(format!("spec/gateways[{i}]")));
            continue;
        }
        if !idx.has_gateway(ns, name) {
            out.push(VS_NO_GATEWAY.at(format!("spec/gateways[{i}]")));
            return;
        }
    }
}

/// A weight as an integer, or its raw text when it is not one.
fn weight_value(w: &Value) -> Result<i64, String> {
    match w {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15).map(|f| f as i64))
            .ok_or_else(|| n.to_string()),
        Value::String(s) => s.trim().parse().map_err(|_| s.clone()),
        other => Err(other.to_string()),
    }
}

/// Per route: weights are integers in 0..=100; when any destination has a weight they sum
/// to 100, and if they do not, every destination should have one.
fn route_weights(vs: &MeshObject, _idx: &Index<'_>, out: &mut Vec<Check>) {
    for proto in PROTOCOLS {
        for (r, route) in arr(&vs.spec, proto).iter().enumerate() {
            let dests = arr(route, "route");
            let (mut count, mut sum) = (0usize, 0i64);
            for (d, dest) in dests.iter().enumerate() {
                let Some(w) = dest.get("weight").filter(|w| !w.is_null()) else { continue };
                count += 1;
                match weight_value(w) {
                    Ok(n) => {
                        if !(0..=100).contains(&n) {
                            out.push(
                                VS_WEIGHT_RANGE
                                    .at(format!("spec/{proto}[{r}]/route[{d}]/weight/{n}")),
                            );
                        }
                        sum = sum.saturating_add(n);
                    }
                    Err(raw) => out.push(
                        VS_NUMERIC_WEIGHT.at(format!("spec/{proto}[{r}]/route[{d}]/weight/{raw}")),
                    ),
                }
            }
            if count > 0 && sum != 100 {
                out.push(VS_WEIGHT_SUM.at(format!("spec/{proto}[{r}]/route")));
                if count < dests.len() {
                    out.push(VS_ALL_WEIGHTS.at(format!("spec/{proto}[{r}]/route")));
                }
            }
        }
    }
}

/// Every route entry has a destination; a destination's subset is defined, with labels,
/// by a DestinationRule of its host.
fn subset_presence(vs: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    for rd in route_destinations(&vs.spec) {
        let Some(dest) = rd.entry.get("destination").filter(|d| !d.is_null()) else {
            out.push(
                VS_DESTINATION_MANDATORY.at(format!("spec/{}[{}]/route[{}]", rd.proto, rd.r, rd.d)),
            );
            continue;
        };
        let (Some(host), Some(subset)) = (str_at(dest, "host"), str_at(dest, "subset")) else {
            continue;
        };
        let key = idx.host_key(host, &vs.namespace);
        if idx.hidden(&key.1) {
            out.push(
                UNVERIFIABLE.at(format!("spec/{}[{}]/route[{}]/destination", rd.proto, rd.r, rd.d)),
            );
            continue;
        }
        let defined = idx.drs_for(&key).iter().any(|dr| {
            arr(&dr.spec, "subsets").iter().any(|s| {
                str_at(s, "name") == Some(subset) && s.get("labels").is_some_and(Value::is_object)
            })
        });
        if !defined {
            out.push(
                VS_SUBSET_NOT_FOUND
                    .at(format!("spec/{}[{}]/route[{}]/destination", rd.proto, rd.r, rd.d)),
            );
        }
    }
}

/// A host normalised for the one-VirtualService-per-host rule: (scope, namespace,
/// service), where scope separates `*`, cluster hosts and external hosts.
fn host_group(host: &str, ns: &str, domain: &str) -> (&'static str, String, String) {
    if host == "*" {
        return ("*", "*".into(), "*".into());
    }
    let p = parse_host(host, ns, domain);
    if p.internal {
        ("cluster", p.namespace, p.service)
    } else {
        ("external", String::new(), p.service)
    }
}

/// More than one VirtualService for a host, or a wildcard one beside other hosts of its
/// namespace, warns on each VirtualService that is not bound to gateways.
fn single_host(ns: &str, idx: &Index<'_>, report: &mut dyn FnMut(&MeshObject, Check)) {
    let vss = idx.objects(ObjectKind::VirtualService, ns);
    let mut by_host: HashMap<(&'static str, String, String), Vec<usize>> = HashMap::new();
    for (i, vs) in vss.iter().enumerate() {
        for host in arr(&vs.spec, "hosts").iter().filter_map(Value::as_str) {
            let list = by_host.entry(host_group(host, &vs.namespace, idx.domain)).or_default();
            if list.last() != Some(&i) {
                list.push(i);
            }
        }
    }
    // Per (scope, namespace): is there a `*` service, and how many distinct hosts.
    let mut namespaces: HashMap<(&'static str, &str), (bool, usize)> = HashMap::new();
    for (scope, hns, service) in by_host.keys() {
        let e = namespaces.entry((scope, hns.as_str())).or_default();
        e.0 |= service == "*";
        e.1 += 1;
    }
    let mut flagged = vec![false; vss.len()];
    for ((scope, hns, _), list) in &by_host {
        let (wildcard, hosts) = namespaces[&(*scope, hns.as_str())];
        if list.len() > 1 || (wildcard && hosts > 1) {
            for &i in list {
                flagged[i] = true;
            }
        }
    }
    for (vs, _) in vss.iter().zip(&flagged).filter(|(_, f)| **f) {
        if arr(&vs.spec, "gateways").is_empty() {
            report(vs, VS_SINGLE_HOST.at("spec/hosts"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_references() {
        assert_eq!(gateway_ref("gw", "bookinfo"), ("bookinfo", "gw"));
        assert_eq!(gateway_ref("istio-system/gw", "bookinfo"), ("istio-system", "gw"));
        assert_eq!(gateway_ref("./gw", "bookinfo"), ("bookinfo", "gw"));
        assert_eq!(gateway_ref("gw.other.svc.cluster.local", "bookinfo"), ("other", "gw"));
    }

    #[test]
    fn weights_read_as_go_would_print_them() {
        assert_eq!(weight_value(&serde_json::json!(50)), Ok(50));
        assert_eq!(weight_value(&serde_json::json!(50.0)), Ok(50));
        assert_eq!(weight_value(&serde_json::json!("30")), Ok(30));
        assert_eq!(weight_value(&serde_json::json!(1.5)), Err("1.5".into()));
        assert_eq!(weight_value(&serde_json::json!("abc")), Err("abc".into()));
    }
}
