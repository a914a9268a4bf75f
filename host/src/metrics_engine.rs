//! Runs structured metric queries through the active metrics backend.
//!
//! Backend calls are synchronous (the plugin cannot see our runtime), so each runs on the
//! blocking pool, under a deadline, and never on an async worker. Identical queries that
//! are in flight at the same time are sent once and share the answer, and answers to
//! past-time queries are reused for `[metrics] cache_ttl` ([`AnswerCache`]). A query nobody
//! waits for any more is cancelled: the backend call gets a flag it checks
//! ([`inflight`]).

mod inflight;

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use abi_stable::std_types::RResult;
use futures::{FutureExt, future::try_join_all};
use inflight::{Inflight, Joined, Sending, SharedQuery, Waiter, Waiters};
use meshlens_params::{DurationHistogram, HumanDuration};
use meshlens_query_batch::{Answers, QueryBatch};
use plugin_api::{
    BackendStatus, HistogramStat, Matcher, MetricQuery, MetricsBackendBox, QueryResult, QueryTime,
    RangeFunc,
};
use serde::{Deserialize, Serialize};

use meshlens_telemetry::Metrics;

use crate::{
    answer_cache::AnswerCache,
    context::{QueryOutcome, RequestContext},
};

/// `[metrics]`: the active backend, shared settings, and one table per backend.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricsConfig {
    pub backend: String,
    pub timeout: HumanDuration,
    /// `auto` (`None`) detects it from the store.
    #[serde(with = "meshlens_params::duration_histogram_setting")]
    pub duration_histogram: Option<DurationHistogram>,
    /// How long an answer of the backend is reused for identical queries; 0 switches the cache off.
    pub cache_ttl: HumanDuration,
    /// Upper bound of the answer cache's (estimated) size.
    pub cache_max_bytes: u64,
    /// How often the backend's status is asked in the background (for `/status` and `/ready`).
    pub status_interval: HumanDuration,
    /// `/ready` answers 503 when the backend has not answered a status probe for this long.
    pub stale_after: HumanDuration,
    /// `[metrics.<backend>]` tables; anything else here is rejected by `validate`.
    #[serde(flatten)]
    pub backends: BTreeMap<String, serde_json::Value>,
}

impl MetricsConfig {
    /// The checks of `[metrics]` serde cannot make, each reported to `fail` with its key.
    pub(crate) fn problems(&self, fail: &mut impl FnMut(&str, &str)) {
        for (key, d) in [
            ("metrics.timeout", self.timeout),
            ("metrics.status_interval", self.status_interval),
            ("metrics.stale_after", self.stale_after),
        ] {
            if d.0.is_zero() {
                fail(key, "must be above zero");
            }
        }
        for (name, table) in &self.backends {
            if !table.is_object() {
                fail(
                    &format!("metrics.{name}"),
                    "unknown key (backend settings go in a [metrics.<backend>] table)",
                );
            }
        }
    }
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            backend: "prometheus".into(),
            timeout: HumanDuration(Duration::from_secs(10)),
            duration_histogram: None,
            cache_ttl: HumanDuration(Duration::from_secs(10)),
            cache_max_bytes: 64 * 1024 * 1024,
            status_interval: HumanDuration(Duration::from_secs(5)),
            stale_after: HumanDuration(Duration::from_secs(30)),
            backends: BTreeMap::new(),
        }
    }
}

/// Why a query produced no answer.
#[derive(Clone, Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("no metrics backend is available: {0}")]
    NoBackend(String),
    #[error("the metrics store is unavailable: {0}")]
    Unavailable(String),
    #[error("the metrics store did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the metrics store refused the query: {0}")]
    BadQuery(String),
    #[error("metrics backend error: {0}")]
    Internal(String),
    #[error("the metrics store's answer was too large: {0}")]
    TooLarge(String),
    /// Only ever the answer of a query nobody waits for (never handed to a request).
    #[error("the query was cancelled: no request waits for its answer")]
    Cancelled,
}

/// How long a store that had neither request-duration histogram is believed before it is
/// asked again: without this, every request of a mesh without the histogram (TCP only, or
/// Istio configured without it) would wait for the question first.
const NEITHER_RECHECK: Duration = Duration::from_secs(60);

/// What the store said about its request-duration histogram.
#[derive(Clone, Copy, Debug)]
enum Detection {
    Unknown,
    Found(DurationHistogram),
    /// Neither histogram, as of this instant.
    Neither(std::time::Instant),
}

/// A query's answer at hand, or a share of it in flight.
enum Joining<'a> {
    Ready(Result<Arc<QueryResult>, MetricsError>),
    Waiting(SharedQuery, Waiter<'a>),
}

