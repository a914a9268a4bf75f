//! Lookups built once per evaluation, so that each check is a hash lookup instead of a
//! scan over every other object.

use std::collections::{BTreeMap, HashMap, HashSet};

use plugin_api::mesh::parse_host;
use serde_json::Value;

use crate::model::{MeshObject, ObjectKind, ServiceInfo, ValidationInput};
use crate::spec::{arr, str_at};

/// A host reduced to what lookups need: (service, namespace) for cluster hosts,
/// (host, "") for external ones.
pub(crate) type HostKey = (String, String);

/// Indexed view of a [`ValidationInput`].
pub(crate) struct Index<'a> {
    /// The cluster's identity domain.
    pub domain: &'a str,
    app_label: &'a str,
    services: HashMap<&'a str, HashMap<&'a str, &'a ServiceInfo>>,
    /// Workload label sets by (namespace, app).
    workloads_by_app: HashMap<(&'a str, &'a str), Vec<&'a BTreeMap<String, String>>>,
    se_hosts: HashSet<&'a str>,
    /// Suffixes `s` of ServiceEntry hosts written `*.s`.
    se_wildcards: HashSet<&'a str>,
    gateway_names: HashSet<(&'a str, &'a str)>,
    /// Every Gateway of every namespace, once.
    pub all_gateways: Vec<&'a MeshObject>,
    by_kind_ns: HashMap<ObjectKind, HashMap<&'a str, Vec<&'a MeshObject>>>,
    drs_by_host: HashMap<HostKey, Vec<&'a MeshObject>>,
    /// Every DestinationRule given, in input order (PeerAuthentication mTLS checks).
    pub all_drs: Vec<&'a MeshObject>,
    /// Namespaces that exist, with their labels.
    namespaces: HashMap<&'a str, &'a BTreeMap<String, String>>,
    /// Workload label sets by namespace (selectors).
    workloads_by_ns: HashMap<&'a str, Vec<&'a BTreeMap<String, String>>>,
    /// VirtualService hosts: the lookup keys of cluster hosts, and external hosts as written.
    vs_hosts: HashSet<HostKey>,
    /// Every Gateway API Gateway of every namespace, once.
    pub all_k8s_gateways: Vec<&'a MeshObject>,
    k8s_gateway_by_name: HashMap<(&'a str, &'a str), &'a MeshObject>,
    hidden: &'a std::collections::BTreeSet<String>,
}

impl<'a> Index<'a> {
    /// Indexes `input`; linear in its size.
    pub fn new(input: &'a ValidationInput) -> Self {
        let domain = input.identity_domain.as_str();
        let mut idx = Index {
            domain,
            app_label: input.app_label.as_str(),
            services: HashMap::new(),
            workloads_by_app: HashMap::new(),
            se_hosts: HashSet::new(),
            se_wildcards: HashSet::new(),
            gateway_names: HashSet::new(),
            all_gateways: Vec::new(),
            by_kind_ns: HashMap::new(),
            drs_by_host: HashMap::new(),
            all_drs: Vec::new(),
            namespaces: input.namespaces.iter().map(|n| (n.name.as_str(), &n.labels)).collect(),
            workloads_by_ns: HashMap::new(),
            vs_hosts: HashSet::new(),
            all_k8s_gateways: Vec::new(),
            k8s_gateway_by_name: HashMap::new(),
            hidden: &input.hidden_namespaces,
        };
        // What hidden namespaces hold is left out whole, whatever the caller handed in:
        // no check may depend on it. (ServiceEntries are hosts, not namespaced references.)
        let shown = |ns: &str| !input.hidden_namespaces.contains(ns);
        for s in input.services.iter().filter(|s| shown(&s.namespace)) {
            idx.services.entry(s.namespace.as_str()).or_default().insert(s.name.as_str(), s);
        }
        for w in input.workloads.iter().filter(|w| shown(&w.namespace)) {
            idx.workloads_by_ns.entry(w.namespace.as_str()).or_default().push(&w.labels);
            if let Some(app) = w.labels.get(idx.app_label) {
                idx.workloads_by_app
                    .entry((w.namespace.as_str(), app.as_str()))
                    .or_default()
                    .push(&w.labels);
            }
        }
        let mut seen_objects = HashSet::new();
        for o in input
            .objects
            .iter()
            .filter(|o| o.kind == ObjectKind::ServiceEntry || shown(&o.namespace))
        {
            // An object listed twice would otherwise look like two conflicting objects.
            if !seen_objects.insert((o.kind, o.namespace.as_str(), o.name.as_str())) {
                continue;
            }
            idx.by_kind_ns
                .entry(o.kind)
                .or_default()
                .entry(o.namespace.as_str())
                .or_default()
                .push(o);
            match o.kind {
                ObjectKind::ServiceEntry => {
                    for h in arr(&o.spec, "hosts").iter().filter_map(Value::as_str) {
                        match h.strip_prefix("*.") {
                            Some(suffix) => idx.se_wildcards.insert(suffix),
                            None => idx.se_hosts.insert(h),
                        };
                    }
                }
                ObjectKind::VirtualService => {
                    for h in arr(&o.spec, "hosts").iter().filter_map(Value::as_str) {
                        let key = idx.host_key(h, &o.namespace);
                        idx.vs_hosts.insert(key);
                    }
                }
                ObjectKind::DestinationRule => {
                    idx.all_drs.push(o);
                    if let Some(host) = str_at(&o.spec, "host") {
                        idx.drs_by_host
                            .entry(idx.host_key(host, &o.namespace))
                            .or_default()
                            .push(o);
                    }
                }
                _ => {}
            }
        }
        let gateways = input
            .objects
            .iter()
            .filter(|o| o.kind == ObjectKind::Gateway)
            .chain(&input.gateways)
            .filter(|g| g.kind == ObjectKind::Gateway)
            .filter(|g| shown(&g.namespace));
        for g in gateways {
            if idx.gateway_names.insert((g.namespace.as_str(), g.name.as_str())) {
                idx.all_gateways.push(g);
                // A Gateway known only from the all-namespaces list is still an object of
                // its namespace.
                if seen_objects.insert((g.kind, g.namespace.as_str(), g.name.as_str())) {
                    idx.by_kind_ns
                        .entry(g.kind)
                        .or_default()
                        .entry(g.namespace.as_str())
                        .or_default()
                        .push(g);
                }
            }
        }
        let k8s_gateways = input
            .objects
            .iter()
            .filter(|o| o.kind == ObjectKind::K8sGateway)
            .chain(input.gateways.iter().filter(|o| o.kind == ObjectKind::K8sGateway))
            .filter(|g| shown(&g.namespace));
        for g in k8s_gateways {
            let key = (g.namespace.as_str(), g.name.as_str());
            if idx.k8s_gateway_by_name.insert(key, g).is_none() {
                idx.all_k8s_gateways.push(g);
                if seen_objects.insert((g.kind, key.0, key.1)) {
                    idx.by_kind_ns.entry(g.kind).or_default().entry(key.0).or_default().push(g);
                }
            }
        }
        idx
    }

