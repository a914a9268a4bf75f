//! After the appenders: outside/inaccessible/root markers, the service-graph reduction, and
//! the order appenders run in (Kiali v0.14's `handlers/graph.go`; the bundled ones first, in
//! Kiali's order, then the configured ones: README, Plugins).

use appender_support::{FastMap, FastSet, HashMapExt, node_positions};
use plugin_api::{Edge, Graph, GraphType, Node, NodeType};

use crate::options::GraphOptions;

/// The bundled appenders in Kiali's fixed order; `ambient` then `health` last, as Kiali runs
/// them as finalizers (ambient after unusedNode, which would otherwise add a hidden waypoint
/// back; health judges the finished graph).
pub const BUNDLED_APPENDERS: [&str; 9] = [
    "serviceEntry",
    "deadNode",
    "responseTime",
    "securityPolicy",
    "unusedNode",
    "mesh",
    "sidecarsCheck",
    "ambient",
    // Last, as Kiali's health appender is a finalizer: it judges the finished graph.
    "health",
];

/// The appenders to run, in order: the bundled ones in Kiali's order, then the others in
/// `configured` order (`plugins.appenders`), then any other registered one by name.
/// `requested` is the `appenders` parameter (`None` = all registered).
pub fn appender_run_order(
    requested: Option<&[String]>,
    registered: &[String],
    configured: &[String],
) -> Vec<String> {
    let wanted = |n: &str| {
        registered.iter().any(|r| r == n) && requested.is_none_or(|req| req.iter().any(|r| r == n))
    };
    let mut out: Vec<String> = Vec::new();
    let push = |n: &str, out: &mut Vec<String>| {
        if wanted(n) && !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    };
    for n in BUNDLED_APPENDERS {
        push(n, &mut out);
    }
    for n in configured {
        push(n, &mut out);
    }
    let mut rest: Vec<&String> = registered.iter().collect();
    rest.sort();
    for n in rest {
        push(n, &mut out);
    }
    out
}

/// Marks outside, inaccessible and root nodes, then reduces a namespace graph of
/// graphType=service to service nodes (plus roots). `accessible` tells whether the client
/// may see a namespace.
pub fn finish(opts: &GraphOptions, graph: &mut Graph, accessible: &dyn Fn(&str) -> bool) {
    let requested: FastSet<&str> = opts.namespaces.iter().map(String::as_str).collect();
    // Roots have edges out and none in.
    let mut root = vec![(false, false); graph.nodes.len()];
    {
        let index = node_positions(graph);
        for e in graph.edges.iter() {
            if let Some(&i) = index.get(e.source.as_str()) {
                root[i].0 = true;
            }
            if let Some(&i) = index.get(e.target.as_str()) {
                root[i].1 = true;
            }
        }
    }
    for (n, (has_out, has_in)) in graph.nodes.iter_mut().zip(root) {
        if n.node_type == NodeType::Unknown
            || (n.node_type == NodeType::Service && !n.is_service_entry.is_empty())
        {
            n.is_inaccessible = true;
        } else if n.namespace.as_str() != appender_support::UNKNOWN
            && !requested.contains(n.namespace.as_str())
        {
            n.is_outside = true;
            if !accessible(n.namespace.as_str()) {
                n.is_inaccessible = true;
            }
        }
        n.is_root = has_out && !has_in;
    }
    if opts.graph_type == GraphType::Service && !opts.is_node_graph() {
        reduce_to_services(graph);
    }
}

