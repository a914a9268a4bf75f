//! Registration inside a plugin crate and the root module every library exports.

use abi_stable::{
    StableAbi, declare_root_module_statics,
    library::RootModule,
    package_version_strings,
    sabi_types::VersionStrings,
    std_types::{RResult, RStr, RVec},
};

use crate::{
    appender::AppenderBox, backend::MetricsBackendBox, dashboards::DashboardProviderBox,
    guard::guard, types::PluginError,
};

/// One component registered with `inventory` inside a plugin crate.
///
/// Use the macros [`register_appender!`](crate::register_appender),
/// [`register_metrics_backend!`](crate::register_metrics_backend) and
/// [`register_dashboard_provider!`](crate::register_dashboard_provider) rather than this type.
pub enum Registration {
    /// Builds a graph appender.
    Appender(fn() -> AppenderBox),
    /// Builds a metrics backend.
    MetricsBackend(fn() -> MetricsBackendBox),
    /// Builds a dashboard template provider.
    DashboardProvider(fn() -> DashboardProviderBox),
}

inventory::collect!(Registration);

/// Every component a library carries.
#[repr(C)]
#[derive(StableAbi)]
pub struct Components {
    /// Graph appenders.
    pub appenders: RVec<AppenderBox>,
    /// Metrics backends.
    pub metrics_backends: RVec<MetricsBackendBox>,
    /// Dashboard template providers.
    pub dashboard_providers: RVec<DashboardProviderBox>,
}

/// Collects this library's registrations (each library has its own registry).
pub extern "C" fn collect_components() -> RResult<Components, PluginError> {
    guard("component registration", || {
        let mut c = Components {
            appenders: RVec::new(),
            metrics_backends: RVec::new(),
            dashboard_providers: RVec::new(),
        };
        for r in inventory::iter::<Registration> {
            match r {
                Registration::Appender(f) => c.appenders.push(f()),
                Registration::MetricsBackend(f) => c.metrics_backends.push(f()),
                Registration::DashboardProvider(f) => c.dashboard_providers.push(f()),
            }
        }
        Ok(c)
    })
}

/// The root module of a plugin library (a prefix type: fields can be appended later).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginMod_Ref)))]
#[sabi(missing_field(panic))]
pub struct PluginMod {
    /// The plugin-api version the library was built against.
    pub api_version: RStr<'static>,
    /// The plugin's name.
    pub plugin_name: RStr<'static>,
    /// The plugin's own version.
    pub plugin_version: RStr<'static>,
    /// Builds the library's components.
    #[sabi(last_prefix_field)]
    pub components: extern "C" fn() -> RResult<Components, PluginError>,
    /// Takes the host's log sink (see [`crate::log`]). Appended in 0.1.1
    /// (0.1.0 libraries lack it, and the accessor answers `None`).
    #[sabi(missing_field(option))]
    pub set_log_sink: extern "C" fn(crate::log::LogSink),
}

impl RootModule for PluginMod_Ref {
    declare_root_module_statics! {PluginMod_Ref}
    const BASE_NAME: &'static str = "meshlens_plugin";
    const NAME: &'static str = "meshlens_plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// The exported symbol abi_stable looks up (`abi_stable::library::ROOT_MODULE_LOADER_NAME`);
/// spelled out because `#[export_name]` needs a literal (a unit test checks it).
#[doc(hidden)]
#[macro_export]
macro_rules! __root_module_symbol {
    () => {
        "_1as_0lib_1header_0root_bmodule_bloader"
    };
}

/// Exports the library's root module. Call it once per plugin crate.
///
/// ```ignore
/// plugin_api::export_plugin!(name: "my-plugin", version: env!("CARGO_PKG_VERSION"));
/// ```
#[macro_export]
macro_rules! export_plugin {
    (name: $name:expr, version: $version:expr $(,)?) => {
        $crate::__export_plugin_with_api!($crate::API_VERSION, $name, $version);
    };
}

/// Like [`export_plugin!`] with an explicit plugin-api version; only for testing the host's
/// version check.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_plugin_with_api {
    ($api:expr, $name:expr, $version:expr) => {
        #[doc(hidden)]
        pub fn __meshlens_root_module() -> $crate::export::PluginMod_Ref {
            use $crate::abi_stable::prefix_type::PrefixTypeTrait;
            $crate::export::PluginMod {
                api_version: $crate::abi_stable::std_types::RStr::from_str($api),
                plugin_name: $crate::abi_stable::std_types::RStr::from_str($name),
                plugin_version: $crate::abi_stable::std_types::RStr::from_str($version),
                components: $crate::export::collect_components,
                set_log_sink: __meshlens_set_log_sink,
            }
            .leak_into_prefix()
        }

        #[doc(hidden)]
        extern "C" fn __meshlens_set_log_sink(sink: $crate::log::LogSink) {
            $crate::log::install($name, sink);
        }

        #[doc(hidden)]
        #[unsafe(export_name = $crate::__root_module_symbol!())]
        pub static __MESHLENS_LIB_HEADER: $crate::abi_stable::library::LibHeader = {
            extern "C" fn erased() -> $crate::abi_stable::library::RootModuleResult {
                $crate::abi_stable::library::__call_root_module_loader(__meshlens_root_module)
            }
            // SAFETY: `erased` returns the root module of type `PluginMod_Ref`, as
            // `from_constructor` requires.
            unsafe {
                $crate::abi_stable::library::LibHeader::from_constructor::<
                    $crate::export::PluginMod_Ref,
                >(erased, $crate::abi_stable::library::CheckTypeLayout::Yes)
            }
        };
    };
}

/// Registers a [`GraphAppender`](crate::GraphAppender) value with this library.
#[macro_export]
macro_rules! register_appender {
    ($value:expr) => {
        $crate::inventory::submit! {
            $crate::export::Registration::Appender(|| $crate::appender::AppenderAdapter::boxed($value))
        }
    };
}

/// Registers a [`MetricsStore`](crate::MetricsStore) value with this library.
#[macro_export]
macro_rules! register_metrics_backend {
    ($value:expr) => {
        $crate::inventory::submit! {
            $crate::export::Registration::MetricsBackend(|| $crate::backend::MetricsAdapter::boxed($value))
        }
    };
}

/// Registers a [`TemplateSource`](crate::TemplateSource) value with this library.
#[macro_export]
macro_rules! register_dashboard_provider {
    ($value:expr) => {
        $crate::inventory::submit! {
            $crate::export::Registration::DashboardProvider(|| $crate::dashboards::DashboardAdapter::boxed($value))
        }
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn root_module_symbol_matches_abi_stable() {
        assert_eq!(crate::__root_module_symbol!(), abi_stable::library::ROOT_MODULE_LOADER_NAME);
    }
}
