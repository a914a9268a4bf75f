//! hide, focus and find on the finished graph (issue #34).

use std::collections::{BTreeMap, BTreeSet};

use meshlens_graph_scope::{Expr, Kind, json::JsonElement};

use super::*;

/// `(source, destination)` workload pairs as one request series each, all in `ns`.
fn graph_of(o: &GraphOptions, pairs: &[(&str, &str)]) -> plugin_api::Graph {
    let series: RVec<Series> = pairs
        .iter()
        .map(|(a, b)| s((NS, a, a, "v1"), (NS, b, b, b, "v1"), "http", "200", None, 1.0))
        .collect();
    let plan = traffic_plan(o);
    let mut results = vec![QueryResult::default(); plan.len()];
    results[2].series = series;
    let mut g = build_graph(o, &plan, &results);
    finish(o, &mut g, &|_| true);
    g
}

/// The workload names and edges (`a>b`) of the scoped graph.
fn scoped(pairs: &[(&str, &str)], query: &[(&str, &str)]) -> (BTreeSet<String>, BTreeSet<String>) {
    let o = options(&[("namespaces", NS), ("graphType", "workload")]);
    let g = graph_of(&o, pairs);
    let mut out = GraphOutput::new(&o, &g);
    let scope = GraphScope::parse(&meshlens_params::query::query_string(query)).unwrap();
    out.apply_scope(&scope).unwrap();
    let name = |id: &str| {
        out.nodes
            .iter()
            .find(|n| n.id.as_str() == id)
            .and_then(|n| n.node)
            .unwrap()
            .workload
            .to_string()
    };
    let nodes = out.nodes.iter().filter_map(|n| n.node).map(|n| n.workload.to_string()).collect();
    let edges = out
        .edges
        .iter()
        .map(|e| format!("{}>{}", name(e.source.as_str()), name(e.target.as_str())))
        .collect();
    (nodes, edges)
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn focus_id(wl: &str) -> String {
    md5_hex(&format!("wl_{NS}_{wl}"))
}

const CHAIN: [(&str, &str); 4] = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")];
const STAR: [(&str, &str); 5] = [("c", "l1"), ("c", "l2"), ("l3", "c"), ("l4", "c"), ("l1", "x1")];

#[test]
fn focus_keeps_nodes_within_hops_in_either_direction_on_a_chain() {
    let id = focus_id("c");
    let run = |hops: &str| scoped(&CHAIN, &[("focus", &id), ("hops", hops)]);
    assert_eq!(run("0"), (set(&["c"]), set(&[])));
    assert_eq!(run("1"), (set(&["b", "c", "d"]), set(&["b>c", "c>d"])));
    assert_eq!(run("2"), (set(&["a", "b", "c", "d", "e"]), set(&["a>b", "b>c", "c>d", "d>e"])));
    // hops defaults to 1.
    assert_eq!(scoped(&CHAIN, &[("focus", &id)]), run("1"));
}

#[test]
fn focus_keeps_nodes_within_hops_in_either_direction_on_a_star() {
    let center = focus_id("c");
    let run = |id: &str, hops: &str| scoped(&STAR, &[("focus", id), ("hops", hops)]);
    assert_eq!(run(&center, "0"), (set(&["c"]), set(&[])));
    assert_eq!(
        run(&center, "1"),
        (set(&["c", "l1", "l2", "l3", "l4"]), set(&["c>l1", "c>l2", "l3>c", "l4>c"]))
    );
    assert_eq!(
        run(&center, "2"),
        (
            set(&["c", "l1", "l2", "l3", "l4", "x1"]),
            set(&["c>l1", "c>l2", "l3>c", "l4>c", "l1>x1"])
        )
    );
    let leaf = focus_id("l2");
    assert_eq!(run(&leaf, "1"), (set(&["c", "l2"]), set(&["c>l2"])));
    assert_eq!(
        run(&leaf, "2"),
        (set(&["c", "l1", "l2", "l3", "l4"]), set(&["c>l1", "c>l2", "l3>c", "l4>c"]))
    );
}

#[test]
fn hide_removes_nodes_with_their_edges_then_focus_and_find_see_what_is_left() {
    // Hiding b cuts the chain: from c, two hops reach only d and e.
    let (nodes, edges) = scoped(
        &CHAIN,
        &[("hide", "name = b-v1 or name = b"), ("focus", &focus_id("c")), ("hops", "2")],
    );
    assert_eq!((nodes, edges), (set(&["c", "d", "e"]), set(&["c>d", "d>e"])));
    // Hidden edges go, their nodes stay.
    let (nodes, edges) = scoped(&CHAIN, &[("hide", "rps > 0")]);
    assert_eq!((nodes.len(), edges.len()), (5, 0));
    // A focus on a hidden node is refused naming focus.
    let o = options(&[("namespaces", NS), ("graphType", "workload")]);
    let g = graph_of(&o, &CHAIN);
    let mut out = GraphOutput::new(&o, &g);
    let q = meshlens_params::query::query_string(&[
        ("hide", "workload = c"),
        ("focus", &focus_id("c")),
    ]);
    let e = out.apply_scope(&GraphScope::parse(&q).unwrap()).unwrap_err();
    assert_eq!(e.param, "focus");
}

#[test]
fn bad_parameters_are_refused_naming_them_and_empty_ones_mean_no_filter() {
    for (p, v) in [
        ("hide", "rps >"),
        ("find", "nope = 1"),
        ("hide", "hasCB and rps > 1"),
        ("hops", "11"),
        ("hops", "-1"),
        ("hops", "1.5"),
    ] {
        let e = GraphScope::parse(&meshlens_params::query::query_string(&[(p, v)])).unwrap_err();
        assert_eq!(e.param, p, "{p}={v}");
        assert!(e.message.starts_with(&format!("Invalid {p}: ")), "{}", e.message);
    }
    let s = GraphScope::parse("hide=&find=+&focus=").unwrap();
    assert!(s.is_full());
    let s = GraphScope::parse("hide=rps+%3E+1&hops=10").unwrap();
    assert_eq!((s.hide.map(|e| e.kind()), s.hops), (Some(Kind::Edge), 10));
}

/// The bookinfo graph with app boxes, as its output and as its JSON.
fn bookinfo(q: &[(&str, &str)]) -> (GraphOptions, plugin_api::Graph) {
    let mut all = vec![("namespaces", NS)];
    all.extend_from_slice(q);
    let o = options(&all);
    let plan = traffic_plan(&o);
    let mut results = bookinfo_results();
    round_results(&mut results);
    let mut g = build_graph(&o, &plan, &results);
    finish(&o, &mut g, &|_| true);
    (o, g)
}

/// What the server selects on its own elements is what the console's rules select on the
/// JSON of the same graph: every expression of the shared table and some with traffic.
#[test]
fn the_server_selects_what_the_console_rules_select_on_the_json() {
    let table: Value =
        serde_json::from_str(include_str!("../../../graph-scope/tests/expressions.json")).unwrap();
    let mut exprs: Vec<String> = table["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("error").is_none())
        .map(|c| c["expr"].as_str().unwrap().to_string())
        .collect();
    exprs.extend(
        [
            "rps > 2",
            "rps <= 1",
            "%error > 5",
            "%error = 10",
            "tcp > 0",
            "protocol = grpc",
            "rt > 0",
            "node = unknown",
            "name = details-v1",
            "service = reviews",
            "se or outside",
        ]
        .map(String::from),
    );
    let mut selected_somewhere = 0;
    for q in [
        &[("graphType", "versionedApp"), ("groupBy", "app")][..],
        &[("graphType", "workload"), ("injectServiceNodes", "true")],
    ] {
        let (o, g) = bookinfo(q);
        let out = GraphOutput::new(&o, &g);
        let json: Value = serde_json::from_slice(&out.to_json()).unwrap();
        for text in &exprs {
            let e = Expr::parse(text).unwrap();
            let (list, server): (&str, BTreeSet<String>) = match e.kind() {
                Kind::Node => (
                    "nodes",
                    out.nodes.iter().filter(|n| e.matches(*n)).map(|n| n.id.to_string()).collect(),
                ),
                Kind::Edge => (
                    "edges",
                    out.edges.iter().filter(|x| e.matches(*x)).map(|x| x.id.to_string()).collect(),
                ),
            };
            let console: BTreeSet<String> = json["elements"][list]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| &x["data"])
                .filter(|d| e.matches(&JsonElement(d)))
                .map(|d| d["id"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(server, console, "{text} on {q:?}");
            selected_somewhere += usize::from(!server.is_empty());
        }
    }
    assert!(selected_somewhere > 20, "the comparison must not be of empty selections");
}

/// Kept elements are the full graph's, byte for byte once parsed; found ones carry isFind.
#[test]
fn kept_elements_are_unchanged_and_found_ones_are_marked() {
    let (o, g) = bookinfo(&[("graphType", "versionedApp"), ("groupBy", "app")]);
    let full: Value = serde_json::from_slice(&GraphOutput::new(&o, &g).to_json()).unwrap();
    let by_id = |v: &Value, list: &str| -> BTreeMap<String, Value> {
        v["elements"][list]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x["data"]["id"].as_str().unwrap().to_string(), x["data"].clone()))
            .collect()
    };
    let reviews = full["elements"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["data"])
        .find(|d| d["app"] == "reviews" && d["version"] == "v2")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut out = GraphOutput::new(&o, &g);
    let q = meshlens_params::query::query_string(&[
        ("hide", "app = details"),
        ("focus", &reviews),
        ("find", "rps > 2"),
    ]);
    out.apply_scope(&GraphScope::parse(&q).unwrap()).unwrap();
    let scoped: Value = serde_json::from_slice(&out.to_json()).unwrap();
    let (full_nodes, full_edges) = (by_id(&full, "nodes"), by_id(&full, "edges"));
    let (nodes, edges) = (by_id(&scoped, "nodes"), by_id(&scoped, "edges"));
    assert!(nodes.len() >= 3 && nodes.len() < full_nodes.len(), "{nodes:?}");
    assert!(!edges.is_empty() && edges.len() < full_edges.len());
    let mut found = 0;
    for (id, mut d) in nodes.into_iter().chain(edges) {
        if d.as_object_mut().unwrap().remove("isFind").is_some() {
            found += 1;
        }
        let original = full_nodes.get(&id).or(full_edges.get(&id)).unwrap();
        assert_eq!(&d, original, "{id}");
    }
    assert!(found > 0, "rps > 2 matches an edge next to reviews v2");
    assert!(!scoped.to_string().contains("\"details\""), "details is hidden");
}
