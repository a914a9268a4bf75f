//! `mesh` (Kiali's `istio`): circuit breakers (`hasCB`) and virtual services (`hasVS`) from
//! the mesh config, Gateway API routes (`hasHTTPRoute`: a service an HTTPRoute or GRPCRoute
//! sends to), and the app label of service nodes from their Service, as Kiali
//! v0.14's `graph/appender/istio_details.go`.
#![forbid(unsafe_code)]

use appender_support::{FastMap, FastSet};
use appender_support::{is_ok, lookup_cluster};
use plugin_api::mesh::parse_host;
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, ConfigObject, Graph, GraphAppender, GraphRequest,
    NodeType, PluginError, ServiceInfo, label_value,
};
use serde_json::Value as Json;

/// The `mesh` appender.
pub struct Mesh;

/// Stands for a cluster no object is in (no cluster name is empty with a NUL).
const NO_CLUSTER: &str = "\0";

fn has_breaker(policy: Option<&Json>) -> bool {
    policy.is_some_and(|p| p.get("connectionPool").is_some() || p.get("outlierDetection").is_some())
}

/// Whether the DestinationRule `spec` puts a circuit breaker on `version` (`None`: any).
fn dr_has_cb(spec: &Json, version_label: &str, version: Option<&str>) -> bool {
    if has_breaker(spec.get("trafficPolicy")) {
        return true;
    }
    spec.get("subsets").and_then(Json::as_array).into_iter().flatten().any(|s| {
        has_breaker(s.get("trafficPolicy"))
            && match version {
                None => true,
                Some(v) => {
                    s.get("labels").and_then(|l| l.get(version_label)).and_then(Json::as_str)
                        == Some(v)
                }
            }
    })
}

/// Kiali's FilterByHost: the host names exactly this service (`svc`, `svc.ns`, `svc.ns.svc`
/// or the FQDN); wildcard hosts such as a gateway's `*` do not badge a service.
fn host_matches_service(
    host: &str,
    object_ns: &str,
    service: &str,
    service_ns: &str,
    domain: &str,
) -> bool {
    let p = parse_host(host, object_ns, domain);
    p.internal && p.service == service && p.namespace == service_ns
}

/// A cluster's rules apply to its own services only: each object is kept with its cluster
/// (as [`lookup_cluster`] gives it), and each question names the node's.
struct Rules<'a> {
    drs: Vec<(&'a ConfigObject, &'a str, Json)>,
    vss: Vec<(&'a ConfigObject, &'a str, Json)>,
    routes: Vec<(&'a ConfigObject, &'a str, Json)>,
    domain: &'a str,
    version_label: &'a str,
}

impl Rules<'_> {
    fn cb(&self, cluster: &str, service: &str, ns: &str, version: Option<&str>) -> bool {
        self.drs.iter().filter(|(_, c, _)| *c == cluster).any(|(o, _, spec)| {
            spec.get("host").and_then(Json::as_str).is_some_and(|h| {
                host_matches_service(h, o.namespace.as_str(), service, ns, self.domain)
            }) && dr_has_cb(spec, self.version_label, version)
        })
    }
    /// Whether an HTTPRoute or GRPCRoute has this Service as a backend (a backendRef without
    /// kind is a Service; without namespace, one of the route's namespace).
    fn route(&self, cluster: &str, service: &str, ns: &str) -> bool {
        self.routes.iter().filter(|(_, c, _)| *c == cluster).any(|(o, _, spec)| {
            let rules = spec.get("rules").and_then(Json::as_array).into_iter().flatten();
            let mut backends =
                rules.filter_map(|r| r.get("backendRefs").and_then(Json::as_array)).flatten();
            backends.any(|b| {
                let s = |k: &str| b.get(k).and_then(Json::as_str);
                s("group").unwrap_or("").is_empty()
                    && s("kind").unwrap_or("Service") == "Service"
                    && s("name") == Some(service)
                    && s("namespace").filter(|n| !n.is_empty()).unwrap_or(o.namespace.as_str())
                        == ns
            })
        })
    }
    fn vs(&self, cluster: &str, service: &str, ns: &str) -> bool {
        self.vss.iter().filter(|(_, c, _)| *c == cluster).any(|(o, _, spec)| {
            spec.get("hosts")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(Json::as_str)
                .any(|h| host_matches_service(h, o.namespace.as_str(), service, ns, self.domain))
        })
    }
}

