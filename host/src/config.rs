//! Configuration: defaults, then the TOML file, then `MESHLENS_<SECTION>__<KEY>` variables.

use std::{collections::BTreeMap, path::Path};

use figment::{
    Figment,
    providers::{Env, Format, Serialized, Toml},
};
use serde::{Deserialize, Serialize};

pub use meshlens_cluster::{ClusterConfig, SourceKind as ClusterSource};
pub use meshlens_dashboards::DashboardsConfig;
pub use meshlens_health::HealthConfig;
pub use meshlens_params::HumanDuration;

// Each section's type lives with the module that owns it; this module assembles them.
pub use crate::{
    api::external::{ExternalServices, GrafanaConfig, TracingConfig},
    auth::config::{
        AuthConfig, AuthStrategy, MAX_ARGON2_MEMORY_KIB, NamespaceAccess, SigningKeys, parse_cidr,
    },
    limits::LimitsConfig,
    metrics_engine::MetricsConfig,
    plugins::PluginsConfig,
    server::{ServerConfig, ServerMetricsConfig, TlsConfig},
    telemetry::{LogConfig, LogFormat},
};

/// The whole configuration.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub auth: AuthConfig,
    pub plugins: PluginsConfig,
    pub cluster: ClusterConfig,
    pub metrics: MetricsConfig,
    pub external_services: ExternalServices,
    pub dashboards: DashboardsConfig,
    pub log: LogConfig,
    pub limits: LimitsConfig,
    pub health: HealthConfig,
    /// `[appenders.<name>]`: each appender's own table, handed to its `configure`.
    pub appenders: BTreeMap<String, serde_json::Value>,
}

/// Why the configuration cannot be used; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {0}: file not found")]
    Missing(String),
    #[error("invalid configuration: {0}")]
    Figment(String),
    #[error("invalid configuration: `{key}`: {reason}")]
    Invalid { key: String, reason: String },
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<ConfigError>),
}

pub(crate) fn invalid(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.into(), reason: reason.into() }
}

impl Config {
    /// Loads defaults, then `file` (when given), then the environment, and validates.
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        let cfg = Self::load_unchecked(file)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Like [`Config::load`] without the checks beyond types and known keys.
    pub fn load_unchecked(file: Option<&Path>) -> Result<Config, ConfigError> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::Missing(path.display().to_string()));
            }
            fig = fig.merge(Toml::file_exact(path));
        }
        // Only `SECTION__KEY` variables are config; other MESHLENS_* variables are left alone.
        fig =
            fig.merge(Env::prefixed("MESHLENS_").filter(|k| k.as_str().contains("__")).split("__"));
        fig.extract().map_err(|e| ConfigError::Figment(figment_message(e)))
    }

    /// Defaults, then the TOML `text`, validated; the process environment is not read (a
    /// service built inside a test process, next to others with other configurations).
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let cfg: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(text))
            .extract()
            .map_err(|e| ConfigError::Figment(figment_message(e)))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the values serde cannot check; the error lists every problem found.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = self.problems();
        match problems.len() {
            0 => Ok(()),
            1 => Err(problems.remove(0)),
            _ => Err(ConfigError::Several(problems)),
        }
    }

    /// Every value serde cannot check that is wrong, each naming its key (`config check`
    /// reports them all at once rather than one per run), section by section: each section
    /// checks its own values, the checks across sections are here.
    pub fn problems(&self) -> Vec<ConfigError> {
        let mut out = Vec::new();
        let mut fail = |key: &str, reason: &str| out.push(invalid(key, reason));
        self.server.problems(&mut fail);
        // One problem of [auth] at a time (the first found).
        if let Err(ConfigError::Invalid { key, reason }) = self.validate_auth() {
            fail(&key, &reason);
        }
        self.cluster.problems(&mut fail);
        self.metrics.problems(&mut fail);
        self.log.problems(&mut fail);
        self.limits.problems(&mut fail);
        for (name, table) in &self.appenders {
            if !table.is_object() {
                fail(&format!("appenders.{name}"), "expected a table");
            }
        }
        self.health.problems(&mut fail);
        out
    }

    /// The first problem of `[auth]`, then its check across sections: a per-user strategy
    /// needs the cluster's API server.
    fn validate_auth(&self) -> Result<(), ConfigError> {
        let a = &self.auth;
        a.first_problem()?;
        if a.strategy.per_user() && self.cluster.source == ClusterSource::Snapshot {
            return Err(invalid(
                "auth.strategy",
                format!(
                    "strategy \"{}\" needs cluster.source = \"kube\": user tokens and rights are reviewed by the Kubernetes API server, which a snapshot does not have",
                    a.strategy.name()
                ),
            ));
        }
        // Each remote's own API server reviews the caller there (crate::cluster_access).
        if a.strategy.per_user()
            && let Some((i, r)) = self
                .cluster
                .remotes
                .iter()
                .enumerate()
                .find(|(_, r)| r.source == ClusterSource::Snapshot)
        {
            return Err(invalid(
                &format!("cluster.remotes[{i}] ({})", r.name),
                format!(
                    "source \"snapshot\" cannot be read under strategy \"{}\": user tokens and rights are reviewed by each cluster's Kubernetes API server, which a snapshot does not have",
                    a.strategy.name()
                ),
            ));
        }
        Ok(())
    }

    /// The JSON table for a metrics backend (`{}` when absent), plus `timeout_ms` and the
    /// answer caps (`max_series`, `max_bytes`) the backend enforces while reading.
    pub fn backend_table(&self, name: &str) -> serde_json::Value {
        let mut table =
            self.metrics.backends.get(name).cloned().unwrap_or_else(|| serde_json::json!({}));
        if let Some(obj) = table.as_object_mut() {
            obj.insert(
                "timeout_ms".into(),
                serde_json::json!(self.metrics.timeout.0.as_millis() as u64),
            );
            obj.insert("max_series".into(), serde_json::json!(self.limits.max_answer_series));
            obj.insert("max_bytes".into(), serde_json::json!(self.limits.max_answer_bytes));
        }
        table
    }
}

