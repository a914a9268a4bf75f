use crate::{Kind, Model, Topology, openmetrics};

const MINI: &str = r#"
step_seconds = 15
cycle_minutes = 10

[[workload]]
namespace = "ns"
name = "a-v1"
app = "a"
version = "v1"

[[workload]]
namespace = "ns"
name = "b-v1"
app = "b"
version = "v1"
sidecar = false

[[edge]]
from = "unknown"
to = "ns/a-v1"
service = "a"
protocol = "http"
latency_ms = 10.0
responses = [{ code = "200", rate = 4.0 }]
burst = { at_minute = 2, minutes = 3, code = "500", share = 0.25 }

[[edge]]
from = "ns/a-v1"
to = "ns/b-v1"
service = "b"
protocol = "tcp"
sent_bytes = 100.0
received_bytes = 50.0
"#;

fn requests(m: &Model, reporter: &str, code: &str) -> usize {
    m.series
        .iter()
        .position(|s| {
            s.name == "istio_requests_total"
                && s.labels.contains(&("reporter".into(), reporter.into()))
                && s.labels.contains(&("response_code".into(), code.into()))
        })
        .unwrap_or_else(|| panic!("no {reporter} {code} series"))
}

#[test]
fn reporters_follow_the_sidecars() {
    let m = Model::new(&Topology::parse(MINI).unwrap(), 0);
    let reporters = |name: &str| {
        let mut r: Vec<&str> = m
            .series
            .iter()
            .filter(|s| s.name == name)
            .filter_map(|s| s.labels.iter().find(|(k, _)| k == "reporter").map(|(_, v)| v.as_str()))
            .collect();
        r.dedup();
        r
    };
    // An unknown caller: only the destination reports; a server without a proxy: only the source.
    assert_eq!(reporters("istio_requests_total"), vec!["destination"]);
    assert_eq!(reporters("istio_tcp_sent_bytes_total"), vec!["source"]);
}

#[test]
fn counters_are_a_closed_form_of_time_with_the_burst_where_the_cycle_puts_it() {
    let start = 1_700_000_000 - 1_700_000_000 % 15;
    let m = Model::new(&Topology::parse(MINI).unwrap(), start);
    let ok = &m.series[requests(&m, "destination", "200")];
    let err = &m.series[requests(&m, "destination", "500")];
    assert_eq!(ok.kind, Kind::Counter);
    let per_step = |s, t: i64| (m.value(s, t) - m.value(s, t - 15)) / 15.0;
    for cycle in [-2i64, 0, 3] {
        let base = start + cycle * 600;
        // Minute 1: no burst; minutes 2..5: a quarter fails; minute 6: calm again.
        assert!((per_step(ok, base + 60) - 4.0).abs() < 1e-9);
        assert_eq!(per_step(err, base + 60), 0.0);
        assert!((per_step(ok, base + 150) - 3.0).abs() < 1e-9, "{}", per_step(ok, base + 150));
        assert!((per_step(err, base + 300) - 1.0).abs() < 1e-9);
        assert_eq!(per_step(err, base + 360), 0.0);
        assert_eq!(m.phase_step(base + 150), 9);
    }
    // The value depends on the time alone: a second model agrees bit for bit.
    let again = Model::new(&Topology::parse(MINI).unwrap(), start);
    assert_eq!(
        again.value(&again.series[requests(&again, "destination", "200")], start + 12345 * 15),
        m.value(ok, start + 12345 * 15)
    );
    assert!(m.value(ok, start - 3600) > 0.0, "counters start well above zero");
}

#[test]
fn the_file_holds_every_series_on_the_grid() {
    let m = Model::new(&Topology::parse(MINI).unwrap(), 0);
    let mut out = Vec::new();
    openmetrics::write(&m, 1001, 1060, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.ends_with("# EOF\n"));
    let samples = text.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(samples, m.series.len() * 4, "1005, 1020, 1035, 1050 for each series");
    assert!(text.contains("# TYPE istio_request_duration_milliseconds histogram\n"));
    assert_eq!(text.matches("# TYPE istio_requests counter").count(), 1);
}

