//! Metrics backend `simulator`: the demo mesh, alive. Series come from a topology file
//! (`metrics-simulation`) and are generated into the embedded store (`metrics-store`) up to
//! "now" whenever a query arrives; samples older than the window are dropped, so memory stays
//! flat however long it runs. Queries are answered by the same evaluation as
//! `openmetrics_file`, so every operation behaves as on Prometheus over the same samples.
//!
//! Config table `[metrics.simulator]`:
//!
//! | key | meaning |
//! |---|---|
//! | `topology` | the topology file (required), e.g. `config/demo/topology.toml` |
//! | `start` | Unix seconds of the scenario cycle's phase zero (default: when the backend starts) |
//! | `clock` | `"wall"` (default): now is the wall clock; `"query"`: now is the latest time any query asked about (tests, replays) |
//! | `window_minutes` | how much history is kept (default 60) |
//! | `timeout_ms` | set by the host |
//! | `max_series` | set by the host (`[limits]`): evaluation stops once an answer would hold more series |
//! | `max_bytes` | set by the host; accepted and unused (answers are not read from a wire) |
//!
//! The store's own size is a series too: `meshlens_simulator_samples`,
//! `meshlens_simulator_series` and `meshlens_simulator_bytes` (gauges, one sample per step).
#![forbid(unsafe_code)]

mod live;

use std::{
    path::PathBuf,
    time::{Duration, Instant, SystemTime},
};

use metrics_simulation::{Model, Topology};
use metrics_store::eval::Stop;
use plugin_api::{
    BackendStatus, Cancel, MetricQuery, MetricsStore, PluginError, QueryResult, QueryTime,
};

use crate::live::Live;

const KNOWN_KEYS: &[&str] =
    &["topology", "start", "clock", "window_minutes", "timeout_ms", "max_series", "max_bytes"];

/// What "now" is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Clock {
    Wall,
    Query,
}

struct Configured {
    topology: PathBuf,
    clock: Clock,
    live: Live,
    max_series: usize,
}

/// The backend; unusable until `configure` succeeded.
#[derive(Default)]
pub struct Simulator {
    inner: Option<Configured>,
}

fn wall_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Unix seconds from a number or a string of digits (environment overrides arrive as either).
fn seconds(key: &str, v: &serde_json::Value) -> Result<i64, PluginError> {
    let parsed = match v {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    parsed.filter(|n| *n >= 0).ok_or_else(|| {
        PluginError::invalid(format!(
            "metrics.simulator.{key} must be a whole number of seconds, not {v}"
        ))
    })
}

impl MetricsStore for Simulator {
    fn name(&self) -> &str {
        "simulator"
    }

    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        let Some(table) = config.as_object() else {
            return Err(PluginError::invalid("metrics.simulator must be a table with a topology"));
        };
        if let Some(unknown) = table.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
            return Err(PluginError::invalid(format!(
                "metrics.simulator: unknown key {unknown:?} (known keys: {})",
                KNOWN_KEYS.join(", ")
            )));
        }
        let topology = match table.get("topology") {
            Some(serde_json::Value::String(p)) if !p.is_empty() => PathBuf::from(p),
            _ => {
                return Err(PluginError::invalid(
                    "metrics.simulator.topology is required (a topology file)",
                ));
            }
        };
        let clock = match table.get("clock").map(|v| v.as_str()) {
            None | Some(Some("wall")) => Clock::Wall,
            Some(Some("query")) => Clock::Query,
            Some(_) => {
                return Err(PluginError::invalid(
                    "metrics.simulator.clock must be \"wall\" or \"query\"",
                ));
            }
        };
        let start =
            table.get("start").map(|v| seconds("start", v)).transpose()?.unwrap_or_else(wall_now);
        let window = match table.get("window_minutes") {
            None => 60,
            Some(v) => seconds("window_minutes", v)?,
        };
        if !(1..=24 * 60).contains(&window) {
            return Err(PluginError::invalid(
                "metrics.simulator.window_minutes must be between 1 and 1440",
            ));
        }
        let max_series = metrics_store::cap::max_series("simulator", table.get("max_series"))?;
        let started = Instant::now();
        let spec = Topology::load(&topology).map_err(|e| PluginError::invalid(e.to_string()))?;
        let model = Model::new(&spec, start);
        // The query clock starts at `start`; the wall clock at the wall's now.
        let now = if clock == Clock::Query { start } else { wall_now() };
        let live = Live::new(model, window * 60, now);
        tracing::info!(
            topology = %topology.display(),
            series = live.series_count(),
            start,
            ms = started.elapsed().as_millis() as u64,
            "simulating the mesh"
        );
        self.inner = Some(Configured { topology, clock, live, max_series });
        Ok(())
    }

    fn query(&self, query: &MetricQuery, timeout: Duration) -> Result<QueryResult, PluginError> {
        self.query_cancellable(query, timeout, &Cancel::new())
    }

    fn query_cancellable(
        &self,
        query: &MetricQuery,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<QueryResult, PluginError> {
        let stop = Stop::within(timeout, cancel);
        let c = self.configured()?;
        let asked = match query.time {
            QueryTime::Instant(t) => t,
            QueryTime::Range { end, .. } => end,
        };
        let now = match c.clock {
            Clock::Wall => wall_now(),
            Clock::Query => asked,
        };
        c.live.advance_to(now);
        c.live.evaluate(query, stop, c.max_series)
    }

    fn status(&self) -> Result<BackendStatus, PluginError> {
        let c = self.configured()?;
        Ok(BackendStatus {
            name: "Simulator".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            url: c.topology.display().to_string().into(),
        })
    }
}

impl Simulator {
    fn configured(&self) -> Result<&Configured, PluginError> {
        self.inner
            .as_ref()
            .ok_or_else(|| PluginError::internal("the simulator backend is not configured"))
    }
}

plugin_api::register_metrics_backend!(Simulator::default());
plugin_api::export_plugin!(name: "metrics-simulator", version: env!("CARGO_PKG_VERSION"));
