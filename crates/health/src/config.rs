//! `[health]` of the configuration: this crate's rules and the gauge's export settings.

use std::time::Duration;

use meshlens_params::HumanDuration;
use serde::{Deserialize, Serialize};

use crate::{RateRule, Rules};

/// `[health]`: the rules that judge health (`[[health.rate]]`, Kiali's `health_config.rate`)
/// and the background export of `meshlens_health_status`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealthConfig {
    /// Checked in order; the first whose namespace, kind and name match applies, and Kiali's
    /// default rule comes after them all.
    pub rate: Vec<RateRule>,
    /// How often the gauge is refreshed.
    pub export_interval: HumanDuration,
    /// The namespaces the gauge covers; empty: every namespace.
    pub export_namespaces: Vec<String>,
    /// `rate` compiled, once (start-up refuses rules that do not compile).
    #[serde(skip)]
    compiled: std::sync::OnceLock<Rules>,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            rate: Vec::new(),
            export_interval: HumanDuration(Duration::from_secs(60)),
            export_namespaces: Vec::new(),
            compiled: std::sync::OnceLock::new(),
        }
    }
}

impl HealthConfig {
    /// The checks of `[health]` serde cannot make, each reported to `fail` with its key.
    pub fn problems(&self, fail: &mut impl FnMut(&str, &str)) {
        if let Err(problems) = Rules::compile(&self.rate) {
            for p in problems {
                fail(&p.key, &p.reason);
            }
        }
        if self.export_interval.0.is_zero() {
            fail("health.export_interval", "must be above zero");
        }
    }

    /// The compiled rules (the default rule alone if `rate` were invalid, which
    /// the host's config validation refuses before serving).
    pub fn rules(&self) -> &Rules {
        self.compiled.get_or_init(|| Rules::compile(&self.rate).unwrap_or_default())
    }
}
