//! Sidecar checks (Kiali v2.0.0's `business/checkers/sidecars_checker.go`: its
//! `sidecars/egress_listener_checker.go`, and `common/` for the selectors).

use std::collections::BTreeMap;

use super::security::{host_is_known, selector_at, selectorless, selects_a_workload};
use super::{GroupCheck, KindCheckers, SingleCheck};
use crate::catalog::{MULTI_SELECTORLESS, SELECTOR_NO_WORKLOAD, SIDECAR_EGRESS_NOT_FOUND};
use crate::index::Index;
use crate::model::{Check, MeshObject, ObjectKind};
use crate::spec::arr;

/// Kiali runs its selector multi-match (KIA0003) on Sidecars too; meshlens reports the
/// selector-less duplicates only, as the issue asks.
pub(crate) struct Sidecars;

impl KindCheckers for Sidecars {
    const KIND: ObjectKind = ObjectKind::Sidecar;
    const SINGLE: &'static [SingleCheck] = &[selector_matches, egress_hosts];
    const GROUP: &'static [GroupCheck] = &[multi_selectorless];
}

/// KIA0004 on `spec/workloadSelector/labels`.
fn selector_matches(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    let selector = selector_at(&o.spec, "workloadSelector", "labels");
    if !selector.is_empty() && !selects_a_workload(idx, &o.namespace, &selector) {
        out.push(SELECTOR_NO_WORKLOAD.at("spec/workloadSelector/labels"));
    }
}

/// KIA1004: an egress host `ns/dnsName` whose name is no Service or ServiceEntry host.
/// `*/*`, `./*`, `~/*` and `ns/*` are skipped, as are wildcard names and hosts without `/`
/// (the CRD refuses those). As in Kiali, the name is read in the Sidecar's namespace.
fn egress_hosts(o: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    for (e, egress) in arr(&o.spec, "egress").iter().enumerate() {
        for (h, host) in arr(egress, "hosts").iter().enumerate() {
            let Some((_, name)) = host.as_str().and_then(|h| h.split_once('/')) else {
                continue;
            };
            if !host_is_known(idx, name, &o.namespace, false) {
                out.push(SIDECAR_EGRESS_NOT_FOUND.at(format!("spec/egress[{e}]/hosts[{h}]")));
            }
        }
    }
}

/// KIA0002: more than one selector-less Sidecar in the namespace.
fn multi_selectorless(ns: &str, idx: &Index<'_>, report: &mut dyn FnMut(&MeshObject, Check)) {
    let objects = idx.objects(ObjectKind::Sidecar, ns);
    let selectors: Vec<BTreeMap<String, String>> =
        objects.iter().map(|o| selector_at(&o.spec, "workloadSelector", "labels")).collect();
    selectorless(objects, &selectors, MULTI_SELECTORLESS, "spec/workloadSelector", report);
}