#[test]
fn bad_topologies_are_named() {
    let cases = [
        ("step_seconds = 7\ncycle_minutes = 1\n", "whole number of steps"),
        ("bogus = 1\n", "bogus"),
        ("[[edge]]\nfrom = \"x/y\"\nservice = \"s\"\nprotocol = \"http\"\n", "from \"x/y\""),
    ];
    for (text, want) in cases {
        let e = Topology::parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    let demo =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/demo/topology.toml");
    Topology::load(&demo).expect("the demo topology loads");
}

#[test]
fn ambient_workloads_are_reported_by_ztunnel_and_their_waypoint() {
    let topo = r#"
        [[workload]]
        namespace = "t"
        name = "a"
        app = "a"
        sidecar = false
        ambient = true
        [[workload]]
        namespace = "t"
        name = "b"
        app = "b"
        sidecar = false
        ambient = true
        use_waypoint = "t/wp"
        [[workload]]
        namespace = "t"
        name = "wp"
        app = "waypoint"
        sidecar = false
        waypoint = true
        [[edge]]
        from = "t/a"
        to = "t/b"
        service = "b"
        protocol = "http"
        request_bytes = 100.0
        response_bytes = 300.0
        responses = [{ code = "200", rate = 2.0 }]
    "#;
    let m = Model::new(&Topology::parse(topo).unwrap(), 0);
    let get = |s: &crate::SeriesSpec, k: &str| {
        s.labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default()
    };
    let requests: Vec<String> = m
        .series
        .iter()
        .filter(|s| s.name == "istio_requests_total")
        .map(|s| get(s, "reporter"))
        .collect();
    assert_eq!(requests, ["waypoint"], "only the waypoint reports the requests");
    let mut tcp: Vec<(String, String, String, String)> = m
        .series
        .iter()
        .filter(|s| s.name == "istio_tcp_sent_bytes_total")
        .map(|s| {
            (
                get(s, "reporter"),
                get(s, "source_workload"),
                get(s, "destination_workload"),
                get(s, "app"),
            )
        })
        .collect();
    tcp.sort();
    let z = |r: &str, s: &str, d: &str| {
        (r.to_string(), s.to_string(), d.to_string(), "ztunnel".to_string())
    };
    // The hop through the waypoint: each half reported by one ztunnel only.
    assert_eq!(tcp, [z("destination", "wp", "b"), z("source", "a", "wp")]);
    let bad = r#"
        [[workload]]
        namespace = "t"
        name = "a"
        app = "a"
        ambient = true
    "#;
    assert!(Topology::parse(bad).is_err(), "ambient needs sidecar = false");
}

#[test]
fn a_workload_of_another_cluster_labels_its_end_of_each_series() {
    let topo = r#"
        [[workload]]
        namespace = "b"
        name = "front"
        app = "front"
        [[workload]]
        namespace = "b"
        name = "back"
        app = "back"
        cluster = "west"
        [[edge]]
        from = "unknown"
        to = "b/front"
        service = "front"
        protocol = "http"
        responses = [{ code = "200", rate = 1.0 }]
        [[edge]]
        from = "b/front"
        to = "b/back"
        service = "back"
        protocol = "http"
        responses = [{ code = "200", rate = 2.0 }]
    "#;
    let m = Model::new(&Topology::parse(topo).unwrap(), 0);
    let get = |s: &crate::SeriesSpec, k: &str| {
        s.labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default()
    };
    let mut clusters: Vec<(String, String, String)> = m
        .series
        .iter()
        .filter(|s| s.name == "istio_requests_total")
        .map(|s| {
            (
                get(s, "destination_workload"),
                get(s, "source_cluster"),
                get(s, "destination_cluster"),
            )
        })
        .collect();
    clusters.sort();
    clusters.dedup();
    let t = |w: &str, s: &str, d: &str| (w.to_string(), s.to_string(), d.to_string());
    // The home cluster is Istio's default name; a caller outside the mesh has none.
    assert_eq!(clusters, [t("back", "Kubernetes", "west"), t("front", "unknown", "Kubernetes")]);
    let empty = "[[workload]]\nnamespace = \"b\"\nname = \"x\"\napp = \"x\"\ncluster = \"\"\n";
    let e = Topology::parse(empty).unwrap_err().to_string();
    assert!(e.contains("cluster"), "{e}");
}