impl GraphAppender for Mesh {
    fn name(&self) -> &str {
        "mesh"
    }
    fn inputs(&self, _req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        let kinds = vec![
            ClusterKind::DestinationRules,
            ClusterKind::VirtualServices,
            ClusterKind::Services,
            ClusterKind::Routes,
        ];
        Ok(AppenderInputs { cluster: kinds.into_iter().collect(), ..Default::default() })
    }
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError> {
        if graph.nodes.is_empty() {
            return Ok(());
        }
        let home = req.home_cluster.as_str();
        let of_kind = |k: &str| -> Vec<(&ConfigObject, &str, Json)> {
            data.cluster
                .objects
                .iter()
                .filter(|o| o.kind.as_str() == k)
                .map(|o| (o, lookup_cluster(o.cluster.as_str(), home), o.spec()))
                .collect()
        };
        let rules = Rules {
            drs: of_kind("DestinationRule"),
            vss: of_kind("VirtualService"),
            routes: of_kind("HTTPRoute").into_iter().chain(of_kind("GRPCRoute")).collect(),
            domain: req.identity_domain.as_str(),
            version_label: req.version_label.as_str(),
        };
        let requested: FastSet<&str> = req.namespaces.iter().map(|s| s.as_str()).collect();
        let services: FastMap<(&str, &str, &str), &ServiceInfo> = data
            .cluster
            .services
            .iter()
            .map(|s| {
                let c = lookup_cluster(s.cluster.as_str(), home);
                ((c, s.namespace.as_str(), s.name.as_str()), s)
            })
            .collect();
        let no_rules = rules.drs.is_empty() && rules.vss.is_empty();
        let mut clusters: Vec<&str> = services.keys().map(|k| k.0).collect();
        for (_, c, _) in rules.drs.iter().chain(&rules.vss).chain(&rules.routes) {
            clusters.push(c);
        }
        clusters.sort_unstable();
        clusters.dedup();
        for n in graph.nodes.iter_mut() {
            let ns = n.namespace.to_string();
            if !requested.contains(ns.as_str()) {
                continue;
            }
            let version = n.version.as_str();
            // Borrowed from the data, not the node (which is changed below); a cluster without
            // objects matches none.
            let own = lookup_cluster(n.cluster.as_str(), home);
            let c = clusters.iter().copied().find(|k| *k == own).unwrap_or(NO_CLUSTER);
            let cb = !no_rules
                && match n.node_type {
                    NodeType::Service => rules.cb(c, n.service.as_str(), &ns, None),
                    _ if is_ok(version) => {
                        n.dest_services.iter().any(|s| rules.cb(c, s.as_str(), &ns, Some(version)))
                    }
                    NodeType::App => {
                        n.dest_services.iter().any(|s| rules.cb(c, s.as_str(), &ns, None))
                    }
                    _ => false,
                };
            if cb {
                n.has_cb = true;
            }
            if n.node_type == NodeType::Service {
                if rules.vs(c, n.service.as_str(), &ns) {
                    n.has_vs = true;
                }
                if !rules.routes.is_empty() && rules.route(c, n.service.as_str(), &ns) {
                    n.set_field("hasHTTPRoute", plugin_api::Value::Bool(true));
                }
                if n.app.is_empty() {
                    let svc = services.get(&(c, ns.as_str(), n.service.as_str()));
                    if let Some(app) =
                        svc.and_then(|s| label_value(&s.labels, req.app_label.as_str()))
                    {
                        n.app = app.into();
                    }
                }
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(Mesh);
plugin_api::export_plugin!(name: "appender-mesh", version: env!("CARGO_PKG_VERSION"));
