//! Scoping the finished graph (issue #34): `hide=EXPR`, then `focus=NODE_ID` with `hops=N`,
//! then `find=EXPR`, applied to the prepared output after the appenders. Kept elements are
//! the full graph's, untouched: ids, traffic and percentages were computed on the whole graph
//! before anything is removed. The expressions are the console's language
//! ([`meshlens_graph_scope`]), evaluated on what the JSON would say.

use std::collections::HashSet;
use std::str::FromStr;

use appender_support::FastMap;
use meshlens_graph_scope::{EdgeNumber, Expr, Field, Flag, Kind, Subject, js_number};
use meshlens_params::query::{first, parse_query};
use serde::Deserialize;

use par_chunks::Stopped;
use plugin_api::Graph;

use crate::fixed::Fixed;
use crate::hash32::Hash32;
use crate::options::{GraphOptions, OptionsError};
use crate::output::{Base, Chosen, EdgeOut, GraphOutput, NodeOut, Pick};

/// The most `hops` a focus may ask for.
pub const MAX_HOPS: u8 = 10;

/// A `hide` or `find` value: an expression, or nothing for an empty value.
#[derive(Debug, Clone, Default)]
pub struct ExprParam(pub Option<Expr>);

impl FromStr for ExprParam {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Ok(ExprParam(None));
        }
        Expr::parse(s).map(|e| ExprParam(Some(e))).map_err(|e| e.message)
    }
}

/// A `hops` value: an integer from 0 to [`MAX_HOPS`].
#[derive(Debug, Clone, Copy)]
pub struct Hops(pub u8);

impl FromStr for Hops {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<u8>()
            .ok()
            .filter(|h| *h <= MAX_HOPS)
            .map(Hops)
            .ok_or_else(|| format!("allowed values are the integers 0 to {MAX_HOPS}"))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ScopeQuery {
    #[serde(deserialize_with = "first")]
    hide: Option<ExprParam>,
    #[serde(deserialize_with = "first")]
    find: Option<ExprParam>,
    #[serde(deserialize_with = "first")]
    focus: Option<String>,
    #[serde(deserialize_with = "first")]
    hops: Option<Hops>,
}

/// The scope a graph request asks for; [`GraphScope::default`] keeps everything.
#[derive(Debug, Clone, Default)]
pub struct GraphScope {
    /// Elements removed (with, for nodes, their edges and a box's members).
    pub hide: Option<Expr>,
    /// The node (or box) id the graph is narrowed around.
    pub focus: Option<String>,
    /// How many edges away from `focus` nodes are kept (default 1).
    pub hops: u8,
    /// Elements marked `isFind`.
    pub find: Option<Expr>,
}

impl GraphScope {
    /// Reads `hide`, `find`, `focus` and `hops` from the query string (without `?`); a bad
    /// value is refused naming its parameter, before anything is queried.
    pub fn parse(query: &str) -> Result<GraphScope, OptionsError> {
        let q: ScopeQuery = parse_query(query).map_err(|e| OptionsError {
            message: format!("Invalid {}: {}", e.param, e.reason),
            param: e.param,
        })?;
        Ok(GraphScope {
            hide: q.hide.and_then(|p| p.0),
            find: q.find.and_then(|p| p.0),
            focus: q.focus.filter(|f| !f.trim().is_empty()).map(|f| f.trim().to_string()),
            hops: q.hops.map_or(1, |h| h.0),
        })
    }

