//! Gateway API checks: Gateways (Kiali v2.0.0's `business/checkers/k8sgateway_checker.go`,
//! `k8sgateways/multi_match_checker.go`), HTTPRoutes and GRPCRoutes
//! (`k8shttproute_checker.go`, `k8sgrpcroute_checker.go`, `k8shttproutes/` and
//! `k8sgrpcroutes/`: `no_k8sgateway_checker.go`, `no_host_checker.go`) and ReferenceGrants
//! (`k8sreferencegrants/namespace_checker.go`). The CRDs' defaults apply: a parentRef
//! without group and kind is a Gateway, a backendRef without kind a Service, a listener
//! without `allowedRoutes` admits routes of its own namespace only.

use std::collections::HashMap;

use serde_json::Value;

use super::{GroupCheck, KindCheckers, SingleCheck};
use crate::catalog::{
    K8SGW_MULTI_MATCH, K8SGW_UNIQUE_LISTENER, REFGRANT_NAMESPACE_NOT_FOUND, ROUTE_NO_GATEWAY,
    ROUTE_NO_SERVICE,
};
use crate::index::Index;
use crate::model::{Check, MeshObject, ObjectKind};
use crate::spec::{arr, labels, str_at};

const GROUP: &str = "gateway.networking.k8s.io";

pub(crate) struct K8sGateways;

impl KindCheckers for K8sGateways {
    const KIND: ObjectKind = ObjectKind::K8sGateway;
    const SINGLE: &'static [SingleCheck] = &[unique_listener_names];
    const GROUP: &'static [GroupCheck] = &[multi_match];
}

pub(crate) struct K8sHTTPRoutes;

impl KindCheckers for K8sHTTPRoutes {
    const KIND: ObjectKind = ObjectKind::K8sHTTPRoute;
    const SINGLE: &'static [SingleCheck] = &[parent_gateways, backend_services];
    const GROUP: &'static [GroupCheck] = &[];
}

pub(crate) struct K8sGRPCRoutes;

impl KindCheckers for K8sGRPCRoutes {
    const KIND: ObjectKind = ObjectKind::K8sGRPCRoute;
    const SINGLE: &'static [SingleCheck] = &[parent_gateways, backend_services];
    const GROUP: &'static [GroupCheck] = &[];
}

pub(crate) struct K8sReferenceGrants;

impl KindCheckers for K8sReferenceGrants {
    const KIND: ObjectKind = ObjectKind::K8sReferenceGrant;
    const SINGLE: &'static [SingleCheck] = &[from_namespaces];
    const GROUP: &'static [GroupCheck] = &[];
}

/// KIA1503 on every listener whose name another listener of the Gateway repeats. (Kiali's
/// multi-match checker raises this code for listeners of one Gateway that share hostname,
/// port and protocol under different names; the issue defines it by name, which the CRD
/// requires to be unique.)
fn unique_listener_names(o: &MeshObject, _idx: &Index<'_>, out: &mut Vec<Check>) {
    let listeners = arr(&o.spec, "listeners");
    let mut count: HashMap<&str, usize> = HashMap::new();
    for l in listeners {
        if let Some(n) = str_at(l, "name") {
            *count.entry(n).or_default() += 1;
        }
    }
    for (i, l) in listeners.iter().enumerate() {
        if str_at(l, "name").is_some_and(|n| count[n] > 1) {
            out.push(K8SGW_UNIQUE_LISTENER.at(format!("spec/listeners[{i}]/name")));
        }
    }
}

/// A listener's (hostname, port, protocol).
type ListenerKey<'a> = (&'a str, u64, &'a str);

/// The key of a listener; listeners without hostname never clash.
fn listener_key(l: &Value) -> Option<ListenerKey<'_>> {
    Some((str_at(l, "hostname")?, l.get("port")?.as_u64()?, str_at(l, "protocol").unwrap_or("")))
}

