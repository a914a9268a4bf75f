//! Dashboard template provider plugin `folder`: template files an operator placed in the
//! folders of `dashboards.folders`.
//!
//! Every `*.toml`, `*.yaml`, `*.yml` and `*.json` file directly inside a folder is read (in
//! file-name order, folders in configured order) on each [`TemplateSource::templates`] call,
//! so edits show without a restart. Problems are reported, never fatal at request time:
//! - `configure` fails when a folder cannot be read (a typo in the config is a start-up error);
//! - a file that cannot be read or parsed is skipped, and a *warning* naming its path and the
//!   reason travels in the template list as a template with an empty name (see
//!   `dashboards_spec::warning`), which the host logs and drops. Plugins cannot log.
//! - two files defining one name: the first wins and a warning names both.
#![forbid(unsafe_code)]

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use dashboards_spec::{Format, templates_from_text, warning};
use plugin_api::{ClusterData, DashboardTemplate, PluginError, ProviderTier, TemplateSource};

/// The provider; its folders come from `configure`.
#[derive(Default)]
pub struct Folders {
    dirs: Vec<PathBuf>,
}

impl Folders {
    /// A provider reading `dirs` (what `configure` sets).
    pub fn new(dirs: Vec<PathBuf>) -> Self {
        Folders { dirs }
    }
}

/// Template files of `dir`, sorted by name.
fn template_files(dir: &Path) -> std::io::Result<Vec<(PathBuf, Format)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(format) =
            path.extension().and_then(|e| e.to_str()).and_then(Format::from_extension)
        else {
            continue;
        };
        if path.is_file() {
            files.push((path, format));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

/// Reads every folder: templates first-wins by name, plus warnings.
pub fn read_folders(dirs: &[PathBuf]) -> Vec<DashboardTemplate> {
    let mut out: Vec<DashboardTemplate> = Vec::new();
    let mut warnings = Vec::new();
    let mut origin: HashMap<String, PathBuf> = HashMap::new();
    for dir in dirs {
        let files = match template_files(dir) {
            Ok(f) => f,
            Err(e) => {
                warnings.push(warning(format!("dashboard folder {}: {e}", dir.display())));
                continue;
            }
        };
        for (path, format) in files {
            let parsed = std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| templates_from_text(&text, format).map_err(|e| e.to_string()));
            match parsed {
                Err(e) => warnings.push(warning(format!(
                    "dashboard template file {} skipped: {e}",
                    path.display()
                ))),
                Ok(ts) => {
                    for t in ts {
                        if let Some(first) = origin.get(t.name.as_str()) {
                            warnings.push(warning(format!(
                                "dashboard template `{}` in {} ignored: already defined in {}",
                                t.name,
                                path.display(),
                                first.display()
                            )));
                            continue;
                        }
                        origin.insert(t.name.to_string(), path.clone());
                        out.push(t);
                    }
                }
            }
        }
    }
    out.extend(warnings);
    out
}

impl TemplateSource for Folders {
    fn name(&self) -> &str {
        "folder"
    }
    fn tier(&self) -> ProviderTier {
        ProviderTier::Folder
    }
    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        let dirs = match config.get("folders") {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(PathBuf::from).ok_or_else(|| {
                        PluginError::invalid(format!(
                            "dashboards.folders: {v} is not a path string"
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(PluginError::invalid(format!(
                    "dashboards.folders: {other} is not a list"
                )));
            }
        };
        for d in &dirs {
            std::fs::read_dir(d).map_err(|e| {
                PluginError::invalid(format!(
                    "dashboards.folders: cannot read {}: {e}",
                    d.display()
                ))
            })?;
        }
        self.dirs = dirs;
        Ok(())
    }
    fn templates(&self, _data: &ClusterData) -> Result<Vec<DashboardTemplate>, PluginError> {
        Ok(read_folders(&self.dirs))
    }
}

plugin_api::register_dashboard_provider!(Folders::default());
plugin_api::export_plugin!(name: "dashboards-folder", version: env!("CARGO_PKG_VERSION"));

#[cfg(test)]
mod tests;
