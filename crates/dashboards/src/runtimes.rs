//! The `runtimes` of app details: from the pods' `kiali.io/runtimes` annotation, else
//! discovered from which templates' revealing metrics exist for the app.
//!
//! Discovery sends **one** instant query for all templates (`__name__=~"m1|m2|..."` with the
//! app's `namespace`/`app` matchers, grouped by `__name__`), never one per template or per
//! pod (Kiali's per-pod probing overloaded Prometheus), and answers are cached for a TTL.

use std::{
    collections::HashMap,
    future::Future,
    sync::Mutex,
    time::{Duration, Instant},
};

use plugin_api::{
    DashboardTemplate, HistogramStat, Matcher, MetricQuery, PluginError, QueryResult, QueryTime,
    RangeFunc,
};
use serde::Serialize;

use crate::templates::TemplateCatalog;

/// The pod annotation naming an app's dashboard templates, comma-separated.
pub const RUNTIMES_ANNOTATION: &str = "kiali.io/runtimes";

/// A dashboard link of a runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DashboardRef {
    /// Template name.
    pub template: String,
    /// Its title.
    pub title: String,
}

/// One runtime of an app, with its dashboards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Runtime {
    /// Runtime name, e.g. `Vert.x`.
    pub name: String,
    /// Its dashboards.
    #[serde(rename = "dashboardRefs")]
    pub dashboard_refs: Vec<DashboardRef>,
}

/// Groups templates by runtime name, keeping first-seen order of runtimes and templates.
fn group<'a>(templates: impl IntoIterator<Item = &'a DashboardTemplate>) -> Vec<Runtime> {
    let mut out: Vec<Runtime> = Vec::new();
    for t in templates {
        let name = if t.runtime.is_empty() { t.title.as_str() } else { t.runtime.as_str() };
        let r = DashboardRef { template: t.name.to_string(), title: t.title.to_string() };
        match out.iter_mut().find(|x| x.name == name) {
            Some(x) if !x.dashboard_refs.iter().any(|d| d.template == r.template) => {
                x.dashboard_refs.push(r)
            }
            Some(_) => {}
            None => out.push(Runtime { name: name.to_string(), dashboard_refs: vec![r] }),
        }
    }
    out
}

