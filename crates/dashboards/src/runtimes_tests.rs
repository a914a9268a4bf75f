use std::sync::atomic::{AtomicUsize, Ordering};

use plugin_api::{ProviderTier, Sample, Series};

use super::*;
use crate::templates::ProviderTemplates;

fn t(name: &str, runtime: &str, title: &str, discover_on: &str) -> DashboardTemplate {
    DashboardTemplate {
        name: name.into(),
        runtime: runtime.into(),
        title: title.into(),
        discover_on: discover_on.into(),
        namespace: "".into(),
        charts: Default::default(),
    }
}

fn catalog() -> TemplateCatalog {
    TemplateCatalog::new(vec![ProviderTemplates {
        provider: "builtin".into(),
        tier: ProviderTier::Builtin,
        templates: vec![
            t(
                "vertx-server",
                "Vert.x",
                "Vert.x Server Metrics",
                "vertx_http_server_requests_total",
            ),
            t("vertx-pool", "Vert.x", "Vert.x Pools Metrics", "vertx_pool_ratio"),
            t("go", "Go", "Go Metrics", "go_goroutines"),
            t("hidden", "", "No runtime", ""),
        ],
    }])
}

fn names(result: &[&str]) -> QueryResult {
    QueryResult {
        series: result
            .iter()
            .map(|n| Series {
                labels: [("__name__", *n)].into_iter().collect(),
                samples: vec![Sample { t: 1.0, v: 1.0 }].into(),
            })
            .collect(),
    }
}

#[test]
fn annotations_map_to_runtimes_in_first_seen_order() {
    let c = catalog();
    let r = runtimes_from_annotations(
        ["go, vertx-pool", "vertx-server,go", "unknown", "hidden"],
        |n| c.resolve(n, "ns", "mesh"),
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json,
        serde_json::json!([
            {"name": "Go", "dashboardRefs": [{"template": "go", "title": "Go Metrics"}]},
            {"name": "Vert.x", "dashboardRefs": [
                {"template": "vertx-pool", "title": "Vert.x Pools Metrics"},
                {"template": "vertx-server", "title": "Vert.x Server Metrics"}]},
            {"name": "No runtime", "dashboardRefs": [{"template": "hidden", "title": "No runtime"}]}
        ])
    );
}

#[test]
fn discovery_is_one_query_for_all_templates() {
    let c = catalog();
    let visible = c.visible("bookinfo", "istio-system");
    let q = discovery_query(&visible, "bookinfo", "ratings", 1000).unwrap();
    assert_eq!(q.metric.as_str(), "");
    assert_eq!(
        q.matchers.to_vec(),
        vec![
            Matcher::re(
                "__name__",
                "vertx_http_server_requests_total|vertx_pool_ratio|go_goroutines"
            ),
            Matcher::eq("namespace", "bookinfo"),
            Matcher::eq("app", "ratings"),
        ]
    );
    assert_eq!(q.time, QueryTime::Instant(1000));
    let r = runtimes_from_discovery(&visible, &names(&["go_goroutines"]));
    assert_eq!(
        r,
        vec![Runtime {
            name: "Go".into(),
            dashboard_refs: vec![DashboardRef {
                template: "go".into(),
                title: "Go Metrics".into()
            }]
        }]
    );
    assert!(discovery_query(&[], "ns", "a", 1).is_none());
}

#[tokio::test]
async fn annotations_win_and_discovery_is_cached() {
    let c = catalog();
    let cache = RuntimeCache::new(Duration::from_secs(60));
    let sent = AtomicUsize::new(0);
    let run = |_q: MetricQuery| {
        sent.fetch_add(1, Ordering::SeqCst);
        async { Ok(names(&["vertx_http_server_requests_total", "vertx_pool_ratio"])) }
    };
    let r = resolve_runtimes(["go"], &c, "ns", "mesh", "a", 1000, &cache, run).await;
    assert_eq!(r[0].name, "Go");
    assert_eq!(sent.load(Ordering::SeqCst), 0, "no query when annotated");
    let r1 = resolve_runtimes([], &c, "ns", "mesh", "a", 1000, &cache, run).await;
    let r2 = resolve_runtimes([], &c, "ns", "mesh", "a", 1000, &cache, run).await;
    assert_eq!(r1, r2);
    assert_eq!(r1.len(), 1);
    assert_eq!(r1[0].dashboard_refs.len(), 2);
    assert_eq!(sent.load(Ordering::SeqCst), 1, "second answer from the cache");
    resolve_runtimes([], &c, "ns", "mesh", "other", 1000, &cache, run).await;
    assert_eq!(sent.load(Ordering::SeqCst), 2, "the cache is per app");
}

#[tokio::test]
async fn expired_entries_are_asked_again_and_failures_give_none() {
    let c = catalog();
    let cache = RuntimeCache::new(Duration::ZERO);
    let sent = AtomicUsize::new(0);
    let run = |_q: MetricQuery| {
        sent.fetch_add(1, Ordering::SeqCst);
        async { Err::<QueryResult, _>(PluginError::unavailable("down")) }
    };
    assert!(resolve_runtimes([], &c, "ns", "mesh", "a", 1000, &cache, run).await.is_empty());
    assert!(resolve_runtimes([], &c, "ns", "mesh", "a", 1000, &cache, run).await.is_empty());
    assert_eq!(sent.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn each_catalog_gets_its_own_runtimes_from_a_shared_answer() {
    // The same app in two clusters: the second cluster's templates on the same metrics have
    // their own names, and one of them reveals on a metric the first does not ask about.
    let c1 = catalog();
    let c2 = TemplateCatalog::new(vec![ProviderTemplates {
        provider: "builtin".into(),
        tier: ProviderTier::Builtin,
        templates: vec![
            t(
                "vertx-server",
                "Vert.x",
                "Vert.x Server Metrics",
                "vertx_http_server_requests_total",
            ),
            t("vertx-pool", "Vert.x", "Vert.x Pools Metrics", "vertx_pool_ratio"),
            t("go", "Go", "Go Metrics", "go_goroutines"),
        ],
    }]);
    let c3 = TemplateCatalog::new(vec![ProviderTemplates {
        provider: "builtin".into(),
        tier: ProviderTier::Builtin,
        templates: vec![t("jvm", "JVM", "JVM Metrics", "jvm_threads_current")],
    }]);
    let cache = RuntimeCache::new(Duration::from_secs(60));
    let sent = AtomicUsize::new(0);
    let run = |_q: MetricQuery| {
        sent.fetch_add(1, Ordering::SeqCst);
        async { Ok(names(&["vertx_pool_ratio", "jvm_threads_current"])) }
    };
    let r1 = resolve_runtimes([], &c1, "ns", "mesh", "a", 1000, &cache, run).await;
    let r2 = resolve_runtimes([], &c2, "ns", "mesh", "a", 1000, &cache, run).await;
    assert_eq!(r1, r2);
    assert_eq!(sent.load(Ordering::SeqCst), 1, "the same question is asked once");
    let r3 = resolve_runtimes([], &c3, "ns", "mesh", "a", 1000, &cache, run).await;
    assert_eq!(sent.load(Ordering::SeqCst), 2, "another question is asked again");
    assert_eq!(r3.len(), 1);
    assert_eq!(r3[0].name, "JVM", "not the first catalog's runtimes");
}