// figment's own text is precise ("invalid type: found string "x", expected u16 for key
// "default.server.port""); strip its provider prefix so the key reads as written.
fn figment_message(e: figment::Error) -> String {
    use figment::error::{Actual, Kind};
    e.into_iter()
        .map(|err| {
            let key = err.path.join(".");
            let mut msg = err.kind.to_string();
            if let Kind::UnknownField(field, _) = &err.kind {
                // figment's path sometimes ends with the field already.
                let full = if key.is_empty() {
                    field.clone()
                } else if err.path.last() == Some(field) {
                    key.clone()
                } else {
                    format!("{key}.{field}")
                };
                msg = format!("unknown key `{full}`");
                return msg;
            }
            // The value itself is never shown: it may be a secret (a password that reads
            // as a number from MESHLENS_AUTH__PASSWORD was echoed in full).
            match &err.kind {
                Kind::InvalidType(actual, expected) | Kind::InvalidValue(actual, expected) => {
                    let what = if matches!(err.kind, Kind::InvalidType(..)) {
                        "invalid type"
                    } else {
                        "invalid value"
                    };
                    msg = format!("{what}: found {}, expected {expected}", value_kind(actual));
                    let scalar = matches!(
                        actual,
                        Actual::Bool(_)
                            | Actual::Unsigned(_)
                            | Actual::Signed(_)
                            | Actual::Float(_)
                    );
                    if scalar && expected.contains("string") {
                        msg.push_str(
                            " (from an environment variable, put text in double quotes: '\"...\"')",
                        );
                    }
                }
                Kind::UnknownVariant(_, expected) => {
                    msg = format!("unknown value, expected one of {}", expected.join(", "));
                }
                _ => {}
            }
            if !key.is_empty() {
                msg = format!("`{key}`: {msg}");
            }
            msg
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What kind of value was found, without the value.
fn value_kind(actual: &figment::error::Actual) -> &'static str {
    use figment::error::Actual;
    match actual {
        Actual::Bool(_) => "a boolean",
        Actual::Unsigned(_) | Actual::Signed(_) => "an integer",
        Actual::Float(_) => "a number",
        Actual::Char(_) | Actual::Str(_) => "a string",
        Actual::Bytes(_) => "bytes",
        Actual::Unit | Actual::Option => "an empty value",
        Actual::Seq => "a list",
        Actual::Map => "a table",
        _ => "another kind of value",
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod documented_defaults;
