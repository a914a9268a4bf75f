//! DestinationRule checks: host and subsets must match workloads; no two rules for one
//! host and subset.

use std::collections::{BTreeMap, HashMap};

use super::{GroupCheck, KindCheckers, SingleCheck};
use crate::catalog::{DR_MULTI_MATCH, DR_NO_WORKLOAD, DR_SUBSET_LABELS, UNVERIFIABLE};
use crate::index::{HostKey, Index};
use crate::model::{Check, MeshObject, ObjectKind};
use crate::spec::{arr, labels, str_at};

pub(crate) struct DestinationRules;

impl KindCheckers for DestinationRules {
    const KIND: ObjectKind = ObjectKind::DestinationRule;
    const SINGLE: &'static [SingleCheck] = &[no_destination];
    const GROUP: &'static [GroupCheck] = &[multi_match];
}

/// The host must name a workload's app, a Service or a ServiceEntry host; each subset's
/// labels must all be found on one workload of that host.
fn no_destination(dr: &MeshObject, idx: &Index<'_>, out: &mut Vec<Check>) {
    let Some(host) = str_at(&dr.spec, "host") else { return };
    let (service, ns) = idx.host_key(host, &dr.namespace);
    if service == "*" {
        return; // a wildcard host matches whatever exists
    }
    if idx.hidden(&ns) && !idx.has_service_entry(host) {
        out.push(UNVERIFIABLE.at("spec/host"));
        return;
    }
    let has_workload = idx.has_workload(&ns, &service, &BTreeMap::new());
    let has_service = idx.service(&ns, &service).is_some();
    let has_entry = idx.has_service_entry(host);
    if !(has_workload || has_service || has_entry) {
        out.push(DR_NO_WORKLOAD.at("spec/host"));
    }
    if has_entry && !has_workload && !has_service {
        return; // ServiceEntry endpoints are not workloads: nothing to match subsets against
    }
    for (i, subset) in arr(&dr.spec, "subsets").iter().enumerate() {
        let Some(wanted) = subset.get("labels").and_then(labels) else { continue };
        if !idx.has_workload(&ns, &service, &wanted) {
            out.push(DR_SUBSET_LABELS.at(format!("spec/subsets[{i}]")));
        }
    }
}

/// Subset names a rule covers; `None` stands for "all traffic" (a rule without subsets).
fn subsets(dr: &MeshObject) -> Vec<Option<&str>> {
    let names: Vec<Option<&str>> =
        arr(&dr.spec, "subsets").iter().filter_map(|s| str_at(s, "name")).map(Some).collect();
    if names.is_empty() { vec![None] } else { names }
}

/// How many distinct rules cover each subset of a host (or of a namespace).
#[derive(Default)]
struct Coverage<'a> {
    rules: usize,
    whole: usize,
    by_subset: HashMap<&'a str, usize>,
}

impl<'a> Coverage<'a> {
    fn add(&mut self, subsets: &[Option<&'a str>]) {
        self.rules += 1;
        for s in subsets {
            match s {
                None => self.whole += 1,
                Some(name) => *self.by_subset.entry(name).or_default() += 1,
            }
        }
    }

    /// Whether another rule than the one with `subsets` (counted in `self`, and in
    /// `extra` when given) covers one of its subsets.
    fn collides(&self, extra: Option<&Coverage<'a>>, subsets: &[Option<&'a str>]) -> bool {
        let extra_rules = extra.map_or(0, |e| e.rules);
        let extra_whole = extra.map_or(0, |e| e.whole);
        let own_whole = usize::from(subsets.contains(&None));
        if own_whole == 1 && self.rules + extra_rules > 1 {
            return true;
        }
        if self.whole + extra_whole > own_whole {
            return true;
        }
        subsets.iter().flatten().any(|name| {
            let count = |c: &Coverage<'_>| c.by_subset.get(name).copied().unwrap_or(0);
            count(self) + extra.map_or(0, count) > 1
        })
    }
}

/// Two rules of the namespace for the same host and subset (a rule without subsets covers
/// every subset; a `*` host covers every host of its namespace) warn on both.
fn multi_match(ns: &str, idx: &Index<'_>, report: &mut dyn FnMut(&MeshObject, Check)) {
    let drs = idx.objects(ObjectKind::DestinationRule, ns);
    let mut keyed: Vec<(HostKey, Vec<Option<&str>>)> = Vec::with_capacity(drs.len());
    let mut by_host: HashMap<&HostKey, Coverage<'_>> = HashMap::new();
    // Wildcard rules by the namespace they cover (`*` for every namespace).
    let mut wildcards: HashMap<&str, Coverage<'_>> = HashMap::new();
    let mut by_namespace: HashMap<&str, Coverage<'_>> = HashMap::new();
    let mut everything = Coverage::default();
    for dr in drs {
        let key = str_at(&dr.spec, "host").map(|h| idx.host_key(h, &dr.namespace));
        keyed.push((key.unwrap_or_default(), subsets(dr)));
    }
    for (dr, (key, subs)) in drs.iter().zip(&keyed) {
        if str_at(&dr.spec, "host").is_none() {
            continue;
        }
        everything.add(subs);
        by_namespace.entry(key.1.as_str()).or_default().add(subs);
        if key.0 == "*" {
            wildcards.entry(key.1.as_str()).or_default().add(subs);
        } else {
            by_host.entry(key).or_default().add(subs);
        }
    }
    let all_wild = wildcards.get("*");
    for (dr, (key, subs)) in drs.iter().zip(&keyed) {
        if str_at(&dr.spec, "host").is_none() {
            continue;
        }
        let hit = if key.0 != "*" {
            // Rules for the same host, then wildcard rules over its namespace or all.
            let same = &by_host[key];
            same.collides(wildcards.get(key.1.as_str()), subs) || same.collides(all_wild, subs)
        } else if key.1 == "*" {
            everything.collides(None, subs)
        } else {
            let in_ns = &by_namespace[key.1.as_str()];
            in_ns.collides(all_wild, subs)
        };
        if hit {
            report(dr, DR_MULTI_MATCH.at("spec/host"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_counts_whole_rules_against_subsets() {
        let mut c = Coverage::default();
        c.add(&[Some("v1")]);
        c.add(&[None]);
        assert!(c.collides(None, &[Some("v1")]));
        assert!(c.collides(None, &[None]));
        let mut d = Coverage::default();
        d.add(&[Some("v1")]);
        d.add(&[Some("v2")]);
        assert!(!d.collides(None, &[Some("v1")]));
    }
}
