//! Scoping the graph on the server (issue #34): `hide`, `focus` with `hops`, and `find` on
//! the namespaces graph and the node graphs, through the real server on the bookinfo fixture
//! in a real Prometheus. Kept elements must be the full graph's; bad values are 400s naming
//! their parameter.

use std::collections::{BTreeMap, BTreeSet};

use integration_tests::prometheus::{PromServer, fixture};
// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use integration_tests::server::{BUNDLED, plugin_dir, workspace_root};
use meshlens_params::query::query_string;
use meshlens_traffic::md5_hex;
use serde_json::Value;

const ARGS: &[&str] = &["--end", "1700000000", "--minutes", "30"];
const PP: &str = "wl_bookinfo_productpage-v1";

fn start(prom: &PromServer) -> Meshlens {
    start_with(prom, "")
}

/// `metrics` is more of the `[metrics]` table.
fn start_with(prom: &PromServer, metrics: &str) -> Meshlens {
    let dir = plugin_dir(BUNDLED);
    let demo = workspace_root().join("config").join("demo");
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n\
         [metrics]\nbackend = \"prometheus\"\n{metrics}\n[metrics.prometheus]\nurl = {:?}\n",
        dir.path(),
        prom.url()
    );
    Meshlens::start(&cfg, &[], vec![dir])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

