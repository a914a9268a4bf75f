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
    let qs = target_queries("bookinfo", Target::App("reviews"), 600, 1000);
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
        target_queries("ns", Target::Service("s"), 60, 1).len(),
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
    let r = target_requests(&results);
    assert!((r.request_count - 10.1).abs() < 1e-9);
    assert!((r.request_error_count - 5.1).abs() < 1e-9);
}

#[test]
fn namespace_health_uses_a_fixed_number_of_queries() {
    assert_eq!(namespace_queries("ns", Kind::App, 600, 0).len(), 3);
    assert_eq!(namespace_queries("ns", Kind::Workload, 600, 0).len(), 3);
    assert_eq!(namespace_queries("ns", Kind::Service, 600, 0).len(), 2);
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
    let h = namespace_health(&Rules::default(), "bookinfo", Kind::App, entities, &results);
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
