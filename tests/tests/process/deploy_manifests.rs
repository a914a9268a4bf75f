//! `deploy/`: every manifest parses into its k8s-openapi type (and says nothing that type
//! does not know), and the manifests, the container file and the config agree with each
//! other and with the binary.

use std::{collections::BTreeMap, path::PathBuf};

use integration_tests::server::{BUNDLED, DEMO_BACKENDS, image_plugins, workspace_root};
use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Container, Service, ServiceAccount},
        rbac::v1::{ClusterRole, ClusterRoleBinding},
    },
    apimachinery::pkg::util::intstr::IntOrString,
};
use meshlens_traffic::BUNDLED_APPENDERS;
use serde_json::{Value, json};

fn kube_dir() -> PathBuf {
    workspace_root().join("deploy/kubernetes")
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn kustomization() -> Value {
    serde_saphyr::from_str(&read(&kube_dir().join("kustomization.yaml")))
        .expect("kustomization.yaml parses")
}

/// Every document of the kustomization: its resources, then the generated ConfigMaps.
fn documents() -> Vec<(String, Value)> {
    let k = kustomization();
    let mut out = Vec::new();
    for r in k["resources"].as_array().expect("resources") {
        let file = r.as_str().expect("resource file");
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&read(&kube_dir().join(file))).expect("YAML");
        out.extend(docs.into_iter().filter(|d| !d.is_null()).map(|d| (file.to_string(), d)));
    }
    for g in k["configMapGenerator"].as_array().expect("configMapGenerator") {
        let mut data = serde_json::Map::new();
        for f in g["files"].as_array().expect("files") {
            let f = f.as_str().expect("file name");
            data.insert(f.to_string(), json!(read(&kube_dir().join(f))));
        }
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": g["name"]}, "data": data});
        out.push(("configMapGenerator".into(), cm));
    }
    out
}

/// Parses into `T` and checks that serializing gives the document back: a misspelt or
/// misplaced field would be dropped by the parse and show up here.
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(file: &str, doc: &Value) -> T {
    let t: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
    let back = serde_json::to_value(&t).expect("serialize");
    assert_eq!(&back, doc, "{file}: the document has fields its type does not know");
    t
}

struct Manifests {
    account: ServiceAccount,
    role: ClusterRole,
    binding: ClusterRoleBinding,
    config: ConfigMap,
    deployment: Deployment,
    service: Service,
}

fn manifests() -> Manifests {
    let (mut account, mut role, mut binding, mut config, mut deployment, mut service) =
        (None, None, None, None, None, None);
    for (file, doc) in documents() {
        let kind = doc["kind"].as_str().unwrap_or_default();
        match kind {
            "ServiceAccount" => account = Some(typed(&file, &doc)),
            "ClusterRole" => role = Some(typed(&file, &doc)),
            "ClusterRoleBinding" => binding = Some(typed(&file, &doc)),
            "ConfigMap" => config = Some(typed(&file, &doc)),
            "Deployment" => deployment = Some(typed(&file, &doc)),
            "Service" => service = Some(typed(&file, &doc)),
            // A committed Secret would carry a key value: the README's steps create it.
            other => panic!("{file}: unexpected kind {other:?}"),
        }
    }
    Manifests {
        account: account.expect("a ServiceAccount"),
        role: role.expect("a ClusterRole"),
        binding: binding.expect("a ClusterRoleBinding"),
        config: config.expect("a ConfigMap"),
        deployment: deployment.expect("a Deployment"),
        service: service.expect("a Service"),
    }
}

#[test]
fn every_manifest_parses_into_its_type_and_every_file_is_listed() {
    let m = manifests();
    assert!(m.role.rules.as_ref().is_some_and(|r| !r.is_empty()));
    let listed: Vec<String> = kustomization()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    let mut on_disk: Vec<String> = std::fs::read_dir(kube_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    on_disk.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, on_disk, "every manifest file is in kustomization.yaml");
    assert_eq!(m.config.data.as_ref().map(BTreeMap::len), Some(1));
}

fn container(d: &Deployment) -> &Container {
    let spec = d.spec.as_ref().and_then(|s| s.template.spec.as_ref()).expect("pod spec");
    assert_eq!(spec.containers.len(), 1);
    &spec.containers[0]
}

fn toml_config(m: &Manifests) -> toml::Table {
    let text = m
        .config
        .data
        .as_ref()
        .and_then(|d| d.get("meshlens.toml"))
        .expect("meshlens.toml in the ConfigMap");
    text.parse().expect("meshlens.toml is TOML")
}

