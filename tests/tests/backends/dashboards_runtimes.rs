//! App runtimes (the `runtimes` of app details) through the host's own function, on the
//! demo snapshot and a real Prometheus: `reviews` pods are annotated `kiali.io/runtimes:
//! vertx-server`; `ratings` has no annotation and exports Go metrics, so it is discovered
//! with one query; `productpage` exports no runtime metrics.

use std::sync::Arc;

use integration_tests::{
    prometheus::{PromServer, fixture},
    server::plugin_dir,
};
use meshlens::{
    api::dashboards::app_runtimes, config::Config, context::RequestContext, state::AppState,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtimes_from_annotations_else_from_one_discovery_query() {
    let (prom, plugins) = tokio::task::spawn_blocking(|| {
        let f = fixture(&["--topology", "demo", "--minutes", "30"]);
        (
            PromServer::start(&f),
            plugin_dir(&[
                "metrics-prometheus",
                "dashboards-builtin",
                "dashboards-folder",
                "dashboards-monitoring",
            ]),
        )
    })
    .await
    .unwrap();
    let demo = integration_tests::server::workspace_root().join("config/demo");
    let cfg_file = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    std::fs::write(
        cfg_file.path(),
        format!(
            "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
             [cluster]\nsource = \"snapshot\"\nsnapshot = [{:?}]\n\
             [metrics]\nbackend = \"prometheus\"\ntimeout = \"3s\"\n[metrics.prometheus]\nurl = {:?}\n",
            plugins.path().display().to_string(),
            demo.display().to_string(),
            prom.url()
        ),
    )
    .unwrap();
    let config = Config::load(Some(cfg_file.path())).unwrap();
    let state = Arc::new(AppState::build(config).await.unwrap_or_else(|e| panic!("state: {e}")));
    let cluster = state.home_cluster().state().await.unwrap();
    let sent = || state.metrics.queries_sent();
    let rc = RequestContext::background();

    // Annotated: no metric query at all.
    let before = sent();
    let reviews =
        serde_json::to_value(app_runtimes(&state, &rc, &cluster, "bookinfo", "reviews").await)
            .unwrap();
    assert_eq!(
        reviews,
        serde_json::json!([{"name": "Vert.x", "dashboardRefs": [{"template": "vertx-server", "title": "Vert.x Server Metrics"}]}])
    );
    assert_eq!(sent(), before, "annotations need no query");

    // Discovered: one query for all templates, then the cache.
    let ratings =
        serde_json::to_value(app_runtimes(&state, &rc, &cluster, "bookinfo", "ratings").await)
            .unwrap();
    assert_eq!(
        ratings,
        serde_json::json!([{"name": "Go", "dashboardRefs": [{"template": "go", "title": "Go Metrics"}]}])
    );
    assert_eq!(sent(), before + 1, "one discovery query for every template");
    let again =
        serde_json::to_value(app_runtimes(&state, &rc, &cluster, "bookinfo", "ratings").await)
            .unwrap();
    assert_eq!(again, ratings);
    assert_eq!(sent(), before + 1, "the second answer comes from the cache");

    // Nothing revealed: no runtimes.
    let productpage = app_runtimes(&state, &rc, &cluster, "bookinfo", "productpage").await;
    assert!(productpage.is_empty(), "{productpage:?}");
    assert_eq!(sent(), before + 2);
    drop(prom);
}
