//! Istio's ambient data plane end to end: a generated cluster on the loopback Kubernetes API
//! and a real Prometheus holding ztunnel, waypoint and sidecar series of known rates,
//! through the real binary and the bundled plugins.
//!
//! The mesh (namespace: workloads):
//! - `amb` (ambient, ztunnel only): `client-v1` → `server-v1` over TCP, reported by both
//!   ztunnels; an uncaptured caller → `server-v1` (server's ztunnel, caller unknown);
//!   `server-v1` → `optout-v1`, a pod that opted out of ambient (no sidecar either).
//! - `wp` (ambient, with a waypoint): `front-v1` → `back-v1` over HTTP through `waypoint`
//!   (the waypoint's requests), and the TCP halves front → waypoint (front's ztunnel) and
//!   waypoint → back (back's ztunnel).
//! - `side` (sidecars): `gw-ingress` (a Gateway API gateway of Istio's ordinary class: not a
//!   waypoint) → `web-v1` → `api-v1` over HTTP, `web-v1` → `db-v1` over TCP, each reported
//!   by both proxies.
//! - `mix` (sidecars, beside the ambient ones): `caller-v1` (a sidecar) → `wp/back-v1`, which
//!   is behind the waypoint, so both caller's sidecar and the waypoint report each request;
//!   `amb/client-v1` (ambient, no waypoint) → `legacy-v1` (a sidecar), whose requests only
//!   legacy's sidecar reports (`reporter="destination"` with a known source) and whose bytes
//!   both client's ztunnel and legacy's sidecar report.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use std::{collections::BTreeSet, path::PathBuf, time::Duration};

use integration_tests::kube_api::{KubeApi, Options};
use integration_tests::prometheus::{Fixture, PromServer, from_openmetrics};
use integration_tests::server::{BUNDLED, plugin_dir};
use meshlens_cluster::{Cluster, ClusterConfig, ClusterState, HumanDuration, SourceKind};
use meshlens_traffic::md5_hex;
use serde_json::{Value, json};

const STEP: i64 = 15;

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": name, "labels": labels, "creationTimestamp": "2026-01-01T00:00:00Z"}})
}

/// A Deployment and its one pod (owned through a ReplicaSet named `<name>-5d8f`).
fn workload(ns: &str, name: &str, labels: Value, annotations: Value) -> [Value; 2] {
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"replicas": 1, "template": {"metadata": {"labels": labels}}},
        "status": {"replicas": 1, "availableReplicas": 1}});
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{name}-5d8f-x1"), "namespace": ns, "labels": labels,
                     "annotations": annotations, "creationTimestamp": "2026-01-01T00:00:00Z",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": format!("{name}-5d8f"), "uid": "u", "controller": true}]},
        "status": {"phase": "Running"}});
    [deploy, pod]
}

fn objects() -> Vec<Value> {
    let ambient = json!({"ambient.istio.io/redirection": "enabled"});
    let sidecar = json!({"sidecar.istio.io/status": "{}"});
    let app = |a: &str| json!({"app": a, "version": "v1"});
    let mut o = vec![
        namespace("amb", json!({"istio.io/dataplane-mode": "ambient"})),
        namespace(
            "wp",
            json!({"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"}),
        ),
        namespace("side", json!({"istio-injection": "enabled"})),
        namespace("mix", json!({"istio-injection": "enabled"})),
        namespace("istio-system", json!({})),
    ];
    o.extend(workload("amb", "client-v1", app("client"), ambient.clone()));
    o.extend(workload("amb", "server-v1", app("server"), ambient.clone()));
    o.extend(workload(
        "amb",
        "optout-v1",
        json!({"app": "optout", "version": "v1", "istio.io/dataplane-mode": "none"}),
        json!({}),
    ));
    o.extend(workload("wp", "front-v1", app("front"), ambient.clone()));
    o.extend(workload("wp", "back-v1", app("back"), ambient));
    o.extend(workload(
        "wp",
        "waypoint",
        json!({"gateway.istio.io/managed": "istio.io-mesh-controller",
               "gateway.networking.k8s.io/gateway-name": "waypoint"}),
        json!({}),
    ));
    o.extend(workload("side", "web-v1", app("web"), sidecar.clone()));
    o.extend(workload("side", "api-v1", app("api"), sidecar.clone()));
    o.extend(workload("side", "db-v1", app("db"), sidecar.clone()));
    o.extend(workload("mix", "caller-v1", app("caller"), sidecar.clone()));
    o.extend(workload("mix", "legacy-v1", app("legacy"), sidecar));
    o.extend(workload(
        "side",
        "gw-ingress",
        json!({"app": "gw-ingress", "gateway.istio.io/managed": "istio.io-gateway-controller",
               "gateway.networking.k8s.io/gateway-name": "gw-ingress"}),
        json!({}),
    ));
    // ztunnel: a DaemonSet in the mesh namespace, its pods labelled app=ztunnel.
    o.push(json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "ztunnel", "namespace": "istio-system", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"template": {"metadata": {"labels": {"app": "ztunnel"}}}},
        "status": {"desiredNumberScheduled": 1, "numberAvailable": 1}}));
    o.push(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "ztunnel-abcde", "namespace": "istio-system", "labels": {"app": "ztunnel"},
                     "creationTimestamp": "2026-01-01T00:00:00Z",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ztunnel",
                                          "uid": "z", "controller": true}]},
        "status": {"phase": "Running"}}));
    o
}