/// `FROM ... COPY ... USER ...` lines of the container file, continuation lines joined.
/// The crate of a bundled appender: `serviceEntry` is `appender-service-entry`.
fn appender_crate(name: &str) -> String {
    let mut out = String::from("appender-");
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The bundled appenders are one list, the host's `BUNDLED_APPENDERS` (which the console
/// reads through getConfig): the tests' `BUNDLED` packages (and so the Containerfile's, checked
/// against them above) and the appender plugin crates under `plugins/` are the same set.
#[test]
fn the_bundled_appenders_are_one_list() {
    let mut crates: Vec<String> = BUNDLED_APPENDERS.iter().map(|a| appender_crate(a)).collect();
    crates.sort_unstable();
    let mut listed: Vec<String> =
        BUNDLED.iter().filter(|p| p.starts_with("appender-")).map(|p| p.to_string()).collect();
    listed.sort_unstable();
    assert_eq!(listed, crates, "tests/src/server.rs BUNDLED against BUNDLED_APPENDERS");
    let plugins = workspace_root().join("plugins");
    let mut dirs: Vec<String> = std::fs::read_dir(&plugins)
        .expect("plugins/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("appender-"))
        // A plugin is a cdylib; a library shared by the appenders is not one of them.
        .filter(|n| read(&plugins.join(n).join("Cargo.toml")).contains("cdylib"))
        .collect();
    dirs.sort_unstable();
    assert_eq!(dirs, crates, "plugins/appender-* against BUNDLED_APPENDERS");
}

fn containerfile() -> Vec<String> {
    let text = read(&workspace_root().join("deploy/Containerfile"));
    let mut lines = Vec::new();
    let mut cur = String::new();
    for l in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        cur.push_str(l.trim_end().trim_end_matches('\\'));
        cur.push(' ');
        if !l.trim_end().ends_with('\\') {
            if !cur.trim().is_empty() {
                lines.push(cur.trim().to_string());
            }
            cur.clear();
        }
    }
    lines
}

#[test]
fn ports_probes_paths_and_names_agree() {
    let m = manifests();
    let cfg = toml_config(&m);
    let port = cfg["server"]["port"].as_integer().expect("server.port");
    let c = container(&m.deployment);
    let cport = c.ports.as_ref().and_then(|p| p.first()).expect("container port");
    assert_eq!(i64::from(cport.container_port), port);
    let named = |p: &IntOrString| match p {
        IntOrString::String(n) => {
            assert_eq!(Some(n), cport.name.as_ref(), "ports refer to the container port by name")
        }
        IntOrString::Int(i) => assert_eq!(i64::from(*i), port),
    };
    // The probes and the scrape go to the probe port (`[server.metrics] port`), served on
    // its own thread so that a flooded API port cannot fail them.
    let probe_port = cfg["server"]["metrics"]["port"].as_integer().expect("server.metrics.port");
    let pport = c
        .ports
        .as_ref()
        .and_then(|p| p.iter().find(|p| i64::from(p.container_port) == probe_port))
        .expect("a container port for server.metrics.port");
    let live =
        c.liveness_probe.as_ref().and_then(|p| p.http_get.as_ref()).expect("liveness httpGet");
    let ready =
        c.readiness_probe.as_ref().and_then(|p| p.http_get.as_ref()).expect("readiness httpGet");
    assert_eq!(live.path.as_deref(), Some("/healthz"));
    assert_eq!(ready.path.as_deref(), Some("/ready"));
    for probe in [&live.port, &ready.port] {
        assert_eq!(probe, &IntOrString::String(pport.name.clone().expect("named probe port")));
    }
    let svc_port =
        &m.service.spec.as_ref().and_then(|s| s.ports.as_ref()).expect("service ports")[0];
    named(svc_port.target_port.as_ref().expect("targetPort"));

    // Scrape annotations point at the probe port's /metrics (it has no web root).
    let tmpl = m.deployment.spec.as_ref().map(|s| &s.template).expect("template");
    let ann = tmpl.metadata.as_ref().and_then(|m| m.annotations.clone()).unwrap_or_default();
    assert_eq!(ann.get("prometheus.io/scrape").map(String::as_str), Some("true"));
    assert_eq!(ann.get("prometheus.io/port"), Some(&probe_port.to_string()));
    assert_eq!(ann.get("prometheus.io/path").map(String::as_str), Some("/metrics"));

    // Selectors pick the template's labels.
    let labels = tmpl.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    let dsel = m
        .deployment
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    let ssel = m.service.spec.as_ref().and_then(|s| s.selector.clone()).unwrap_or_default();
    for sel in [&dsel, &ssel] {
        assert!(
            !sel.is_empty() && sel.iter().all(|(k, v)| labels.get(k) == Some(v)),
            "{sel:?} vs {labels:?}"
        );
    }

    // Service account, role and binding name each other.
    let pod = tmpl.spec.as_ref().expect("pod spec");
    let sa = m.account.metadata.name.clone();
    assert_eq!(pod.service_account_name, sa);
    assert_eq!(m.binding.role_ref.name, m.role.metadata.name.clone().unwrap_or_default());
    assert_eq!(m.binding.role_ref.kind, "ClusterRole");
    let subject = &m.binding.subjects.as_ref().expect("subjects")[0];
    assert_eq!((subject.kind.as_str(), Some(&subject.name)), ("ServiceAccount", sa.as_ref()));
    assert_eq!(subject.namespace, m.account.metadata.namespace);

    // The config file is mounted where the container file and the args put it.
    let mount = c
        .volume_mounts
        .as_ref()
        .and_then(|v| v.iter().find(|v| v.name == "config"))
        .expect("config mount");
    let path = format!("{}/meshlens.toml", mount.mount_path);
    assert_eq!(
        c.args.as_deref(),
        Some(&["serve".to_string(), "--config".into(), path.clone()][..])
    );
    let vol = pod
        .volumes
        .as_ref()
        .and_then(|v| v.iter().find(|v| v.name == "config"))
        .expect("config volume");
    assert_eq!(
        vol.config_map.as_ref().map(|c| c.name.clone()),
        Some(m.config.metadata.name.clone().unwrap_or_default())
    );
    let lines = containerfile();
    assert!(
        lines.iter().any(|l| l == &format!("COPY deploy/kubernetes/meshlens.toml {path}")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains(&format!("\"--config\", \"{path}\""))), "{lines:?}");

    // Plugins: the folder the config scans is the one the image fills, with every bundled plugin.
    let dirs = cfg["plugins"]["dirs"].as_array().expect("plugins.dirs");
    let plugin_dir = dirs[0].as_str().expect("a folder");
    assert!(
        lines
            .iter()
            .any(|l| l == &format!("COPY --from=build /src/target/release/plugins/ {plugin_dir}/")),
        "{lines:?}"
    );
    // It builds and installs exactly the image's plugins: the bundled ones but the demo's backends.
    let listed = lines
        .iter()
        .find_map(|l| l.strip_prefix("ARG PLUGINS="))
        .expect("ARG PLUGINS")
        .trim_matches('"');
    let mut listed: Vec<&str> = listed.split_whitespace().collect();
    listed.sort_unstable();
    let mut expected = image_plugins();
    expected.sort_unstable();
    assert_eq!(listed, expected);
    assert!(DEMO_BACKENDS.iter().all(|d| !listed.contains(d) && BUNDLED.contains(d)));
    let build = lines.iter().find(|l| l.starts_with("RUN cargo build")).expect("cargo build line");
    assert!(build.contains("-p meshlens $(printf -- '-p %s ' $PLUGINS)"), "{build}");
    assert!(build.contains("scripts/install-plugins.sh release $PLUGINS"), "{build}");

    // Non-root everywhere: the image's user is the pod's.
    let user = lines.iter().find_map(|l| l.strip_prefix("USER ")).expect("USER");
    let psc = pod.security_context.as_ref().expect("pod securityContext");
    assert_eq!(psc.run_as_non_root, Some(true));
    assert_eq!(psc.run_as_user.map(|u| u.to_string()).as_deref(), user.split(':').next());
    let csc = c.security_context.as_ref().expect("container securityContext");
    assert_eq!(csc.read_only_root_filesystem, Some(true));
    assert_eq!(csc.allow_privilege_escalation, Some(false));
    assert_eq!(
        csc.capabilities.as_ref().and_then(|c| c.drop.clone()),
        Some(vec!["ALL".to_string()])
    );
    assert!(lines.iter().any(|l| l == &format!("EXPOSE {port}")));
    let probe_port = cfg["server"]["metrics"]["port"].as_integer().expect("probe port");
    assert!(lines.iter().any(|l| l == &format!("EXPOSE {probe_port}")));
    assert!(
        lines.iter().any(|l| l.starts_with("FROM debian:") && l.ends_with("-slim")),
        "Debian slim runtime"
    );

    // The drain (5 s grace + 20 s) ends before the kubelet's SIGKILL.
    assert!(pod.termination_grace_period_seconds.is_some_and(|s| s >= 25));
    assert_eq!(m.deployment.spec.as_ref().and_then(|s| s.replicas), Some(2));
    let res = c.resources.as_ref().expect("resources");
    for what in [&res.requests, &res.limits] {
        assert!(
            what.as_ref().is_some_and(|r| r.contains_key("memory")),
            "memory request and limit"
        );
    }

    // Secrets only come from the Secret, by the config keys' variable names.
    let env = c.env.as_ref().expect("env");
    let from_secret: Vec<&str> = env
        .iter()
        .filter(|e| e.value_from.as_ref().and_then(|v| v.secret_key_ref.as_ref()).is_some())
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(from_secret, ["MESHLENS_AUTH__SIGNING_KEY", "MESHLENS_AUTH__PASSWORD"]);
    // Literal values are only the allocator settings the image sets too (no config key, so
    // nothing secret, can hide there), and they agree with the Containerfile's ENV.
    let literal: Vec<(String, String)> =
        env.iter().filter_map(|e| e.value.as_ref().map(|v| (e.name.clone(), v.clone()))).collect();
    assert!(
        literal.iter().all(|(n, _)| !n.starts_with("MESHLENS_")),
        "config keys come from the ConfigMap or the Secret, not literal env: {literal:?}"
    );
    let containerfile = read(&kube_dir().join("../Containerfile"));
    let image_env: Vec<(String, String)> = containerfile
        .lines()
        .filter_map(|l| l.strip_prefix("ENV "))
        .flat_map(|l| l.split_whitespace())
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    for pair in &literal {
        assert!(image_env.contains(pair), "{pair:?} is not what the image sets: {image_env:?}");
    }
    // The benchmarks that measure a replica's memory run it with these same settings.
    let benched: Vec<(String, String)> = integration_tests::server::DEPLOYED_ALLOCATOR_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut deployed = literal.clone();
    deployed.sort();
    assert_eq!(deployed, benched, "the benchmarks' allocator settings are the Deployment's");
}

#[test]
fn the_token_auth_component_adds_its_role_and_patches_the_base_deployment() {
    let dir = kube_dir().join("components/token-auth");
    let k: Value = serde_saphyr::from_str(&read(&dir.join("kustomization.yaml"))).expect("YAML");
    assert_eq!(k["kind"], "Component");
    let m = manifests();
    let (mut role, mut binding) = (None, None);
    for r in k["resources"].as_array().expect("resources") {
        let file = r.as_str().expect("resource file");
        let doc: Value = serde_saphyr::from_str(&read(&dir.join(file))).expect("YAML");
        match doc["kind"].as_str() {
            Some("ClusterRole") => role = Some(typed::<ClusterRole>(file, &doc)),
            Some("ClusterRoleBinding") => binding = Some(typed::<ClusterRoleBinding>(file, &doc)),
            other => panic!("{file}: unexpected kind {other:?}"),
        }
    }
    let (role, binding) = (role.expect("a ClusterRole"), binding.expect("a ClusterRoleBinding"));
    // Its own names, so it adds to the base role instead of replacing it.
    assert_ne!(role.metadata.name, m.role.metadata.name);
    assert_ne!(binding.metadata.name, m.binding.metadata.name);
    assert_eq!(Some(binding.role_ref.name.clone()), role.metadata.name);
    assert_eq!(binding.subjects, m.binding.subjects, "bound to the base service account");
    for rule in role.rules.as_ref().expect("rules") {
        assert_eq!(rule.verbs, ["create"], "reviews are only ever created");
    }

    // The patch names the base Deployment and its container (a strategic merge would add a
    // second container otherwise) and only adds variables.
    let patches = k["patches"].as_array().expect("patches");
    assert_eq!(patches.len(), 1);
    let file = patches[0]["path"].as_str().expect("patch path");
    let patch: Value = serde_saphyr::from_str(&read(&dir.join(file))).expect("YAML");
    assert_eq!(patch["kind"], "Deployment");
    assert_eq!(patch["metadata"]["name"].as_str(), m.deployment.metadata.name.as_deref());
    let containers = patch.pointer("/spec/template/spec/containers").expect("containers");
    assert_eq!(containers.as_array().map(Vec::len), Some(1));
    assert_eq!(containers[0]["name"].as_str(), Some(container(&m.deployment).name.as_str()));
    let keys: Vec<&String> = containers[0].as_object().expect("container").keys().collect();
    assert_eq!(keys, ["env", "name"]);
}

/// The image's install step: `install-plugins.sh PROFILE PACKAGE...` copies exactly those
/// plugins, and refuses a name that is not a bundled plugin.
#[test]
fn install_plugins_copies_exactly_the_packages_named() {
    let root = workspace_root();
    let profile = format!("install-plugins-test-{}", std::process::id());
    let dir = root.join("target").join(&profile);
    std::fs::create_dir_all(&dir).expect("profile folder");
    // Stand-ins for every bundled library, as a build leaves them.
    for p in BUNDLED {
        std::fs::write(dir.join(format!("lib{}.so", p.replace('-', "_"))), b"").expect("lib");
    }
    let run = |packages: &[&str]| {
        std::process::Command::new("bash")
            .arg(root.join("scripts/install-plugins.sh"))
            .arg(&profile)
            .args(packages)
            .output()
            .expect("run install-plugins.sh")
    };
    let image = image_plugins();
    let out = run(&image);
    let mut installed: Vec<String> = std::fs::read_dir(dir.join("plugins"))
        .expect("plugins folder")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    installed.sort_unstable();
    let mut expected: Vec<String> =
        image.iter().map(|p| format!("lib{}.so", p.replace('-', "_"))).collect();
    expected.sort_unstable();
    let typo = run(&["metrics-prometheus", "appender-no-such"]);
    let all = run(&[]);
    let all_count = std::fs::read_dir(dir.join("plugins")).map(Iterator::count).unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(installed, expected);
    assert!(!typo.status.success(), "an unknown package name is refused");
    assert!(all.status.success() && all_count == BUNDLED.len(), "no names: every bundled plugin");
}

/// The replica's measured peak (release, `cluster` benchmark, image plugins): the README's
/// and deployment.yaml's figure.
const MEASURED_PEAK_MIB: u64 = 65;

/// The memory limit holds the measured peak, the answer cache's bound and every
/// connection's header buffer at the configured caps (the Deployment's config over the
/// defaults). With the former default of 10,000 connections, their buffers alone could take
/// 312 MiB of the 192 MiB limit.
#[test]
fn the_connection_cap_and_the_cache_fit_the_memory_limit() {
    let m = manifests();
    let text = m.config.data.as_ref().and_then(|d| d.get("meshlens.toml")).expect("config");
    let mut file = tempfile::Builder::new().suffix(".toml").tempfile().expect("temp file");
    std::io::Write::write_all(&mut file, text.as_bytes()).expect("write");
    let cfg = meshlens::config::Config::load_unchecked(Some(file.path())).expect("config loads");
    let c = container(&m.deployment);
    let limit = c
        .resources
        .as_ref()
        .and_then(|r| r.limits.as_ref())
        .and_then(|l| l.get("memory"))
        .map(|q| q.0.clone())
        .expect("memory limit");
    let limit_mib: u64 =
        limit.strip_suffix("Mi").and_then(|n| n.parse().ok()).expect("limit in Mi");
    let mib = 1024 * 1024;
    let connections = (cfg.server.max_connections * cfg.server.max_header_bytes) as u64;
    let need = MEASURED_PEAK_MIB * mib + cfg.metrics.cache_max_bytes + connections;
    println!(
        "peak {MEASURED_PEAK_MIB} MiB + cache {} MiB + connections {} MiB = {} MiB of {limit_mib} MiB",
        cfg.metrics.cache_max_bytes / mib,
        connections.div_ceil(mib),
        need.div_ceil(mib)
    );
    assert!(need <= limit_mib * mib, "{} MiB needed, limit {limit}", need.div_ceil(mib));
    assert!(
        cfg.server.max_connections_per_address < cfg.server.max_connections,
        "one address cannot take every connection"
    );
    let readme = read(&workspace_root().join("README.md"));
    assert!(
        readme.contains(&format!("{MEASURED_PEAK_MIB} MiB peak"))
            && readme.contains(&format!("{} MiB of {limit_mib}", need.div_ceil(mib))),
        "the README states the same figures"
    );
}
