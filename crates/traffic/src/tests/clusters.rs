//! A mesh across two clusters: the home one (`Kubernetes`) and `west`.

use super::*;

const HOME: &str = "Kubernetes";
const WEST: &str = "west";

/// `s` with the cluster labels (`None` leaves a label out).
fn in_clusters(mut series: Series, src: Option<&str>, dst: Option<&str>) -> Series {
    if let Some(c) = src {
        series.labels.push("source_cluster", c);
    }
    if let Some(c) = dst {
        series.labels.push("destination_cluster", c);
    }
    series
}

const UNKNOWN_SRC: (&str, &str, &str, &str) = ("unknown", "unknown", "unknown", "unknown");

/// The gateway and productpage at home; reviews-v1 in both clusters; ratings in west,
/// reached from west's reviews by a report without `destination_cluster`; a caller outside
/// the mesh whose report names no cluster.
fn two_cluster_results(with_west: bool) -> Vec<QueryResult> {
    let (pp, r1, ra) = (
        to("productpage", "productpage-v1", "productpage", "v1"),
        to("reviews", "reviews-v1", "reviews", "v1"),
        to("ratings", "ratings-v1", "ratings", "v1"),
    );
    let gw_dst = ("istio-system", "istio-ingressgateway", "istio-ingressgateway", "unknown");
    let gw_to = (gw_dst.0, gw_dst.1, gw_dst.1, gw_dst.2, gw_dst.3);
    let h = Some(HOME);
    let mut inside = vec![
        in_clusters(s(GW, d(&pp), "http", "200", None, 10.0), h, h),
        in_clusters(s(PP, d(&r1), "http", "200", None, 5.0), h, h),
    ];
    if with_west {
        let r1_west = (NS, "reviews-v1", "reviews", "v1");
        inside.push(in_clusters(s(PP, d(&r1), "http", "200", None, 3.0), h, Some(WEST)));
        inside.push(in_clusters(s(r1_west, d(&ra), "http", "200", None, 2.0), Some(WEST), None));
    }
    let r = |v: Vec<Series>| QueryResult { series: v.into_iter().collect::<RVec<_>>() };
    vec![
        r(vec![s(UNKNOWN_SRC, gw_to, "http", "200", None, 10.0)]),
        r(vec![]),
        r(inside),
        r(vec![]),
        r(vec![]),
        r(vec![]),
    ]
}

fn graph_json(q: &[(&str, &str)], with_west: bool) -> Value {
    let mut all = vec![("namespaces", NS)];
    all.extend_from_slice(q);
    let o = options(&all);
    let plan = traffic_plan(&o);
    let mut results = two_cluster_results(with_west);
    round_results(&mut results);
    let mut g = build_graph(&o, &plan, &results);
    finish(&o, &mut g, &|_| true);
    let out = GraphOutput::new(&o, &g);
    let direct = out.to_json();
    assert_eq!(direct, serde_json::to_vec_pretty(&out).unwrap(), "{q:?}");
    serde_json::from_slice(&direct).unwrap()
}

fn nodes(v: &Value) -> Vec<&Value> {
    v["elements"]["nodes"].as_array().unwrap().iter().map(|n| &n["data"]).collect()
}

#[test]
fn the_queries_group_by_both_clusters() {
    let o = options(&[("namespaces", NS)]);
    for p in traffic_plan(&o) {
        let by: Vec<&str> = p
            .query
            .group_by
            .as_ref()
            .into_option()
            .into_iter()
            .flatten()
            .map(|s| s.as_str())
            .collect();
        assert!(by.contains(&"source_cluster") && by.contains(&"destination_cluster"), "{by:?}");
    }
}

#[test]
fn the_same_workload_in_two_clusters_is_two_nodes_and_east_to_west_one_edge() {
    let v = graph_json(&[], true);
    let home = node(&v, "wl_bookinfo_reviews-v1");
    let west = node(&v, "wl_west_bookinfo_reviews-v1");
    assert_ne!(home["id"], west["id"]);
    assert_eq!((home["cluster"].as_str(), west["cluster"].as_str()), (Some(HOME), Some(WEST)));
    assert_eq!(
        (home["workload"].as_str(), west["workload"].as_str()),
        (Some("reviews-v1"), Some("reviews-v1"))
    );
    // One edge each way it was measured, with its rate.
    let e = edge(&v, "wl_bookinfo_productpage-v1", "wl_west_bookinfo_reviews-v1");
    assert_eq!(e["traffic"]["rates"]["http"], "3.00");
    assert_eq!(e["traffic"]["rates"]["httpPercentReq"], "37.5");
    assert_eq!(
        edge(&v, "wl_bookinfo_productpage-v1", "wl_bookinfo_reviews-v1")["traffic"]["rates"]["http"],
        "5.00"
    );
    let pp = md5_hex("wl_bookinfo_productpage-v1");
    let from_pp = v["elements"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["source"] == pp.as_str())
        .count();
    assert_eq!(from_pp, 2);
    // A report without destination_cluster: the destination is in the source's cluster.
    let ratings = node(&v, "wl_west_bookinfo_ratings-v1");
    assert_eq!(ratings["cluster"], WEST);
    edge(&v, "wl_west_bookinfo_reviews-v1", "wl_west_bookinfo_ratings-v1");
    // No cluster labels at all: unknown, with the id of before.
    assert_eq!(node(&v, "unknown_source")["cluster"], "unknown");
    // Every node says its cluster.
    assert!(nodes(&v).iter().all(|n| n["cluster"].is_string()), "{v}");
}