/// The elements of a graph answer by id, `isFind` taken out (and reported).
fn by_id(v: &Value, list: &str) -> BTreeMap<String, Value> {
    v["elements"][list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {v}"))
        .iter()
        .map(|x| (x["data"]["id"].as_str().expect("id").to_string(), x["data"].clone()))
        .collect()
}

fn found(v: &Value) -> BTreeSet<String> {
    ["nodes", "edges"]
        .iter()
        .flat_map(|l| by_id(v, l))
        .filter(|(_, d)| d["isFind"] == true)
        .map(|(id, _)| id)
        .collect()
}

/// Every kept element equals the full graph's element with the same id (minus `isFind`).
fn assert_kept_unchanged(full: &Value, scoped: &Value) {
    for list in ["nodes", "edges"] {
        let all = by_id(full, list);
        for (id, mut d) in by_id(scoped, list) {
            d.as_object_mut().expect("object").remove("isFind");
            assert_eq!(Some(&d), all.get(&id), "{list} {id} differs from the full graph's");
        }
    }
}

/// Reference focus on the full JSON: node ids within `hops` edges of `start`.
fn within(full: &Value, start: &str, hops: usize) -> BTreeSet<String> {
    let edges = by_id(full, "edges");
    let mut kept = BTreeSet::from([start.to_string()]);
    for _ in 0..hops {
        let next: Vec<String> = edges
            .values()
            .flat_map(|e| {
                let (s, t) = (e["source"].as_str().unwrap(), e["target"].as_str().unwrap());
                let mut v = Vec::new();
                if kept.contains(s) {
                    v.push(t.to_string());
                }
                if kept.contains(t) {
                    v.push(s.to_string());
                }
                v
            })
            .collect();
        kept.extend(next);
    }
    kept
}

#[test]
fn hide_focus_and_find_scope_the_graph_and_keep_its_elements() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    let m = start(&prom);
    let get = |pairs: &[(&str, &str)]| {
        let mut all = vec![("namespaces", "bookinfo")];
        all.extend_from_slice(pairs);
        let q = format!("{}&queryTime={}", query_string(&all), f.end());
        let r = m.get(&format!("/api/namespaces/graph?{q}"));
        assert_eq!(r.status, 200, "{q}: {}", r.text());
        r.json()
    };
    let full = get(&[]);
    let (nodes, edges) = (by_id(&full, "nodes"), by_id(&full, "edges"));
    assert!(nodes.len() >= 6 && edges.len() >= 6, "{full}");
    let pp = md5_hex(PP);
    assert!(nodes.contains_key(pp.as_str()));

    // focus: 0, 1 and 2 hops around productpage, against a reference walk on the full JSON.
    for hops in [0usize, 1, 2] {
        let h = hops.to_string();
        let v = get(&[("focus", pp.as_str()), ("hops", &h)]);
        let kept: BTreeSet<String> = by_id(&v, "nodes").into_keys().collect();
        assert_eq!(kept, within(&full, &pp, hops), "hops {hops}");
        let edges_between: BTreeSet<String> = edges
            .iter()
            .filter(|(_, e)| {
                kept.contains(e["source"].as_str().unwrap())
                    && kept.contains(e["target"].as_str().unwrap())
            })
            .map(|(id, _)| id.clone())
            .collect();
        assert_eq!(by_id(&v, "edges").into_keys().collect::<BTreeSet<_>>(), edges_between);
        assert_kept_unchanged(&full, &v);
    }
    let one = by_id(&get(&[("focus", pp.as_str())]), "nodes");
    assert!(one.contains_key(md5_hex("wl_bookinfo_details-v1").as_str()), "a callee");
    assert!(one.contains_key(md5_hex("wl_istio-system_istio-ingressgateway").as_str()), "a caller");
    assert!(!one.contains_key(md5_hex("wl_bookinfo_ratings-v1").as_str()), "two hops away");

    // hide: details goes with its edges; the rest is the full graph's.
    let v = get(&[("hide", "app = details")]);
    let kept = by_id(&v, "nodes");
    assert!(kept.values().all(|d| d["app"] != "details"));
    assert_eq!(kept.len(), nodes.len() - 1);
    assert!(
        by_id(&v, "edges")
            .values()
            .all(|e| { e["target"] != md5_hex("wl_bookinfo_details-v1").as_str() })
    );
    assert_kept_unchanged(&full, &v);
    // Hidden edges go, their nodes stay (URL-encoded with `+` for spaces).
    let r = m.get(&format!(
        "/api/namespaces/graph?namespaces=bookinfo&queryTime={}&hide=protocol+%3D+http",
        f.end()
    ));
    let v = r.json();
    assert_eq!(by_id(&v, "nodes").len(), nodes.len());
    assert!(by_id(&v, "edges").values().all(|e| e["traffic"]["protocol"] != "http"));

    // find marks, removes nothing; hide then find sees only what is left.
    let v = get(&[("find", "%error > 5")]);
    assert_eq!(by_id(&v, "edges").len(), edges.len());
    let want: BTreeSet<String> = edges
        .iter()
        .filter(|(_, e)| {
            let r = &e["traffic"]["rates"];
            let pct = r.get("httpPercentErr").or(r.get("grpcPercentErr"));
            pct.and_then(|p| p.as_str()).and_then(|p| p.parse::<f64>().ok()).unwrap_or(0.0) > 5.0
        })
        .map(|(id, _)| id.clone())
        .collect();
    assert!(!want.is_empty(), "the fixture has edges over 5 % errors");
    assert_eq!(found(&v), want);
    assert_kept_unchanged(&full, &v);
    let v = get(&[("hide", "app = details"), ("focus", pp.as_str()), ("find", "node = workload")]);
    assert!(found(&v).contains(pp.as_str()));
    assert!(by_id(&v, "nodes").values().all(|d| d["app"] != "details"));

    // Empty values mean no filter.
    assert_eq!(get(&[("hide", ""), ("find", ""), ("focus", "")]), full);

    // DOT is scoped too.
    let q = query_string(&[
        ("namespaces", "bookinfo"),
        ("format", "dot"),
        ("focus", &pp),
        ("hops", "0"),
    ]);
    let dot = m.get(&format!("/api/namespaces/graph?{q}&queryTime={}", f.end())).text();
    assert_eq!(dot.matches("shape=").count(), 1, "{dot}");
    assert!(!dot.contains("->"), "{dot}");
    let q =
        query_string(&[("namespaces", "bookinfo"), ("format", "dot"), ("find", "app = details")]);
    let dot = m.get(&format!("/api/namespaces/graph?{q}&queryTime={}", f.end())).text();
    assert_eq!(dot.matches("penwidth=3").count(), 1, "{dot}");

    // With boxes: the server prepares only what it keeps, yet a kept box is the whole
    // graph's (its members' flags OR-ed over all of them), kept edges keep their share of
    // the source's requests, and the order is the full graph's order.
    let boxing = [("graphType", "versionedApp"), ("groupBy", "app")];
    let full = get(&boxing);
    let node = |pick: &dyn Fn(&Value) -> bool| -> String {
        by_id(&full, "nodes").into_iter().find(|(_, d)| pick(d)).expect("node").0
    };
    let v2 = node(&|d| d["app"] == "reviews" && d["version"] == "v2");
    let reviews_box = node(&|d| d["app"] == "reviews" && d["isGroup"] == "app");
    let order = |v: &Value, list: &str| -> Vec<String> {
        v["elements"][list]
            .as_array()
            .expect("list")
            .iter()
            .map(|x| x["data"]["id"].as_str().expect("id").to_string())
            .collect()
    };
    let scopes: [&[(&str, &str)]; 4] = [
        &[("focus", &v2), ("hops", "0")],
        &[("focus", &reviews_box), ("hops", "1")],
        &[("hide", "rps > 2"), ("focus", &v2), ("hops", "2"), ("find", "version = v1")],
        &[("hide", "version = v3")],
    ];
    for scope in scopes {
        let v = get(&[&boxing[..], scope].concat());
        assert_kept_unchanged(&full, &v);
        for list in ["nodes", "edges"] {
            let kept: BTreeSet<String> = order(&v, list).into_iter().collect();
            let in_full: Vec<String> =
                order(&full, list).into_iter().filter(|id| kept.contains(id)).collect();
            assert_eq!(order(&v, list), in_full, "{list} of {scope:?} in the full graph's order");
        }
        assert!(by_id(&v, "nodes").contains_key(&reviews_box), "{scope:?} keeps the reviews box");
    }
    let alone = by_id(&get(&[&boxing[..], &[("focus", &v2), ("hops", "0")]].concat()), "nodes");
    assert_eq!(alone.len(), 2, "reviews v2 and its box: {alone:?}");
    assert_eq!(alone[&v2]["parent"], reviews_box.as_str());
}

