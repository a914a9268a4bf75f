//! The self-metrics of meshlens, served at `GET /metrics`.
//!
//! One registry per service instance ([`Metrics::new`], shared as an `Arc`): the router,
//! the metrics engine, the graph service and the cluster crate are each handed the
//! instance's handle, so that two instances in one process (the in-process API tests) do
//! not count each other's requests. Names follow Prometheus conventions: base units,
//! `_seconds`, `_total` on counters (added by the encoder), `_info` on the build info.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::{sync::atomic::AtomicU64, time::Duration};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
        info::Info,
    },
    registry::{Registry, Unit},
};

/// The content type of [`encode`]'s text (OpenMetrics, which Prometheus scrapes natively).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `operation` and `status` of an answered API request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The operation id (`graphNamespaces`), or `unmatched` for an unknown path.
    pub operation: &'static str,
    /// The HTTP status code.
    pub status: u16,
}

/// One label: the operation id.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabels {
    /// The operation id.
    pub operation: &'static str,
}

/// A backend query's backend and outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BackendLabels {
    /// The metrics backend's name.
    pub backend: String,
    /// `ok`, `error`, `timeout`, `coalesced` (joined an identical query in flight) or
    /// `cached` (answered from the answer cache).
    pub outcome: &'static str,
}

/// One label: the metrics backend's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BackendOnly {
    /// The metrics backend's name.
    pub backend: String,
}

/// A phase of a graph request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    /// `build`, `appender` or `output`.
    pub phase: &'static str,
    /// The appender's name (empty for the other phases).
    pub appender: String,
}

/// One label: a cluster's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabels {
    /// `[cluster] name` or a `[[cluster.remotes]]` name.
    pub cluster: String,
}

/// One label: a Kubernetes kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// The kind (`Pod`, `VirtualService`).
    pub kind: String,
}

/// One label: a plugin's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabels {
    /// The component's name (appender, backend or dashboard provider).
    pub plugin: String,
}

/// One object's health status, kube-state-metrics style: one series per status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HealthLabels {
    /// The object's namespace.
    pub namespace: String,
    /// `app`, `service` or `workload`.
    pub kind: &'static str,
    /// The object's name.
    pub name: String,
    /// `healthy`, `degraded`, `failure` or `na`.
    pub status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    plugin_api: &'static str,
}

/// A gauge holding seconds (or any float).
pub type FloatGauge = Gauge<f64, AtomicU64>;

/// Every self-metric. Fields are public: record with `m.field.get_or_create(..).inc()`.
pub struct Metrics {
    registry: Registry,
    /// `meshlens_api_requests_total{operation,status}`.
    pub api_requests: Family<RequestLabels, Counter>,
    /// `meshlens_api_request_duration_seconds{operation}`.
    pub api_request_duration: Family<OperationLabels, Histogram>,
    /// `meshlens_api_requests_in_flight`.
    pub api_requests_in_flight: Gauge,
    /// `meshlens_auth_failures_total{operation}`: requests answered 401.
    pub auth_failures: Family<OperationLabels, Counter>,
    /// `meshlens_backend_queries_total{backend,outcome}`.
    pub backend_queries: Family<BackendLabels, Counter>,
    /// `meshlens_backend_query_duration_seconds{backend}`: queries actually sent.
    pub backend_query_duration: Family<BackendOnly, Histogram>,
    /// `meshlens_backend_cache_hits_total`.
    pub cache_hits: Counter,
    /// `meshlens_backend_cache_misses_total`.
    pub cache_misses: Counter,
    /// `meshlens_backend_cache_entries`.
    pub cache_entries: Gauge,
    /// `meshlens_backend_cache_size_bytes` (estimated).
    pub cache_bytes: Gauge,
    /// `meshlens_graph_phase_duration_seconds{phase,appender}`.
    pub graph_phase_duration: Family<PhaseLabels, Histogram>,
    /// `meshlens_graph_nodes`: nodes per answered graph.
    pub graph_nodes: Histogram,
    /// `meshlens_graph_edges`: edges per answered graph.
    pub graph_edges: Histogram,
    /// `meshlens_cluster_objects{kind}`: objects in the cluster cache.
    pub cluster_objects: Family<KindLabels, Gauge>,
    /// `meshlens_cluster_last_sync_timestamp_seconds`: when the caches last completed a list.
    pub cluster_last_sync: FloatGauge,
    /// `meshlens_cluster_available{cluster}`: 1 while a cluster can be read (synced, its
    /// API server reachable), else 0; one series per cluster, home and remotes.
    pub cluster_available: Family<ClusterLabels, Gauge>,
    /// `meshlens_cluster_model_rebuild_duration_seconds`.
    pub cluster_rebuild_duration: Histogram,
    /// `meshlens_cluster_watch_restarts_total{kind}`: watches that failed and were restarted.
    pub cluster_watch_restarts: Family<KindLabels, Counter>,
    /// `meshlens_plugin_errors_total{plugin}`: errors a plugin returned.
    pub plugin_errors: Family<PluginLabels, Counter>,
    /// `meshlens_plugin_panics_total{plugin}`: panics caught at the plugin boundary.
    pub plugin_panics: Family<PluginLabels, Counter>,
    /// `meshlens_cpu_pool_busy`: CPU-pool jobs (graph builds) running now.
    pub cpu_pool_busy: Gauge,
    /// `meshlens_admission_queued`: expensive requests waiting for a slot.
    pub admission_queued: Gauge,
    /// `meshlens_admission_refused_total`: expensive requests answered 503 by admission control.
    pub admission_refused: Counter,
    /// `meshlens_backend_up`: 1 while the metrics backend answers its status probe within
    /// `metrics.stale_after`, else 0 (readiness no longer follows the backend).
    pub backend_up: Gauge,
    /// `meshlens_health_status{namespace,kind,name,status}`: 1 for the object's current
    /// status, 0 for the other three (refreshed in the background).
    pub health_status: Family<HealthLabels, Gauge>,
}

