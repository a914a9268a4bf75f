//! The `[cluster]` section of the configuration.

use std::{path::PathBuf, time::Duration};

use regex::Regex;
use serde::Deserialize;

use crate::ClusterError;

/// Where the cluster model comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A Kubernetes API server, through the `kube` client and watch caches.
    #[default]
    Kube,
    /// Kubernetes manifests on disk.
    Snapshot,
}

/// Settings of the cluster model (`[cluster]`); every field has the documented default.
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct ClusterConfig {
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
    pub sync_timeout: String,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
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
            sync_timeout: "30s".into(),
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
        let sync_timeout = parse_duration(&cfg.sync_timeout).ok_or_else(|| {
            ClusterError::BadConfig(format!(
                "cluster.sync_timeout: not a duration: {:?}",
                cfg.sync_timeout
            ))
        })?;
        Ok(Settings {
            mesh_namespace: cfg.mesh_namespace.clone(),
            app_label: cfg.app_label.clone(),
            version_label: cfg.version_label.clone(),
            sidecar_annotation: cfg.sidecar_annotation.clone(),
            identity_domain: cfg.identity_domain.clone(),
            sync_timeout,
            excluded,
        })
    }

    /// Whether a namespace is hidden by `exclude_namespaces`.
    pub fn is_excluded(&self, namespace: &str) -> bool {
        self.excluded.iter().any(|r| r.is_match(namespace))
    }
}

/// Parses `500ms`, `30s`, `2m`, `1h` (or a bare number of seconds).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("5 fortnights"), None);
    }

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