    /// Whether the scope keeps and marks nothing (the full graph).
    pub fn is_full(&self) -> bool {
        self.hide.is_none() && self.focus.is_none() && self.find.is_none()
    }
}

impl<'a> GraphOutput<'a> {
    /// The response for `graph` with `scope` applied: what [`GraphOutput::new_until`] then
    /// [`GraphOutput::apply_scope`] make, element for element, without preparing what is
    /// dropped. A first pass reads only what hide and focus need (ids, node fields, boxes,
    /// edge ends; edge traffic only for an edge expression); the second prepares the kept
    /// elements in full (traffic, edge ids, order). Ids, percentages and boxes are still
    /// the whole graph's. The outer error: `stop` said yes; the inner: a bad `focus`.
    pub fn scoped_until(
        opts: &GraphOptions,
        graph: &'a Graph,
        scope: &GraphScope,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Result<Self, OptionsError>, Stopped> {
        let base = Base::new(graph, stop)?;
        let chosen = if scope.hide.is_none() && scope.focus.is_none() {
            None
        } else {
            let edge_traffic = scope.hide.as_ref().is_some_and(|e| e.kind() == Kind::Edge);
            let mut light = Self::pass(opts, graph, &base, Pick::Light { edge_traffic }, stop)?;
            if let Err(e) = light.narrow(scope) {
                return Ok(Err(e));
            }
            let mut c = Chosen {
                nodes: vec![false; graph.nodes.len()],
                edges: vec![false; graph.edges.len()],
                boxes: HashSet::new(),
            };
            for n in &light.nodes {
                match n.pos {
                    Some(i) => c.nodes[i] = true,
                    None => {
                        c.boxes.insert(n.id);
                    }
                }
            }
            for e in &light.edges {
                c.edges[e.pos] = true;
            }
            Some(c)
        };
        let pick = chosen.as_ref().map_or(Pick::All, Pick::Only);
        let mut out = Self::pass(opts, graph, &base, pick, stop)?;
        out.mark_found(scope);
        Ok(Ok(out))
    }

    /// Applies `scope`: hide, then focus, then find. A focus id that is not a node of the
    /// graph left after hide is refused naming `focus`.
    pub fn apply_scope(&mut self, scope: &GraphScope) -> Result<(), OptionsError> {
        self.narrow(scope)?;
        self.mark_found(scope);
        Ok(())
    }

    /// Hide, then focus.
    fn narrow(&mut self, scope: &GraphScope) -> Result<(), OptionsError> {
        if let Some(e) = &scope.hide {
            self.hide(e);
        }
        if let Some(id) = &scope.focus {
            self.focus(id, scope.hops)?;
        }
        Ok(())
    }

    /// Find: marks the matching kept elements.
    fn mark_found(&mut self, scope: &GraphScope) {
        if let Some(e) = &scope.find {
            match e.kind() {
                Kind::Node => self.nodes.iter_mut().for_each(|n| n.is_find = e.matches(&*n)),
                Kind::Edge => self.edges.iter_mut().for_each(|o| o.is_find = e.matches(&*o)),
            }
        }
    }

    fn hide(&mut self, e: &Expr) {
        if e.kind() == Kind::Edge {
            self.edges.retain(|o| !e.matches(o));
            return;
        }
        let hidden: HashSet<Hash32> =
            self.nodes.iter().filter(|n| e.matches(*n)).map(|n| n.id).collect();
        if hidden.is_empty() {
            return;
        }
        // A hidden box takes its members, and a member box its own (boxes nest up to three
        // deep: cluster, namespace, app).
        let mut hidden = hidden;
        loop {
            let before = hidden.len();
            for n in &self.nodes {
                if n.parent.is_some_and(|p| hidden.contains(&p)) {
                    hidden.insert(n.id);
                }
            }
            if hidden.len() == before {
                break;
            }
        }
        self.nodes.retain(|n| !hidden.contains(&n.id));
        self.keep_boxes_with_members(None);
        self.keep_edges_between_nodes();
    }

    fn focus(&mut self, id: &str, hops: u8) -> Result<(), OptionsError> {
        let Some(start) = self.nodes.iter().find(|n| n.id.as_str() == id) else {
            return Err(OptionsError {
                param: "focus".into(),
                message: "Invalid focus: no node of the graph (after hide) has this id".into(),
            });
        };
        let start_id = start.id;
        let index: FastMap<Hash32, usize> =
            self.nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
        let mut adjacent: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for e in &self.edges {
            if let (Some(&s), Some(&t)) = (index.get(&e.source), index.get(&e.target)) {
                adjacent[s].push(t);
                adjacent[t].push(s);
            }
        }
        // A focused box starts from its members, those of its member boxes included.
        let mut frontier: Vec<usize> = if start.node.is_none() {
            let mut inside: HashSet<Hash32> = HashSet::from([start_id]);
            loop {
                let before = inside.len();
                for n in self.nodes.iter().filter(|n| n.node.is_none()) {
                    if n.parent.is_some_and(|p| inside.contains(&p)) {
                        inside.insert(n.id);
                    }
                }
                if inside.len() == before {
                    break;
                }
            }
            (0..self.nodes.len())
                .filter(|&i| {
                    let n = &self.nodes[i];
                    n.node.is_some() && n.parent.is_some_and(|p| inside.contains(&p))
                })
                .collect()
        } else {
            vec![index[&start_id]]
        };
        let mut kept = vec![false; self.nodes.len()];
        for &i in &frontier {
            kept[i] = true;
        }
        for _ in 0..hops {
            let mut next = Vec::new();
            for &i in &frontier {
                for &j in &adjacent[i] {
                    if !kept[j] {
                        kept[j] = true;
                        next.push(j);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        let mut k = kept.into_iter();
        self.nodes.retain(|n| k.next().unwrap_or(false) || n.node.is_none());
        self.keep_boxes_with_members(Some(start_id));
        self.keep_edges_between_nodes();
        Ok(())
    }

    /// Drops boxes without a kept member (except `also`), inner boxes first: an outer box
    /// whose only members were emptied boxes goes too.
    fn keep_boxes_with_members(&mut self, also: Option<Hash32>) {
        loop {
            let before = self.nodes.len();
            let parents: HashSet<Hash32> = self.nodes.iter().filter_map(|n| n.parent).collect();
            self.nodes
                .retain(|n| n.node.is_some() || parents.contains(&n.id) || Some(n.id) == also);
            if self.nodes.len() == before {
                break;
            }
        }
    }

    fn keep_edges_between_nodes(&mut self) {
        let ids: HashSet<Hash32> =
            self.nodes.iter().filter(|n| n.node.is_some()).map(|n| n.id).collect();
        self.edges.retain(|e| ids.contains(&e.source) && ids.contains(&e.target));
    }
}

impl Subject for NodeOut<'_> {
    fn field(&self, f: Field) -> Option<&str> {
        let present = |s: &'_ str| !s.is_empty();
        match (f, self.node, self.box_fields()) {
            (Field::NodeType, ..) => Some(self.node_type()),
            (Field::Namespace, ..) => Some(self.namespace()),
            // As the JSON says: a `boxBy` box other than an app box has no app.
            (Field::App, _, Some(b)) => {
                Some(b.app).filter(|a| self.is_box.is_empty() || present(a))
            }
            (Field::App, Some(n), _) => Some(n.app.as_str()).filter(|s| present(s)),
            (Field::Version, Some(n), _) => Some(n.version.as_str()).filter(|s| present(s)),
            (Field::Workload, Some(n), _) => Some(n.workload.as_str()).filter(|s| present(s)),
            (Field::Service, Some(n), _) => Some(n.service.as_str()).filter(|s| present(s)),
            _ => None,
        }
    }
    fn number(&self, _: EdgeNumber) -> f64 {
        0.0
    }
    fn flag(&self, f: Flag) -> bool {
        if let Some(b) = self.box_fields() {
            return match f {
                Flag::HasMissingSc => b.has_missing_sc,
                Flag::Inaccessible => b.is_inaccessible,
                Flag::Outside => b.is_outside,
                Flag::Box => true,
                _ => false,
            };
        }
        let Some(n) = self.node else { return false };
        match f {
            Flag::HasCb => n.has_cb,
            Flag::HasVs => n.has_vs,
            Flag::HasMissingSc => n.has_missing_sc,
            // Open fields, set by the mesh appender and the host's ambient marking.
            Flag::HasHttpRoute => open_flag(n, "hasHTTPRoute"),
            Flag::Ambient => open_flag(n, "isAmbient"),
            Flag::Waypoint => open_flag(n, "isWaypoint"),
            Flag::Dead => n.is_dead,
            Flag::Unused => n.is_unused,
            Flag::Outside => n.is_outside,
            Flag::Root => n.is_root,
            Flag::ServiceEntry => !n.is_service_entry.is_empty(),
            Flag::Inaccessible => n.is_inaccessible,
            Flag::Box | Flag::Mtls => false,
        }
    }
}

/// An open field read as the console reads a flag: only `true` counts.
fn open_flag(n: &plugin_api::Node, key: &str) -> bool {
    n.extra.iter().any(|f| f.key.as_str() == key && f.value == plugin_api::Value::Bool(true))
}

/// A rate as the console reads it: the JSON's digits, not the unrounded value.
fn shown(v: Fixed) -> f64 {
    js_number(&v.digits(&mut [0u8; 24]))
}

impl EdgeOut<'_> {
    fn rate(&self, key: &str) -> Option<Fixed> {
        self.traffic.rates.as_ref()?.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

impl Subject for EdgeOut<'_> {
    fn field(&self, f: Field) -> Option<&str> {
        (f == Field::Protocol).then_some(self.traffic.protocol)
    }
    fn number(&self, n: EdgeNumber) -> f64 {
        // `num()` of the console: an absent rate is 0, and so is NaN.
        let num = |k| self.rate(k).map(shown).filter(|x| !x.is_nan()).unwrap_or(0.0);
        match n {
            EdgeNumber::Rps => num("http") + num("grpc"),
            EdgeNumber::ErrorPct => {
                match (self.rate("httpPercentErr"), self.rate("grpcPercentErr")) {
                    (Some(_), _) => num("httpPercentErr"),
                    (None, Some(_)) => num("grpcPercentErr"),
                    _ => 0.0,
                }
            }
            EdgeNumber::Tcp => self.rate("tcp").map_or(0.0, shown),
            EdgeNumber::Rt => {
                self.edge.response_time.into_option().map_or(0.0, |rt| shown(Fixed::whole(rt)))
            }
        }
    }
    fn flag(&self, f: Flag) -> bool {
        f == Flag::Mtls && self.edge.is_mtls
    }
}
