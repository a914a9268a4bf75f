//! The `[cluster]` section of the configuration.

use std::{path::PathBuf, time::Duration};

use meshlens_params::HumanDuration;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::ClusterError;

/// Where the cluster model comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A Kubernetes API server, through the `kube` client and watch caches.
    #[default]
    Kube,
    /// Kubernetes manifests on disk.
    Snapshot,
}

/// Settings of the cluster model (`[cluster]` of the configuration); every field has the
/// documented default, and an unknown key is an error.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// The home cluster's name, as its telemetry's `source_cluster` / `destination_cluster`
    /// spell it (Istio's `CLUSTER_ID`, default `Kubernetes`).
    pub name: String,
    /// `kube` or `snapshot`.
    pub source: SourceKind,
    /// A kubeconfig file; the standard one (or the in-cluster account) when absent.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; its current context when absent.
    pub context: Option<String>,
    /// In a pod (`KUBERNETES_SERVICE_HOST` set, no kubeconfig or context): the folder with
    /// the service account's `token`, `ca.crt` and `namespace`.
    pub service_account_dir: PathBuf,
    /// Manifest files or folders (snapshot source).
    pub snapshot: Vec<PathBuf>,
    /// The mesh's own namespace.
    pub mesh_namespace: String,
    /// The label that names an app.
    pub app_label: String,
    /// The label that names a version.
    pub version_label: String,
    /// The pod annotation that marks an injected sidecar.
    pub sidecar_annotation: String,
    /// Regexes (whole-name match) of namespaces that are invisible everywhere.
    pub exclude_namespaces: Vec<String>,
    /// The cluster's DNS domain for services.
    pub identity_domain: String,
    /// How long a request waits for the first sync, e.g. `30s`.
    pub sync_timeout: HumanDuration,
}

impl ClusterConfig {
    /// The checks of `[cluster]` serde cannot make, each reported to `fail` with its key.
    pub fn problems(&self, fail: &mut impl FnMut(&str, &str)) {
        if self.exclude_namespaces.iter().any(|re| Regex::new(re).is_err()) {
            fail("cluster.exclude_namespaces", "contains an invalid regular expression");
        }
        if self.source == SourceKind::Snapshot && self.snapshot.is_empty() {
            fail("cluster.snapshot", "source \"snapshot\" needs at least one file or folder");
        }
        for (key, label) in
            [("cluster.app_label", &self.app_label), ("cluster.version_label", &self.version_label)]
        {
            if label.is_empty() {
                fail(key, "must not be empty");
            }
        }
    }
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            name: "Kubernetes".into(),
            source: SourceKind::Kube,
            kubeconfig: None,
            context: None,
            service_account_dir: "/var/run/secrets/kubernetes.io/serviceaccount".into(),
            snapshot: Vec::new(),
            mesh_namespace: "istio-system".into(),
            app_label: "app".into(),
            version_label: "version".into(),
            sidecar_annotation: "sidecar.istio.io/status".into(),
            exclude_namespaces: vec!["kube-.*".into()],
            identity_domain: "svc.cluster.local".into(),
            sync_timeout: HumanDuration(Duration::from_secs(30)),
        }
    }
}

/// The checked form of [`ClusterConfig`] the model works with.
#[derive(Clone, Debug)]
pub struct Settings {
    /// See [`ClusterConfig::mesh_namespace`].
    pub mesh_namespace: String,
    /// See [`ClusterConfig::app_label`].
    pub app_label: String,
    /// See [`ClusterConfig::version_label`].
    pub version_label: String,
    /// See [`ClusterConfig::sidecar_annotation`].
    pub sidecar_annotation: String,
    /// See [`ClusterConfig::identity_domain`].
    pub identity_domain: String,
    /// The parsed `sync_timeout`.
    pub sync_timeout: Duration,
    excluded: Vec<Regex>,
}

impl Settings {
    /// Checks the regexes and the duration of a config.
    pub fn from_config(cfg: &ClusterConfig) -> Result<Settings, ClusterError> {
        let excluded = cfg
            .exclude_namespaces
            .iter()
            .map(|r| {
                Regex::new(&format!("^(?:{r})$")).map_err(|e| {
                    ClusterError::BadConfig(format!(
                        "cluster.exclude_namespaces: bad regex {r:?}: {e}"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Settings {
            mesh_namespace: cfg.mesh_namespace.clone(),
            app_label: cfg.app_label.clone(),
            version_label: cfg.version_label.clone(),
            sidecar_annotation: cfg.sidecar_annotation.clone(),
            identity_domain: cfg.identity_domain.clone(),
            sync_timeout: cfg.sync_timeout.0,
            excluded,
        })
    }

    /// Whether a namespace is hidden by `exclude_namespaces`.
    pub fn is_excluded(&self, namespace: &str) -> bool {
        self.excluded.iter().any(|r| r.is_match(namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusion_matches_whole_names() {
        let s = Settings::from_config(&ClusterConfig::default()).unwrap();
        assert!(s.is_excluded("kube-system"));
        assert!(!s.is_excluded("my-kube-system"));
        assert!(!s.is_excluded("bookinfo"));
    }

    #[test]
    fn bad_regex_is_bad_config() {
        let cfg = ClusterConfig { exclude_namespaces: vec!["(".into()], ..Default::default() };
        assert!(matches!(Settings::from_config(&cfg), Err(ClusterError::BadConfig(_))));
    }
}