/// One end of a series: (namespace, workload, app); `None` is a caller nobody can name.
type End<'a> = Option<(&'a str, &'a str, &'a str)>;

struct Series {
    metric: &'static str,
    labels: Vec<(String, String)>,
    rate: f64,
}

fn series(
    metric: &'static str,
    reporter: &str,
    src: End<'_>,
    dst: (&str, &str, &str, &str),
    extra: &[(&str, &str)],
    rate: f64,
) -> Series {
    let (sns, swl, sapp) = src.unwrap_or(("unknown", "unknown", "unknown"));
    let sver = if src.is_some() { "v1" } else { "unknown" };
    let (dns, dwl, dapp, dsvc) = dst;
    let mut labels: Vec<(String, String)> = [
        ("reporter", reporter),
        ("source_workload_namespace", sns),
        ("source_workload", swl),
        ("source_app", sapp),
        ("source_version", sver),
        ("destination_service_namespace", dns),
        ("destination_service_name", dsvc),
        ("destination_service", &format!("{dsvc}.{dns}.svc.cluster.local")),
        ("destination_workload_namespace", dns),
        ("destination_workload", dwl),
        ("destination_app", dapp),
        ("destination_version", if dwl == "waypoint" { "latest" } else { "v1" }),
        ("connection_security_policy", "mutual_tls"),
        ("response_flags", "-"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    labels.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Series { metric, labels, rate }
}

const REQ: &str = "istio_requests_total";
const TCP: &str = "istio_tcp_sent_bytes_total";

/// Every series of the mesh with its rate (per second).
fn all_series() -> Vec<Series> {
    let zt = [("app", "ztunnel"), ("request_protocol", "tcp")];
    let http = |code: &'static str, app: &'static str| {
        vec![
            ("request_protocol", "http"),
            ("response_code", code),
            ("grpc_response_status", ""),
            ("app", app),
        ]
    };
    let sc_tcp = [("request_protocol", "tcp"), ("app", "web")];
    let server = ("amb", "server-v1", "server", "server");
    let back = ("wp", "back-v1", "back", "back");
    // The waypoint's own app value is what Istio's canonical service gives it: not an app.
    let waypoint_dst = ("wp", "waypoint", "waypoint", "back");
    let caller = Some(("mix", "caller-v1", "caller"));
    let client = Some(("amb", "client-v1", "client"));
    let legacy = ("mix", "legacy-v1", "legacy", "legacy");
    vec![
        // amb: a direct ztunnel hop, reported by both ends: counted once.
        series(TCP, "source", Some(("amb", "client-v1", "client")), server, &zt, 1000.0),
        series(TCP, "destination", Some(("amb", "client-v1", "client")), server, &zt, 1000.0),
        // amb: an uncaptured caller, only the server's ztunnel can report it.
        series(TCP, "destination", None, server, &zt, 300.0),
        // amb: to the opted-out pod, only the caller's ztunnel reports.
        series(
            TCP,
            "source",
            Some(("amb", "server-v1", "server")),
            ("amb", "optout-v1", "optout", "optout"),
            &zt,
            200.0,
        ),
        // wp: the waypoint's requests, with the real client and server.
        series(
            REQ,
            "waypoint",
            Some(("wp", "front-v1", "front")),
            back,
            &http("200", "waypoint"),
            4.0,
        ),
        series(
            REQ,
            "waypoint",
            Some(("wp", "front-v1", "front")),
            back,
            &http("503", "waypoint"),
            1.0,
        ),
        // wp: the two TCP halves of the hop through the waypoint.
        series(TCP, "source", Some(("wp", "front-v1", "front")), waypoint_dst, &zt, 2000.0),
        series(TCP, "destination", Some(("wp", "waypoint", "waypoint")), back, &zt, 1800.0),
        // side: sidecars, each request reported by both proxies.
        series(
            REQ,
            "source",
            Some(("side", "gw-ingress", "gw-ingress")),
            ("side", "web-v1", "web", "web"),
            &http("200", "gw-ingress"),
            3.0,
        ),
        series(
            REQ,
            "destination",
            Some(("side", "gw-ingress", "gw-ingress")),
            ("side", "web-v1", "web", "web"),
            &http("200", "web"),
            3.0,
        ),
        series(
            REQ,
            "source",
            Some(("side", "web-v1", "web")),
            ("side", "api-v1", "api", "api"),
            &http("200", "web"),
            9.0,
        ),
        series(
            REQ,
            "source",
            Some(("side", "web-v1", "web")),
            ("side", "api-v1", "api", "api"),
            &http("500", "web"),
            1.0,
        ),
        series(
            REQ,
            "destination",
            Some(("side", "web-v1", "web")),
            ("side", "api-v1", "api", "api"),
            &http("200", "api"),
            9.0,
        ),
        series(
            TCP,
            "source",
            Some(("side", "web-v1", "web")),
            ("side", "db-v1", "db", "db"),
            &sc_tcp,
            500.0,
        ),
        series(
            TCP,
            "destination",
            Some(("side", "web-v1", "web")),
            ("side", "db-v1", "db", "db"),
            &sc_tcp,
            500.0,
        ),
        // mix: a sidecar calling through the waypoint, reported by both: counted once.
        series(REQ, "source", caller, back, &http("200", "caller"), 6.0),
        series(REQ, "source", caller, back, &http("500", "caller"), 2.0),
        series(REQ, "waypoint", caller, back, &http("200", "waypoint"), 6.0),
        series(REQ, "waypoint", caller, back, &http("500", "waypoint"), 2.0),
        // mix: an ambient client without a waypoint calling a sidecar: only the server's
        // sidecar reports the requests; the bytes are reported by both ends.
        series(REQ, "destination", client, legacy, &http("200", "legacy"), 3.0),
        series(REQ, "destination", client, legacy, &http("404", "legacy"), 1.0),
        series(TCP, "source", client, legacy, &zt, 700.0),
        series(
            TCP,
            "destination",
            client,
            legacy,
            &[("request_protocol", "tcp"), ("app", "legacy")],
            700.0,
        ),
    ]
}

/// OpenMetrics text of [`all_series`] from `start` to `end` on a 15 s grid.
fn openmetrics(start: i64, end: i64) -> String {
    let all = all_series();
    let mut out = String::new();
    for metric in [REQ, TCP] {
        let family = metric.trim_end_matches("_total");
        out.push_str(&format!("# TYPE {family} counter\n"));
        for s in all.iter().filter(|s| s.metric == metric) {
            let labels: Vec<String> =
                s.labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            let head = format!("{metric}{{{}}}", labels.join(","));
            let mut t = start;
            while t <= end {
                out.push_str(&format!("{head} {} {t}\n", s.rate * (t - start) as f64));
                t += STEP;
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

struct Setup {
    m: Meshlens,
    _prom: PromServer,
    _api: KubeApi,
    _rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
    /// The graphs' queryTime: the data runs from 20 minutes before to 10 minutes after, so
    /// every 10-minute window up to then (health reads "now") is full.
    now: i64,
    _fixture: Fixture,
}

fn setup() -> Setup {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let api = rt.block_on(KubeApi::start(objects(), Options::default()));
    let now = meshlens_params::now() / STEP * STEP;
    let fixture = from_openmetrics(&openmetrics(now - 1200, now + 600), now - 1200, now + 600);
    let prom = PromServer::start(&fixture);
    let dir = tempfile::tempdir().unwrap();
    let kc = api.write_kubeconfig(dir.path());
    let plugins = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"kube\"\nkubeconfig = {:?}\nsync_timeout = \"20s\"\n\
         [metrics]\nbackend = \"prometheus\"\ncache_ttl = \"0s\"\n[metrics.prometheus]\nurl = {:?}\n",
        plugins.path().display().to_string(),
        kc.display().to_string(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![plugins])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    Setup { m, _prom: prom, _api: api, _rt: rt, _dir: dir, now, _fixture: fixture }
}

impl Setup {
    fn get(&self, path: &str) -> Value {
        let r = self.m.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        r.json()
    }
    fn graph(&self, ns: &str, params: &str) -> Value {
        self.get(&format!(
            "/api/namespaces/graph?namespaces={ns}&queryTime={}&duration=600s{params}",
            self.now
        ))
    }
}

/// Internal node ids the test may meet, by their MD5 (the JSON id).
fn known_ids() -> Vec<(String, String)> {
    let mut ids = vec!["unknown_source".to_string()];
    for (ns, wls) in [
        ("amb", &["client-v1", "server-v1", "optout-v1"][..]),
        ("wp", &["front-v1", "back-v1", "waypoint"][..]),
        ("side", &["gw-ingress", "web-v1", "api-v1", "db-v1"][..]),
        ("mix", &["caller-v1", "legacy-v1"][..]),
    ] {
        for w in wls {
            ids.push(format!("wl_{ns}_{w}"));
            let app = w.trim_end_matches("-v1");
            ids.push(format!("app_{ns}_{app}"));
        }
    }
    ids.into_iter().map(|i| (md5_hex(&i), i)).collect()
}

fn name_of(id: &str) -> String {
    known_ids()
        .into_iter()
        .find(|(h, _)| h == id)
        .map(|(_, i)| i)
        .unwrap_or_else(|| format!("?{id}"))
}

/// Internal ids of the nodes; unusedNode's idle workloads end in ` (unused)`.
fn node_names(v: &Value) -> BTreeSet<String> {
    v["elements"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let name = name_of(n["data"]["id"].as_str().unwrap());
            if n["data"]["isUnused"] == true { format!("{name} (unused)") } else { name }
        })
        .collect()
}

/// `(source, target, protocol, main rate, error %)` of every edge.
fn edge_set(v: &Value) -> BTreeSet<(String, String, String, String, String)> {
    v["elements"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let d = &e["data"];
            let t = &d["traffic"];
            let p = t["protocol"].as_str().unwrap().to_string();
            let rate = t["rates"][p.as_str()].as_str().unwrap_or("").to_string();
            let err = t["rates"][format!("{p}PercentErr")].as_str().unwrap_or("").to_string();
            (
                name_of(d["source"].as_str().unwrap()),
                name_of(d["target"].as_str().unwrap()),
                p,
                rate,
                err,
            )
        })
        .collect()
}

fn node<'a>(v: &'a Value, internal: &str) -> &'a Value {
    let id = md5_hex(internal);
    v["elements"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["data"])
        .find(|n| n["id"] == id.as_str())
        .unwrap_or_else(|| panic!("no node {internal} in {v}"))
}

fn set<const N: usize>(items: [&str; N]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

type E = (String, String, String, String, String);

/// Health rates are not rounded: equal to 1e-9 (Prometheus' rate of a straight line).
fn assert_close(got: &Value, want: &Value) {
    let close = |k: &String, w: &Value| {
        let g = got.get(k).and_then(Value::as_f64);
        g.zip(w.as_f64()).is_some_and(|(a, b)| (a - b).abs() < 1e-9)
    };
    let ok = match (got.as_object(), want.as_object()) {
        (Some(g), Some(w)) => g.len() == w.len() && w.iter().all(|(k, v)| close(k, v)),
        _ => false,
    };
    assert!(ok, "got {got}, want {want}");
}

fn e(s: &str, t: &str, p: &str, rate: &str, err: &str) -> E {
    (s.into(), t.into(), p.into(), rate.into(), err.into())
}

const AMBIENT_TRAFFIC: [&str; 4] = ["total", "ztunnel", "waypoint", "none"];

#[test]
fn ambient_mesh_end_to_end() {
    let s = setup();

    // --- Flags in lists and details.
    let nss = s.get("/api/namespaces");
    let amb: Vec<(String, bool)> = nss
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["name"].as_str().unwrap().to_string(), n["isAmbient"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        amb,
        [
            ("amb".into(), true),
            ("istio-system".into(), false),
            ("mix".into(), false),
            ("side".into(), false),
            ("wp".into(), true)
        ]
    );
    let flags = |ns: &str| -> Vec<(String, bool, bool, bool)> {
        s.get(&format!("/api/namespaces/{ns}/workloads"))["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                (
                    w["name"].as_str().unwrap().to_string(),
                    w["meshSidecar"].as_bool().unwrap(),
                    w["isAmbient"].as_bool().unwrap(),
                    w["isWaypoint"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let f = |n: &str, sc, a, w| (n.to_string(), sc, a, w);
    assert_eq!(
        flags("amb"),
        [
            f("client-v1", false, true, false),
            f("optout-v1", false, false, false),
            f("server-v1", false, true, false)
        ]
    );
    assert_eq!(
        flags("wp"),
        [
            f("back-v1", false, true, false),
            f("front-v1", false, true, false),
            f("waypoint", false, true, true)
        ]
    );
    assert_eq!(
        flags("side"),
        [
            f("api-v1", true, false, false),
            f("db-v1", true, false, false),
            f("gw-ingress", false, false, false),
            f("web-v1", true, false, false)
        ]
    );
    let d = s.get("/api/namespaces/wp/workloads/waypoint");
    assert_eq!((d["isAmbient"].as_bool(), d["isWaypoint"].as_bool()), (Some(true), Some(true)));
    let d = s.get("/api/namespaces/amb/workloads/optout-v1");
    assert_eq!((d["isAmbient"].as_bool(), d["isWaypoint"].as_bool()), (Some(false), Some(false)));

    // --- Bad values are 400s naming the parameter.
    for (p, v) in [("ambientTraffic", "all"), ("waypoints", "maybe")] {
        let r = s.m.get(&format!("/api/namespaces/graph?namespaces=wp&{p}={v}"));
        assert_eq!(r.status, 400, "{p}={v}: {}", r.text());
        let body = r.json();
        assert_eq!(body["code"], 400);
        assert!(body["message"].as_str().unwrap().contains(p), "{body}");
        let r = s.m.get(&format!("/api/namespaces/wp/workloads/back-v1/graph?{p}={v}"));
        assert_eq!(r.status, 400, "node graph {p}={v}: {}", r.text());
    }

    // --- Graphs of every ambientTraffic x waypoints value.
    let http_fb = e("wl_wp_front-v1", "wl_wp_back-v1", "http", "5.00", "20.0");
    let tcp_fw = e("wl_wp_front-v1", "wl_wp_waypoint", "tcp", "2000.00", "");
    let tcp_wb = e("wl_wp_waypoint", "wl_wp_back-v1", "tcp", "1800.00", "");
    let tcp_cs = e("wl_amb_client-v1", "wl_amb_server-v1", "tcp", "1000.00", "");
    let tcp_us = e("unknown_source", "wl_amb_server-v1", "tcp", "300.00", "");
    let tcp_so = e("wl_amb_server-v1", "wl_amb_optout-v1", "tcp", "200.00", "");
    // Each request once: 8 rps, not the 16 the sidecar and the waypoint report together.
    let http_cb = e("wl_mix_caller-v1", "wl_wp_back-v1", "http", "8.00", "25.0");
    // Only legacy's sidecar reports these requests; the bytes are read once (ztunnel's
    // report, or the sidecar's when ztunnel's are not read).
    let http_cl = e("wl_amb_client-v1", "wl_mix_legacy-v1", "http", "4.00", "25.0");
    let tcp_cl = e("wl_amb_client-v1", "wl_mix_legacy-v1", "tcp", "700.00", "");
    let side_edges: BTreeSet<E> = [
        e("wl_side_gw-ingress", "wl_side_web-v1", "http", "3.00", ""),
        e("wl_side_web-v1", "wl_side_api-v1", "http", "10.00", "10.0"),
        e("wl_side_web-v1", "wl_side_db-v1", "tcp", "500.00", ""),
    ]
    .into();
    let mut side_answers: Vec<Value> = Vec::new();
    for at in AMBIENT_TRAFFIC {
        for wps in ["false", "true"] {
            let params = format!("&ambientTraffic={at}&waypoints={wps}");
            let ctx = format!("ambientTraffic={at} waypoints={wps}");
            let show = wps == "true";
            // wp
            let v = s.graph("wp", &params);
            // caller's sidecar reports caller -> back whatever the values; the waypoint's
            // copy of those requests is never added to it.
            let (mut want_nodes, mut want_edges): (BTreeSet<String>, BTreeSet<E>) = match (at, show)
            {
                ("total", false) => {
                    (set(["wl_wp_front-v1", "wl_wp_back-v1"]), [http_fb.clone()].into())
                }
                ("total", true) => (
                    set(["wl_wp_front-v1", "wl_wp_back-v1", "wl_wp_waypoint"]),
                    [http_fb.clone(), tcp_fw.clone(), tcp_wb.clone()].into(),
                ),
                // Every ztunnel hop of front goes through the waypoint: hiding it leaves
                // front without an edge, so front goes too.
                ("ztunnel", false) => (set([]), [].into()),
                ("ztunnel", true) => (
                    set(["wl_wp_front-v1", "wl_wp_back-v1", "wl_wp_waypoint"]),
                    [tcp_fw.clone(), tcp_wb.clone()].into(),
                ),
                ("waypoint", false) => {
                    (set(["wl_wp_front-v1", "wl_wp_back-v1"]), [http_fb.clone()].into())
                }
                // Without ztunnel data the waypoint saw no traffic: unusedNode adds it.
                ("waypoint", true) => (
                    set(["wl_wp_front-v1", "wl_wp_back-v1", "wl_wp_waypoint (unused)"]),
                    [http_fb.clone()].into(),
                ),
                (_, false) => (set(["wl_wp_front-v1 (unused)"]), [].into()),
                (_, true) => {
                    (set(["wl_wp_front-v1 (unused)", "wl_wp_waypoint (unused)"]), [].into())
                }
            };
            want_nodes.extend(set(["wl_wp_back-v1", "wl_mix_caller-v1"]));
            want_edges.insert(http_cb.clone());
            assert_eq!(node_names(&v), want_nodes, "wp nodes, {ctx}");
            assert_eq!(edge_set(&v), want_edges, "wp edges, {ctx}");
            for n in v["elements"]["nodes"].as_array().unwrap() {
                let d = &n["data"];
                if d["namespace"] == "mix" {
                    let flags = (d.get("isAmbient"), d.get("isWaypoint"), d.get("hasMissingSC"));
                    assert_eq!(flags, (None, None, None), "{ctx}: {d}");
                    continue;
                }
                assert_eq!(d["isAmbient"], true, "{ctx}: {d}");
                assert!(d.get("hasMissingSC").is_none(), "{ctx}: {d}");
                let is_wp = d["workload"] == "waypoint";
                assert_eq!(d.get("isWaypoint").is_some(), is_wp, "{ctx}: {d}");
                if is_wp {
                    assert_eq!(
                        (d["isWaypoint"].as_bool(), d.get("app")),
                        (Some(true), None),
                        "{d}"
                    );
                }
            }
            // amb
            let v = s.graph("amb", &params);
            let (mut want_nodes, mut want_edges): (BTreeSet<String>, BTreeSet<E>) =
                if matches!(at, "total" | "ztunnel") {
                    (
                        set(["wl_amb_server-v1", "wl_amb_optout-v1", "unknown_source"]),
                        [tcp_cs.clone(), tcp_us.clone(), tcp_so.clone()].into(),
                    )
                } else {
                    (set(["wl_amb_server-v1 (unused)", "wl_amb_optout-v1 (unused)"]), [].into())
                };
            // client -> legacy is sidecar telemetry (legacy's), read whatever the values.
            want_nodes.extend(set(["wl_amb_client-v1", "wl_mix_legacy-v1"]));
            want_edges.extend([http_cl.clone(), tcp_cl.clone()]);
            assert_eq!(node_names(&v), want_nodes, "amb nodes, {ctx}");
            assert_eq!(edge_set(&v), want_edges, "amb edges, {ctx}");
            for w in ["client-v1", "server-v1"] {
                let d = node(&v, &format!("wl_amb_{w}"));
                assert_eq!(
                    (d["isAmbient"].as_bool(), d.get("hasMissingSC")),
                    (Some(true), None),
                    "{d}"
                );
            }
            let d = node(&v, "wl_amb_optout-v1");
            assert_eq!(
                (d.get("isAmbient"), d["hasMissingSC"].as_bool()),
                (None, Some(true)),
                "{d}"
            );
            // side: the same answer whatever the values.
            let v = s.graph("side", &params);
            assert_eq!(
                node_names(&v),
                set(["wl_side_gw-ingress", "wl_side_web-v1", "wl_side_api-v1", "wl_side_db-v1"]),
                "side nodes, {ctx}"
            );
            assert_eq!(edge_set(&v), side_edges, "side edges, {ctx}");
            for n in v["elements"]["nodes"].as_array().unwrap() {
                assert!(
                    n["data"].get("isAmbient").is_none() && n["data"].get("isWaypoint").is_none(),
                    "{n}"
                );
            }
            side_answers.push(v);
            // mix: both gaps, the same answer whatever the values.
            let v = s.graph("mix", &params);
            assert_eq!(
                node_names(&v),
                set(["wl_mix_caller-v1", "wl_wp_back-v1", "wl_amb_client-v1", "wl_mix_legacy-v1"]),
                "mix nodes, {ctx}"
            );
            assert_eq!(
                edge_set(&v),
                [http_cb.clone(), http_cl.clone(), tcp_cl.clone()].into(),
                "mix edges, {ctx}"
            );
            for n in v["elements"]["nodes"].as_array().unwrap() {
                let d = &n["data"];
                let ambient = d["namespace"] != "mix";
                assert_eq!(d.get("isAmbient").is_some(), ambient, "{ctx}: {d}");
                assert!(d.get("hasMissingSC").is_none() && d.get("isWaypoint").is_none(), "{d}");
            }
        }
    }
    assert!(
        side_answers.windows(2).all(|w| w[0] == w[1]),
        "the sidecar namespace's answer changed"
    );
    // Defaults: total, waypoints hidden.
    let v = s.graph("wp", "");
    assert_eq!(edge_set(&v), [http_fb.clone(), http_cb.clone()].into());

    // --- A waypoint is a workload node in app graphs too, and no service is injected next to it.
    let v = s.graph("wp", "&graphType=app&waypoints=true&injectServiceNodes=true");
    let d = node(&v, "wl_wp_waypoint");
    assert_eq!((d["nodeType"].as_str(), d["isWaypoint"].as_bool()), (Some("workload"), Some(true)));
    let names = node_names(&v);
    assert!(names.contains("app_wp_front") && names.contains("app_wp_back"), "{names:?}");
    assert_eq!(node(&v, "app_wp_back")["isAmbient"], true);

    // --- Node graphs follow the same rules.
    let path = |w: &str, q: &str| {
        format!("/api/namespaces/wp/workloads/{w}/graph?queryTime={}&duration=600s{q}", s.now)
    };
    // Only the hops that touch the node: the waypoint's half into it, not front's half.
    let v = s.get(&path("back-v1", "&waypoints=true"));
    assert_eq!(edge_set(&v), [http_fb.clone(), tcp_wb.clone(), http_cb.clone()].into());
    // ... with the same flags: the waypoint, ambient nodes, and no missing sidecar anywhere.
    let (wp, back) = (node(&v, "wl_wp_waypoint"), node(&v, "wl_wp_back-v1"));
    assert_eq!((wp["isWaypoint"].as_bool(), wp["isAmbient"].as_bool()), (Some(true), Some(true)));
    assert_eq!((back["isAmbient"].as_bool(), back.get("isWaypoint")), (Some(true), None));
    for n in v["elements"]["nodes"].as_array().unwrap() {
        assert!(n["data"].get("hasMissingSC").is_none(), "{n}");
    }
    let v = s.get(&path("back-v1", ""));
    assert_eq!(edge_set(&v), [http_fb.clone(), http_cb.clone()].into());
    for at in AMBIENT_TRAFFIC {
        let v = s.get(&path("back-v1", &format!("&ambientTraffic={at}")));
        assert!(edge_set(&v).contains(&http_cb), "back-v1, ambientTraffic={at}");
        let v = s.get(&format!(
            "/api/namespaces/mix/workloads/legacy-v1/graph?queryTime={}&duration=600s\
             &ambientTraffic={at}",
            s.now
        ));
        assert_eq!(edge_set(&v), [http_cl.clone(), tcp_cl.clone()].into(), "legacy-v1, {at}");
        let v = s.get(&format!(
            "/api/namespaces/amb/workloads/client-v1/graph?queryTime={}&duration=600s\
             &ambientTraffic={at}",
            s.now
        ));
        assert!(
            edge_set(&v).is_superset(&[http_cl.clone(), tcp_cl.clone()].into()),
            "client-v1, {at}"
        );
    }
    let v = s.get(&path("front-v1", "&ambientTraffic=ztunnel&waypoints=true"));
    assert_eq!(edge_set(&v), [tcp_fw.clone()].into());

    // --- Health: each request counted once; ztunnel alone has no request data.
    // back-v1: front's 5 (1 error) from the waypoint, caller's 8 (2 errors) once, not twice.
    let h = s.get("/api/namespaces/wp/workloads/back-v1/health");
    assert_close(&h["requests"], &json!({"requestCount": 13.0, "requestErrorCount": 3.0}));
    let h = s.get("/api/namespaces/wp/health?type=workload");
    let r = |w: &str| h[w]["requests"].clone();
    let back = 3.0 / 13.0;
    assert_close(
        &r("back-v1"),
        &json!({"errorRatio": back, "inboundErrorRatio": back, "outboundErrorRatio": -1.0}),
    );
    assert_close(
        &r("front-v1"),
        &json!({"errorRatio": 0.2, "inboundErrorRatio": -1.0, "outboundErrorRatio": 0.2}),
    );
    assert_close(
        &r("waypoint"),
        &json!({"errorRatio": -1.0, "inboundErrorRatio": -1.0, "outboundErrorRatio": -1.0}),
    );
    // caller's outbound: its sidecar's 8 (2 errors), not the waypoint's copy as well.
    let h = s.get("/api/namespaces/mix/workloads/caller-v1/health");
    assert_close(&h["requests"], &json!({"requestCount": 8.0, "requestErrorCount": 2.0}));
    // legacy: only its own sidecar reports client's 4 requests (1 error).
    let h = s.get("/api/namespaces/mix/workloads/legacy-v1/health");
    assert_close(&h["requests"], &json!({"requestCount": 4.0, "requestErrorCount": 1.0}));
    let h = s.get("/api/namespaces/mix/health?type=workload");
    assert_close(
        &h["caller-v1"]["requests"],
        &json!({"errorRatio": 0.25, "inboundErrorRatio": -1.0, "outboundErrorRatio": 0.25}),
    );
    assert_close(
        &h["legacy-v1"]["requests"],
        &json!({"errorRatio": 0.25, "inboundErrorRatio": 0.25, "outboundErrorRatio": -1.0}),
    );
    // client-v1's outbound requests are those legacy reported.
    let h = s.get("/api/namespaces/amb/workloads/client-v1/health");
    assert_close(&h["requests"], &json!({"requestCount": 4.0, "requestErrorCount": 1.0}));
    let h = s.get("/api/namespaces/amb/health?type=app");
    assert_close(
        &h["client"]["requests"],
        &json!({"errorRatio": 0.25, "inboundErrorRatio": -1.0, "outboundErrorRatio": 0.25}),
    );
    // ztunnel only: no L7 data is no traffic, never degraded or failure.
    let h = s.get("/api/namespaces/amb/workloads/server-v1/health");
    assert_close(&h["requests"], &json!({"requestCount": 0.0, "requestErrorCount": 0.0}));
    assert!(matches!(h["status"].as_str(), Some("healthy" | "na")), "{h}");
    let h = s.get("/api/namespaces/amb/health?type=workload");
    assert_close(
        &h["server-v1"]["requests"],
        &json!({"errorRatio": -1.0, "inboundErrorRatio": -1.0, "outboundErrorRatio": -1.0}),
    );
    assert!(matches!(h["server-v1"]["status"].as_str(), Some("healthy" | "na")), "{h}");
    // Sidecars as before: each request once although both proxies report it.
    let h = s.get("/api/namespaces/side/workloads/api-v1/health");
    assert_close(&h["requests"], &json!({"requestCount": 10.0, "requestErrorCount": 1.0}));
}

/// The snapshot source reads the same objects as the kube source and agrees on every flag.
#[test]
fn snapshot_source_agrees_with_the_kube_source() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mesh.json");
    std::fs::write(
        &file,
        json!({"apiVersion": "v1", "kind": "List", "items": objects()}).to_string(),
    )
    .unwrap();
    // The kube API assigns resource versions, the snapshot has none: all else must agree.
    let strip = |mut v: Value| {
        if let Some(o) = v.as_object_mut() {
            o.remove("resourceVersion");
        }
        v
    };
    let answers = |s: &ClusterState| -> Vec<Value> {
        let mut out = vec![serde_json::to_value(s.namespace_list()).unwrap()];
        for ns in ["amb", "wp", "side", "mix"] {
            let list = s.workload_list(ns).unwrap();
            for w in &list.workloads {
                out.push(strip(
                    serde_json::to_value(s.workload_details(ns, &w.name).unwrap()).unwrap(),
                ));
            }
            out.push(serde_json::to_value(list).unwrap());
        }
        out
    };
    let (kube, snap) = rt.block_on(async {
        let api = KubeApi::start(objects(), Options::default()).await;
        let kube = Cluster::start(ClusterConfig {
            source: SourceKind::Kube,
            kubeconfig: Some(api.write_kubeconfig(dir.path())),
            sync_timeout: HumanDuration(Duration::from_secs(20)),
            ..Default::default()
        })
        .await
        .unwrap();
        let snap = Cluster::start(ClusterConfig {
            source: SourceKind::Snapshot,
            snapshot: vec![PathBuf::from(&file)],
            ..Default::default()
        })
        .await
        .unwrap();
        let k = answers(&kube.state().await.unwrap());
        let s = answers(&snap.state().await.unwrap());
        drop(api);
        (k, s)
    });
    assert_eq!(kube, snap);
    let wl = &kube[kube.len() - 1];
    assert!(wl["workloads"].as_array().unwrap().iter().all(|w| w["isWaypoint"] == false));
    assert!(
        kube.iter()
            .any(|a| a["name"] == "waypoint" && a["isWaypoint"] == true && a["isAmbient"] == true),
        "the waypoint's details"
    );
}
