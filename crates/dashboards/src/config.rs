//! `[dashboards]` of the configuration.

use serde::{Deserialize, Serialize};

/// Where dashboard templates come from besides the dashboard plugins.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DashboardsConfig {
    /// Folders of dashboard template files (TOML, YAML, JSON).
    pub folders: Vec<String>,
}
