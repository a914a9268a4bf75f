use std::collections::HashSet;

use plugin_api::DataType;

use super::*;

#[test]
fn every_shipped_file_parses_and_names_are_unique() {
    let all = builtin_templates().unwrap();
    let names: HashSet<_> = all.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), all.len(), "duplicate template names");
    for t in &all {
        assert!(!t.charts.is_empty(), "{} has no charts", t.name);
        assert!(!t.discover_on.is_empty(), "{} cannot be discovered", t.name);
        // The revealing metric must be one the template charts (so it is a real series name).
        // A histogram's base name is no series of its own, so it cannot reveal anything.
        assert!(
            t.charts
                .iter()
                .any(|c| c.metric_name == t.discover_on && c.data_type != DataType::Histogram),
            "{}: discoverOn is not a charted gauge or counter",
            t.name
        );
    }
}

#[test]
fn the_runtimes_the_issue_names_are_shipped() {
    let all = builtin_templates().unwrap();
    let runtimes: HashSet<_> = all.iter().map(|t| t.runtime.as_str()).collect();
    for r in
        ["Vert.x", "Node.js", "Go", "Spring Boot", "Quarkus", "MicroProfile", "Thorntail", "Envoy"]
    {
        assert!(runtimes.contains(r), "missing runtime {r}");
    }
    let names: HashSet<_> = all.iter().map(|t| t.name.as_str()).collect();
    for n in [
        "vertx-server",
        "vertx-client",
        "vertx-eventbus",
        "vertx-pool",
        "springboot-jvm",
        "springboot-tomcat",
    ] {
        assert!(names.contains(n), "missing template {n}");
    }
}

#[test]
fn exporter_metric_names_are_used() {
    let all = builtin_templates().unwrap();
    let metric = |n: &str| {
        all.iter()
            .flat_map(|t| t.charts.iter())
            .find(|c| c.metric_name.as_str() == n)
            .map(|c| c.data_type)
    };
    assert_eq!(metric("vertx_http_server_requests_total"), Some(DataType::Rate));
    assert_eq!(metric("vertx_http_server_responseTime_seconds"), Some(DataType::Histogram));
    assert_eq!(metric("go_goroutines"), Some(DataType::Raw));
    assert_eq!(metric("go_memstats_alloc_bytes"), Some(DataType::Raw));
    assert_eq!(metric("go_gc_duration_seconds"), Some(DataType::Histogram));
    assert_eq!(metric("nodejs_heap_size_used_bytes"), Some(DataType::Raw));
    assert_eq!(metric("nodejs_eventloop_lag_seconds"), Some(DataType::Raw));
    assert_eq!(metric("jvm_memory_used_bytes"), Some(DataType::Raw));
    assert_eq!(metric("jvm_threads_live_threads"), Some(DataType::Raw));
    assert_eq!(metric("tomcat_sessions_active_current_sessions"), Some(DataType::Raw));
    assert_eq!(metric("base_memory_usedHeap_bytes"), Some(DataType::Raw));
    assert_eq!(metric("envoy_cluster_upstream_rq_total"), Some(DataType::Rate));
}

#[test]
fn vertx_server_has_six_charts_three_of_them_histograms() {
    let all = builtin_templates().unwrap();
    let t = all.iter().find(|t| t.name.as_str() == "vertx-server").unwrap();
    assert_eq!(t.charts.len(), 6);
    assert_eq!(t.charts.iter().filter(|c| c.data_type == DataType::Histogram).count(), 3);
    assert_eq!(t.title.as_str(), "Vert.x Server Metrics");
}

#[test]
fn the_provider_is_lowest_tier_and_needs_no_cluster_data() {
    let b = Builtin::default();
    assert_eq!(b.tier(), ProviderTier::Builtin);
    assert!(b.inputs().is_empty());
    assert_eq!(
        b.templates(&ClusterData::default()).unwrap().len(),
        builtin_templates().unwrap().len()
    );
}
