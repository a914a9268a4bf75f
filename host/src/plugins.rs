//! Finding, checking and registering plugin libraries.
//!
//! Each library is loaded on its own with `lib_header_from_path` + `init_root_module`
//! (abi_stable's per-type `load_from_*` caches one module per type and would hand back the
//! first plugin for every file). Libraries are never unloaded: restart to update plugins.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use abi_stable::{
    library::{LibraryError, lib_header_from_path},
    std_types::{RResult, RStr, RString},
};
use plugin_api::{
    AppenderBox, DashboardProviderBox, MetricsBackendBox, PluginError, PluginMod_Ref,
};
use serde::{Deserialize, Serialize};

/// `[plugins]`: where plugin libraries are found, and the order of their appenders.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginsConfig {
    /// Folders scanned for plugin libraries, in order.
    pub dirs: Vec<String>,
    /// Order of appenders beyond the bundled nine.
    pub appenders: Vec<String>,
}

/// A library that was loaded.
#[derive(Clone, Debug)]
pub struct Library {
    pub path: PathBuf,
    pub name: String,
    pub version: String,
    pub api_version: String,
}

/// A library (or a component of one) that was refused, and why.
#[derive(Clone, Debug)]
pub struct Refused {
    pub path: PathBuf,
    pub reason: String,
}

/// The three component kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Appender,
    MetricsBackend,
    DashboardProvider,
}

impl Kind {
    /// The name `meshlens plugins` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Appender => "appender",
            Kind::MetricsBackend => "metrics-backend",
            Kind::DashboardProvider => "dashboard-provider",
        }
    }
}

/// A registered component and the library it came from.
pub struct Component<T> {
    pub name: String,
    pub library: Arc<Library>,
    pub object: Arc<T>,
}

/// Every component found in the plugin folders.
#[derive(Default)]
pub struct Registry {
    pub libraries: Vec<Arc<Library>>,
    pub refused: Vec<Refused>,
    pub appenders: Vec<Component<AppenderBox>>,
    pub metrics_backends: Vec<Component<MetricsBackendBox>>,
    pub dashboard_providers: Vec<Component<DashboardProviderBox>>,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("two {kind} components are named `{name}`: {first} and {second}")]
    Duplicate { kind: &'static str, name: String, first: String, second: String },
}

impl Registry {
    /// Scans `dirs` in order; files are taken in name order within a folder.
    pub fn load(dirs: &[PathBuf]) -> Result<Registry, RegistryError> {
        let mut reg = Registry::default();
        for dir in dirs {
            if let Err(reason) = permissions::judge(dir, permissions::What::Folder) {
                reg.refuse(dir, reason);
                continue;
            }
            let entries = match std::fs::read_dir(dir) {
                Ok(e) => e,
                Err(e) => {
                    reg.refuse(dir, format!("cannot read plugin folder: {e}"));
                    continue;
                }
            };
            let mut files: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.extension().and_then(|e| e.to_str()) == Some(std::env::consts::DLL_EXTENSION)
                })
                .collect();
            files.sort();
            for file in files {
                reg.load_file(&file)?;
            }
        }
        Ok(reg)
    }

    fn refuse(&mut self, path: &Path, reason: String) {
        tracing::warn!(file = %path.display(), %reason, "plugin refused");
        self.refused.push(Refused { path: path.to_path_buf(), reason });
    }

    fn load_file(&mut self, path: &Path) -> Result<(), RegistryError> {
        // Before the library is opened: opening it runs its code.
        if let Err(reason) = permissions::judge(path, permissions::What::File) {
            self.refuse(path, reason);
            return Ok(());
        }
        let module =
            match lib_header_from_path(path).and_then(|h| h.init_root_module::<PluginMod_Ref>()) {
                Ok(m) => m,
                Err(e) => {
                    self.refuse(path, summarize(&e));
                    return Ok(());
                }
            };
        let api = module.api_version().to_string();
        if !plugin_api::api_compatible(plugin_api::API_VERSION, &api) {
            self.refuse(
                path,
                format!(
                    "built against plugin-api {api}, this host needs plugin-api {}",
                    plugin_api::API_VERSION
                ),
            );
            return Ok(());
        }
        // Before anything runs inside the library, so its start-up logs reach us too.
        if let Some(set_log_sink) = module.set_log_sink() {
            let max_level = tracing::level_filters::LevelFilter::current()
                .into_level()
                .map(|l| plugin_api::log::level_number(&l))
                .unwrap_or(0);
            set_log_sink(plugin_api::log::LogSink { max_level, log: plugin_log });
        }
        let components = match (module.components())() {
            RResult::ROk(c) => c,
            RResult::RErr(e) => {
                self.refuse(path, format!("could not list its components: {}", e.message));
                return Ok(());
            }
        };
        let lib = Arc::new(Library {
            path: path.to_path_buf(),
            name: module.plugin_name().to_string(),
            version: module.plugin_version().to_string(),
            api_version: api,
        });
        self.libraries.push(lib.clone());
        for a in components.appenders.into_iter() {
            if let Some(name) = self.check_name(Kind::Appender, &lib, a.name())? {
                self.appenders.push(Component { name, library: lib.clone(), object: Arc::new(a) });
            }
        }
        for b in components.metrics_backends.into_iter() {
            if let Some(name) = self.check_name(Kind::MetricsBackend, &lib, b.name())? {
                self.metrics_backends.push(Component {
                    name,
                    library: lib.clone(),
                    object: Arc::new(b),
                });
            }
        }
        for d in components.dashboard_providers.into_iter() {
            if let Some(name) = self.check_name(Kind::DashboardProvider, &lib, d.name())? {
                self.dashboard_providers.push(Component {
                    name,
                    library: lib.clone(),
                    object: Arc::new(d),
                });
            }
        }
        tracing::info!(file = %path.display(), plugin = %lib.name, version = %lib.version, "plugin loaded");
        Ok(())
    }

    /// The component's name when it is usable; a duplicate name stops start-up.
    fn check_name(
        &mut self,
        kind: Kind,
        lib: &Arc<Library>,
        name: RResult<RString, PluginError>,
    ) -> Result<Option<String>, RegistryError> {
        let name = match name {
            RResult::ROk(n) => n.to_string(),
            RResult::RErr(e) => {
                self.refuse(
                    &lib.path,
                    format!("a {} component has no name: {}", kind.as_str(), e.message),
                );
                return Ok(None);
            }
        };
        if let Some((_, first)) = self.names(kind).into_iter().find(|(n, _)| *n == name) {
            return Err(RegistryError::Duplicate {
                kind: kind.as_str(),
                name,
                first: first.display().to_string(),
                second: lib.path.display().to_string(),
            });
        }
        Ok(Some(name))
    }

    fn names(&self, kind: Kind) -> Vec<(String, PathBuf)> {
        match kind {
            Kind::Appender => {
                self.appenders.iter().map(|c| (c.name.clone(), c.library.path.clone())).collect()
            }
            Kind::MetricsBackend => self
                .metrics_backends
                .iter()
                .map(|c| (c.name.clone(), c.library.path.clone()))
                .collect(),
            Kind::DashboardProvider => self
                .dashboard_providers
                .iter()
                .map(|c| (c.name.clone(), c.library.path.clone()))
                .collect(),
        }
    }
}

