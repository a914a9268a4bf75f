//! Gateway checks: no two Gateways (of any namespaces) serve the same host on one port.

use std::collections::HashMap;

use super::{GroupCheck, KindCheckers, SingleCheck};
use crate::catalog::GW_MULTI_MATCH;
use crate::index::{Index, dot_suffixes};
use crate::model::{Check, MeshObject, ObjectKind};
use crate::spec::arr;

pub(crate) struct Gateways;

impl KindCheckers for Gateways {
    const KIND: ObjectKind = ObjectKind::Gateway;
    const SINGLE: &'static [SingleCheck] = &[];
    const GROUP: &'static [GroupCheck] = &[multi_match];
}

/// Up to two distinct gateway ids: enough to tell whether a gateway other than a given one
/// is present, in constant space.
#[derive(Clone, Copy, Default)]
struct TwoIds([Option<usize>; 2]);

impl TwoIds {
    fn add(&mut self, id: usize) {
        match self.0 {
            [None, _] => self.0[0] = Some(id),
            [Some(a), None] if a != id => self.0[1] = Some(id),
            _ => {}
        }
    }

    fn other_than(&self, id: usize) -> bool {
        self.0.iter().flatten().any(|&g| g != id)
    }
}

/// One host of one server of one gateway.
struct Entry<'a> {
    gateway: usize,
    server: usize,
    host_index: usize,
    host: &'a str,
}

/// The hosts of one port, indexed for the matching rules: `*` matches every host;
/// `*.s` matches hosts ending in `.s`, and wildcards whose suffixes end one in the other.
#[derive(Default)]
struct PortHosts<'a> {
    all: TwoIds,
    star: TwoIds,
    exact: HashMap<&'a str, TwoIds>,
    /// Exact hosts by each of their dot-suffixes.
    exact_suffix: HashMap<&'a str, TwoIds>,
    /// Wildcards `*.s` by `s`.
    wild: HashMap<&'a str, TwoIds>,
    /// Wildcards `*.s` by each dot-suffix of `s`.
    wild_suffix: HashMap<&'a str, TwoIds>,
}

impl<'a> PortHosts<'a> {
    fn add(&mut self, e: &Entry<'a>) {
        let g = e.gateway;
        self.all.add(g);
        if e.host == "*" {
            self.star.add(g);
        } else if let Some(s) = e.host.strip_prefix("*.") {
            self.wild.entry(s).or_default().add(g);
            for t in dot_suffixes(s) {
                self.wild_suffix.entry(t).or_default().add(g);
            }
        } else {
            self.exact.entry(e.host).or_default().add(g);
            for t in dot_suffixes(e.host) {
                self.exact_suffix.entry(t).or_default().add(g);
            }
        }
    }

    fn collides(&self, e: &Entry<'a>) -> bool {
        let g = e.gateway;
        let other =
            |m: &HashMap<&str, TwoIds>, k: &str| m.get(k).is_some_and(|ids| ids.other_than(g));
        if e.host == "*" {
            return self.all.other_than(g);
        }
        if self.star.other_than(g) {
            return true;
        }
        match e.host.strip_prefix("*.") {
            Some(s) => {
                other(&self.exact_suffix, s)
                    || other(&self.wild, s)
                    || other(&self.wild_suffix, s)
                    || dot_suffixes(s).any(|t| other(&self.wild, t))
            }
            None => {
                other(&self.exact, e.host) || dot_suffixes(e.host).any(|t| other(&self.wild, t))
            }
        }
    }
}

/// A host as written in a server: `ns/host` and `./host` name the host part.
fn host_part(h: &str) -> &str {
    h.rsplit_once('/').map_or(h, |(_, host)| host)
}

/// Gateways of all namespaces sharing a (port, host) pair warn on each such host.
fn multi_match(_ns: &str, idx: &Index<'_>, report: &mut dyn FnMut(&MeshObject, Check)) {
    let gateways = &idx.all_gateways;
    let mut ports: HashMap<u64, Vec<Entry<'_>>> = HashMap::new();
    for (gateway, gw) in gateways.iter().enumerate() {
        for (server, def) in arr(&gw.spec, "servers").iter().enumerate() {
            let Some(port) = def.get("port").and_then(|p| p.get("number")).and_then(|n| n.as_u64())
            else {
                continue;
            };
            for (host_index, h) in arr(def, "hosts").iter().enumerate() {
                if let Some(h) = h.as_str() {
                    ports.entry(port).or_default().push(Entry {
                        gateway,
                        server,
                        host_index,
                        host: host_part(h),
                    });
                }
            }
        }
    }
    let mut found: Vec<(usize, usize, usize)> = Vec::new();
    for entries in ports.values() {
        let mut hosts = PortHosts::default();
        for e in entries {
            hosts.add(e);
        }
        found.extend(
            entries
                .iter()
                .filter(|e| hosts.collides(e))
                .map(|e| (e.gateway, e.server, e.host_index)),
        );
    }
    // Report in document order, whatever the hash order of ports.
    found.sort_unstable();
    for (gateway, server, host_index) in found {
        report(
            gateways[gateway],
            GW_MULTI_MATCH.at(format!("spec/servers[{server}]/hosts[{host_index}]")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(gateway: usize, host: &str) -> Entry<'_> {
        Entry { gateway, server: 0, host_index: 0, host }
    }

    fn clash(a: &str, b: &str) -> bool {
        let (ea, eb) = (entry(0, a), entry(1, b));
        let mut p = PortHosts::default();
        p.add(&ea);
        p.add(&eb);
        let (x, y) = (p.collides(&ea), p.collides(&eb));
        assert_eq!(x, y, "{a} vs {b} must be symmetric");
        x
    }

    #[test]
    fn host_matching_rules() {
        assert!(clash("*", "a.com"));
        assert!(clash("a.com", "a.com"));
        assert!(!clash("a.com", "b.com"));
        assert!(clash("*.a.com", "x.a.com"));
        assert!(!clash("*.a.com", "a.com"));
        assert!(clash("*.a.com", "*.b.a.com"));
        assert!(!clash("*.a.com", "*.b.com"));
        assert!(!clash("x.a.com", "*.ba.com"));
        assert_eq!(host_part("ns/a.com"), "a.com");
        assert_eq!(host_part("a.com"), "a.com");
    }

    #[test]
    fn one_gateway_does_not_clash_with_itself() {
        let (a, b) = (entry(0, "*"), entry(0, "a.com"));
        let mut p = PortHosts::default();
        p.add(&a);
        p.add(&b);
        assert!(!p.collides(&a) && !p.collides(&b));
    }
}