fn seconds_histogram() -> Histogram {
    // 1 ms .. ~33 s
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

fn size_histogram() -> Histogram {
    // 1 .. ~260,000
    Histogram::new(exponential_buckets(1.0, 4.0, 10))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry of its own, every metric at zero.
    pub fn new() -> Metrics {
        let mut r = Registry::with_prefix("meshlens");
        let m = Metrics {
            api_requests: Family::default(),
            api_request_duration: Family::new_with_constructor(seconds_histogram),
            api_requests_in_flight: Gauge::default(),
            auth_failures: Family::default(),
            backend_queries: Family::default(),
            backend_query_duration: Family::new_with_constructor(seconds_histogram),
            cache_hits: Counter::default(),
            cache_misses: Counter::default(),
            cache_entries: Gauge::default(),
            cache_bytes: Gauge::default(),
            graph_phase_duration: Family::new_with_constructor(seconds_histogram),
            graph_nodes: size_histogram(),
            graph_edges: size_histogram(),
            cluster_objects: Family::default(),
            cluster_available: Family::default(),
            cluster_last_sync: FloatGauge::default(),
            cluster_rebuild_duration: seconds_histogram(),
            cluster_watch_restarts: Family::default(),
            plugin_errors: Family::default(),
            plugin_panics: Family::default(),
            cpu_pool_busy: Gauge::default(),
            admission_queued: Gauge::default(),
            admission_refused: Counter::default(),
            backend_up: Gauge::default(),
            health_status: Family::default(),
            registry: Registry::default(),
        };
        r.register(
            "api_requests",
            "API requests answered, by operation id and status code",
            m.api_requests.clone(),
        );
        r.register_with_unit(
            "api_request_duration",
            "Time to answer an API request, by operation id",
            Unit::Seconds,
            m.api_request_duration.clone(),
        );
        r.register(
            "api_requests_in_flight",
            "API requests being answered now",
            m.api_requests_in_flight.clone(),
        );
        r.register(
            "auth_failures",
            "Requests refused with 401, by operation id",
            m.auth_failures.clone(),
        );
        r.register(
            "backend_queries",
            "Metric queries by backend and outcome (ok, error, timeout, cancelled, coalesced, cached)",
            m.backend_queries.clone(),
        );
        r.register_with_unit(
            "backend_query_duration",
            "Time of metric queries sent to the backend",
            Unit::Seconds,
            m.backend_query_duration.clone(),
        );
        r.register(
            "backend_cache_hits",
            "Metric queries answered from the answer cache",
            m.cache_hits.clone(),
        );
        r.register(
            "backend_cache_misses",
            "Cacheable metric queries not in the answer cache",
            m.cache_misses.clone(),
        );
        r.register(
            "backend_cache_entries",
            "Answers held in the answer cache",
            m.cache_entries.clone(),
        );
        r.register_with_unit(
            "backend_cache_size",
            "Estimated size of the answers held in the answer cache",
            Unit::Bytes,
            m.cache_bytes.clone(),
        );
        r.register_with_unit(
            "graph_phase_duration",
            "Time of each phase of a graph request: build, each appender by name, output",
            Unit::Seconds,
            m.graph_phase_duration.clone(),
        );
        r.register("graph_nodes", "Nodes of each answered graph", m.graph_nodes.clone());
        r.register("graph_edges", "Edges of each answered graph", m.graph_edges.clone());
        r.register(
            "cluster_objects",
            "Objects in the cluster cache, by kind",
            m.cluster_objects.clone(),
        );
        r.register(
            "cluster_available",
            "Whether each cluster can be read now (synced, API server reachable): 1 or 0",
            m.cluster_available.clone(),
        );
        r.register(
            "cluster_last_sync_timestamp_seconds",
            "Unix time the cluster caches last completed a full list",
            m.cluster_last_sync.clone(),
        );
        r.register_with_unit(
            "cluster_model_rebuild_duration",
            "Time to rebuild the cluster model from the caches",
            Unit::Seconds,
            m.cluster_rebuild_duration.clone(),
        );
        r.register(
            "cluster_watch_restarts",
            "Watches of the cluster caches that failed and restarted, by kind",
            m.cluster_watch_restarts.clone(),
        );
        r.register(
            "plugin_errors",
            "Errors returned by plugin components, by component name",
            m.plugin_errors.clone(),
        );
        r.register(
            "plugin_panics",
            "Panics caught at the plugin boundary, by component name",
            m.plugin_panics.clone(),
        );
        r.register(
            "cpu_pool_busy",
            "Jobs running on the CPU pool (graph build, appenders, output)",
            m.cpu_pool_busy.clone(),
        );
        r.register(
            "admission_queued",
            "Expensive requests waiting for an admission slot",
            m.admission_queued.clone(),
        );
        r.register(
            "admission_refused",
            "Expensive requests refused with 503 by admission control",
            m.admission_refused.clone(),
        );
        r.register(
            "backend_up",
            "1 while the metrics backend answers its status probe within metrics.stale_after, else 0",
            m.backend_up.clone(),
        );
        r.register(
            "health_status",
            "Health of each app, service and workload under the [health] rules: 1 for the current status (healthy, degraded, failure, na), 0 for the others",
            m.health_status.clone(),
        );
        r.register(
            "build",
            "The running meshlens build",
            Info::new(BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
                plugin_api: plugin_api::API_VERSION,
            }),
        );
        Metrics { registry: r, ..m }
    }

    /// Records one backend query outcome.
    pub fn backend_query(&self, backend: &str, outcome: &'static str) {
        self.backend_queries
            .get_or_create(&BackendLabels { backend: backend.to_string(), outcome })
            .inc();
    }

    /// Records the time of one graph phase.
    pub fn graph_phase(&self, phase: &'static str, appender: &str, took: Duration) {
        self.graph_phase_duration
            .get_or_create(&PhaseLabels { phase, appender: appender.to_string() })
            .observe(took.as_secs_f64());
    }

    /// Records an error (or, with `panic`, a panic) of a plugin component.
    pub fn plugin_failure(&self, plugin: &str, panic: bool) {
        let family = if panic { &self.plugin_panics } else { &self.plugin_errors };
        family.get_or_create(&PluginLabels { plugin: plugin.to_string() }).inc();
    }

    /// Sets the object count of one kind.
    pub fn cluster_object_count(&self, kind: &str, count: usize) {
        self.cluster_objects
            .get_or_create(&KindLabels { kind: kind.to_string() })
            .set(count as i64);
    }

    /// Sets whether cluster `name` can be read now.
    pub fn cluster_availability(&self, name: &str, available: bool) {
        self.cluster_available
            .get_or_create(&ClusterLabels { cluster: name.to_string() })
            .set(i64::from(available));
    }

    /// Counts a failed (and restarted) watch of one kind.
    pub fn cluster_watch_restart(&self, kind: &str) {
        self.cluster_watch_restarts.get_or_create(&KindLabels { kind: kind.to_string() }).inc();
    }
}