    /// Whether namespace `ns` exists.
    pub fn has_namespace(&self, ns: &str) -> bool {
        self.namespaces.contains_key(ns)
    }

    /// The labels of namespace `ns`, when it exists.
    pub fn namespace_labels(&self, ns: &str) -> Option<&'a BTreeMap<String, String>> {
        self.namespaces.get(ns).copied()
    }

    /// Label sets of the workloads of namespace `ns`.
    pub fn workloads_in(&self, ns: &str) -> &[&'a BTreeMap<String, String>] {
        self.workloads_by_ns.get(ns).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether a VirtualService declares `host` (written in namespace `ns`).
    pub fn has_vs_host(&self, host: &str, ns: &str) -> bool {
        self.vs_hosts.contains(&self.host_key(host, ns))
    }

    /// The Gateway API Gateway `name` of namespace `ns`.
    pub fn k8s_gateway(&self, ns: &str, name: &str) -> Option<&'a MeshObject> {
        self.k8s_gateway_by_name.get(&(ns, name)).copied()
    }

    /// Whether `ns` is a namespace the caller may not list (its content is not indexed).
    pub fn hidden(&self, ns: &str) -> bool {
        self.hidden.contains(ns)
    }

    /// Objects of `kind` in namespace `ns`, in input order.
    pub fn objects(&self, kind: ObjectKind, ns: &str) -> &[&'a MeshObject] {
        self.by_kind_ns.get(&kind).and_then(|m| m.get(ns)).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The lookup key of `host` written in namespace `ns`.
    pub fn host_key(&self, host: &str, ns: &str) -> HostKey {
        let p = parse_host(host, ns, self.domain);
        (p.service, p.namespace)
    }

    /// The Service `name` of namespace `ns`.
    pub fn service(&self, ns: &str, name: &str) -> Option<&'a ServiceInfo> {
        self.services.get(ns).and_then(|m| m.get(name)).copied()
    }

    /// Whether a ServiceEntry declares `host` (exactly or through a `*.` wildcard).
    pub fn has_service_entry(&self, host: &str) -> bool {
        if self.se_hosts.contains(host) {
            return true;
        }
        if let Some(suffix) = host.strip_prefix("*.")
            && self.se_wildcards.contains(suffix)
        {
            return true;
        }
        dot_suffixes(host).any(|s| self.se_wildcards.contains(s))
    }

    /// Whether a Gateway `name` exists in namespace `ns`.
    pub fn has_gateway(&self, ns: &str, name: &str) -> bool {
        self.gateway_names.contains(&(ns, name))
    }

    /// DestinationRules whose host has `key`.
    pub fn drs_for(&self, key: &HostKey) -> &[&'a MeshObject] {
        self.drs_by_host.get(key).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether a workload of namespace `ns` belongs to the service `service` (its app label
    /// is the service name, or the app the Service selects) and carries every label of
    /// `labels`.
    pub fn has_workload(&self, ns: &str, service: &str, labels: &BTreeMap<String, String>) -> bool {
        let selected_app = self.service(ns, service).and_then(|s| s.selector.get(self.app_label));
        let apps = std::iter::once(service)
            .chain(selected_app.map(String::as_str).filter(|a| *a != service));
        apps.filter_map(|app| self.workloads_by_app.get(&(ns, app)))
            .flatten()
            .any(|wl| labels.iter().all(|(k, v)| wl.get(k) == Some(v)))
    }
}

/// The parts after each dot: `a.b.c` → `b.c`, `c`.
pub(crate) fn dot_suffixes(host: &str) -> impl Iterator<Item = &str> {
    host.match_indices('.').map(move |(i, _)| &host[i + 1..]).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::dot_suffixes;

    #[test]
    fn dot_suffixes_lists_each_tail() {
        assert_eq!(dot_suffixes("a.b.c").collect::<Vec<_>>(), vec!["b.c", "c"]);
        assert_eq!(dot_suffixes("abc").count(), 0);
    }
}
