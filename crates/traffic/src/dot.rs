//! Graphviz DOT of the same graph the JSON describes (`format=dot`).

use std::fmt::Write;

use crate::hash32::Hash32;
use crate::output::{GraphOutput, NodeOut};

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What marks an element selected by `find` (the JSON's `isFind`): a heavier outline.
fn found(is_find: bool) -> &'static str {
    if is_find { ", penwidth=3" } else { "" }
}

fn node_label(o: &NodeOut<'_>) -> String {
    let Some(n) = o.node else {
        return String::new();
    };
    let name = match n.node_type {
        plugin_api::NodeType::Workload => n.workload.to_string(),
        plugin_api::NodeType::Service => n.service.to_string(),
        plugin_api::NodeType::App if !n.version.is_empty() => format!("{} {}", n.app, n.version),
        plugin_api::NodeType::App => n.app.to_string(),
        plugin_api::NodeType::Unknown => "unknown".to_string(),
    };
    format!("{name}\n{}", n.namespace)
}

fn node_line(out: &mut String, indent: &str, o: &NodeOut<'_>) {
    let shape = match o.node.map(|n| n.node_type) {
        Some(plugin_api::NodeType::Service) => "triangle",
        Some(plugin_api::NodeType::App) => "box",
        Some(plugin_api::NodeType::Unknown) => "diamond",
        _ => "ellipse",
    };
    let _ = writeln!(
        out,
        "{indent}{} [label={}, shape={shape}{}];",
        quote(o.id.as_str()),
        quote(&node_label(o)),
        found(o.is_find)
    );
}

/// A box as a DOT cluster at nesting `depth`, its members inside.
fn write_box(
    out: &mut String,
    depth: usize,
    b: &NodeOut<'_>,
    members: &appender_support::FastMap<Hash32, Vec<&NodeOut<'_>>>,
) {
    let indent = "  ".repeat(depth);
    let _ = writeln!(out, "{indent}subgraph {} {{", quote(&format!("cluster_{}", b.id)));
    let label = match b.is_box {
        "cluster" => format!("cluster {}", b.cluster()),
        "namespace" => format!("{} ({})", b.namespace(), b.cluster()),
        _ => format!("{} ({})", b.app(), b.namespace()),
    };
    let _ = writeln!(out, "{indent}  label={};", quote(&label));
    for m in members.get(&b.id).into_iter().flatten() {
        if m.node.is_some() {
            node_line(out, &format!("{indent}  "), m);
        } else if depth < 4 {
            write_box(out, depth + 1, m, members);
        }
    }
    let _ = writeln!(out, "{indent}}}");
}

impl GraphOutput<'_> {
    /// The graph as Graphviz DOT: nodes labelled by workload, app or service and namespace,
    /// edges by protocol and rate, boxes as clusters.
    pub fn to_dot(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "digraph {} {{",
            quote(&format!("meshlens {}", self.graph_type.as_str()))
        );
        out.push_str("  rankdir=LR;\n");
        // Members by box, gathered once: a graph can have thousands of boxes.
        let mut members: appender_support::FastMap<Hash32, Vec<&NodeOut<'_>>> =
            appender_support::FastMap::default();
        for n in &self.nodes {
            if let Some(p) = n.parent {
                members.entry(p).or_default().push(n);
            }
        }
        // Top-level boxes, each with its members; member boxes nest (cluster, namespace, app).
        for b in self.nodes.iter().filter(|n| n.node.is_none() && n.parent.is_none()) {
            write_box(&mut out, 1, b, &members);
        }
        for n in self.nodes.iter().filter(|n| n.node.is_some() && n.parent.is_none()) {
            node_line(&mut out, "  ", n);
        }
        for e in &self.edges {
            let t = &e.traffic;
            let rate = t
                .rates
                .as_ref()
                .and_then(|r| r.iter().find(|(k, _)| *k == t.protocol).map(|(_, v)| v.to_string()))
                .unwrap_or_default();
            let label = if t.protocol.is_empty() {
                String::new()
            } else {
                format!("{} {rate}", t.protocol)
            };
            let _ = writeln!(
                out,
                "  {} -> {} [label={}{}];",
                quote(e.source.as_str()),
                quote(e.target.as_str()),
                quote(&label),
                found(e.is_find)
            );
        }
        out.push_str("}\n");
        out
    }
}
