//! The template document format shared by the dashboard provider plugins.
//!
//! A template is written the way Kiali's `MonitoringDashboard` spec is (camelCase keys):
//!
//! ```yaml
//! name: vertx-server          # files only; a resource takes metadata.name
//! runtime: Vert.x             # optional: defaults to the title
//! title: Vert.x Server Metrics
//! discoverOn: vertx_http_server_requests_total   # optional
//! charts:
//!   - name: Server response time
//!     unit: s
//!     spans: 6                # optional, default 6, 1..=12
//!     metricName: vertx_http_server_responseTime_seconds
//!     dataType: histogram     # raw | rate | histogram
//!     aggregations: [{label: path, displayName: Path}]
//! ```
//!
//! A document holds one template, a list under `dashboards`, or a whole
//! `MonitoringDashboard` resource (`kind`, `metadata.name`, `spec`). TOML, YAML and JSON
//! are read into one JSON value first so that the three share one interpretation.
//!
//! This crate carries no plugin registration on purpose: a registration in a linked rlib
//! would appear in every plugin library that uses it.
#![forbid(unsafe_code)]

use plugin_api::{AggregationDef, ChartTemplate, DashboardTemplate, DataType};
use serde_json::Value;

/// Why a document cannot be turned into templates.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    /// The text is not valid in its format.
    #[error("cannot parse {format}: {message}")]
    Syntax {
        /// `TOML`, `YAML` or `JSON`.
        format: &'static str,
        /// The parser's message.
        message: String,
    },
    /// The document parses but does not describe templates.
    #[error("{0}")]
    Invalid(String),
}

/// The text formats a template file can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.toml`
    Toml,
    /// `.yaml` / `.yml`
    Yaml,
    /// `.json`
    Json,
}

