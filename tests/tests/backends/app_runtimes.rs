//! appDetails `runtimes` over HTTP: from the `kiali.io/runtimes` annotation, else
//! discovered from the metrics each runtime's exporter emits.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use integration_tests::{prometheus::fixture, server::plugin_dir};

#[test]
fn app_details_lists_runtimes_from_annotations_and_discovery() {
    integration_tests::server::ensure_built();
    let f = fixture(&["--topology", "demo", "--minutes", "20"]);
    let dir = plugin_dir(&["metrics-openmetrics-file", "dashboards-builtin"]);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"openmetrics_file\"\n[metrics.openmetrics_file]\npath = \"{}\"\n",
        dir.path().display(),
        f.openmetrics.display()
    );
    let m = Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts");

    // reviews-v1 pods are annotated `kiali.io/runtimes: vertx-server`.
    let reviews = m.get("/api/namespaces/bookinfo/apps/reviews").json();
    let runtimes = reviews["runtimes"].as_array().expect("runtimes array");
    assert_eq!(runtimes.len(), 1, "{reviews}");
    assert_eq!(runtimes[0]["name"], "Vert.x");
    assert_eq!(runtimes[0]["dashboardRefs"][0]["template"], "vertx-server");
    assert!(runtimes[0]["dashboardRefs"][0]["title"].as_str().is_some_and(|t| !t.is_empty()));

    // ratings has no annotation; the generator emits Go runtime metrics for it.
    let ratings = m.get("/api/namespaces/bookinfo/apps/ratings").json();
    let names: Vec<&str> = ratings["runtimes"]
        .as_array()
        .expect("runtimes")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["Go"], "{ratings}");

    // productpage has neither.
    let pp = m.get("/api/namespaces/bookinfo/apps/productpage").json();
    assert_eq!(pp["runtimes"], serde_json::json!([]));
}
