//! Dashboard template providers: lists of templates, from data, files or cluster resources.

use std::sync::RwLock;

use abi_stable::{
    StableAbi, sabi_trait,
    sabi_trait::TD_Opaque,
    std_types::{RBox, RResult, RStr, RString, RVec},
};

use crate::{
    cluster::{ClusterData, ClusterKind},
    guard::{guard, parse_config},
    types::PluginError,
};

/// How a chart's metric is queried.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// A gauge: `sum(metric)`.
    Raw,
    /// A counter: `sum(rate(metric[interval]))` (or `irate`).
    Rate,
    /// A histogram: average and quantiles.
    Histogram,
}

/// A label a dashboard can group by.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AggregationDef {
    /// Metric label name.
    pub label: RString,
    /// Name shown to users.
    pub display_name: RString,
}

/// One chart of a template.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct ChartTemplate {
    /// Chart title.
    pub name: RString,
    /// Unit, e.g. `s`, `B`, `ops`.
    pub unit: RString,
    /// Width in grid columns (1..12).
    pub spans: u32,
    /// Metric name (base name for histograms).
    pub metric_name: RString,
    /// How to query it.
    pub data_type: DataType,
    /// Labels to offer for grouping.
    pub aggregations: RVec<AggregationDef>,
}

/// A dashboard template.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct DashboardTemplate {
    /// Template name (the `{template}` path segment).
    pub name: RString,
    /// Runtime name, e.g. `Vert.x`; groups templates in app details.
    pub runtime: RString,
    /// Dashboard title.
    pub title: RString,
    /// A metric whose presence for an app reveals this runtime; empty: never discovered.
    pub discover_on: RString,
    /// Namespace of the resource the template came from; empty for files and built-ins.
    pub namespace: RString,
    /// Charts in display order.
    pub charts: RVec<ChartTemplate>,
}

/// Where a provider's templates rank when two have one name.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderTier {
    /// From cluster resources: the app's namespace, then the mesh namespace. Highest.
    Cluster,
    /// From files an operator placed.
    Folder,
    /// Shipped with meshlens. Lowest.
    Builtin,
}

/// The stable-ABI dashboard template provider interface.
#[sabi_trait]
pub trait DashboardProvider: Send + Sync {
    /// The provider's unique name.
    fn name(&self) -> RResult<RString, PluginError>;
    /// Receives the `[dashboards]` table as JSON, once at start-up.
    fn configure(&self, config_json: RStr<'_>) -> RResult<(), PluginError>;
    /// Precedence of this provider's templates.
    fn tier(&self) -> RResult<ProviderTier, PluginError>;
    /// Cluster kinds the host must read for [`DashboardProvider::templates`].
    fn inputs(&self) -> RResult<RVec<ClusterKind>, PluginError>;
    /// Lists the templates.
    #[sabi(last_prefix_field)]
    fn templates(&self, data: &ClusterData) -> RResult<RVec<DashboardTemplate>, PluginError>;
}

/// A dashboard provider as it crosses the boundary.
pub type DashboardProviderBox = DashboardProvider_TO<'static, RBox<()>>;

/// What a plugin author implements for a dashboard template provider.
pub trait TemplateSource: Send + Sync + 'static {
    /// The provider's unique name.
    fn name(&self) -> &str;
    /// Precedence of this provider's templates.
    fn tier(&self) -> ProviderTier;
    /// Takes the `[dashboards]` table. The default ignores it.
    fn configure(&mut self, _config: &serde_json::Value) -> Result<(), PluginError> {
        Ok(())
    }
    /// Cluster kinds needed by [`TemplateSource::templates`].
    fn inputs(&self) -> Vec<ClusterKind> {
        Vec::new()
    }
    /// Lists the templates, using only `data`.
    fn templates(&self, data: &ClusterData) -> Result<Vec<DashboardTemplate>, PluginError>;
}

/// Wraps a [`TemplateSource`] so that every entry point catches panics.
pub struct DashboardAdapter<T>(RwLock<T>);

impl<T: TemplateSource> DashboardAdapter<T> {
    /// Boxes `inner` as a stable trait object.
    pub fn boxed(inner: T) -> DashboardProviderBox {
        DashboardProvider_TO::from_value(DashboardAdapter(RwLock::new(inner)), TD_Opaque)
    }
    fn read(&self) -> std::sync::RwLockReadGuard<'_, T> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: TemplateSource> DashboardProvider for DashboardAdapter<T> {
    fn name(&self) -> RResult<RString, PluginError> {
        guard("provider name", || Ok(RString::from(self.read().name())))
    }
    fn configure(&self, config_json: RStr<'_>) -> RResult<(), PluginError> {
        guard("provider configure", || {
            let cfg = parse_config(config_json.as_str())?;
            self.0.write().unwrap_or_else(|e| e.into_inner()).configure(&cfg)
        })
    }
    fn tier(&self) -> RResult<ProviderTier, PluginError> {
        guard("provider tier", || Ok(self.read().tier()))
    }
    fn inputs(&self) -> RResult<RVec<ClusterKind>, PluginError> {
        guard("provider inputs", || Ok(RVec::from(self.read().inputs())))
    }
    fn templates(&self, data: &ClusterData) -> RResult<RVec<DashboardTemplate>, PluginError> {
        guard("provider templates", || self.read().templates(data).map(RVec::from))
    }
}
