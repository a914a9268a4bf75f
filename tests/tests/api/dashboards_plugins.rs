//! The three dashboard template providers, loaded through the plugin boundary as the host
//! loads them (the built libraries, `abi_stable` layout and version checks).

use std::path::PathBuf;

use integration_tests::server::profile_dir;
use plugin_api::{
    ClusterData, ClusterKind, ConfigObject, DashboardProviderBox, DashboardTemplate, DataType,
    Label, PluginMod_Ref, ProviderTier,
    abi_stable::std_types::{RResult, RStr},
};

/// The library cargo built for this test (the plugins are dev-dependencies), without
/// building the whole host: the newest of `deps/` and the uplifted copy.
fn library(package: &str) -> PathBuf {
    let file = format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        package.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    );
    let candidates = [profile_dir().join("deps").join(&file), profile_dir().join(&file)];
    candidates
        .into_iter()
        .filter_map(|p| std::fs::metadata(&p).and_then(|m| m.modified()).ok().map(|t| (t, p)))
        .max()
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("{file} was not built; is {package} a dev-dependency of tests/?"))
}

fn load(package: &str) -> DashboardProviderBox {
    let path = library(package);
    let module = plugin_api::abi_stable::library::lib_header_from_path(&path)
        .and_then(|h| h.init_root_module::<PluginMod_Ref>())
        .unwrap_or_else(|e| panic!("load {}: {e}", path.display()));
    assert_eq!(module.api_version().as_str(), plugin_api::API_VERSION);
    let components = match (module.components())() {
        RResult::ROk(c) => c,
        RResult::RErr(e) => panic!("components of {package}: {e}"),
    };
    assert!(components.appenders.is_empty() && components.metrics_backends.is_empty());
    assert_eq!(components.dashboard_providers.len(), 1, "{package} carries exactly one provider");
    components.dashboard_providers.into_iter().next().unwrap()
}

fn ok<T>(r: RResult<T, plugin_api::PluginError>) -> T {
    match r {
        RResult::ROk(v) => v,
        RResult::RErr(e) => panic!("plugin error: {e}"),
    }
}

fn templates(p: &DashboardProviderBox, data: &ClusterData) -> Vec<DashboardTemplate> {
    ok(p.templates(data)).into_vec()
}

#[test]
fn builtin_ships_the_runtime_templates() {
    let p = load("dashboards-builtin");
    assert_eq!(ok(p.name()).as_str(), "builtin");
    assert_eq!(ok(p.tier()), ProviderTier::Builtin);
    assert!(ok(p.inputs()).is_empty());
    ok(p.configure(RStr::from_str(r#"{"folders":[]}"#)));
    let ts = templates(&p, &ClusterData::default());
    let vertx = ts.iter().find(|t| t.name.as_str() == "vertx-server").expect("vertx-server");
    assert_eq!(vertx.runtime.as_str(), "Vert.x");
    assert_eq!(vertx.charts.len(), 6);
    let rt = vertx
        .charts
        .iter()
        .find(|c| c.metric_name.as_str() == "vertx_http_server_responseTime_seconds")
        .unwrap();
    assert_eq!(rt.data_type, DataType::Histogram);
    let go = ts.iter().find(|t| t.name.as_str() == "go").expect("go");
    assert_eq!(go.discover_on.as_str(), "go_goroutines");
    let mut runtimes: Vec<_> = ts.iter().map(|t| t.runtime.to_string()).collect();
    runtimes.dedup();
    for r in ["Vert.x", "Node.js", "Go", "Spring Boot", "MicroProfile", "Quarkus", "Envoy"] {
        assert!(runtimes.iter().any(|x| x == r), "{r} missing from {runtimes:?}");
    }
}

#[test]
fn folder_reads_configured_folders_and_reports_bad_files_by_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("vertx.yaml"),
        "name: vertx-server\ntitle: Team Vert.x\nruntime: Vert.x\ncharts:\n  - {name: Requests, unit: ops, metricName: vertx_http_server_requests_total, dataType: rate}\n",
    )
    .unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\n").unwrap();
    let p = load("dashboards-folder");
    assert_eq!(ok(p.tier()), ProviderTier::Folder);
    let cfg = serde_json::json!({ "folders": [dir.path()] }).to_string();
    ok(p.configure(RStr::from_str(&cfg)));
    let ts = templates(&p, &ClusterData::default());
    let (warnings, real): (Vec<_>, Vec<_>) = ts.into_iter().partition(|t| t.name.is_empty());
    assert_eq!(real.len(), 1);
    assert_eq!(real[0].title.as_str(), "Team Vert.x");
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].title.contains(&bad.display().to_string()), "{}", warnings[0].title);

    let missing = serde_json::json!({ "folders": [dir.path().join("nope")] }).to_string();
    match p.configure(RStr::from_str(&missing)) {
        RResult::RErr(e) => assert!(e.message.contains("nope"), "{e}"),
        RResult::ROk(()) => panic!("an unreadable folder must fail configure"),
    }
}

#[test]
fn monitoring_maps_resources_and_keeps_their_namespace() {
    let p = load("dashboards-monitoring");
    assert_eq!(ok(p.tier()), ProviderTier::Cluster);
    assert_eq!(ok(p.inputs()).into_vec(), vec![ClusterKind::MonitoringDashboards]);
    let spec = r#"{"title":"Mesh Go","runtime":"Go","discoverOn":"go_goroutines",
        "charts":[{"name":"Goroutines","unit":"","spans":12,"metricName":"go_goroutines","dataType":"raw"}]}"#;
    let data = ClusterData {
        objects: vec![ConfigObject {
            cluster: "Kubernetes".into(),
            kind: "MonitoringDashboard".into(),
            namespace: "istio-system".into(),
            name: "go".into(),
            labels: vec![Label::new("app", "x")].into(),
            spec_json: spec.into(),
        }]
        .into(),
        ..Default::default()
    };
    let ts = templates(&p, &data);
    assert_eq!(ts.len(), 1);
    assert_eq!(
        (ts[0].name.as_str(), ts[0].namespace.as_str(), ts[0].title.as_str()),
        ("go", "istio-system", "Mesh Go")
    );
    assert_eq!(ts[0].charts[0].spans, 12);
}
