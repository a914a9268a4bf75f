//! serviceList, workloadDashboard and serviceDashboard through the real binary: the list
//! against the demo manifests as workloadList and workload details describe them, the
//! dashboards against a real Prometheus holding the demo traffic, every number checked
//! against a hand-written PromQL query sent straight to the same Prometheus.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::{
    InProcess as Meshlens, demo_snapshot_service as demo_snapshot_server,
};
use std::collections::{BTreeMap, BTreeSet};

use integration_tests::{
    prometheus::{PromServer, fixture, http_get, percent_encode},
    server::plugin_dir,
};
use serde_json::Value;

fn get_json(m: &Meshlens, path: &str) -> Value {
    let r = m.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

#[test]
fn service_list_names_every_service_and_the_workloads_it_selects() {
    let m = demo_snapshot_server();
    let list = get_json(&m, "/api/namespaces/bookinfo/services");
    assert_eq!(list["namespace"]["name"], "bookinfo");
    let services = list["services"].as_array().unwrap();
    let names: Vec<&str> = services.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["details", "mongodb", "notifications", "productpage", "ratings", "reviews"]);

    // Each workload's details name the services that select it: the list must agree.
    let workloads = get_json(&m, "/api/namespaces/bookinfo/workloads");
    let mut selected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sidecar: BTreeMap<String, bool> = BTreeMap::new();
    for w in workloads["workloads"].as_array().unwrap() {
        let name = w["name"].as_str().unwrap();
        sidecar.insert(name.to_string(), w["meshSidecar"].as_bool().unwrap());
        let d = get_json(&m, &format!("/api/namespaces/bookinfo/workloads/{name}"));
        for s in d["services"].as_array().unwrap() {
            selected
                .entry(s["name"].as_str().unwrap().to_string())
                .or_default()
                .insert(name.to_string());
        }
    }
    for s in services {
        let name = s["name"].as_str().unwrap();
        let ours: BTreeSet<String> =
            s["workloads"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().into()).collect();
        assert_eq!(ours, selected.get(name).cloned().unwrap_or_default(), "{name}");
        let want = !ours.is_empty() && ours.iter().all(|w| sidecar[w]);
        assert_eq!(s["meshSidecar"], want, "{name}");
        assert_eq!(s["appLabel"], true, "{name}: every demo service carries the app label");
    }
    let ratings = services.iter().find(|s| s["name"] == "ratings").unwrap();
    assert_eq!(ratings["workloads"], serde_json::json!(["ratings-v1", "ratings-v2"]));

    // An unknown namespace is a 404 with the error body; the /api-less twin answers too.
    let r = m.get("/api/namespaces/no-such-ns/services");
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.json()["code"], 404);
    assert_eq!(m.get("/namespaces/bookinfo/services").status, 200);
}

/// An instant PromQL query's single value at `t`.
fn promql_value(prom: &PromServer, query: &str, t: f64) -> f64 {
    let path = format!("/api/v1/query?query={}&time={t}", percent_encode(query));
    let (status, text) = http_get(prom.port(), &path).expect("Prometheus answers");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 200, "{query}: {body}");
    let result = body["data"]["result"].as_array().unwrap();
    assert_eq!(result.len(), 1, "{query} at {t}: {body}");
    result[0]["value"][1].as_str().unwrap().parse().unwrap()
}

/// The single series of a chart: every sample equals `query` at its time; returns the last.
fn assert_series_matches(prom: &PromServer, series: &Value, query: &str) -> f64 {
    let matrix = series["matrix"].as_array().unwrap_or_else(|| panic!("no matrix: {series}"));
    assert_eq!(matrix.len(), 1, "{query}: {series}");
    let values = matrix[0]["values"].as_array().unwrap();
    assert!(values.len() >= 3, "{values:?}");
    let mut last = 0.0;
    for i in [0, values.len() / 2, values.len() - 1] {
        let t = values[i][0].as_f64().unwrap();
        let v: f64 = values[i][1].as_str().unwrap().parse().unwrap();
        let want = promql_value(prom, query, t);
        assert!((v - want).abs() <= 1e-9 * want.abs().max(1e-12), "{query} at {t}: {v} vs {want}");
        last = v;
    }
    last
}

fn chart<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["charts"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()
}

#[test]
fn workload_and_service_dashboards_match_promql() {
    let f = fixture(&["--topology", "demo", "--minutes", "30"]);
    let prom = PromServer::start(&f);
    let dir = plugin_dir(&["metrics-prometheus"]);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"prometheus\"\ntimeout = \"3s\"\n[metrics.prometheus]\nurl = {:?}\n",
        dir.path().display().to_string(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts");
    let q = format!("queryTime={}&duration=300&step=60", f.end());

    // The ratings service receives reviews-v2's 3 req/s (http) and reviews-v3's 2 (grpc).
    let d = get_json(&m, &format!("/api/namespaces/bookinfo/services/ratings/dashboard?{q}"));
    assert_eq!(d["title"], "Inbound Metrics");
    assert_eq!(d["charts"].as_array().unwrap().len(), 6);
    assert_eq!(d["aggregations"][1]["label"], "source_app");
    let sel = r#"reporter="source",destination_service_name="ratings",destination_service_namespace="bookinfo""#;
    let rps = assert_series_matches(
        &prom,
        &chart(&d, "Request volume")["metric"],
        &format!("sum(rate(istio_requests_total{{{sel}}}[1m]))"),
    );
    assert!((rps - 5.0).abs() < 1e-6, "ratings receives 5 req/s, got {rps}");
    let d = get_json(
        &m,
        &format!("/api/namespaces/bookinfo/services/ratings/dashboard?{q}&requestProtocol=grpc"),
    );
    let rps = assert_series_matches(
        &prom,
        &chart(&d, "Request volume")["metric"],
        &format!("sum(rate(istio_requests_total{{{sel},request_protocol=\"grpc\"}}[1m]))"),
    );
    assert!((rps - 2.0).abs() < 1e-6, "{rps}");

    // Workload reviews-v2 sends to ratings (outbound, the default) and receives (inbound).
    for (dir, side) in [("outbound", "source"), ("inbound", "destination")] {
        let d = get_json(
            &m,
            &format!("/api/namespaces/bookinfo/workloads/reviews-v2/dashboard?{q}&direction={dir}"),
        );
        let sel = format!(
            r#"reporter="source",{side}_workload_namespace="bookinfo",{side}_workload="reviews-v2""#
        );
        let rps = assert_series_matches(
            &prom,
            &chart(&d, "Request volume")["metric"],
            &format!("sum(rate(istio_requests_total{{{sel}}}[1m]))"),
        );
        assert!(rps > 0.0, "reviews-v2 {dir}: {rps}");
        assert_eq!(d["aggregations"][0]["label"], format!("{side}_version"));
    }

    // Bad requests are 400s naming what is wrong, before any query.
    for (path, word) in [
        ("/api/namespaces/bookinfo/services/ratings/dashboard?direction=outbound", "direction"),
        ("/api/namespaces/bookinfo/services/no-such-svc/dashboard", "service"),
        ("/api/namespaces/no-such-ns/services/ratings/dashboard", "namespace"),
        ("/api/namespaces/bookinfo/workloads/no-such-wl/dashboard", "workload"),
        ("/api/namespaces/bookinfo/workloads/reviews-v2/dashboard?direction=up", "direction"),
    ] {
        let r = m.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        let body = r.json();
        assert_eq!(body["code"], 400);
        assert!(body["message"].as_str().unwrap().contains(word), "{path}: {body}");
    }
}
