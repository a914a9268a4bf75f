use plugin_api::{QueryResult, Sample, Series};

use super::*;

fn series(labels: &[(&str, &str)], v: f64) -> Series {
    Series { labels: labels.iter().copied().collect(), samples: vec![Sample { t: 0.0, v }].into() }
}

fn result(s: Vec<Series>) -> QueryResult {
    QueryResult { series: s.into() }
}

fn matcher_text(q: &MetricQuery) -> Vec<String> {
    q.matchers.iter().map(|m| format!("{}{:?}{}", m.name, m.op, m.value)).collect()
}

#[test]
fn an_object_is_counted_from_source_reports_plus_unknown_callers() {
    let qs =
        target_queries("bookinfo", None, Target::App("reviews"), &Ambient::default(), 600, 1000);
    assert_eq!(qs.len(), 3);
    // The source's report, or the waypoint's (ambient: the client has no L7 proxy).
    let m0 = matcher_text(&qs[0]);
    assert!(
        m0.contains(&"reporterResource|waypoint".to_string())
            && m0.contains(&"destination_appEqreviews".to_string())
    );
    let m1 = matcher_text(&qs[1]);
    assert!(
        m1.contains(&"reporterEqdestination".to_string())
            && m1.contains(&"source_workloadEqunknown".to_string())
    );
    let m2 = matcher_text(&qs[2]);
    assert!(
        m2.contains(&"source_appEqreviews".to_string())
            && m2.contains(&"reporterResource|waypoint".to_string())
    );
    assert_eq!(qs[0].window_secs, 600);
    assert_eq!(
        target_queries("ns", None, Target::Service("s"), &Ambient::default(), 60, 1).len(),
        2,
        "services have no outbound"
    );
}

#[test]
fn counts_sum_rates_and_errors_are_4xx_and_5xx() {
    // Kiali's health test numbers: unknown->reviews 500: 1.6; reviews->httpbin 200: 5, 400: 3.5.
    let results = vec![
        result(vec![]),
        result(vec![series(&[("response_code", "500")], 1.6)]),
        result(vec![
            series(&[("response_code", "200")], 5.0),
            series(&[("response_code", "400")], 3.5),
        ]),
    ];
    let r = target_requests(&results, &Ambient::default());
    assert!((r.request_count - 10.1).abs() < 1e-9);
    assert!((r.request_error_count - 5.1).abs() < 1e-9);
}

#[test]
fn namespace_health_uses_a_fixed_number_of_queries() {
    assert_eq!(namespace_queries("ns", None, Kind::App, &Ambient::default(), 600, 0).len(), 3);
    assert_eq!(namespace_queries("ns", None, Kind::Workload, &Ambient::default(), 600, 0).len(), 3);
    assert_eq!(namespace_queries("ns", None, Kind::Service, &Ambient::default(), 600, 0).len(), 2);
}

#[test]
fn namespace_ratios_follow_kiali_and_idle_objects_get_minus_one() {
    let results = vec![
        result(vec![series(
            &[
                ("destination_app", "reviews"),
                ("request_protocol", "http"),
                ("response_code", "500"),
            ],
            1.6,
        )]),
        result(vec![]),
        result(vec![
            series(&[("source_app", "reviews"), ("response_code", "200")], 5.0),
            series(&[("source_app", "reviews"), ("response_code", "400")], 3.5),
        ]),
    ];
    let entities = vec![
        Entity { name: "reviews".into(), statuses: Some(vec![]), status: None },
        Entity { name: "idle".into(), statuses: Some(vec![]), status: None },
    ];
    let h = namespace_health(
        &Rules::default(),
        "bookinfo",
        Kind::App,
        entities,
        &results,
        &Ambient::default(),
    );
    let r = h["reviews"].requests;
    assert!((r.error_ratio - 5.1 / 10.1).abs() < 1e-9);
    assert_eq!(r.inbound_error_ratio, 1.0);
    assert!((r.outbound_error_ratio - 3.5 / 8.5).abs() < 1e-9);
    let idle = h["idle"].requests;
    assert_eq!(
        (idle.error_ratio, idle.inbound_error_ratio, idle.outbound_error_ratio),
        (-1.0, -1.0, -1.0)
    );
    assert!(!h.contains_key("unlisted"));
    // 1.6/s of 500 inbound is failure under the default rule; an idle app without
    // workloads has nothing to judge.
    assert_eq!(h["reviews"].status, Status::Failure);
    assert_eq!(h["idle"].status, Status::Na);
}

