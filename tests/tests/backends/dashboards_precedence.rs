//! Template precedence through the service (in this process): MonitoringDashboard resources served by
//! the loopback Kubernetes API (the app's namespace, then the mesh namespace) override
//! template files in `dashboards.folders`, which override the built-in templates.

use std::path::PathBuf;

use integration_tests::{
    inprocess::InProcess as Meshlens,
    kube_api::{KubeApi, Options, read_fixtures},
    prometheus::{PromServer, fixture},
    server::{plugin_dir, workspace_root},
};
use serde_json::{Value, json};

const PLUGINS: &[&str] =
    &["metrics-prometheus", "dashboards-builtin", "dashboards-folder", "dashboards-monitoring"];

fn monitoring_dashboard(ns: &str, name: &str, title: &str, metric: &str) -> Value {
    json!({
        "apiVersion": "monitoring.kiali.io/v1alpha1",
        "kind": "MonitoringDashboard",
        "metadata": {"namespace": ns, "name": name, "labels": {"runtime": "Team"}},
        "spec": {"title": title, "charts": [
            {"name": "Only chart", "unit": "", "spans": 12, "metricName": metric, "dataType": "raw"}
        ]}
    })
}

const FOLDER_VERTX_SERVER: &str = r#"
name = "vertx-server"
runtime = "Vert.x"
title = "Folder Vert.x server"
charts = [{ name = "Requests", unit = "ops", metricName = "vertx_http_server_requests_total", dataType = "rate" }]
"#;

const FOLDER_TEMPLATES_YAML: &str = r#"
dashboards:
  - name: vertx-client
    runtime: Vert.x
    title: Folder Vert.x client
    charts: [{name: Connections, unit: "", metricName: vertx_http_server_connections, dataType: raw}]
  - name: go
    runtime: Go
    title: Folder Go
    charts: [{name: Threads, unit: "", metricName: go_threads, dataType: raw}]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_resources_override_folders_which_override_builtins() {
    let mut objects = read_fixtures(&[workspace_root().join("config/demo")]);
    objects.push(monitoring_dashboard(
        "istio-system",
        "vertx-server",
        "Mesh Vert.x server",
        "vertx_http_server_connections",
    ));
    objects.push(monitoring_dashboard("istio-system", "go", "Mesh Go", "go_threads"));
    objects.push(monitoring_dashboard("bookinfo", "go", "Team Go", "go_goroutines"));
    let api = KubeApi::start(objects, Options::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let templates = tempfile::tempdir().unwrap();
    std::fs::write(templates.path().join("server.toml"), FOLDER_VERTX_SERVER).unwrap();
    std::fs::write(templates.path().join("more.yaml"), FOLDER_TEMPLATES_YAML).unwrap();
    let broken: PathBuf = templates.path().join("broken.json");
    std::fs::write(&broken, r#"{"name": "x", "title": "X", "charts": [{"name": "c", "metricName": "m", "dataType": "sometimes"}]}"#)
        .unwrap();

    tokio::task::spawn_blocking(move || {
        let f = fixture(&["--topology", "demo", "--minutes", "30"]);
        let prom = PromServer::start(&f);
        let plugins = plugin_dir(PLUGINS);
        let cfg = format!(
            "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
             [cluster]\nsource = \"kube\"\nkubeconfig = {:?}\nsync_timeout = \"20s\"\n\
             [metrics]\nbackend = \"prometheus\"\ntimeout = \"3s\"\n[metrics.prometheus]\nurl = {:?}\n\
             [dashboards]\nfolders = [{:?}]\n",
            plugins.path().display().to_string(),
            kubeconfig.display().to_string(),
            prom.url(),
            templates.path().display().to_string(),
        );
        let m = Meshlens::start(&cfg, &[], vec![plugins, dir, templates]).expect("meshlens starts on kube");
        let end = f.end();
        let get = |app: &str, template: &str| {
            let r = m.get(&format!("/api/namespaces/bookinfo/apps/{app}/customdashboard/{template}?queryTime={end}&duration=120&step=60"));
            assert_eq!(r.status, 200, "{app}/{template}: {}", r.text());
            r.json()
        };
        // The app's namespace beats the mesh namespace, folders and built-ins.
        let d = get("ratings", "go");
        assert_eq!(d["title"], "Team Go");
        assert_eq!(d["charts"][0]["spans"], 12);
        let goroutines = d["charts"][0]["metric"]["matrix"][0]["values"][0][1].as_str().unwrap().parse::<f64>().unwrap();
        assert_eq!(goroutines, 42.0, "the resource's chart is queried: {d}");
        // The mesh namespace beats folders.
        assert_eq!(get("reviews", "vertx-server")["title"], "Mesh Vert.x server");
        // A folder beats the built-in.
        let d = get("reviews", "vertx-client");
        assert_eq!(d["title"], "Folder Vert.x client");
        assert_eq!(d["charts"].as_array().unwrap().len(), 1);
        // Nobody overrides nodejs.
        assert_eq!(get("reviews", "nodejs")["title"], "Node.js Metrics");
        // The broken file is skipped and logged with its path; the others still work.
        let r = m.get("/api/namespaces/bookinfo/apps/reviews/customdashboard/x");
        assert_eq!(r.status, 400);
        let logs = m.logs.lock().unwrap().join("\n");
        assert!(logs.contains(&broken.display().to_string()) && logs.contains("sometimes"), "{logs}");
        drop(prom);
    })
    .await
    .unwrap();
    drop(api);
}
