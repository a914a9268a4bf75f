//! The written graph: JSON bytes against serde, ids and order across threads and ties.

use super::*;

/// The direct JSON writer and serde_json over the `Serialize` impls agree byte for byte, on
/// every graph type and grouping, with open fields and names that need escaping.
#[test]
fn json_writer_matches_serde_byte_for_byte() {
    use plugin_api::Value as V;
    for gt in ["app", "versionedApp", "workload", "service"] {
        for (group, inject) in [("app", "true"), ("version", "false"), ("none", "true")] {
            let o = options(&[
                ("namespaces", NS),
                ("graphType", gt),
                ("groupBy", group),
                ("injectServiceNodes", inject),
            ]);
            let plan = traffic_plan(&o);
            let mut results = bookinfo_results();
            round_results(&mut results);
            let mut g = build_graph(&o, &plan, &results);
            finish(&o, &mut g, &|_| true);
            let odd = "q\"uote\\ back\nline\ttab\u{1}\u{1f}\u{7f} é 名";
            if let Some(n) = g.nodes.iter_mut().next() {
                n.is_misconfigured = odd.into();
                n.set_field("k\"ey\n", V::Text(odd.into()));
                n.set_field("nan", V::Number(f64::NAN));
                n.set_field("big", V::Number(1e21));
                n.set_field("tenth", V::Number(0.1));
                n.set_field("no", V::Bool(false));
                n.set_field("id", V::Text("reserved, ignored".into()));
                n.dest_services.push(odd.into());
            }
            for (i, e) in g.edges.iter_mut().enumerate() {
                e.response_time = plugin_api::abi_stable::std_types::ROption::RSome(i as f64 * 2.5);
                e.set_field("mark", V::Bool(i % 2 == 0));
            }
            let out = GraphOutput::new(&o, &g);
            let direct = String::from_utf8(out.to_json()).unwrap();
            let serde = String::from_utf8(serde_json::to_vec_pretty(&out).unwrap()).unwrap();
            assert_eq!(direct, serde, "graphType={gt} groupBy={group}");
            assert!(
                direct.contains("\\u0001") && direct.contains("\\\"uote"),
                "escapes were exercised"
            );
        }
    }
    let o = options(&[("namespaces", NS)]);
    let empty = plugin_api::Graph::default();
    let out = GraphOutput::new(&o, &empty);
    assert_eq!(out.to_json(), serde_json::to_vec_pretty(&out).unwrap());
}

/// A chain of `workloads` workloads in each of `namespaces` namespaces: one series per edge.
fn chain_series(namespaces: usize, workloads: usize) -> RVec<Series> {
    let mut series = RVec::new();
    for n in 0..namespaces {
        let ns = format!("ns-{n}");
        for w in 0..workloads {
            let (src, dst) = ((w + 1) % workloads, w);
            let (sw, dw, sa, da) =
                (format!("w{src}-v1"), format!("w{dst}-v1"), format!("w{src}"), format!("w{dst}"));
            series.push(s(
                (&ns, &sw, &sa, "v1"),
                (&ns, &da, &dw, &da, "v1"),
                "http",
                "200",
                None,
                1.0 + w as f64,
            ));
        }
    }
    series
}

/// A build asked to stop gives up between chunks of series, on a pool or not; one never
/// asked builds the whole graph. The same for the output and its JSON.
#[test]
fn a_build_asked_to_stop_gives_up() {
    let o = options(&[("namespaces", "ns-0"), ("graphType", "workload")]);
    let plan = traffic_plan(&o);
    let mut results = vec![QueryResult::default(); plan.len()];
    results[2].series = chain_series(20, 500);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for on_pool in [false, true] {
        let asked = std::sync::atomic::AtomicUsize::new(0);
        // Yes from the third question on: after about two chunks of 1,024 series.
        let stop = || asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 2;
        let run = || build_graph_until(&o, &plan, &results, &stop);
        let r = if on_pool { pool.install(run) } else { run() };
        assert!(matches!(r, Err(Stopped)), "on a pool: {on_pool}");
        let full = build_graph_until(&o, &plan, &results, &|| false).unwrap();
        assert_eq!(full.edges.len(), build_graph(&o, &plan, &results).edges.len());
        assert!(full.edges.len() >= 10_000);
        // The output's passes and its JSON stop too; never asked, they are the usual ones.
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let stop = || asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 2;
        let run = || GraphOutput::new_until(&o, &full, &stop).map(|_| ());
        let r = if on_pool { pool.install(run) } else { run() };
        assert_eq!(r, Err(Stopped), "output on a pool: {on_pool}");
        let out = GraphOutput::new_until(&o, &full, &|| false).unwrap();
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let stop = || asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 2;
        let run = || out.to_json_until(&stop).map(|_| ());
        let r = if on_pool { pool.install(run) } else { run() };
        assert_eq!(r, Err(Stopped), "JSON on a pool: {on_pool}");
        assert_eq!(out.to_json_until(&|| false).unwrap(), out.to_json());
    }
}

