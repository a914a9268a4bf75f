//! AuthorizationPolicy, PeerAuthentication and RequestAuthentication checks (Kiali v2.0.0's
//! `business/checkers/authorization_policies_checker.go`, `peer_authentication_checker.go`,
//! `request_authentication_checker.go` and the checkers they call), plus the selector
//! checks the Sidecar shares (`business/checkers/common/`).
//!
//! Out of scope on purpose: the checks that need the mesh config or ServiceAccounts
//! (KIA0105 principals, KIA0106 mTLS for principals and namespaces, KIA0501 mesh-wide
//! mTLS), since meshlens reads neither.

use std::collections::BTreeMap;

use plugin_api::mesh::parse_host;
use serde_json::Value;

use super::{GroupCheck, KindCheckers, SingleCheck};
use crate::catalog::{
    AP_HOST_NOT_FOUND, AP_NAMESPACE_NOT_FOUND, MULTI_SELECTOR, MULTI_SELECTORLESS,
    PA_DISABLE_DR_MISSING, Rule, SELECTOR_NO_WORKLOAD,
};
use crate::index::Index;
use crate::model::{Check, MeshObject, ObjectKind};
use crate::spec::{arr, labels, str_at};

pub(crate) struct AuthorizationPolicies;

impl KindCheckers for AuthorizationPolicies {
    const KIND: ObjectKind = ObjectKind::AuthorizationPolicy;
    const SINGLE: &'static [SingleCheck] = &[selector_matches, source_namespaces, operation_hosts];
    const GROUP: &'static [GroupCheck] = &[];
}

pub(crate) struct PeerAuthentications;

impl KindCheckers for PeerAuthentications {
    const KIND: ObjectKind = ObjectKind::PeerAuthentication;
    const SINGLE: &'static [SingleCheck] = &[selector_matches, disable_with_mutual_dr];
    const GROUP: &'static [GroupCheck] = &[pa_multi_match];
}

/// Kiali also runs its multi-match checker on RequestAuthentications (KIA0002); meshlens
/// checks their selector only, as the issue asks.
pub(crate) struct RequestAuthentications;

impl KindCheckers for RequestAuthentications {
    const KIND: ObjectKind = ObjectKind::RequestAuthentication;
    const SINGLE: &'static [SingleCheck] = &[selector_matches];
    const GROUP: &'static [GroupCheck] = &[];
}

/// The labels at `spec.<a>.<b>`, empty when absent.
pub(crate) fn selector_at(spec: &Value, a: &str, b: &str) -> BTreeMap<String, String> {
    spec.get(a).and_then(|s| s.get(b)).and_then(labels).unwrap_or_default()
}

/// Whether a workload of `ns` carries every label of `selector` (Kiali's
/// `common/workload_selector_checker.go`: selectors match the object's own namespace).
pub(crate) fn selects_a_workload(
    idx: &Index<'_>,
    ns: &str,
    selector: &BTreeMap<String, String>,
) -> bool {
    idx.workloads_in(ns).iter().any(|wl| selector.iter().all(|(k, v)| wl.get(k) == Some(v)))
}

/// KIA0004 on `spec/selector/matchLabels` (an empty selector selects every workload).
fn selector_matches(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    let selector = selector_at(&o.spec, "selector", "matchLabels");
    if !selector.is_empty() && !selects_a_workload(idx, &o.namespace, &selector) {
        out.push(SELECTOR_NO_WORKLOAD.at("spec/selector/matchLabels"));
    }
}

/// KIA0101 (`authorization/namespace_method_checker.go`): a source namespace that does not
/// exist. Unlike Kiali, values with a `*` (Istio's prefix and suffix matches) are skipped.
fn source_namespaces(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    for (r, rule) in arr(&o.spec, "rules").iter().enumerate() {
        for (f, from) in arr(rule, "from").iter().enumerate() {
            let Some(source) = from.get("source") else { continue };
            for (i, ns) in arr(source, "namespaces").iter().enumerate() {
                let Some(ns) = ns.as_str() else { continue };
                if !ns.contains('*') && !idx.has_namespace(ns) {
                    out.push(
                        AP_NAMESPACE_NOT_FOUND
                            .at(format!("spec/rules[{r}]/from[{f}]/source/namespaces[{i}]")),
                    );
                }
            }
        }
    }
}

/// KIA0104 (`authorization/no_host_checker.go`): an operation host that names no Service,
/// ServiceEntry host or VirtualService host. Always an error: Kiali downgrades it to a
/// warning under the mesh config's ALLOW_ANY outbound policy, and meshlens reads no mesh
/// config. Wildcard hosts are not checked.
fn operation_hosts(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    for (r, rule) in arr(&o.spec, "rules").iter().enumerate() {
        for (t, to) in arr(rule, "to").iter().enumerate() {
            let Some(op) = to.get("operation") else { continue };
            for (h, host) in arr(op, "hosts").iter().enumerate() {
                let Some(host) = host.as_str() else { continue };
                if !host_is_known(idx, host, &o.namespace, true) {
                    out.push(
                        AP_HOST_NOT_FOUND
                            .at(format!("spec/rules[{r}]/to[{t}]/operation/hosts[{h}]")),
                    );
                }
            }
        }
    }
}

