//! The graph's pretty JSON, written directly.
//!
//! Byte for byte what `serde_json::to_vec_pretty` makes of the `Serialize` impls in
//! `serde_ref.rs` (a test holds the two equal), at a fraction of the cost: keys, ids and rate
//! strings are known not to need escaping and go out as whole chunks. On a graph of 10,000
//! nodes and 30,000 edges serde's generic path was a third of the request.

use std::io::Write as _;

use plugin_api::Value;

use crate::fixed::Fixed;
use crate::hash32::Hash32;
use crate::output::{EdgeOut, GraphOutput, NodeOut, RESERVED, Traffic};
use par_chunks::{Stopped, try_map_chunks};

/// A pretty JSON writer with 2-space indents, the layout of serde_json's `PrettyFormatter`.
struct Pretty {
    out: Vec<u8>,
    depth: usize,
    /// No member written yet in the innermost open container.
    first: bool,
}

/// Room for a node or an edge, for sizing chunk buffers: about twice the average (540 bytes
/// on the 2,001-node graph, 575 on the 10,001-node one), since a chunk that outgrows its
/// buffer is copied into fresh memory, while room never written is never faulted in.
const ELEMENT_BYTES: usize = 1024;

/// Nesting of `{"elements": {"nodes": [` where the elements are written.
const ELEMENTS_DEPTH: usize = 3;

/// What the answer holds besides its elements (timestamp, duration, graphType, brackets).
const ENVELOPE_BYTES: usize = 256;

const SPACES: &[u8; 64] = b"                                                                ";