/// A graph big enough that ids and JSON are made on several threads: every id still belongs
/// to its own element, in order, and the JSON is still serde's.
#[test]
fn a_graph_split_across_threads_keeps_ids_order_and_bytes() {
    let (namespaces, workloads) = (100, 60);
    let o = options(&[
        ("namespaces", "ns-0"),
        ("graphType", "workload"),
        ("injectServiceNodes", "false"),
    ]);
    // Helpers come from the caller's pool (the service's CPU pool): on one of four threads.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    let mut g = pool.install(|| requests_graph(&o, chain_series(namespaces, workloads)));
    let alone = {
        let mut g = requests_graph(&o, chain_series(namespaces, workloads));
        finish(&o, &mut g, &|_| true);
        GraphOutput::new(&o, &g).to_json()
    };
    // Series were resolved on several threads: each edge still carries its own series' rate.
    assert_eq!(g.edges.len(), namespaces * workloads);
    for e in g.edges.iter() {
        let w: f64 = e
            .target
            .as_str()
            .rsplit("_w")
            .next()
            .and_then(|t| t.strip_suffix("-v1"))
            .and_then(|t| t.parse().ok())
            .unwrap();
        assert_eq!(e.rates.http, 1.0 + w, "{}", e.target);
    }
    finish(&o, &mut g, &|_| true);
    let out = pool.install(|| GraphOutput::new(&o, &g));
    assert!(
        out.nodes.len() >= 6000 && out.edges.len() >= 6000,
        "{} nodes, {} edges",
        out.nodes.len(),
        out.edges.len()
    );
    for n in &out.nodes {
        let node = n.node.expect("no boxes in a workload graph");
        assert_eq!(n.id.as_str(), md5_hex(node.id.as_str()));
    }
    for e in &out.edges {
        assert_eq!(e.source.as_str(), md5_hex(e.edge.source.as_str()));
        assert_eq!(e.target.as_str(), md5_hex(e.edge.target.as_str()));
        assert_eq!(
            e.id.as_str(),
            md5_hex(&format!("{}.{}.{}", e.source, e.target, e.edge.protocol))
        );
    }
    for w in out.edges.windows(2) {
        assert!(
            (&w[0].source, &w[0].target, &w[0].id) < (&w[1].source, &w[1].target, &w[1].id),
            "edges sorted by source, target, id"
        );
    }
    let json = pool.install(|| out.to_json());
    assert_eq!(json, serde_json::to_vec_pretty(&out).unwrap());
    assert_eq!(json, alone, "the same bytes on one thread");
}

/// Two protocols between the same ends: two edges, ordered by their own ids.
#[test]
fn edges_with_the_same_ends_are_ordered_by_id() {
    let src = ("bookinfo", "productpage-v1", "productpage", "v1");
    let dst = ("bookinfo", "reviews", "reviews-v1", "reviews", "v1");
    let series: RVec<Series> =
        ["http", "grpc"].iter().map(|p| s(src, dst, p, "200", None, 1.0)).collect();
    let o = options(&[
        ("namespaces", "bookinfo"),
        ("graphType", "workload"),
        ("injectServiceNodes", "false"),
    ]);
    let mut g = requests_graph(&o, series);
    finish(&o, &mut g, &|_| true);
    let out = GraphOutput::new(&o, &g);
    let got: Vec<(String, &str)> =
        out.edges.iter().map(|e| (e.id.to_string(), e.edge.protocol.as_str())).collect();
    let mut want: Vec<(String, &str)> = ["grpc", "http"]
        .iter()
        .map(|p| {
            (
                md5_hex(&format!(
                    "{}.{}.{p}",
                    md5_hex("wl_bookinfo_productpage-v1"),
                    md5_hex("wl_bookinfo_reviews-v1")
                )),
                *p,
            )
        })
        .collect();
    want.sort();
    assert_eq!(got, want);
}