/// The host's one way to the metrics store.
pub struct MetricsEngine {
    backend: Option<Arc<MetricsBackendBox>>,
    backend_name: String,
    missing: String,
    timeout: Duration,
    inflight: Inflight,
    sent: AtomicU64,
    detected: Mutex<Detection>,
    cache: Option<AnswerCache>,
    /// Backend queries in flight at once, over all requests (`limits.max_backend_queries`).
    slots: Arc<tokio::sync::Semaphore>,
    /// Series accepted in one answer (`limits.max_answer_series`).
    max_series: usize,
    /// The self-metrics the queries are counted in.
    telemetry: Arc<Metrics>,
}

impl MetricsEngine {
    /// `backend` is `None` when the configured backend is not loaded; `missing` says why.
    pub fn new(
        backend: Option<Arc<MetricsBackendBox>>,
        backend_name: &str,
        missing: String,
        timeout: Duration,
    ) -> Self {
        MetricsEngine {
            backend,
            backend_name: backend_name.to_string(),
            missing,
            timeout,
            inflight: Inflight::default(),
            sent: AtomicU64::new(0),
            detected: Mutex::new(Detection::Unknown),
            cache: None,
            slots: Arc::new(tokio::sync::Semaphore::new(tokio::sync::Semaphore::MAX_PERMITS)),
            max_series: usize::MAX,
            telemetry: Arc::default(),
        }
    }

    /// Counts the queries in `telemetry` (the service's `/metrics`); until then, in a
    /// registry of the engine's own.
    pub fn with_telemetry(mut self, telemetry: Arc<Metrics>) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Reuses answers of identical past-time queries for `ttl` (zero: never), within `max_bytes`.
    pub fn with_cache(mut self, ttl: Duration, max_bytes: u64) -> Self {
        self.cache = AnswerCache::new(ttl, max_bytes);
        self
    }

    /// The evaluation time of a request whose time defaults to now: now, rounded down to
    /// the cache TTL when the cache is on (so that requests within one TTL share answers).
    pub fn default_time(&self) -> i64 {
        let now = meshlens_params::now();
        self.cache.as_ref().map_or(now, |c| c.align(now))
    }

    /// Bounds backend queries in flight (over all requests) and the series of one answer.
    pub fn with_limits(mut self, max_inflight: usize, max_series: u64) -> Self {
        self.slots = Arc::new(tokio::sync::Semaphore::new(max_inflight.max(1)));
        self.max_series = usize::try_from(max_series).unwrap_or(usize::MAX);
        self
    }

    /// The configured backend's name.
    pub fn backend_name(&self) -> &str {
        &self.backend_name
    }

    /// Queries actually sent to the backend since start (for benchmarks).
    pub fn queries_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Runs one query; joins an identical one already in flight.
    ///
    /// The query runs as its own task: when every caller gives up on it (a sibling query of
    /// the same request failed first, the request timed out, or the client went away) it
    /// leaves the in-flight map at once, its backend call is cancelled, and the task still
    /// finishes on its own. Left unpolled in the map, it would hand its old answer (an error
    /// from an outage, or old data) to the next identical query.
    pub async fn query(
        self: &Arc<Self>,
        rc: &RequestContext,
        q: MetricQuery,
    ) -> Result<Arc<QueryResult>, MetricsError> {
        match self.join(rc, q) {
            Joining::Ready(r) => r,
            Joining::Waiting(shared, waiter) => {
                // Dropped with this future: the last caller to go cancels the query.
                let _waiter = waiter;
                shared.await
            }
        }
    }

    /// Runs every query concurrently; results in the same order. The first failure wins,
    /// and the others are given up, all at once.
    pub async fn query_all(
        self: &Arc<Self>,
        rc: &RequestContext,
        qs: Vec<MetricQuery>,
    ) -> Result<Vec<Arc<QueryResult>>, MetricsError> {
        let mut waiters = Vec::with_capacity(qs.len());
        let answers: Vec<_> = qs
            .into_iter()
            .map(|q| match self.join(rc, q) {
                Joining::Ready(r) => futures::future::ready(r).left_future(),
                Joining::Waiting(shared, waiter) => {
                    waiters.push(waiter);
                    shared.right_future()
                }
            })
            .collect();
        let _waiters = Waiters(waiters);
        try_join_all(answers).await
    }