/// Strips the nodes of namespaces the caller may not see to their names (`hidden` is asked
/// with each node's cluster and namespace: rights differ per cluster): they stay in the
/// graph as the ends of visible traffic, without traffic totals, flags or any appender's
/// fields. Edges keep their own data: it is traffic of a visible namespace.
pub fn names_only(graph: &mut Graph, hidden: &dyn Fn(&str, &str) -> bool) {
    for n in graph.nodes.iter_mut() {
        let ns = n.namespace.as_str();
        if ns == appender_support::UNKNOWN || !hidden(n.cluster.as_str(), ns) {
            continue;
        }
        let mut bare = Node::new_in(n.id.as_str(), n.node_type, n.cluster.as_str(), ns);
        bare.workload = std::mem::take(&mut n.workload);
        bare.app = std::mem::take(&mut n.app);
        bare.version = std::mem::take(&mut n.version);
        bare.service = std::mem::take(&mut n.service);
        (bare.is_outside, bare.is_inaccessible, bare.is_root) = (n.is_outside, true, n.is_root);
        *n = bare;
    }
}

/// Keeps service nodes and root non-service nodes; a service node's edges to workloads are
/// replaced by those workloads' edges to services (summed per destination and protocol).
fn reduce_to_services(graph: &mut Graph) {
    let kind: FastMap<String, (NodeType, bool)> =
        graph.nodes.iter().map(|n| (n.id.to_string(), (n.node_type, n.is_root))).collect();
    let is_service = |id: &str| kind.get(id).is_some_and(|(t, _)| *t == NodeType::Service);
    let keep = |id: &str| kind.get(id).is_some_and(|(t, root)| *t == NodeType::Service || *root);
    let mut out_edges: FastMap<String, Vec<usize>> = FastMap::new();
    for (i, e) in graph.edges.iter().enumerate() {
        out_edges.entry(e.source.to_string()).or_default().push(i);
    }
    let mut edges: Vec<Edge> = Vec::new();
    let mut index: FastMap<(String, String, String), usize> = FastMap::new();
    let mut add = |e: Edge, edges: &mut Vec<Edge>| {
        let key = (e.source.to_string(), e.target.to_string(), e.protocol.to_string());
        match index.get(&key) {
            Some(&i) => {
                let r = &mut edges[i].rates;
                r.http += e.rates.http;
                r.http_3xx += e.rates.http_3xx;
                r.http_4xx += e.rates.http_4xx;
                r.http_5xx += e.rates.http_5xx;
                r.grpc += e.rates.grpc;
                r.grpc_err += e.rates.grpc_err;
                r.tcp += e.rates.tcp;
                edges[i].is_mtls |= e.is_mtls;
            }
            None => {
                index.insert(key, edges.len());
                edges.push(e);
            }
        }
    };
    for e in graph.edges.iter() {
        let (s, t) = (e.source.as_str(), e.target.as_str());
        if !keep(s) {
            continue;
        }
        if !is_service(s) || is_service(t) {
            if keep(t) {
                add(e.clone(), &mut edges);
            }
            continue;
        }
        // service → workload: follow the workload's own edges.
        for &j in out_edges.get(t).map(Vec::as_slice).unwrap_or_default() {
            let next = &graph.edges[j];
            if !is_service(next.target.as_str()) {
                tracing::warn!(source = t, target = %next.target, "service graph: workload edge does not lead to a service; dropped");
                continue;
            }
            let mut ne = next.clone();
            ne.source = e.source.clone();
            add(ne, &mut edges);
        }
    }
    graph.nodes.retain(|n| keep(n.id.as_str()));
    graph.edges = edges.into_iter().collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn bundled_run_first_in_kiali_order_then_configured() {
        let registered = s(&["mesh", "extra2", "deadNode", "extra1", "serviceEntry", "zzz"]);
        let order = appender_run_order(None, &registered, &s(&["extra1", "extra2"]));
        assert_eq!(order, s(&["serviceEntry", "deadNode", "mesh", "extra1", "extra2", "zzz"]));
        let req = s(&["extra2", "mesh"]);
        assert_eq!(
            appender_run_order(Some(&req), &registered, &s(&["extra1", "extra2"])),
            s(&["mesh", "extra2"])
        );
        assert!(appender_run_order(Some(&[]), &registered, &[]).is_empty());
    }
}