/// Names that share their first 8 bytes (or are prefixes of each other) still sort as
/// strings: the integer pre-sort must hand such ties to the full comparison.
#[test]
fn nodes_sort_by_whole_names_past_a_shared_prefix() {
    let namespaces = ["team-alpha-prod", "team-alpha", "team-alpha-prod-2", "team-alph"];
    let apps =
        ["reviews-service-b", "reviews-service", "reviews-service-a", "reviews", "reviews\u{0}x"];
    let mut series = RVec::new();
    for ns in namespaces {
        for (i, app) in apps.iter().enumerate() {
            let callee = apps[(i + 1) % apps.len()];
            for ver in ["v10", "v1", "v1-canary"] {
                let (sw, dw) = (format!("{app}-{ver}"), format!("{callee}-{ver}"));
                series.push(s(
                    (ns, &sw, app, ver),
                    (ns, callee, &dw, callee, ver),
                    "http",
                    "200",
                    None,
                    1.0,
                ));
            }
        }
    }
    let o =
        options(&[("namespaces", "team-alpha"), ("graphType", "versionedApp"), ("groupBy", "app")]);
    let mut g = requests_graph(&o, series);
    finish(&o, &mut g, &|_| true);
    let v: Value = serde_json::from_slice(&GraphOutput::new(&o, &g).to_json()).unwrap();
    let nodes: Vec<&Value> =
        v["elements"]["nodes"].as_array().unwrap().iter().map(|n| &n["data"]).collect();
    assert!(
        nodes.len() > 60 && nodes.iter().any(|d| d["isGroup"] == "app"),
        "{} nodes",
        nodes.len()
    );
    let key = |d: &Value| {
        let f = |k: &str| d[k].as_str().unwrap_or("").to_string();
        (
            f("namespace"),
            d["isGroup"].is_null(),
            f("app"),
            f("version"),
            f("service"),
            f("workload"),
            f("id"),
        )
    };
    let keys: Vec<_> = nodes.iter().map(|d| key(d)).collect();
    let mut want = keys.clone();
    want.sort();
    assert_eq!(keys, want);
}

/// A destination reached through two services lists each once; a later series that
/// disagrees on the version only flags it, and without traffic does not relabel the node.
#[test]
fn dest_services_are_listed_once_and_a_zero_rate_disagreement_only_flags() {
    let a = ("bookinfo", "a-v1", "a", "v1");
    let to = |svc, ver| ("bookinfo", svc, "b-v1", "b", ver);
    let o = options(&[
        ("namespaces", "bookinfo"),
        ("graphType", "workload"),
        ("injectServiceNodes", "false"),
    ]);
    let g = requests_graph(
        &o,
        vec![
            s(a, to("b", "v1"), "http", "200", None, 1.0),
            s(a, to("b2", "v1"), "http", "200", None, 1.0),
            s(a, to("b", "v1"), "http", "500", None, 1.0),
            s(a, to("b", "v2"), "http", "200", None, 0.0),
        ]
        .into_iter()
        .collect(),
    );
    let b = g.nodes.iter().find(|n| n.workload.as_str() == "b-v1").unwrap();
    let dests: Vec<&str> = b.dest_services.iter().map(|d| d.as_str()).collect();
    assert_eq!(dests, ["b", "b2"]);
    assert_eq!(b.is_misconfigured.as_str(), "labels=[version]");
    assert_eq!(b.version.as_str(), "v1", "a series without traffic does not relabel");
    assert_eq!(b.rates.http_in, 3.0);
    assert_eq!(b.rates.http_in_5xx, 1.0);
    assert_eq!(g.edges.len(), 1, "one edge per (source, destination, protocol)");
    assert_eq!(g.edges[0].rates.http, 3.0);
}

/// The graph of `series` as the results of the HTTP/gRPC requests query.
fn requests_graph(o: &GraphOptions, series: RVec<Series>) -> plugin_api::Graph {
    let plan = traffic_plan(o);
    let mut results = vec![QueryResult::default(); plan.len()];
    results[2].series = series;
    build_graph(o, &plan, &results)
}