/// Runtimes from the annotation values of the app's pods (one entry per pod that has it, in
/// pod order): unique template names in first-seen order, resolved with `lookup`; unknown
/// names are skipped with a log line.
pub fn runtimes_from_annotations<'a>(
    annotations: impl IntoIterator<Item = &'a str>,
    lookup: impl Fn(&str) -> Option<&'a DashboardTemplate>,
) -> Vec<Runtime> {
    let mut names: Vec<&str> = Vec::new();
    for a in annotations {
        for n in a.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    let templates: Vec<&DashboardTemplate> = names
        .into_iter()
        .filter_map(|n| {
            let t = lookup(n);
            if t.is_none() {
                tracing::warn!(
                    template = n,
                    "{RUNTIMES_ANNOTATION} names an unknown dashboard template; skipped"
                );
            }
            t
        })
        .collect();
    group(templates)
}

/// The one discovery query for an app, or `None` when no template can be discovered.
pub fn discovery_query(
    templates: &[&DashboardTemplate],
    namespace: &str,
    app: &str,
    time: i64,
) -> Option<MetricQuery> {
    let mut metrics: Vec<&str> = Vec::new();
    for t in templates {
        let m = t.discover_on.as_str();
        // Names are validated by the providers; anything else would need regex escaping.
        if !m.is_empty()
            && m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && !metrics.contains(&m)
        {
            metrics.push(m);
        }
    }
    if metrics.is_empty() {
        return None;
    }
    Some(MetricQuery {
        metric: "".into(),
        matchers: vec![
            Matcher::re("__name__", &metrics.join("|")),
            Matcher::eq("namespace", namespace),
            Matcher::eq("app", app),
        ]
        .into(),
        func: RangeFunc::None,
        window_secs: 0,
        group_by: Some(vec!["__name__".into()].into()).into(),
        histogram: HistogramStat::None,
        time: QueryTime::Instant(time),
    })
}

/// Runtimes of the templates whose revealing metric appears in the discovery result, in
/// template order.
pub fn runtimes_from_discovery(
    templates: &[&DashboardTemplate],
    result: &QueryResult,
) -> Vec<Runtime> {
    let found: Vec<String> =
        result.series.iter().filter_map(|s| s.labels.get("__name__")).map(str::to_string).collect();
    runtimes_from_names(templates, &found)
}

/// Runtimes of the templates whose revealing metric is among `found`, in template order.
fn runtimes_from_names(templates: &[&DashboardTemplate], found: &[String]) -> Vec<Runtime> {
    group(templates.iter().copied().filter(|t| {
        !t.discover_on.is_empty() && found.iter().any(|f| *f == t.discover_on.as_str())
    }))
}

/// (namespace, app, the metric names asked about) -> when discovered, the names found.
type RuntimeEntries = HashMap<(String, String, String), (Instant, Vec<String>)>;

/// Discovery answers per (namespace, app, metric names asked about), kept for a TTL. The
/// store's answer is kept, not the runtimes: on an instance that reads several clusters, the
/// same app in two clusters may see different templates (a cluster's own dashboard
/// resources), and each gets the runtimes of its own.
#[derive(Debug)]
pub struct RuntimeCache {
    ttl: Duration,
    entries: Mutex<RuntimeEntries>,
}

impl RuntimeCache {
    /// A cache keeping answers for `ttl`.
    pub fn new(ttl: Duration) -> Self {
        RuntimeCache { ttl, entries: Mutex::new(HashMap::new()) }
    }
    fn get(&self, key: &(String, String, String)) -> Option<Vec<String>> {
        let g = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        g.get(key).filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, r)| r.clone())
    }
    fn put(&self, key: (String, String, String), found: Vec<String>) {
        let mut g = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: expired entries go whenever a new one comes in.
        let ttl = self.ttl;
        g.retain(|_, (at, _)| at.elapsed() < ttl);
        g.insert(key, (Instant::now(), found));
    }
}

/// The `runtimes` of an app: from the pods' annotations when any pod carries one, else by
/// discovery through `run` (at most one query; cached in `cache`). A failed discovery query
/// gives no runtimes (logged) rather than failing app details.
#[allow(clippy::too_many_arguments)] // each is a distinct input the caller has at hand
pub async fn resolve_runtimes<'a, F, Fut>(
    pod_annotations: impl IntoIterator<Item = &'a str>,
    catalog: &TemplateCatalog,
    namespace: &str,
    mesh_namespace: &str,
    app: &str,
    now: i64,
    cache: &RuntimeCache,
    run: F,
) -> Vec<Runtime>
where
    F: FnOnce(MetricQuery) -> Fut,
    Fut: Future<Output = Result<QueryResult, PluginError>>,
{
    let annotations: Vec<&str> = pod_annotations.into_iter().collect();
    if !annotations.is_empty() {
        return runtimes_from_annotations(annotations, |n| {
            catalog.resolve(n, namespace, mesh_namespace)
        });
    }
    let templates = catalog.visible(namespace, mesh_namespace);
    let Some(q) = discovery_query(&templates, namespace, app, now) else {
        return Vec::new();
    };
    // The query's metric names: its first matcher (`__name__=~"m1|m2"`).
    let names = q.matchers.first().map(|m| m.value.to_string()).unwrap_or_default();
    let key = (namespace.to_string(), app.to_string(), names);
    if let Some(found) = cache.get(&key) {
        return runtimes_from_names(&templates, &found);
    }
    match run(q).await {
        Ok(result) => {
            let found: Vec<String> = result
                .series
                .iter()
                .filter_map(|s| s.labels.get("__name__"))
                .map(str::to_string)
                .collect();
            let r = runtimes_from_names(&templates, &found);
            cache.put(key, found);
            r
        }
        Err(e) => {
            tracing::warn!(namespace, app, "runtime discovery failed: {e}");
            Vec::new()
        }
    }
}

#[cfg(test)]
#[path = "runtimes_tests.rs"]
mod tests;