impl Metrics {
    /// The whole registry in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_conventions_and_record() {
        let m = Metrics::new();
        m.api_requests
            .get_or_create(&RequestLabels { operation: "graphNamespaces", status: 200 })
            .inc();
        m.api_request_duration
            .get_or_create(&OperationLabels { operation: "graphNamespaces" })
            .observe(0.02);
        m.backend_query("prometheus", "cached");
        m.graph_phase("appender", "deadNode", Duration::from_millis(3));
        let text = m.encode();
        for line in [
            "meshlens_api_requests_total{operation=\"graphNamespaces\",status=\"200\"} 1",
            "meshlens_api_request_duration_seconds_count{operation=\"graphNamespaces\"} 1",
            "meshlens_backend_queries_total{backend=\"prometheus\",outcome=\"cached\"} 1",
            "meshlens_graph_phase_duration_seconds_count{phase=\"appender\",appender=\"deadNode\"} 1",
            "meshlens_build_info{version=\"",
            "meshlens_api_requests_in_flight 0",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(text.contains(&format!("plugin_api=\"{}\"", plugin_api::API_VERSION)), "{text}");
        assert!(text.trim_end().ends_with("# EOF"));
    }

    #[test]
    fn two_registries_count_apart_and_encode_alike() {
        let (a, b) = (Metrics::new(), Metrics::new());
        a.admission_refused.inc();
        assert!(a.encode().contains("meshlens_admission_refused_total 1\n"));
        assert!(b.encode().contains("meshlens_admission_refused_total 0\n"));
        // Same names and shape: only the one value differs.
        let zeroed = a.encode().replace("refused_total 1\n", "refused_total 0\n");
        assert_eq!(zeroed, b.encode());
    }
}
