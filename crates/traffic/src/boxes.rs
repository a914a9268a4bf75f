//! Compound nodes: `groupBy`'s app and version boxes (Kiali v0.14, `isGroup`) and `boxBy`'s
//! cluster, namespace and app boxes (Kiali v2's `graph/config/common/common.go`:
//! `boxByApp`, `boxByNamespace`, `boxByCluster`, `generateBoxCompoundNodes`).
//!
//! `boxBy` boxes nest app inside namespace inside cluster: each level boxes what the level
//! below left at the top. A level boxes only buckets of two or more members, and the
//! namespace and cluster levels only when there are two or more buckets; `unknown` (the
//! namespace, or the cluster) is never boxed.
//!
//! Nodes whose telemetry names no cluster (`unknown`) have the home cluster's ids, and an app
//! or a namespace is boxed once for both: such a box is in the home cluster when a member
//! says so (an unused workload's node does), else in `unknown`.

use appender_support::is_ok;
use plugin_api::{GraphType, Node, NodeType, UNKNOWN_CLUSTER};

use crate::hash32::Hash32;
use crate::options::{GraphOptions, GroupBy};
use crate::output::{BoxFields, NodeOut};

/// `boxBy` (Kiali v2): which compound nodes (`nodeType: "box"`) enclose the nodes. Boxes
/// nest app inside namespace inside cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BoxBy {
    /// One box per cluster, when the graph spans two or more.
    pub cluster: bool,
    /// One box per namespace of a cluster, when the graph spans two or more.
    pub namespace: bool,
    /// One box per app of a namespace (takes the place of `groupBy`'s boxes).
    pub app: bool,
}

/// The cluster part of a box key: empty for the home cluster and `unknown` (as in ids).
fn id_cluster<'a>(cluster: &'a str, home: &str) -> &'a str {
    if is_ok(cluster) && cluster != home { cluster } else { "" }
}

/// The cluster a box of `members` is in: the first known one (they share one up to
/// home/unknown).
fn box_cluster<'a>(nodes: &[NodeOut<'a>], members: impl Iterator<Item = usize>) -> &'a str {
    let mut cluster = UNKNOWN_CLUSTER;
    for m in members {
        let c = cluster_of(&nodes[m]);
        if is_ok(c) {
            return c;
        }
        cluster = c;
    }
    cluster
}

fn cluster_of<'a>(o: &NodeOut<'a>) -> &'a str {
    match (o.node, &o.box_fields) {
        (Some(n), _) => n.cluster.as_str(),
        (None, Some(b)) => b.cluster,
        (None, None) => "",
    }
}

fn namespace_of<'a>(o: &NodeOut<'a>) -> &'a str {
    match (o.node, &o.box_fields) {
        (Some(n), _) => n.namespace.as_str(),
        (None, Some(b)) => b.namespace,
        (None, None) => "",
    }
}

/// A new box over `members` (positions in `nodes`), which get it as their parent.
fn make_box<'a>(
    nodes: &mut [NodeOut<'a>],
    members: &[usize],
    id: Hash32,
    kind: (&'static str, &'static str),
    fields: BoxFields<'a>,
) -> NodeOut<'a> {
    let mut bf = fields;
    // Only app boxes carry their members' flags, as in Kiali.
    if kind.0 == "app" || kind.1 == "app" {
        for &m in members {
            if let Some(n) = nodes[m].node {
                bf.has_missing_sc |= n.has_missing_sc;
                bf.is_inaccessible |= n.is_inaccessible;
                bf.is_outside |= n.is_outside;
            }
        }
    }
    for &m in members {
        nodes[m].parent = Some(id);
    }
    NodeOut {
        id,
        parent: None,
        is_group: kind.0,
        is_box: kind.1,
        node: None,
        box_fields: Some(bf),
        traffic: Vec::new(),
        is_find: false,
        pos: None,
    }
}

fn fields<'a>(cluster: &'a str, namespace: &'a str, app: &'a str) -> BoxFields<'a> {
    BoxFields {
        cluster,
        namespace,
        app,
        has_missing_sc: false,
        is_inaccessible: false,
        is_outside: false,
    }
}

/// Adds the boxes `groupBy` and `boxBy` ask for; members get their `parent`. With
/// `boxBy=app`, `groupBy` adds no boxes of its own.
pub(crate) fn add_boxes(opts: &GraphOptions, nodes: &mut Vec<NodeOut<'_>>) {
    let home = opts.settings.home_cluster.as_str();
    let b = opts.box_by;
    if b.app {
        app_boxes(nodes, home, ("", "app"), |_| true);
    } else {
        match (opts.group_by, opts.graph_type) {
            (GroupBy::App, t) if t != GraphType::Service => {
                app_boxes(nodes, home, ("app", ""), |_| true)
            }
            (GroupBy::Version, GraphType::VersionedApp) => {
                app_boxes(nodes, home, ("version", ""), |n| n.node_type == NodeType::App)
            }
            _ => {}
        }
    }
    if b.namespace {
        namespace_boxes(nodes, home);
    }
    if b.cluster {
        cluster_boxes(nodes);
    }
}