impl Pretty {
    fn newline(&mut self) {
        self.out.push(b'\n');
        let mut n = 2 * self.depth;
        while n > 0 {
            let k = n.min(SPACES.len());
            self.out.extend_from_slice(&SPACES[..k]);
            n -= k;
        }
    }
    fn open(&mut self, c: u8) {
        self.out.push(c);
        self.depth += 1;
        self.first = true;
    }
    fn close(&mut self, c: u8) {
        self.depth -= 1;
        if !self.first {
            self.newline();
        }
        self.out.push(c);
        self.first = false;
    }
    /// Starts a member: separator, newline, indent.
    fn member(&mut self) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.newline();
    }
    /// `"key": ` for a key that needs no escaping (the spec's own names).
    fn key(&mut self, k: &str) {
        self.member();
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\": ");
    }
    /// A string that needs no escaping (hex ids, rate digits, fixed words).
    fn plain(&mut self, s: &str) {
        self.quoted(s.as_bytes());
    }
    fn quoted(&mut self, bytes: &[u8]) {
        self.out.push(b'"');
        self.out.extend_from_slice(bytes);
        self.out.push(b'"');
    }
    /// Any string, escaped as serde_json does.
    fn string(&mut self, s: &str) {
        self.out.push(b'"');
        let bytes = s.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let esc: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0..=0x1f => b"",
                _ => continue,
            };
            self.out.extend_from_slice(&bytes[start..i]);
            if esc.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 15)],
                ]);
            } else {
                self.out.extend_from_slice(esc);
            }
            start = i + 1;
        }
        self.out.extend_from_slice(&bytes[start..]);
        self.out.push(b'"');
    }
    fn key_string(&mut self, k: &str, v: &str) {
        self.key(k);
        self.string(v);
    }
    fn key_plain(&mut self, k: &str, v: &str) {
        self.key(k);
        self.plain(v);
    }
    fn key_hash(&mut self, k: &str, v: &Hash32) {
        self.key(k);
        self.quoted(v.as_bytes());
    }
    fn key_fixed(&mut self, k: &str, v: Fixed) {
        self.key(k);
        // Digits, a point, maybe `NaN`/`inf` or a minus: never anything to escape.
        let mut buf = [0u8; 24];
        let s = v.digits(&mut buf);
        self.plain(&s);
    }
    fn flag(&mut self, k: &str, v: bool) {
        if v {
            self.key(k);
            self.out.extend_from_slice(b"true");
        }
    }
    /// An appender's open field, under a key that may need escaping.
    fn extra(&mut self, k: &str, v: &Value) {
        self.member();
        self.string(k);
        self.out.extend_from_slice(b": ");
        match v {
            Value::Bool(true) => self.out.extend_from_slice(b"true"),
            Value::Bool(false) => self.out.extend_from_slice(b"false"),
            // serde_json's own float format (shortest round trip).
            Value::Number(n) if n.is_finite() => {
                let _ = serde_json::to_writer(&mut self.out, n);
            }
            Value::Number(_) => self.out.extend_from_slice(b"null"),
            Value::Text(t) => self.string(t.as_str()),
        }
    }

    fn traffic(&mut self, t: &Traffic) {
        self.open(b'{');
        self.key_plain("protocol", t.protocol);
        self.key("rates");
        match &t.rates {
            None => self.out.extend_from_slice(b"null"),
            Some(rates) => {
                self.open(b'{');
                for (k, v) in rates {
                    self.key_fixed(k, *v);
                }
                self.close(b'}');
            }
        }
        self.close(b'}');
    }

    /// `{"data": {...}}`, the cytoscape element wrapper.
    fn element(&mut self, body: impl FnOnce(&mut Self)) {
        self.open(b'{');
        self.key("data");
        self.open(b'{');
        body(self);
        self.close(b'}');
        self.close(b'}');
    }

    /// A list's elements written in chunks (on several threads for big graphs), at `depth`,
    /// asking `stop` before each chunk.
    fn element_parts<T: Sync>(
        items: &[T],
        depth: usize,
        write: fn(&mut Self, &T),
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<Vec<u8>>, Stopped> {
        try_map_chunks(items, stop, |start, chunk| {
            // A chunk after the first starts with the separator, as if written in one go.
            let mut w = Pretty {
                out: Vec::with_capacity(ELEMENT_BYTES * chunk.len()),
                depth,
                first: start == 0,
            };
            for item in chunk {
                w.member();
                w.element(|w| write(w, item));
            }
            w.out
        })
    }

    /// `"key": [` of elements written by [`Pretty::element_parts`] at this depth.
    fn open_elements(&mut self, key: &str) {
        self.key(key);
        self.open(b'[');
        debug_assert_eq!(self.depth, ELEMENTS_DEPTH, "parts were written at another depth");
    }

    /// `]` after the elements `parts` (written elsewhere, joined in between).
    fn close_elements(&mut self, parts: &[Vec<u8>]) {
        self.first = parts.iter().all(Vec::is_empty);
        self.close(b']');
    }

    /// Appenders' open fields, minus those named like the spec's own.
    fn extras(&mut self, fields: &[plugin_api::Field]) {
        for f in fields.iter().filter(|f| !RESERVED.contains(&f.key.as_str())) {
            self.extra(f.key.as_str(), &f.value);
        }
    }

    fn node(&mut self, o: &NodeOut<'_>) {
        self.key_hash("id", &o.id);
        if let Some(p) = &o.parent {
            self.key_hash("parent", p);
        }
        self.key_plain("nodeType", o.node_type());
        self.key_string("cluster", o.cluster());
        self.key_string("namespace", o.namespace());
        if let Some(b) = o.box_fields() {
            // A `groupBy` box always names its app; a `boxBy` box only an app box does.
            if o.is_box.is_empty() || !b.app.is_empty() {
                self.key_string("app", b.app);
            }
            self.flag("hasMissingSC", b.has_missing_sc);
            if !o.is_box.is_empty() {
                self.key_plain("isBox", o.is_box);
            }
            self.flag("isFind", o.is_find);
            if o.is_box.is_empty() {
                self.key_plain("isGroup", o.is_group);
            }
            self.flag("isInaccessible", b.is_inaccessible);
            self.flag("isOutside", b.is_outside);
        } else if let Some(n) = o.node {
            for (k, v) in [
                ("workload", &n.workload),
                ("app", &n.app),
                ("version", &n.version),
                ("service", &n.service),
            ] {
                if !v.is_empty() {
                    self.key_string(k, v.as_str());
                }
            }
            if !n.dest_services.is_empty() {
                let mut names: Vec<&str> = n.dest_services.iter().map(|s| s.as_str()).collect();
                names.sort_unstable();
                self.key("destServices");
                self.open(b'{');
                for name in names {
                    self.member();
                    self.string(name);
                    self.out.extend_from_slice(b": true");
                }
                self.close(b'}');
            }
            if !o.traffic.is_empty() {
                self.key("traffic");
                self.open(b'[');
                for t in &o.traffic {
                    self.member();
                    self.traffic(t);
                }
                self.close(b']');
            }
            self.flag("hasCB", n.has_cb);
            self.flag("hasMissingSC", n.has_missing_sc);
            self.flag("hasVS", n.has_vs);
            self.flag("isDead", n.is_dead);
            self.flag("isFind", o.is_find);
            self.flag("isInaccessible", n.is_inaccessible);
            if !n.is_misconfigured.is_empty() {
                self.key_string("isMisconfigured", n.is_misconfigured.as_str());
            }
            self.flag("isOutside", n.is_outside);
            self.flag("isRoot", n.is_root);
            if !n.is_service_entry.is_empty() {
                self.key_string("isServiceEntry", n.is_service_entry.as_str());
            }
            self.flag("isUnused", n.is_unused);
            self.extras(&n.extra);
        }
    }

    fn edge(&mut self, o: &EdgeOut<'_>) {
        self.key_hash("id", &o.id);
        self.key_hash("source", &o.source);
        self.key_hash("target", &o.target);
        self.key("traffic");
        self.traffic(&o.traffic);
        if let Some(rt) = o.edge.response_time.into_option() {
            self.key_fixed("responseTime", Fixed::whole(rt));
        }
        self.flag("isFind", o.is_find);
        self.flag("isMTLS", o.edge.is_mtls);
        self.flag("isUnused", o.is_unused);
        self.extras(&o.edge.extra);
    }
}