    /// The cached answer, or a share of the query in flight (started if need be).
    fn join(self: &Arc<Self>, rc: &RequestContext, q: MetricQuery) -> Joining<'_> {
        // The calling request's deadline bounds the backend call too (the first caller's,
        // when identical queries coalesce).
        let deadline = Some(rc.scope().deadline);
        let key = q.cache_key();
        let m = &self.telemetry;
        let cache =
            self.cache.as_ref().filter(|_| AnswerCache::accepts(&q, meshlens_params::now()));
        if let Some(c) = cache {
            if let Some(hit) = c.get(&key, std::time::Instant::now()) {
                m.cache_hits.inc();
                m.backend_query(&self.backend_name, "cached");
                rc.count_query(QueryOutcome::Cached);
                return Joining::Ready(Ok(hit));
            }
            m.cache_misses.inc();
        }
        let keep = cache.is_some_and(|c| c.admits(&key, &q, std::time::Instant::now()));
        let Joined { shared, waiter, coalesced } = self.inflight.join(key.clone(), |sending| {
            let this = self.clone();
            let task = tokio::spawn(async move {
                let r = this.send(q, &key, deadline, &sending).await;
                // A cancelled query's answer goes nowhere: its entry left the map with its
                // last waiter, and it is never cached.
                if this.inflight.answered(&key, &sending)
                    && let (true, Some(c), Ok(answer)) = (keep, &this.cache, &r)
                {
                    // Into the cache before out of the in-flight map: no gap in which an
                    // identical query would be sent again.
                    if let Some((entries, bytes)) =
                        c.insert(key.clone(), answer.clone(), std::time::Instant::now())
                    {
                        this.telemetry.cache_entries.set(entries as i64);
                        this.telemetry.cache_bytes.set(bytes as i64);
                    }
                }
                this.inflight.finish(&key, &sending);
                r
            });
            async move {
                task.await
                    .unwrap_or_else(|_| Err(MetricsError::Internal("query task failed".into())))
            }
            .boxed()
            .shared()
        });
        if coalesced {
            m.backend_query(&self.backend_name, "coalesced");
            rc.count_query(QueryOutcome::Coalesced);
        } else {
            rc.count_query(QueryOutcome::Sent);
        }
        Joining::Waiting(shared, waiter)
    }

    /// Runs a typed batch: every owner's queries at once, each owner's answers by its handle.
    pub async fn fetch(
        self: &Arc<Self>,
        rc: &RequestContext,
        batch: QueryBatch,
    ) -> Result<Answers, MetricsError> {
        let (queries, pending) = batch.send();
        let results = self.query_all(rc, queries).await?;
        pending.answered(results).map_err(|e| MetricsError::Internal(e.to_string()))
    }

    async fn send(
        &self,
        q: MetricQuery,
        key: &str,
        deadline: Option<std::time::Instant>,
        sending: &Arc<Sending>,
    ) -> Result<Arc<QueryResult>, MetricsError> {
        let backend =
            self.backend.clone().ok_or_else(|| MetricsError::NoBackend(self.missing.clone()))?;
        let started = std::time::Instant::now();
        let limit = deadline
            .map_or(self.timeout, |d| d.saturating_duration_since(started).min(self.timeout));
        // Waiting for a slot counts against the deadline, and ends when nobody waits.
        let permit = tokio::select! {
            biased;
            () = sending.abandoned.notified() => None,
            p = tokio::time::timeout(limit, self.slots.clone().acquire_owned()) => match p {
                Ok(Ok(p)) => Some(p),
                _ => return Err(MetricsError::Timeout(self.timeout)),
            },
        };
        // Under the in-flight map's lock, which a request leaving holds until all its
        // queries have left (and their flags are set): one freed slot must not let a
        // sibling through.
        let Some(permit) = permit.filter(|_| self.inflight.wanted(key, sending)) else {
            self.telemetry.backend_query(&self.backend_name, "cancelled");
            tracing::debug!(backend = %self.backend_name, "query cancelled before it was sent");
            return Err(MetricsError::Cancelled);
        };
        let timeout_ms = limit.saturating_sub(started.elapsed()).as_millis().max(1) as u64;
        self.sent.fetch_add(1, Ordering::Relaxed);
        let max_series = self.max_series;
        let cancel = sending.cancel.clone();
        let task = tokio::task::spawn_blocking(move || {
            // The slot is held until the backend call has returned, cancelled or not.
            let _permit = permit;
            backend.query_cancellable(&q, timeout_ms, cancel)
        });
        // The backend enforces the deadline itself; this one guards against a backend that does not.
        let r = match tokio::time::timeout(Duration::from_millis(timeout_ms + 500), task).await {
            // Whatever the backend made of it: nobody takes this answer.
            _ if sending.cancel.is_cancelled() => Err(MetricsError::Cancelled),
            Err(_) => Err(MetricsError::Timeout(self.timeout)),
            Ok(Err(_)) => Err(MetricsError::Internal("query task failed".into())),
            Ok(Ok(RResult::ROk(r))) if r.series.len() > max_series => {
                Err(MetricsError::TooLarge(format!(
                    "{} series, more than {max_series} (limits.max_answer_series)",
                    r.series.len()
                )))
            }
            Ok(Ok(RResult::ROk(r))) => Ok(Arc::new(r)),
            Ok(Ok(RResult::RErr(e))) => Err(match e.kind {
                plugin_api::ErrorKind::InvalidInput => MetricsError::BadQuery(e.message.into()),
                plugin_api::ErrorKind::Unavailable => MetricsError::Unavailable(e.message.into()),
                plugin_api::ErrorKind::Timeout => MetricsError::Timeout(self.timeout),
                plugin_api::ErrorKind::Panic => {
                    self.telemetry.plugin_failure(&self.backend_name, true);
                    MetricsError::Internal(e.message.into())
                }
                _ => {
                    self.telemetry.plugin_failure(&self.backend_name, false);
                    MetricsError::Internal(e.message.into())
                }
            }),
        };
        let m = &self.telemetry;
        m.backend_query_duration
            .get_or_create(&meshlens_telemetry::BackendOnly { backend: self.backend_name.clone() })
            .observe(started.elapsed().as_secs_f64());
        let outcome = match &r {
            Ok(_) => "ok",
            Err(MetricsError::Timeout(_)) => "timeout",
            Err(MetricsError::Cancelled) => {
                tracing::info!(
                    backend = %self.backend_name,
                    ms = started.elapsed().as_millis() as u64,
                    "backend query cancelled: no request waits for its answer"
                );
                "cancelled"
            }
            Err(_) => "error",
        };
        m.backend_query(&self.backend_name, outcome);
        r
    }

    /// Which request-duration histogram to use: the configured one, or (for `auto`, `None`) the one
    /// the store has, detected with one query and remembered once the store answered with
    /// data. Milliseconds when the store has neither, which is asked again after
    /// [`NEITHER_RECHECK`].
    pub async fn duration_unit(
        self: &Arc<Self>,
        rc: &RequestContext,
        configured: Option<DurationHistogram>,
        time: i64,
    ) -> Result<DurationHistogram, MetricsError> {
        if let Some(h) = configured {
            return Ok(h);
        }
        match *self.detected.lock().unwrap_or_else(|e| e.into_inner()) {
            Detection::Found(u) => return Ok(u),
            Detection::Neither(at) if at.elapsed() < NEITHER_RECHECK => {
                return Ok(DurationHistogram::Milliseconds);
            }
            _ => {}
        }
        let names = format!(
            "{}_count|{}_count",
            DurationHistogram::Milliseconds.metric(),
            DurationHistogram::Seconds.metric()
        );
        let probe = MetricQuery {
            metric: "".into(),
            matchers: vec![Matcher::re("__name__", &names)].into(),
            func: RangeFunc::None,
            window_secs: 0,
            group_by: Some(vec!["__name__".into()].into()).into(),
            histogram: HistogramStat::None,
            time: QueryTime::Instant(time),
        };
        let r = self.query(rc, probe).await?;
        let has = |u: DurationHistogram| {
            let name = format!("{}_count", u.metric());
            r.series.iter().any(|s| s.labels.get("__name__") == Some(name.as_str()))
        };
        let unit = if !has(DurationHistogram::Milliseconds) && has(DurationHistogram::Seconds) {
            DurationHistogram::Seconds
        } else {
            DurationHistogram::Milliseconds
        };
        *self.detected.lock().unwrap_or_else(|e| e.into_inner()) = if r.series.is_empty() {
            Detection::Neither(std::time::Instant::now())
        } else {
            Detection::Found(unit)
        };
        Ok(unit)
    }

    /// The store's own status, or `None` when it cannot be had within the deadline.
    pub async fn status(&self) -> Option<BackendStatus> {
        self.probe().await.ok()
    }

    /// The store's own status, or why it cannot be had within the deadline.
    pub async fn probe(&self) -> Result<BackendStatus, MetricsError> {
        let backend =
            self.backend.clone().ok_or_else(|| MetricsError::NoBackend(self.missing.clone()))?;
        let task = tokio::task::spawn_blocking(move || backend.status());
        match tokio::time::timeout(self.timeout, task).await {
            Ok(Ok(RResult::ROk(s))) => Ok(s),
            Ok(Ok(RResult::RErr(e))) => Err(MetricsError::Unavailable(e.message.into())),
            Ok(Err(_)) => Err(MetricsError::Internal("status task failed".into())),
            Err(_) => Err(MetricsError::Timeout(self.timeout)),
        }
    }
}

#[cfg(test)]
mod tests;