#[test]
fn node_graphs_are_scoped_and_bad_values_are_400s_naming_the_parameter() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    let m = start(&prom);
    let t = f.end();
    let node_graph = |pairs: &[(&str, &str)]| {
        let q = query_string(pairs);
        m.get(&format!("/api/namespaces/bookinfo/workloads/productpage-v1/graph?queryTime={t}&{q}"))
    };
    let full = node_graph(&[]).json();
    let v = node_graph(&[("hide", "name = details-v1")]);
    assert_eq!(v.status, 200, "{}", v.text());
    let v = v.json();
    assert_eq!(by_id(&v, "nodes").len() + 1, by_id(&full, "nodes").len());
    assert_kept_unchanged(&full, &v);
    let pp = md5_hex(PP);
    let v = node_graph(&[("focus", &pp), ("hops", "0")]).json();
    assert_eq!(by_id(&v, "nodes").into_keys().collect::<Vec<_>>(), vec![pp.clone()]);

    let cases: [(&str, &str); 8] = [
        ("hide", "rps >"),
        ("hide", "nope = 1"),
        ("find", "hasCB and rps > 1"),
        ("find", "(app = reviews"),
        ("focus", "0123456789abcdef0123456789abcdef"),
        ("hops", "11"),
        ("hops", "two"),
        ("hops", "-1"),
    ];
    for (p, value) in cases {
        for path in [
            "/api/namespaces/graph?namespaces=bookinfo&",
            "/api/namespaces/bookinfo/workloads/productpage-v1/graph?",
        ] {
            let r = m.get(&format!("{path}queryTime={t}&{}", query_string(&[(p, value)])));
            assert_eq!(r.status, 400, "{p}={value}: {}", r.text());
            let body = r.json();
            assert_eq!(body["code"], 400);
            let msg = body["message"].as_str().unwrap_or_default();
            assert!(msg.contains(p), "{p}={value}: {msg}");
        }
    }
    // A focus on a node that hide removed is not in the graph.
    let r = node_graph(&[("hide", "name = productpage-v1"), ("focus", &pp)]);
    assert_eq!(r.status, 400);
    assert!(r.json()["message"].as_str().unwrap_or_default().contains("focus"));
}

/// A finished graph is kept for the answer cache's TTL and scoped again without a rebuild:
/// the answers stay those of an instance that builds every time (cache off), byte for byte,
/// and a request that changes what is built (other appenders) is another graph.
#[test]
fn a_graph_asked_again_with_another_scope_is_reused_and_answers_as_if_rebuilt() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    let cached = start(&prom);
    let rebuilt = start_with(&prom, "cache_ttl = \"0s\"");
    let pp = md5_hex(PP);
    let scopes: Vec<Vec<(&str, &str)>> = vec![
        vec![],
        vec![("focus", pp.as_str()), ("hops", "1")],
        vec![("hide", "app = details")],
        vec![("find", "rps > 0.5")],
        vec![("format", "dot")],
        vec![],
    ];
    let path = |scope: &[(&str, &str)]| {
        let mut all = vec![("namespaces", "bookinfo")];
        all.extend_from_slice(scope);
        format!("/api/namespaces/graph?{}&queryTime={}", query_string(&all), f.end())
    };
    for (i, scope) in scopes.iter().enumerate() {
        let (a, b) = (cached.get(&path(scope)), rebuilt.get(&path(scope)));
        assert_eq!((a.status, b.status), (200, 200), "{scope:?}: {}", a.text());
        assert_eq!(a.text(), b.text(), "{scope:?}: the reused graph answers differently");
        // One finished graph, however many scopes it answered.
        assert_eq!(cached.state.graph_cache.len(), 1, "after request {i} ({scope:?})");
        assert!(rebuilt.state.graph_cache.is_empty(), "the cache is off with cache_ttl = 0s");
    }
    // Fewer appenders build another graph: kept beside the first, not answered from it.
    let (a, b) =
        (cached.get(&path(&[("appenders", "")])), rebuilt.get(&path(&[("appenders", "")])));
    assert_eq!(a.text(), b.text());
    assert_ne!(a.text(), cached.get(&path(&[])).text(), "no appenders: another graph");
    assert_eq!(cached.state.graph_cache.len(), 2);
    // A bad focus on a reused graph is still the 400 naming it.
    let bad = cached.get(&path(&[("focus", "no-such-node")]));
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("focus"), "{}", bad.text());
}