/// KIA1501: a listener whose hostname, port and protocol another Gateway (of any
/// namespace) also has.
fn multi_match(ns: &str, idx: &Index<'_>, report: &mut dyn FnMut(&MeshObject, Check)) {
    // Each key's Gateways, as (namespace, name).
    let mut owners: HashMap<ListenerKey<'_>, Vec<(&str, &str)>> = HashMap::new();
    for g in &idx.all_k8s_gateways {
        for l in arr(&g.spec, "listeners") {
            if let Some(k) = listener_key(l) {
                let id = (g.namespace.as_str(), g.name.as_str());
                let ids = owners.entry(k).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    for g in idx.objects(ObjectKind::K8sGateway, ns) {
        for (i, l) in arr(&g.spec, "listeners").iter().enumerate() {
            let Some(k) = listener_key(l) else { continue };
            if owners.get(&k).is_some_and(|ids| ids.len() > 1) {
                report(g, K8SGW_MULTI_MATCH.at(format!("spec/listeners[{i}]/hostname")));
            }
        }
    }
}

/// Whether a listener of `gw` admits routes of namespace `route_ns` from another namespace
/// (`allowedRoutes.namespaces.from`: `All`, or `Selector` whose `matchLabels` the
/// namespace's labels carry; the default `Same` does not). As in Kiali's
/// `IsGatewaySharedWithNS`, a selector's `matchExpressions` are not read.
fn admits(gw: &MeshObject, route_ns: &str, idx: &Index<'_>) -> bool {
    arr(&gw.spec, "listeners").iter().any(|l| {
        let nss = l.get("allowedRoutes").and_then(|a| a.get("namespaces"));
        match nss.and_then(|n| str_at(n, "from")).unwrap_or("Same") {
            "All" => true,
            "Selector" => {
                let wanted = nss
                    .and_then(|n| n.get("selector"))
                    .and_then(|s| s.get("matchLabels"))
                    .and_then(labels)
                    .unwrap_or_default();
                idx.namespace_labels(route_ns)
                    .is_some_and(|have| wanted.iter().all(|(k, v)| have.get(k) == Some(v)))
            }
            _ => false,
        }
    })
}

/// KIA1401: a parentRef to a Gateway that does not exist, or that lives in another
/// namespace and admits no route from this one.
fn parent_gateways(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    for (p, parent) in arr(&o.spec, "parentRefs").iter().enumerate() {
        let group = str_at(parent, "group").unwrap_or(GROUP);
        let kind = str_at(parent, "kind").unwrap_or("Gateway");
        let Some(name) = str_at(parent, "name").filter(|n| !n.is_empty()) else { continue };
        if group != GROUP || kind != "Gateway" {
            continue;
        }
        let ns = str_at(parent, "namespace").filter(|n| !n.is_empty()).unwrap_or(&o.namespace);
        let ok = idx
            .k8s_gateway(ns, name)
            .is_some_and(|gw| ns == o.namespace || admits(gw, &o.namespace, idx));
        if !ok {
            out.push(ROUTE_NO_GATEWAY.at(format!("spec/parentRefs[{p}]/name/{name}")));
        }
    }
}

/// Whether a ReferenceGrant of namespace `to_ns` lets routes of `kind` in `from_ns` refer to
/// the Service `name`. Every `from` and `to` entry counts, and a `to` with a name grants
/// that Service only (Kiali's `kubernetes/host.go` HasMatchingReferenceGrant reads the first
/// entry of each and ignores the name).
fn granted(idx: &Index<'_>, from_ns: &str, kind: &str, to_ns: &str, name: &str) -> bool {
    idx.objects(ObjectKind::K8sReferenceGrant, to_ns).iter().any(|g| {
        let from_ok = arr(&g.spec, "from").iter().any(|f| {
            str_at(f, "group") == Some(GROUP)
                && str_at(f, "kind") == Some(kind)
                && str_at(f, "namespace") == Some(from_ns)
        });
        let to_ok = arr(&g.spec, "to").iter().any(|t| {
            str_at(t, "group").unwrap_or("").is_empty()
                && str_at(t, "kind") == Some("Service")
                && str_at(t, "name").is_none_or(|n| n.is_empty() || n == name)
        });
        from_ok && to_ok
    })
}

/// KIA1402: a backendRef to a Service that does not exist, or that lives in another
/// namespace without a ReferenceGrant there for this route kind. Names with a dot are
/// refused, as in Kiali (a backend names a Service, not a host).
fn backend_services(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    let route_kind = if o.kind == ObjectKind::K8sGRPCRoute { "GRPCRoute" } else { "HTTPRoute" };
    for (r, rule) in arr(&o.spec, "rules").iter().enumerate() {
        for (b, backend) in arr(rule, "backendRefs").iter().enumerate() {
            let group = str_at(backend, "group").unwrap_or("");
            let kind = str_at(backend, "kind").unwrap_or("Service");
            if !group.is_empty() || kind != "Service" {
                continue;
            }
            let name = str_at(backend, "name").unwrap_or("");
            let ns = str_at(backend, "namespace").filter(|n| !n.is_empty()).unwrap_or(&o.namespace);
            let ok = !name.contains('.')
                && idx.service(ns, name).is_some()
                && (ns == o.namespace || granted(idx, &o.namespace, route_kind, ns, name));
            if !ok {
                out.push(ROUTE_NO_SERVICE.at(format!("spec/rules[{r}]/backendRefs[{b}]/name")));
            }
        }
    }
}

/// KIA1601: a `from` namespace that does not exist.
fn from_namespaces(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    for (f, from) in arr(&o.spec, "from").iter().enumerate() {
        if !str_at(from, "namespace").is_some_and(|ns| idx.has_namespace(ns)) {
            out.push(REFGRANT_NAMESPACE_NOT_FOUND.at(format!("spec/from[{f}]/namespace")));
        }
    }
}