#[test]
fn box_by_cluster_boxes_each_cluster_of_two_or_more_never_unknown() {
    let v = graph_json(&[("boxBy", "cluster")], true);
    let boxes: Vec<&Value> = nodes(&v).into_iter().filter(|n| n["nodeType"] == "box").collect();
    assert_eq!(boxes.len(), 2, "{v}");
    for b in &boxes {
        assert_eq!(b["isBox"], "cluster");
        assert_eq!(b["namespace"], "");
        assert!(b.get("app").is_none() && b.get("isGroup").is_none(), "{b}");
    }
    let box_of = |cluster: &str| {
        boxes.iter().find(|b| b["cluster"] == cluster).unwrap_or_else(|| panic!("no {cluster} box"))
            ["id"]
            .clone()
    };
    let (home_box, west_box) = (box_of(HOME), box_of(WEST));
    for id in [
        "wl_istio-system_istio-ingressgateway",
        "wl_bookinfo_productpage-v1",
        "wl_bookinfo_reviews-v1",
    ] {
        assert_eq!(node(&v, id)["parent"], home_box, "{id}");
    }
    for id in ["wl_west_bookinfo_reviews-v1", "wl_west_bookinfo_ratings-v1"] {
        assert_eq!(node(&v, id)["parent"], west_box, "{id}");
    }
    assert!(node(&v, "unknown_source").get("parent").is_none(), "unknown is never boxed");
    // Parents come before their members.
    let ns = nodes(&v);
    assert_eq!(ns[0]["nodeType"], "box");
    assert_eq!(ns[1]["nodeType"], "box");
    // One cluster (and unknown): no cluster box.
    let one = graph_json(&[("boxBy", "cluster")], false);
    assert!(
        nodes(&one).iter().all(|n| n["nodeType"] != "box" && n.get("parent").is_none()),
        "{one}"
    );
}

#[test]
fn boxes_nest_app_in_namespace_in_cluster() {
    let v = graph_json(&[("boxBy", "cluster,namespace,app"), ("graphType", "versionedApp")], true);
    let all = nodes(&v);
    let find = |id: &Value| *all.iter().find(|n| n["id"] == *id).expect("parent is a node");
    let ns_boxes: Vec<&&Value> = all.iter().filter(|n| n["isBox"] == "namespace").collect();
    // bookinfo in each cluster; istio-system has one node only: no box of its own.
    assert_eq!(ns_boxes.len(), 2, "{v}");
    for b in &ns_boxes {
        assert_eq!((b["nodeType"].as_str(), b["namespace"].as_str()), (Some("box"), Some(NS)));
    }
    let home_ns = ns_boxes.iter().find(|b| b["cluster"] == HOME).expect("home bookinfo box");
    let west_ns = ns_boxes.iter().find(|b| b["cluster"] == WEST).expect("west bookinfo box");
    assert_eq!(node(&v, "vapp_bookinfo_productpage-v1")["parent"], home_ns["id"]);
    assert_eq!(node(&v, "vapp_west_bookinfo_ratings-v1")["parent"], west_ns["id"]);
    // At home the gateway and the bookinfo box share a cluster box; west has one top-level
    // member (its bookinfo box), so no box.
    let home_box = find(&home_ns["parent"]);
    assert_eq!(
        (home_box["isBox"].as_str(), home_box["cluster"].as_str()),
        (Some("cluster"), Some(HOME))
    );
    assert_eq!(node(&v, "vapp_istio-system_istio-ingressgateway")["parent"], home_box["id"]);
    assert!(west_ns.get("parent").is_none(), "{v}");
    assert_eq!(all.iter().filter(|n| n["isBox"] == "cluster").count(), 1);
    // Outer boxes first.
    let rank = |n: &Value| match n["isBox"].as_str() {
        Some("cluster") => 0,
        Some("namespace") => 1,
        _ => 2,
    };
    let first_member = all.iter().position(|n| n["nodeType"] != "box").unwrap();
    assert!(all[..first_member].windows(2).all(|w| rank(w[0]) <= rank(w[1])), "{v}");
    // The grouping parameter of before still makes its own boxes.
    let g = graph_json(&[("groupBy", "app"), ("graphType", "versionedApp")], true);
    assert!(nodes(&g).iter().all(|n| n.get("isBox").is_none()));
}