/// Who may change a plugin: a library someone else can replace runs its code in this
/// process at the next start. Only the file and the folder that holds it are judged
/// (an ancestor such as /tmp, world-writable with the sticky bit, cannot swap either).
mod permissions {
    use std::path::Path;

    #[derive(Clone, Copy, PartialEq)]
    pub enum What {
        File,
        Folder,
    }

    /// `Err(reason)` when `path` is writable by its group or by others (a folder with the
    /// sticky bit excepted: others cannot replace what they do not own in it), or is owned
    /// by neither this process's user nor root.
    #[cfg(unix)]
    pub fn judge(path: &Path, what: What) -> Result<(), String> {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(path) else {
            // Not there or unreadable: the folder scan or the loader says so.
            return Ok(());
        };
        let me = rustix::process::geteuid().as_raw();
        let noun = if what == What::Folder { "plugin folder" } else { "plugin file" };
        if meta.uid() != me && meta.uid() != 0 {
            return Err(format!(
                "{noun} is owned by uid {}, neither this process's user (uid {me}) nor root",
                meta.uid()
            ));
        }
        let mode = meta.mode() & 0o7777;
        let sticky = what == What::Folder && mode & 0o1000 != 0;
        if mode & 0o022 != 0 && !sticky {
            let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
                (true, true) => "its group and by others",
                (true, false) => "its group",
                _ => "others",
            };
            return Err(format!("{noun} is writable by {who} (mode {mode:04o})"));
        }
        Ok(())
    }

    #[cfg(not(unix))]
    pub fn judge(_path: &Path, _what: What) -> Result<(), String> {
        Ok(())
    }
}

/// The host's end of a plugin's log: one host log line (target `meshlens::plugin`) naming
/// the plugin and the target inside it.
extern "C" fn plugin_log(plugin: RStr<'_>, level: u8, target: RStr<'_>, message: RStr<'_>) {
    let (plugin, plugin_target, message) = (plugin.as_str(), target.as_str(), message.as_str());
    // A panic must not unwind into the plugin's frames across the C ABI.
    let _ = std::panic::catch_unwind(|| match level {
        1 => tracing::error!(target: "meshlens::plugin", plugin, plugin_target, "{message}"),
        2 => tracing::warn!(target: "meshlens::plugin", plugin, plugin_target, "{message}"),
        3 => tracing::info!(target: "meshlens::plugin", plugin, plugin_target, "{message}"),
        4 => tracing::debug!(target: "meshlens::plugin", plugin, plugin_target, "{message}"),
        _ => tracing::trace!(target: "meshlens::plugin", plugin, plugin_target, "{message}"),
    });
}

// abi_stable's layout errors run to tens of kilobytes; keep what a person needs.
fn summarize(e: &LibraryError) -> String {
    match e {
        LibraryError::OpenError { .. } => {
            "cannot be opened as a shared library (not a plugin?)".into()
        }
        LibraryError::GetSymbolError { .. } => {
            "is not a meshlens plugin (no root module symbol)".into()
        }
        LibraryError::IncompatibleVersionNumber { expected_version, actual_version, .. } => {
            format!(
                "built against plugin-api {actual_version}, this host needs plugin-api {expected_version}"
            )
        }
        LibraryError::InvalidAbiHeader(h) => {
            format!("built with an incompatible abi_stable ({h:?})")
        }
        other => {
            let text = other.to_string();
            let keep: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("Error") || l.contains("expected") || l.contains("found"))
                .take(3)
                .collect();
            let short = if keep.is_empty() {
                text.lines().next().unwrap_or("").to_string()
            } else {
                keep.join(" ")
            };
            format!("ABI check failed: {}", truncate(&short, 300))
        }
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