impl Format {
    /// The format a file extension names (case-insensitive), if any.
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext.to_ascii_lowercase().as_str() {
            "toml" => Some(Format::Toml),
            "yaml" | "yml" => Some(Format::Yaml),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// Parses `text` in `format` into a JSON value.
pub fn parse_text(text: &str, format: Format) -> Result<Value, SpecError> {
    match format {
        Format::Json => serde_json::from_str(text)
            .map_err(|e| SpecError::Syntax { format: "JSON", message: e.to_string() }),
        Format::Toml => toml::from_str::<Value>(text)
            .map_err(|e| SpecError::Syntax { format: "TOML", message: e.message().to_string() }),
        // YAML 1.2 booleans only: a template named `y` or `on` must stay a string.
        Format::Yaml => serde_saphyr::from_str_with_options::<Value>(
            text,
            serde_saphyr::options! { strict_booleans: true },
        )
        .map_err(|e| SpecError::Syntax { format: "YAML", message: first_line(&e.to_string()) }),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim().to_string()
}

/// Parses a whole document into its templates (see the crate docs for the shapes).
pub fn templates_from_text(
    text: &str,
    format: Format,
) -> Result<Vec<DashboardTemplate>, SpecError> {
    templates_from_document(&parse_text(text, format)?)
}

/// Interprets a parsed document: one template, `dashboards: [...]`, or a resource.
pub fn templates_from_document(doc: &Value) -> Result<Vec<DashboardTemplate>, SpecError> {
    let obj = doc
        .as_object()
        .ok_or_else(|| SpecError::Invalid("the document is not a table/object".into()))?;
    if let Some(list) = obj.get("dashboards") {
        let items = list
            .as_array()
            .ok_or_else(|| SpecError::Invalid("`dashboards` is not a list".into()))?;
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let name = str_field(item, "name").unwrap_or_default();
                template_from_spec(&name, item, "")
                    .map_err(|e| SpecError::Invalid(format!("dashboards[{i}]: {e}")))
            })
            .collect();
    }
    if obj.contains_key("spec") {
        let kind = str_field(doc, "kind").unwrap_or_default();
        if !kind.is_empty() && kind != "MonitoringDashboard" {
            return Err(SpecError::Invalid(format!(
                "a resource of kind `{kind}` is not a MonitoringDashboard"
            )));
        }
        let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
        let name = str_field(&meta, "name").unwrap_or_default();
        let label_runtime =
            meta.get("labels").and_then(|l| str_field(l, "runtime")).unwrap_or_default();
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        return template_from_spec(&name, &spec, &label_runtime).map(|t| vec![t]);
    }
    let name = str_field(doc, "name").unwrap_or_default();
    template_from_spec(&name, doc, "").map(|t| vec![t])
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Builds one template named `name` from a spec object. `label_runtime` is the runtime a
/// resource's `runtime` label gives (Kiali v0.14 kept it there); the spec's own `runtime`
/// wins, and the title stands in when neither is set.
pub fn template_from_spec(
    name: &str,
    spec: &Value,
    label_runtime: &str,
) -> Result<DashboardTemplate, SpecError> {
    check_name(name)?;
    let invalid = |m: String| SpecError::Invalid(format!("template `{name}`: {m}"));
    if !spec.is_object() {
        return Err(invalid("the spec is not a table/object".into()));
    }
    let title = str_field(spec, "title").ok_or_else(|| invalid("`title` is missing".into()))?;
    let runtime = str_field(spec, "runtime")
        .filter(|r| !r.is_empty())
        .or_else(|| Some(label_runtime.to_string()).filter(|r| !r.is_empty()))
        .unwrap_or_else(|| title.clone());
    let discover_on = str_field(spec, "discoverOn").unwrap_or_default();
    let charts_v = spec
        .get("charts")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("`charts` is missing or not a list".into()))?;
    let mut charts = Vec::with_capacity(charts_v.len());
    for (i, c) in charts_v.iter().enumerate() {
        charts.push(chart(c).map_err(|m| invalid(format!("charts[{i}]: {m}")))?);
    }
    Ok(DashboardTemplate {
        name: name.into(),
        runtime: runtime.into(),
        title: title.into(),
        discover_on: discover_on.into(),
        namespace: "".into(),
        charts: charts.into(),
    })
}

/// A template name must be usable as one URL path segment.
fn check_name(name: &str) -> Result<(), SpecError> {
    if name.is_empty() {
        return Err(SpecError::Invalid("a template has no `name`".into()));
    }
    if name.contains('/') || name.chars().any(char::is_whitespace) {
        return Err(SpecError::Invalid(format!(
            "template name `{name}` contains `/` or whitespace"
        )));
    }
    Ok(())
}

fn chart(c: &Value) -> Result<ChartTemplate, String> {
    let name = str_field(c, "name").ok_or("`name` is missing")?;
    let metric =
        str_field(c, "metricName").filter(|m| !m.is_empty()).ok_or("`metricName` is missing")?;
    if !metric.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
        || metric.starts_with(|ch: char| ch.is_ascii_digit())
    {
        return Err(format!("`metricName` `{metric}` is not a metric name"));
    }
    let data_type = match str_field(c, "dataType").as_deref() {
        Some("raw") => DataType::Raw,
        Some("rate") => DataType::Rate,
        Some("histogram") => DataType::Histogram,
        Some(other) => return Err(format!("`dataType` `{other}` is not raw, rate or histogram")),
        None => return Err("`dataType` is missing".into()),
    };
    let spans = match c.get("spans") {
        None => 6,
        Some(v) => match v.as_u64() {
            Some(n @ 1..=12) => n as u32,
            _ => return Err(format!("`spans` {v} is not an integer in 1..=12")),
        },
    };
    let unit = str_field(c, "unit").unwrap_or_default();
    let mut aggregations = Vec::new();
    if let Some(aggs) = c.get("aggregations") {
        let aggs = aggs.as_array().ok_or("`aggregations` is not a list")?;
        for (j, a) in aggs.iter().enumerate() {
            let label = str_field(a, "label")
                .filter(|l| !l.is_empty())
                .ok_or(format!("aggregations[{j}]: `label` is missing"))?;
            let display = str_field(a, "displayName").unwrap_or_else(|| label.clone());
            aggregations.push(AggregationDef { label: label.into(), display_name: display.into() });
        }
    }
    Ok(ChartTemplate {
        name: name.into(),
        unit: unit.into(),
        spans,
        metric_name: metric.into(),
        data_type,
        aggregations: aggregations.into(),
    })
}

/// A problem report travelling in the template list: a template with an **empty name**
/// (no request can name it) whose title is the message. The host logs and drops these
/// (`meshlens_dashboards::split_warnings`); the provider trait has no other channel.
pub fn warning(message: impl Into<String>) -> DashboardTemplate {
    DashboardTemplate {
        name: "".into(),
        runtime: "".into(),
        title: message.into().into(),
        discover_on: "".into(),
        namespace: "".into(),
        charts: Default::default(),
    }
}

/// Whether `t` is a problem report made by [`warning`].
pub fn is_warning(t: &DashboardTemplate) -> bool {
    t.name.is_empty()
}

#[cfg(test)]
mod tests;