/// App boxes (`groupBy=app`, `groupBy=version` over app nodes, or `boxBy=app`): one per
/// (cluster, namespace, app) with two or more members. Box keys of the home cluster are
/// those of before clusters, `box_<namespace>_<app>`; other clusters' add `@<cluster>`
/// (no namespace or app contains `@`).
fn app_boxes<'a>(
    nodes: &mut Vec<NodeOut<'a>>,
    home: &str,
    kind: (&'static str, &'static str),
    member: fn(&Node) -> bool,
) {
    // Members grouped by (cluster, namespace, app); the order boxes are made in does not
    // matter, the node sort does.
    let mut keyed: Vec<(&'a str, &'a str, &'a str, usize)> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.node.map(|n| (n, i)))
        .filter(|(n, _)| is_ok(n.app.as_str()) && member(n))
        .map(|(n, i)| {
            (id_cluster(n.cluster.as_str(), home), n.namespace.as_str(), n.app.as_str(), i)
        })
        .collect();
    keyed.sort_unstable();
    let mut boxes = Vec::new();
    for group in keyed.chunk_by(|a, b| (a.0, a.1, a.2) == (b.0, b.1, b.2)) {
        if group.len() < 2 {
            continue;
        }
        let (key_cluster, namespace, app, _) = group[0];
        let id = if key_cluster.is_empty() {
            Hash32::of(&[b"box_", namespace.as_bytes(), b"_", app.as_bytes()])
        } else {
            let (ns, a, c) = (namespace.as_bytes(), app.as_bytes(), key_cluster.as_bytes());
            Hash32::of(&[b"box_", ns, b"_", a, b"@", c])
        };
        let members: Vec<usize> = group.iter().map(|g| g.3).collect();
        let cluster = box_cluster(nodes, members.iter().copied());
        boxes.push(make_box(nodes, &members, id, kind, fields(cluster, namespace, app)));
    }
    nodes.extend(boxes);
}

/// Namespace boxes (`boxBy=namespace`): one per (cluster, namespace) of the top-level nodes
/// and app boxes, when there are two or more such namespaces; `isBox: "namespace"`, with the
/// namespace and cluster, and `app` empty.
fn namespace_boxes<'a>(nodes: &mut Vec<NodeOut<'a>>, home: &str) {
    let mut keyed: Vec<(&'a str, &'a str, usize)> = nodes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.parent.is_none() && namespace_of(o) != appender_support::UNKNOWN)
        .map(|(i, o)| (id_cluster(cluster_of(o), home), namespace_of(o), i))
        .collect();
    keyed.sort_unstable();
    let buckets = keyed.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)).count();
    if buckets < 2 {
        return;
    }
    let mut boxes = Vec::new();
    for group in keyed.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        if group.len() < 2 {
            continue;
        }
        let (key_cluster, namespace, _) = group[0];
        let id =
            Hash32::of(&[b"box:namespace:", namespace.as_bytes(), b":", key_cluster.as_bytes()]);
        let members: Vec<usize> = group.iter().map(|g| g.2).collect();
        let cluster = box_cluster(nodes, members.iter().copied());
        let b = fields(cluster, namespace, "");
        boxes.push(make_box(nodes, &members, id, ("", "namespace"), b));
    }
    nodes.extend(boxes);
}

/// Cluster boxes (`boxBy=cluster`): one per cluster of the top-level nodes and boxes, when
/// there are two or more clusters, never for `unknown`; `isBox: "cluster"`, with the
/// cluster, and `namespace` and `app` empty.
fn cluster_boxes<'a>(nodes: &mut Vec<NodeOut<'a>>) {
    let mut keyed: Vec<(&'a str, usize)> = nodes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.parent.is_none() && is_ok(cluster_of(o)))
        .map(|(i, o)| (cluster_of(o), i))
        .collect();
    keyed.sort_unstable();
    if keyed.chunk_by(|a, b| a.0 == b.0).count() < 2 {
        return;
    }
    let mut boxes = Vec::new();
    for group in keyed.chunk_by(|a, b| a.0 == b.0) {
        if group.len() < 2 {
            continue;
        }
        let cluster = group[0].0;
        let id = Hash32::of(&[b"box:cluster:", cluster.as_bytes()]);
        let members: Vec<usize> = group.iter().map(|g| g.1).collect();
        boxes.push(make_box(nodes, &members, id, ("", "cluster"), fields(cluster, "", "")));
    }
    nodes.extend(boxes);
}
