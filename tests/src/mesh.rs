//! A generated test mesh for load tests and benchmarks: `namespaces` namespaces `ns-N`, each a
//! chain of `workloads` workloads `wI-v1` (what `metrics_simulation::fixture`'s synthetic mesh
//! writes traffic for), as snapshot manifests, with its traffic in a real Prometheus and a
//! meshlens on both.

use std::{fmt::Write as _, path::Path};

use crate::{
    prometheus::{PromServer, fixture},
    server::{BUNDLED, Meshlens, plugin_dir},
};

/// The snapshot manifests of the mesh: one Namespace, and one Deployment and Service per
/// workload.
pub fn write_manifests(dir: &Path, namespaces: usize, workloads: usize) {
    let mut y = String::new();
    for n in 0..namespaces {
        let _ = write!(y, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{n}\n");
        for w in 0..workloads {
            let _ = write!(
                y,
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w{w}-v1\n  namespace: ns-{n}\n\
                 spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: w{w}, version: v1}}\n  template:\n    \
                 metadata:\n      labels: {{app: w{w}, version: v1}}\n    spec:\n      containers:\n      - name: w\n        image: x\n\
                 status:\n  replicas: 1\n  availableReplicas: 1\n\
                 ---\napiVersion: v1\nkind: Service\nmetadata:\n  name: w{w}\n  namespace: ns-{n}\n\
                 spec:\n  selector: {{app: w{w}}}\n  ports:\n  - name: http\n    port: 9080\n"
            );
        }
    }
    std::fs::write(dir.join("mesh.yaml"), y).expect("write the mesh's manifests");
}

/// The graph benchmarks' manifests: one Namespace and one Deployment per workload, without
/// Services (`synthetic.yaml` in `dir`).
pub fn write_deployments(dir: &Path, namespaces: usize, workloads: usize) {
    write_named_deployments(dir, "ns", namespaces, workloads);
}

/// [`write_deployments`] with namespaces `<prefix>-N` instead of `ns-N`.
pub fn write_named_deployments(dir: &Path, prefix: &str, namespaces: usize, workloads: usize) {
    let mut y = String::new();
    for n in 0..namespaces {
        let _ =
            write!(y, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {prefix}-{n}\n");
        for w in 0..workloads {
            let _ = write!(
                y,
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w{w}-v1\n  namespace: {prefix}-{n}\n\
                 spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: w{w}, version: v1}}\n  template:\n    \
                 metadata:\n      labels: {{app: w{w}, version: v1}}\n    spec:\n      containers:\n      - name: w\n        image: x\n\
                 status:\n  replicas: 1\n  availableReplicas: 1\n"
            );
        }
    }
    std::fs::write(dir.join("synthetic.yaml"), y).expect("write manifests");
}

/// Every namespace of the mesh, comma-separated (the all-namespace graph's parameter).
pub fn all_namespaces(namespaces: usize) -> String {
    (0..namespaces).map(|i| format!("ns-{i}")).collect::<Vec<_>>().join(",")
}

/// The mesh, its traffic in a real Prometheus (20 minutes ending now, so requests without
/// `queryTime` see it), and the manifests' folder.
pub struct TestMesh {
    pub prom: PromServer,
    pub namespaces: usize,
    manifests: tempfile::TempDir,
}

impl TestMesh {
    pub fn new(namespaces: usize, workloads: usize) -> TestMesh {
        let (n, w) = (namespaces.to_string(), workloads.to_string());
        let f = fixture(&[
            "--topology",
            "synthetic",
            "--namespaces",
            &n,
            "--workloads",
            &w,
            "--minutes",
            "20",
        ]);
        let prom = PromServer::start(&f);
        let manifests = tempfile::tempdir().expect("manifests folder");
        write_manifests(manifests.path(), namespaces, workloads);
        TestMesh { prom, namespaces, manifests }
    }

    /// A meshlens with every bundled plugin on this mesh; `extra` is appended to its config.
    pub fn meshlens(&self, extra: &str) -> Meshlens {
        self.meshlens_with_env(extra, &[])
    }

    /// [`TestMesh::meshlens`] with extra environment variables.
    pub fn meshlens_with_env(&self, extra: &str, env: &[(&str, &str)]) -> Meshlens {
        let dir = plugin_dir(BUNDLED);
        let cfg = format!(
            "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
             [cluster]\nsource = \"snapshot\"\nsnapshot = [{:?}]\n\
             [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = {:?}\n{extra}",
            dir.path(),
            self.manifests.path(),
            self.prom.url()
        );
        Meshlens::start(&cfg, env, vec![dir]).unwrap_or_else(|e| panic!("meshlens: {e:?}"))
    }

    /// The all-namespace graph (workload graph, the bundled appenders, now).
    pub fn graph_path(&self) -> String {
        format!(
            "/api/namespaces/graph?namespaces={}&graphType=workload&duration=10m",
            all_namespaces(self.namespaces)
        )
    }
}