#[test]
fn a_single_cluster_graph_keeps_its_ids_and_its_boxes() {
    let v = graph_json(&[("groupBy", "app"), ("graphType", "versionedApp")], false);
    for id in [
        "vapp_bookinfo_productpage-v1",
        "vapp_bookinfo_reviews-v1",
        "vapp_istio-system_istio-ingressgateway",
    ] {
        assert_eq!(node(&v, id)["cluster"], HOME, "{id}");
    }
    assert!(nodes(&v).iter().all(|n| n.get("isBox").is_none()));
    let bad = GraphOptions::parse(
        GraphTarget::Namespaces,
        "namespaces=bookinfo&boxBy=version",
        1,
        &[],
        &GraphSettings::default(),
    )
    .unwrap_err();
    assert_eq!(bad.param, "boxBy");
}

/// The workloads (with their cluster) the scope keeps of the two-cluster graph boxed by
/// cluster and namespace.
fn kept_under_scope(scope: &[(&str, &str)]) -> Vec<String> {
    let o = options(&[("namespaces", NS), ("boxBy", "cluster,namespace")]);
    let plan = traffic_plan(&o);
    let mut results = two_cluster_results(true);
    round_results(&mut results);
    let mut g = build_graph(&o, &plan, &results);
    finish(&o, &mut g, &|_| true);
    let scope = GraphScope::parse(&meshlens_params::query::query_string(scope)).unwrap();
    let out = GraphOutput::scoped_until(&o, &g, &scope, &|| false).unwrap().unwrap();
    let mut kept: Vec<String> = out
        .nodes
        .iter()
        .filter_map(|n| n.node)
        .map(|n| format!("{}/{}", n.cluster, n.workload))
        .collect();
    kept.sort();
    kept
}

#[test]
fn hide_and_focus_reach_into_nested_boxes() {
    // Hiding the boxes takes every member, those of boxes inside boxes too.
    assert_eq!(kept_under_scope(&[("hide", "box")]), ["unknown/unknown"]);
    // Focusing the home cluster's box starts from every node inside it.
    let home_box = md5_hex("box:cluster:Kubernetes");
    let kept = kept_under_scope(&[("focus", &home_box), ("hops", "0")]);
    assert_eq!(
        kept,
        ["Kubernetes/istio-ingressgateway", "Kubernetes/productpage-v1", "Kubernetes/reviews-v1"]
    );
}

#[test]
fn box_by_app_makes_kiali_v2_app_boxes_in_place_of_group_by() {
    for q in [
        vec![("graphType", "versionedApp"), ("boxBy", "app")],
        vec![("graphType", "versionedApp"), ("boxBy", "app"), ("groupBy", "app")],
    ] {
        let v = json(&q);
        let b = node(&v, "box_bookinfo_reviews");
        assert_eq!(
            (b["nodeType"].as_str(), b["isBox"].as_str(), b["app"].as_str()),
            (Some("box"), Some("app"), Some("reviews")),
            "{q:?}"
        );
        // No cluster labels in these series: the box is in cluster unknown, as its members.
        assert_eq!((b["cluster"].as_str(), b.get("isGroup")), (Some("unknown"), None));
        for r in ["reviews-v1", "reviews-v2", "reviews-v3"] {
            assert_eq!(node(&v, &format!("vapp_bookinfo_{r}"))["parent"], b["id"], "{r}");
        }
        let boxes = v["elements"]["nodes"].as_array().unwrap().iter();
        assert!(boxes.filter(|n| n["data"].get("isGroup").is_some()).count() == 0, "{q:?}");
    }
    // groupBy alone keeps its boxes as they were.
    let v = json(&[("graphType", "versionedApp"), ("groupBy", "app")]);
    let b = node(&v, "box_bookinfo_reviews");
    assert_eq!((b["nodeType"].as_str(), b["isGroup"].as_str()), (Some("app"), Some("app")));
    assert!(b.get("isBox").is_none());
}

#[test]
fn box_by_takes_kiali_v2s_comma_separated_values() {
    let b = |v: &str| {
        GraphOptions::parse(
            GraphTarget::Namespaces,
            &meshlens_params::query::query_string(&[("namespaces", "a"), ("boxBy", v)]),
            1,
            &[],
            &GraphSettings::default(),
        )
    };
    assert_eq!(
        b("cluster, app").unwrap().box_by,
        BoxBy { cluster: true, namespace: false, app: true }
    );
    assert_eq!(b("namespace").unwrap().box_by, BoxBy { namespace: true, ..BoxBy::default() });
    assert_eq!(b("").unwrap().box_by, BoxBy::default());
    let e = b("cluster,workload").unwrap_err();
    assert_eq!(
        e.message,
        "Invalid boxBy: allowed values are app, cluster, namespace (comma-separated)"
    );
    let o = options(&[("namespaces", "a")]);
    assert_eq!(o.box_by, BoxBy::default());
}
