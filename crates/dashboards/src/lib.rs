//! Dashboards for meshlens: the `customDashboard` and `appDashboard` operations and the
//! `runtimes` of app details.
//!
//! The host drives it in four steps, doing all I/O itself:
//! 1. [`query`] and [`params`]: read the query string as typed structs and check them against
//!    the limits (errors are 400s naming the parameter);
//! 2. [`templates`]: collect the providers' templates into a [`TemplateCatalog`] and resolve a
//!    name by precedence (app namespace, mesh namespace, folders, built-ins);
//! 3. [`plan`]: build the structured [`plugin_api::MetricQuery`] list of a dashboard
//!    ([`custom_dashboard_plan`], [`app_dashboard_plan`]);
//! 4. run the queries concurrently ([`DashboardPlan::execute`]) and shape the results into the
//!    Dashboard JSON ([`DashboardPlan::assemble`]).
//!
//! [`runtimes`] resolves an app's runtimes from pod annotations, else by one discovery query.
#![forbid(unsafe_code)]

mod config;
pub mod error;
pub mod namespace_metrics;
pub mod params;
pub mod plan;
pub mod query;
pub mod runtimes;
pub mod shape;
pub mod templates;

pub use config::DashboardsConfig;
pub use error::DashboardError;
pub use namespace_metrics::{
    MetricsPlan, NAMESPACE_METRICS, NamespaceMetricsParams, namespace_metrics_plan,
};
pub use params::{AppParams, BaseParams, CustomParams, Direction, ParamLimits, Reporter};
pub use plan::{
    DashboardPlan, DashboardTarget, app_dashboard_plan, custom_dashboard_plan, istio_dashboard_plan,
};
pub use query::{AppQuery, BaseQuery, CustomQuery, FiltersQuery};
pub use runtimes::{
    DashboardRef, RUNTIMES_ANNOTATION, Runtime, RuntimeCache, discovery_query, resolve_runtimes,
    runtimes_from_annotations, runtimes_from_discovery,
};
pub use templates::{ProviderTemplates, TemplateCatalog, split_warnings};
