//! The README's demo path: the install script copies exactly the bundled plugins, and the
//! service starts on config/demo.toml with them and answers from the demo mesh, its traffic
//! simulated live from config/demo/topology.toml (which names the manifests' workloads).

use integration_tests::server::{BUNDLED, Meshlens, ensure_built, profile_dir, workspace_root};
use metrics_simulation::Topology;

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
        .map(|p| {
            format!(
                "{}{}{}",
                std::env::consts::DLL_PREFIX,
                p.replace('-', "_"),
                std::env::consts::DLL_SUFFIX
            )
        })
        .collect();
    want.sort();
    assert_eq!(installed, want);

    let config =
        std::fs::read_to_string(workspace_root().join("config/demo.toml")).expect("demo.toml");
    let config = config.replace("port = 20001", "port = 0");
    let dirs = format!("[\"{}\"]", dir.display());
    let m = Meshlens::start(&config, &[("MESHLENS_PLUGINS__DIRS", dirs.as_str())], vec![])
        .expect("the demo starts");
    let status = m.get("/status").json();
    assert_eq!(status["warningMessages"], serde_json::json!([]), "{status}");
    // Traffic from the first request: the simulator starts with an hour of history.
    let graph = m.get("/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp").json();
    let nodes = graph["elements"]["nodes"].as_array().expect("nodes");
    assert!(
        nodes.iter().any(|n| n["data"]["app"] == "reviews" && n["data"]["version"] == "v3"),
        "{graph}"
    );
    assert!(graph["elements"]["edges"].as_array().is_some_and(|e| e.len() >= 8), "{graph}");
    let health = m.get("/api/namespaces/bookinfo/health").json();
    assert!(
        health["productpage"]["requests"]["errorRatio"].as_f64().is_some_and(|r| r >= 0.0),
        "{health}"
    );

    // The topology and the manifests describe one mesh: every simulated workload exists in
    // its cluster (`cluster` in the topology: the home one, Kubernetes, or the remote west)
    // with its app and version, and nothing the manifests deploy is left out. (reviews-v3 is
    // deployed in both clusters, as Kiali's multi-cluster bookinfo does; its traffic is west's.)
    let topology =
        Topology::load(&workspace_root().join("config/demo/topology.toml")).expect("topology");
    assert!(
        topology.workload.iter().any(|w| w.cluster == "west"),
        "the demo has a workload in its second cluster"
    );
    for ns in ["bookinfo", "istio-system", "travel"] {
        let mut deployed_anywhere = std::collections::BTreeSet::new();
        for cluster in ["Kubernetes", "west"] {
            if cluster == "west" && ns != "bookinfo" {
                continue; // west has only bookinfo (config/demo-west)
            }
            let query = if cluster == "west" { "?clusterName=west" } else { "" };
            let list = m.get(&format!("/api/namespaces/{ns}/workloads{query}")).json();
            let deployed: Vec<String> = list["workloads"]
                .as_array()
                .unwrap_or_else(|| panic!("{cluster} {ns}: {list}"))
                .iter()
                .filter_map(|w| w["name"].as_str().map(String::from))
                .collect();
            for w in topology.workload.iter().filter(|w| w.namespace == ns && w.cluster == cluster)
            {
                assert!(
                    deployed.contains(&w.name),
                    "{cluster} {ns}: {} not in {deployed:?}",
                    w.name
                );
                let d = m.get(&format!("/api/namespaces/{ns}/workloads/{}{query}", w.name)).json();
                // A waypoint has no app label (its series name it by canonical service).
                if !w.waypoint {
                    assert_eq!(d["labels"]["app"].as_str(), Some(w.app.as_str()), "{d}");
                }
                assert_eq!(d["labels"]["version"].as_str(), w.version.as_deref(), "{d}");
                assert_eq!(d["isAmbient"].as_bool(), Some(w.ambient || w.waypoint), "{d}");
                assert_eq!(d["isWaypoint"].as_bool(), Some(w.waypoint), "{d}");
            }
            deployed_anywhere.extend(deployed);
        }
        let simulated: std::collections::BTreeSet<String> = topology
            .workload
            .iter()
            .filter(|w| w.namespace == ns)
            .map(|w| w.name.clone())
            .collect();
        assert_eq!(simulated, deployed_anywhere, "{ns}");
    }

    // The ambient namespace: the waypoint's requests and ztunnel's TCP, nobody flagged as
    // missing a sidecar; the waypoint shows only when asked for.
    let travel = |q: &str| m.get(&format!("/api/namespaces/graph?namespaces=travel{q}")).json();
    let names = |g: &serde_json::Value| -> Vec<String> {
        let mut v: Vec<String> = g["elements"]["nodes"]
            .as_array()
            .unwrap_or_else(|| panic!("{g}"))
            .iter()
            .map(|n| n["data"]["workload"].as_str().unwrap_or("").to_string())
            .collect();
        v.sort();
        v
    };
    let g = travel("");
    assert_eq!(names(&g), ["cache-v1", "flights-v1", "portal-v1", "shopper-v1"], "{g}");
    for n in g["elements"]["nodes"].as_array().unwrap() {
        assert_eq!(n["data"]["isAmbient"], true, "{n}");
        assert!(n["data"].get("hasMissingSC").is_none(), "{n}");
    }
    let g = travel("&waypoints=true");
    assert_eq!(names(&g), ["cache-v1", "flights-v1", "portal-v1", "shopper-v1", "waypoint"], "{g}");
    let namespaces = m.get("/api/namespaces").json();
    let travel_ns = namespaces.as_array().unwrap().iter().find(|n| n["name"] == "travel");
    assert_eq!(travel_ns.map(|n| n["isAmbient"].clone()), Some(serde_json::json!(true)));
    let v = m.get("/api/namespaces/bookinfo/mesh_validations").json();
    assert_eq!(v["bookinfo"]["virtualservice"]["ratings"]["valid"], false);
}