#[test]
fn proxy_gauges_are_named_like_envoy_and_summed_per_direction() {
    let qs = proxy_queries("bookinfo", "product-page", &[9080, 9443], "svc.cluster.local", 5);
    assert_eq!(qs.len(), 8);
    assert_eq!(
        qs[0].metric.as_str(),
        "envoy_cluster_inbound_9080__product_page_bookinfo_svc_cluster_local_membership_healthy"
    );
    assert_eq!(
        qs[3].metric.as_str(),
        "envoy_cluster_outbound_9080__product_page_bookinfo_svc_cluster_local_membership_total"
    );
    let results: Vec<QueryResult> = [2.0, 3.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
        .iter()
        .map(|v| result(vec![series(&[], *v)]))
        .collect();
    let p = proxy_health(&results);
    assert_eq!(p.inbound, ProxyHealth { healthy: 3, total: 4 });
    assert_eq!(p.outbound, ProxyHealth { healthy: 1, total: 1 });
}

mod rules;

/// Ambient: a waypoint's report counts only where the caller has no L7 proxy, and a sidecar
/// server's report also where the caller is an ambient workload; each request once.
#[test]
fn ambient_callers_are_counted_from_one_report_each() {
    let mut a = Ambient::default();
    a.add_client("wp", "front-v1");
    a.add_client("amb", "client-v1");
    a.add_waypoint();
    let qs = target_queries("wp", None, Target::Workload("back-v1"), &a, 600, 0);
    // Inbound: source|waypoint, destination from unknown or ambient callers; outbound: both.
    assert_eq!(qs.len(), 4);
    let m1 = matcher_text(&qs[1]);
    assert!(m1.contains(&"source_workloadReunknown|client\\-v1|front\\-v1".to_string()), "{m1:?}");
    for q in &qs {
        let by: Vec<&str> =
            q.group_by.as_ref().into_option().into_iter().flatten().map(|s| s.as_str()).collect();
        assert!(
            by.ends_with(&["reporter", "source_workload_namespace", "source_workload"]),
            "{by:?}"
        );
    }
    let rep = |r: &str, ns: &str, wl: &str, code: &str, v: f64| {
        series(
            &[
                ("reporter", r),
                ("source_workload_namespace", ns),
                ("source_workload", wl),
                ("response_code", code),
            ],
            v,
        )
    };
    let results = vec![
        result(vec![
            rep("waypoint", "wp", "front-v1", "200", 4.0),
            rep("waypoint", "wp", "front-v1", "503", 1.0),
            // A sidecar's request through the waypoint: its own report stands for it.
            rep("source", "mix", "caller-v1", "200", 6.0),
            rep("waypoint", "mix", "caller-v1", "200", 6.0),
            rep("waypoint", "unknown", "unknown", "200", 0.5),
        ]),
        result(vec![
            rep("destination", "unknown", "unknown", "500", 1.0),
            rep("destination", "amb", "client-v1", "404", 2.0),
            // Same name, other namespace: a sidecar, whose own report was read.
            rep("destination", "mix", "client-v1", "200", 7.0),
        ]),
        result(vec![]),
        result(vec![]),
    ];
    let r = target_requests(&results, &a);
    assert!((r.request_count - 14.5).abs() < 1e-9, "{r:?}");
    assert!((r.request_error_count - 4.0).abs() < 1e-9, "{r:?}");
    // A cluster without ambient workloads: the sidecar mesh's queries, everything read.
    let none = Ambient::default();
    let plain = target_queries("wp", None, Target::Workload("back-v1"), &none, 600, 0);
    assert_eq!(plain.len(), 3);
    assert!(plain.iter().all(|q| {
        !q.group_by.as_ref().into_option().into_iter().flatten().any(|s| s.as_str() == "reporter")
    }));
    assert_eq!(target_requests(&results, &none).request_count, 27.5);
}

/// The matchers of `q` on a cluster label.
fn cluster_matchers(q: &MetricQuery) -> Vec<String> {
    matcher_text(q).into_iter().filter(|m| m.contains("_cluster")).collect()
}

#[test]
fn a_cluster_counts_inbound_by_destination_and_outbound_by_source() {
    let a = Ambient::default();
    let qs = target_queries("bookinfo", Some("west"), Target::App("reviews"), &a, 600, 0);
    assert_eq!(qs.len(), 3);
    for q in &qs[..2] {
        assert_eq!(cluster_matchers(q), ["destination_clusterEqwest"]);
    }
    assert_eq!(cluster_matchers(&qs[2]), ["source_clusterEqwest"]);
    // A Service keeps the requests whose destination cluster Istio could not tell (Kiali).
    let qs = target_queries("bookinfo", Some("a.b"), Target::Service("reviews"), &a, 600, 0);
    for q in &qs {
        assert_eq!(cluster_matchers(q), ["destination_clusterRea\\.b|unknown"]);
    }
    let ns = namespace_queries("bookinfo", Some("west"), Kind::Workload, &a, 600, 0);
    assert_eq!(ns.len(), 3);
    assert_eq!(cluster_matchers(&ns[0]), ["destination_clusterEqwest"]);
    assert_eq!(cluster_matchers(&ns[1]), ["destination_clusterEqwest"]);
    assert_eq!(cluster_matchers(&ns[2]), ["source_clusterEqwest"]);
    let ns = namespace_queries("bookinfo", Some("west"), Kind::Service, &a, 600, 0);
    assert!(ns.iter().all(|q| cluster_matchers(q) == ["destination_clusterRewest|unknown"]));
    // A single-cluster instance asks about no cluster: its queries name none.
    let all = [
        target_queries("bookinfo", None, Target::App("reviews"), &a, 600, 0),
        target_queries("bookinfo", None, Target::Service("reviews"), &a, 600, 0),
        namespace_queries("bookinfo", None, Kind::App, &a, 600, 0),
        namespace_queries("bookinfo", None, Kind::Service, &a, 600, 0),
    ];
    assert!(all.iter().flatten().all(|q| cluster_matchers(q).is_empty()));
}
