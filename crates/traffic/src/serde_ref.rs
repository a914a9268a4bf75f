//! `Serialize` for the graph's response: the reference the direct writer (`json.rs`) is held
//! equal to, byte for byte, by the tests and by the `graph_build` benchmark (feature
//! `serde-reference`). The service never serialises through these.

use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};

use plugin_api::Value;

use crate::fixed::Fixed;
use crate::hash32::Hash32;
use crate::output::{EdgeOut, GraphOutput, NodeOut, RESERVED, Traffic};

impl Serialize for Fixed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.digits(&mut [0u8; 24]))
    }
}

impl Serialize for Hash32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

struct Rates<'b>(&'b [(&'static str, Fixed)]);
impl Serialize for Rates<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Serialize for Traffic {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Traffic", 2)?;
        st.serialize_field("protocol", self.protocol)?;
        st.serialize_field("rates", &self.rates.as_deref().map(Rates))?;
        st.end()
    }
}

struct Extra<'b>(&'b Value);
impl Serialize for Extra<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) if n.is_finite() => s.serialize_f64(*n),
            Value::Number(_) => s.serialize_none(),
            Value::Text(t) => s.serialize_str(t.as_str()),
        }
    }
}

struct NodeData<'b, 'a>(&'b NodeOut<'a>);
impl Serialize for NodeData<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let o = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &o.id)?;
        if let Some(p) = &o.parent {
            m.serialize_entry("parent", p)?;
        }
        m.serialize_entry("nodeType", o.node_type())?;
        m.serialize_entry("cluster", o.cluster())?;
        m.serialize_entry("namespace", o.namespace())?;
        if let Some(b) = &o.box_fields {
            if o.is_box.is_empty() || !b.app.is_empty() {
                m.serialize_entry("app", b.app)?;
            }
            flag(&mut m, "hasMissingSC", b.has_missing_sc)?;
            if !o.is_box.is_empty() {
                m.serialize_entry("isBox", o.is_box)?;
            }
            flag(&mut m, "isFind", o.is_find)?;
            if o.is_box.is_empty() {
                m.serialize_entry("isGroup", o.is_group)?;
            }
            flag(&mut m, "isInaccessible", b.is_inaccessible)?;
            flag(&mut m, "isOutside", b.is_outside)?;
            return m.end();
        }
        let Some(n) = o.node else { return m.end() };
        for (k, v) in [
            ("workload", &n.workload),
            ("app", &n.app),
            ("version", &n.version),
            ("service", &n.service),
        ] {
            if !v.is_empty() {
                m.serialize_entry(k, v.as_str())?;
            }
        }
        if !n.dest_services.is_empty() {
            let mut names: Vec<&str> = n.dest_services.iter().map(|s| s.as_str()).collect();
            names.sort_unstable();
            m.serialize_entry("destServices", &DestServices(&names))?;
        }
        if !o.traffic.is_empty() {
            m.serialize_entry("traffic", &o.traffic)?;
        }
        flag(&mut m, "hasCB", n.has_cb)?;
        flag(&mut m, "hasMissingSC", n.has_missing_sc)?;
        flag(&mut m, "hasVS", n.has_vs)?;
        flag(&mut m, "isDead", n.is_dead)?;
        flag(&mut m, "isFind", o.is_find)?;
        flag(&mut m, "isInaccessible", n.is_inaccessible)?;
        if !n.is_misconfigured.is_empty() {
            m.serialize_entry("isMisconfigured", n.is_misconfigured.as_str())?;
        }
        flag(&mut m, "isOutside", n.is_outside)?;
        flag(&mut m, "isRoot", n.is_root)?;
        if !n.is_service_entry.is_empty() {
            m.serialize_entry("isServiceEntry", n.is_service_entry.as_str())?;
        }
        flag(&mut m, "isUnused", n.is_unused)?;
        for f in n.extra.iter().filter(|f| !RESERVED.contains(&f.key.as_str())) {
            m.serialize_entry(f.key.as_str(), &Extra(&f.value))?;
        }
        m.end()
    }
}

fn flag<M: SerializeMap>(m: &mut M, key: &str, v: bool) -> Result<(), M::Error> {
    if v { m.serialize_entry(key, &true) } else { Ok(()) }
}

struct DestServices<'b>(&'b [&'b str]);
impl Serialize for DestServices<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for k in self.0 {
            m.serialize_entry(k, &true)?;
        }
        m.end()
    }
}

struct EdgeData<'b, 'a>(&'b EdgeOut<'a>);
impl Serialize for EdgeData<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let o = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &o.id)?;
        m.serialize_entry("source", &o.source)?;
        m.serialize_entry("target", &o.target)?;
        m.serialize_entry("traffic", &o.traffic)?;
        if let Some(rt) = o.edge.response_time.into_option() {
            m.serialize_entry("responseTime", &Fixed::whole(rt))?;
        }
        flag(&mut m, "isFind", o.is_find)?;
        flag(&mut m, "isMTLS", o.edge.is_mtls)?;
        flag(&mut m, "isUnused", o.is_unused)?;
        for f in o.edge.extra.iter().filter(|f| !RESERVED.contains(&f.key.as_str())) {
            m.serialize_entry(f.key.as_str(), &Extra(&f.value))?;
        }
        m.end()
    }
}

struct Wrapped<T>(T);
impl<T: Serialize> Serialize for Wrapped<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Element", 1)?;
        st.serialize_field("data", &self.0)?;
        st.end()
    }
}

struct Elements<'b, 'a>(&'b GraphOutput<'a>);
impl Serialize for Elements<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let g = self.0;
        let mut st = s.serialize_struct("Elements", 2)?;
        let nodes: Vec<Wrapped<NodeData>> = g.nodes.iter().map(|n| Wrapped(NodeData(n))).collect();
        let edges: Vec<Wrapped<EdgeData>> = g.edges.iter().map(|e| Wrapped(EdgeData(e))).collect();
        st.serialize_field("nodes", &nodes)?;
        st.serialize_field("edges", &edges)?;
        st.end()
    }
}

impl Serialize for GraphOutput<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Graph", 4)?;
        st.serialize_field("timestamp", &self.timestamp)?;
        st.serialize_field("duration", &self.duration)?;
        st.serialize_field("graphType", self.graph_type.as_str())?;
        st.serialize_field("elements", &Elements(self))?;
        st.end()
    }
}