/// Whether `host`, written in namespace `ns`, names a Service, a ServiceEntry host or (with
/// `vs`) a VirtualService host. Wildcards always pass.
pub(crate) fn host_is_known(idx: &Index<'_>, host: &str, ns: &str, vs: bool) -> bool {
    if host.starts_with('*') {
        return true;
    }
    let p = parse_host(host, ns, idx.domain);
    (p.internal && idx.service(&p.namespace, &p.service).is_some())
        || idx.has_service_entry(host)
        || (vs && idx.has_vs_host(host, ns))
}

/// The `spec.mtls.mode` of a PeerAuthentication, or a DestinationRule's
/// `spec.trafficPolicy.tls.mode`.
fn mode<'v>(v: &'v Value, a: &str, b: &str, c: &str) -> Option<&'v str> {
    let m = v.get(a)?;
    let m = if b.is_empty() { m } else { m.get(b)? };
    str_at(m, c)
}

/// KIA0505 (`peerauthentications/disabled_namespacewide_checker.go`): a namespace-wide
/// (selector-less) PeerAuthentication with mTLS DISABLE while a DestinationRule for the
/// namespace's hosts (`*.<ns>.<domain>`), or failing that for the whole mesh (`*.local`),
/// sets ISTIO_MUTUAL or MUTUAL. A namespace-wide DestinationRule with DISABLE settles it.
fn disable_with_mutual_dr(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    let has_selector = o.spec.get("selector").is_some_and(|s| !s.is_null());
    if has_selector || mode(&o.spec, "mtls", "", "mode") != Some("DISABLE") {
        return;
    }
    let ns_host = format!("*.{}.{}", o.namespace, idx.domain);
    fn dr_mode(dr: &MeshObject) -> &str {
        mode(&dr.spec, "trafficPolicy", "tls", "mode").unwrap_or_default()
    }
    let mutual = |m: &str| m == "ISTIO_MUTUAL" || m == "MUTUAL";
    let mut mesh_mutual = false;
    for dr in &idx.all_drs {
        match str_at(&dr.spec, "host") {
            Some(h) if h == ns_host => {
                let m = dr_mode(dr);
                if mutual(m) {
                    out.push(PA_DISABLE_DR_MISSING.at("spec/mtls"));
                    return;
                }
                if m == "DISABLE" {
                    return;
                }
            }
            Some("*.local") => mesh_mutual |= mutual(dr_mode(dr)),
            _ => {}
        }
    }
    if mesh_mutual {
        out.push(PA_DISABLE_DR_MISSING.at("spec/mtls"));
    }
}

/// KIA0002 and KIA0003 for PeerAuthentications (`common/multi_match_selector_checker.go`).
fn pa_multi_match(ns: &str, idx: &Index<'_>, report: &mut dyn FnMut(&MeshObject, Check)) {
    let objects = idx.objects(ObjectKind::PeerAuthentication, ns);
    let selectors: Vec<BTreeMap<String, String>> =
        objects.iter().map(|o| selector_at(&o.spec, "selector", "matchLabels")).collect();
    selectorless(objects, &selectors, MULTI_SELECTORLESS, "spec/selector", report);
    // Each workload of the namespace: which selectors pick it.
    let mut flagged = vec![false; objects.len()];
    for wl in idx.workloads_in(ns) {
        let picking: Vec<usize> = selectors
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty() && s.iter().all(|(k, v)| wl.get(k) == Some(v)))
            .map(|(i, _)| i)
            .collect();
        if picking.len() > 1 {
            for i in picking {
                flagged[i] = true;
            }
        }
    }
    for (i, o) in objects.iter().enumerate() {
        if flagged[i] {
            report(o, MULTI_SELECTOR.at("spec/selector"));
        }
    }
}

/// Reports `rule` at `path` on each selector-less object when there are two or more.
pub(crate) fn selectorless(
    objects: &[&MeshObject],
    selectors: &[BTreeMap<String, String>],
    rule: Rule,
    path: &str,
    report: &mut dyn FnMut(&MeshObject, Check),
) {
    let without: Vec<&MeshObject> =
        objects.iter().zip(selectors).filter(|(_, s)| s.is_empty()).map(|(o, _)| *o).collect();
    if without.len() > 1 {
        for o in without {
            report(o, rule.at(path));
        }
    }
}
