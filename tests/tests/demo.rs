//! The README's demo path: the install script copies exactly the bundled plugins, and the
//! service starts on config/demo.toml with them and answers from the demo mesh.

use integration_tests::{
    prometheus::fixture,
    server::{BUNDLED, Meshlens, ensure_built, profile_dir, workspace_root},
};

#[test]
fn install_script_and_demo_config_serve_the_demo_mesh() {
    ensure_built();
    let profile = profile_dir();
    let name = profile.file_name().and_then(|n| n.to_str()).expect("profile name").to_string();
    let status = std::process::Command::new("bash")
        .arg(workspace_root().join("scripts/install-plugins.sh"))
        .arg(&name)
        .status()
        .expect("run install-plugins.sh");
    assert!(status.success());
    let dir = profile.join("plugins");
    let mut installed: Vec<String> = std::fs::read_dir(&dir)
        .expect("plugins folder")
        .filter_map(|e| e.ok().and_then(|e| e.file_name().into_string().ok()))
        .collect();
    installed.sort();
    let mut want: Vec<String> = BUNDLED
        .iter()
        .map(|p| format!("{}{}{}", std::env::consts::DLL_PREFIX, p.replace('-', "_"), std::env::consts::DLL_SUFFIX))
        .collect();
    want.sort();
    assert_eq!(installed, want);

    let f = fixture(&["--topology", "demo", "--minutes", "20"]);
    let config = std::fs::read_to_string(workspace_root().join("config/demo.toml")).expect("demo.toml");
    let config = config.replace("port = 20001", "port = 0");
    let dirs = format!("[\"{}\"]", dir.display());
    let path = f.openmetrics.display().to_string();
    let m = Meshlens::start(
        &config,
        &[("MESHLENS_PLUGINS__DIRS", dirs.as_str()), ("MESHLENS_METRICS__OPENMETRICS_FILE__PATH", path.as_str())],
        vec![],
    )
    .expect("the demo starts");
    let status = m.get("/status").json();
    assert_eq!(status["warningMessages"], serde_json::json!([]), "{status}");
    let graph = m.get("/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp").json();
    let nodes = graph["elements"]["nodes"].as_array().expect("nodes");
    assert!(nodes.iter().any(|n| n["data"]["app"] == "reviews" && n["data"]["version"] == "v3"), "{graph}");
    let v = m.get("/api/namespaces/bookinfo/mesh_validations").json();
    assert_eq!(v["bookinfo"]["virtualservice"]["ratings"]["valid"], false);
}
