//! Benchmark plugin: an appender that does a degree pass over every edge and marks busy
//! nodes, so the same code can be timed directly (rlib) and through the boundary (cdylib).
#![forbid(unsafe_code)]

use std::collections::HashMap;

use plugin_api::{AppenderData, Graph, GraphAppender, GraphRequest, PluginError, Value};

/// Counts outgoing edges per node and marks nodes with more than two.
pub struct Degree;

impl GraphAppender for Degree {
    fn name(&self) -> &str {
        "benchDegree"
    }
    fn apply(
        &self,
        _: &GraphRequest,
        _: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError> {
        let mut out: HashMap<&str, u32> = HashMap::with_capacity(graph.nodes.len());
        for e in graph.edges.iter() {
            *out.entry(e.source.as_str()).or_insert(0) += 1;
        }
        let busy: Vec<bool> =
            graph.nodes.iter().map(|n| out.get(n.id.as_str()).copied().unwrap_or(0) > 2).collect();
        for (n, b) in graph.nodes.iter_mut().zip(busy) {
            n.is_root = b;
        }
        if let Some(n) = graph.nodes.first_mut() {
            n.set_field("benchDegree", Value::Bool(true));
        }
        Ok(())
    }
}

plugin_api::register_appender!(Degree);
plugin_api::export_plugin!(name: "bench-appender", version: env!("CARGO_PKG_VERSION"));