impl GraphOutput<'_> {
    /// Pretty-printed JSON (2-space indent), as Kiali answers graphs.
    pub fn to_json(&self) -> Vec<u8> {
        // Never asked to stop, so never the default.
        self.to_json_until(&|| false).unwrap_or_default()
    }

    /// [`GraphOutput::to_json`] that asks `stop` every 1,024 nodes or edges and gives up
    /// ([`Stopped`]) once it says yes.
    pub fn to_json_until(&self, stop: &(dyn Fn() -> bool + Sync)) -> Result<Vec<u8>, Stopped> {
        let nodes = Pretty::element_parts(&self.nodes, ELEMENTS_DEPTH, Pretty::node, stop)?;
        let edges = Pretty::element_parts(&self.edges, ELEMENTS_DEPTH, Pretty::edge, stop)?;
        // The envelope around the elements, in three pieces: before the nodes, between the
        // nodes and the edges, after the edges. Then all of it joined once, at its size.
        let mut w = Pretty { out: Vec::with_capacity(ENVELOPE_BYTES), depth: 0, first: true };
        w.open(b'{');
        w.key("timestamp");
        let _ = write!(w.out, "{}", self.timestamp);
        w.key("duration");
        let _ = write!(w.out, "{}", self.duration);
        w.key_plain("graphType", self.graph_type.as_str());
        w.key("elements");
        w.open(b'{');
        w.open_elements("nodes");
        let head = std::mem::take(&mut w.out);
        w.close_elements(&nodes);
        w.open_elements("edges");
        let middle = std::mem::take(&mut w.out);
        w.close_elements(&edges);
        w.close(b'}');
        w.close(b'}');
        let pieces: Vec<&[u8]> = std::iter::once(head.as_slice())
            .chain(nodes.iter().map(Vec::as_slice))
            .chain([middle.as_slice()])
            .chain(edges.iter().map(Vec::as_slice))
            .chain([w.out.as_slice()])
            .collect();
        Ok(par_chunks::concat(&pieces))
    }
}
