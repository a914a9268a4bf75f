//! Runs structured metric queries through the active metrics backend.
//!
//! Backend calls are synchronous (the plugin cannot see our runtime), so each runs on the
//! blocking pool, under a deadline, and never on an async worker. Identical queries that
//! are in flight at the same time are sent once and share the answer, and answers to
//! past-time queries are reused for `[metrics] cache_ttl` ([`AnswerCache`]).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use abi_stable::std_types::RResult;
use futures::{
    FutureExt,
    future::{BoxFuture, Shared, try_join_all},
};
use meshlens_query_batch::{Answers, QueryBatch};
use plugin_api::{
    BackendStatus, HistogramStat, Matcher, MetricQuery, MetricsBackendBox, QueryResult, QueryTime,
    RangeFunc,
};

use crate::{
    answer_cache::AnswerCache,
    config::DurationHistogram,
    error::ApiError,
    telemetry::{self, QueryOutcome},
};

/// The request-duration histogram a store holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationUnit {
    /// `istio_request_duration_milliseconds` (current Istio).
    Milliseconds,
    /// `istio_request_duration_seconds` (older Istio).
    Seconds,
}

impl DurationUnit {
    /// The histogram's base name.
    pub fn metric(self) -> &'static str {
        match self {
            DurationUnit::Milliseconds => "istio_request_duration_milliseconds",
            DurationUnit::Seconds => "istio_request_duration_seconds",
        }
    }
    /// Factor from the histogram's unit to milliseconds.
    pub fn to_ms(self) -> f64 {
        match self {
            DurationUnit::Milliseconds => 1.0,
            DurationUnit::Seconds => 1000.0,
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
}

impl From<MetricsError> for ApiError {
    fn from(e: MetricsError) -> Self {
        match e {
            MetricsError::BadQuery(_) => ApiError::bad_request(e.to_string()),
            MetricsError::Internal(_) | MetricsError::TooLarge(_) => {
                ApiError::internal(e.to_string())
            }
            _ => ApiError::unavailable(e.to_string()),
        }
    }
}

/// How long a store that had neither request-duration histogram is believed before it is
/// asked again: without this, every request of a mesh without the histogram (TCP only, or
/// Istio configured without it) would wait for the question first.
const NEITHER_RECHECK: Duration = Duration::from_secs(60);

/// What the store said about its request-duration histogram.
#[derive(Clone, Copy, Debug)]
enum Detection {
    Unknown,
    Found(DurationUnit),
    /// Neither histogram, as of this instant.
    Neither(std::time::Instant),
}

type SharedQuery = Shared<BoxFuture<'static, Result<Arc<QueryResult>, MetricsError>>>;

/// The host's one way to the metrics store.
pub struct MetricsEngine {
    backend: Option<Arc<MetricsBackendBox>>,
    backend_name: String,
    missing: String,
    timeout: Duration,
    inflight: Mutex<HashMap<String, SharedQuery>>,
    sent: AtomicU64,
    detected: Mutex<Detection>,
    cache: Option<AnswerCache>,
    /// Backend queries in flight at once, over all requests (`limits.max_backend_queries`).
    slots: Arc<tokio::sync::Semaphore>,
    /// Series accepted in one answer (`limits.max_answer_series`).
    max_series: usize,
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
            inflight: Mutex::new(HashMap::new()),
            sent: AtomicU64::new(0),
            detected: Mutex::new(Detection::Unknown),
            cache: None,
            slots: Arc::new(tokio::sync::Semaphore::new(tokio::sync::Semaphore::MAX_PERMITS)),
            max_series: usize::MAX,
        }
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
    /// the same request failed first, or the client went away) it still finishes and leaves
    /// the in-flight map. Left unpolled in the map, it would hand its old answer (an error
    /// from an outage, or old data) to the next identical query.
    pub async fn query(self: &Arc<Self>, q: MetricQuery) -> Result<Arc<QueryResult>, MetricsError> {
        // The calling request's deadline bounds the backend call too (the first caller's,
        // when identical queries coalesce).
        let deadline = crate::limits::current().map(|s| s.deadline);
        let key = q.cache_key();
        let m = telemetry::metrics();
        let cache =
            self.cache.as_ref().filter(|_| AnswerCache::accepts(&q, meshlens_params::now()));
        if let Some(c) = cache {
            if let Some(hit) = c.get(&key, std::time::Instant::now()) {
                m.cache_hits.inc();
                m.backend_query(&self.backend_name, "cached");
                telemetry::count_query(QueryOutcome::Cached);
                return Ok(hit);
            }
            m.cache_misses.inc();
        }
        let keep = cache.is_some();
        let fut = {
            let mut map = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(f) = map.get(&key) {
                m.backend_query(&self.backend_name, "coalesced");
                telemetry::count_query(QueryOutcome::Coalesced);
                f.clone()
            } else {
                telemetry::count_query(QueryOutcome::Sent);
                let this = self.clone();
                let k = key.clone();
                let task = tokio::spawn(async move {
                    let r = this.send(q, deadline).await;
                    // Into the cache before out of the in-flight map: no gap in which an
                    // identical query would be sent again.
                    if let (true, Some(c), Ok(answer)) = (keep, &this.cache, &r) {
                        c.insert(k.clone(), answer.clone(), std::time::Instant::now());
                    }
                    this.inflight.lock().unwrap_or_else(|e| e.into_inner()).remove(&k);
                    r
                });
                let f = async move {
                    task.await
                        .unwrap_or_else(|_| Err(MetricsError::Internal("query task failed".into())))
                }
                .boxed()
                .shared();
                map.insert(key, f.clone());
                f
            }
        };
        fut.await
    }

    /// Runs every query concurrently; results in the same order. The first failure wins.
    pub async fn query_all(
        self: &Arc<Self>,
        qs: Vec<MetricQuery>,
    ) -> Result<Vec<Arc<QueryResult>>, MetricsError> {
        try_join_all(qs.into_iter().map(|q| self.query(q))).await
    }

    /// Runs a typed batch: every owner's queries at once, each owner's answers by its handle.
    pub async fn fetch(self: &Arc<Self>, batch: QueryBatch) -> Result<Answers, MetricsError> {
        let (queries, pending) = batch.send();
        let results = self.query_all(queries).await?;
        pending.answered(results).map_err(|e| MetricsError::Internal(e.to_string()))
    }

    async fn send(
        &self,
        q: MetricQuery,
        deadline: Option<std::time::Instant>,
    ) -> Result<Arc<QueryResult>, MetricsError> {
        let backend =
            self.backend.clone().ok_or_else(|| MetricsError::NoBackend(self.missing.clone()))?;
        let started = std::time::Instant::now();
        let limit = deadline
            .map_or(self.timeout, |d| d.saturating_duration_since(started).min(self.timeout));
        // Waiting for a slot counts against the deadline.
        let permit = match tokio::time::timeout(limit, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => p,
            _ => return Err(MetricsError::Timeout(self.timeout)),
        };
        let timeout_ms = limit.saturating_sub(started.elapsed()).as_millis().max(1) as u64;
        self.sent.fetch_add(1, Ordering::Relaxed);
        let max_series = self.max_series;
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            backend.query(&q, timeout_ms)
        });
        // The backend enforces the deadline itself; this one guards against a backend that does not.
        let r = match tokio::time::timeout(Duration::from_millis(timeout_ms + 500), task).await {
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
                    telemetry::metrics().plugin_failure(&self.backend_name, true);
                    MetricsError::Internal(e.message.into())
                }
                _ => {
                    telemetry::metrics().plugin_failure(&self.backend_name, false);
                    MetricsError::Internal(e.message.into())
                }
            }),
        };
        let m = telemetry::metrics();
        m.backend_query_duration
            .get_or_create(&meshlens_telemetry::BackendOnly { backend: self.backend_name.clone() })
            .observe(started.elapsed().as_secs_f64());
        let outcome = match &r {
            Ok(_) => "ok",
            Err(MetricsError::Timeout(_)) => "timeout",
            Err(_) => "error",
        };
        m.backend_query(&self.backend_name, outcome);
        r
    }

    /// Which request-duration histogram to use: the configured one, or (for `auto`) the one
    /// the store has, detected with one query and remembered once the store answered with
    /// data. Milliseconds when the store has neither, which is asked again after
    /// [`NEITHER_RECHECK`].
    pub async fn duration_unit(
        self: &Arc<Self>,
        configured: DurationHistogram,
        time: i64,
    ) -> Result<DurationUnit, MetricsError> {
        match configured {
            DurationHistogram::Milliseconds => return Ok(DurationUnit::Milliseconds),
            DurationHistogram::Seconds => return Ok(DurationUnit::Seconds),
            DurationHistogram::Auto => {}
        }
        match *self.detected.lock().unwrap_or_else(|e| e.into_inner()) {
            Detection::Found(u) => return Ok(u),
            Detection::Neither(at) if at.elapsed() < NEITHER_RECHECK => {
                return Ok(DurationUnit::Milliseconds);
            }
            _ => {}
        }
        let names = format!(
            "{}_count|{}_count",
            DurationUnit::Milliseconds.metric(),
            DurationUnit::Seconds.metric()
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
        let r = self.query(probe).await?;
        let has = |u: DurationUnit| {
            let name = format!("{}_count", u.metric());
            r.series
                .iter()
                .any(|s| plugin_api::label_value(&s.labels, "__name__") == Some(name.as_str()))
        };
        let unit = if !has(DurationUnit::Milliseconds) && has(DurationUnit::Seconds) {
            DurationUnit::Seconds
        } else {
            DurationUnit::Milliseconds
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
mod tests {
    use std::sync::atomic::AtomicUsize;

    use plugin_api::{MetricsAdapter, MetricsStore, PluginError};

    use super::*;

    /// Fails metric `bad` at once; answers any other after 200 ms (so concurrent callers
    /// overlap) with `value(metric, call number)`, counting the calls it answers.
    struct Stub {
        calls: Arc<AtomicUsize>,
        value: fn(&str, usize) -> f64,
    }

    impl MetricsStore for Stub {
        fn name(&self) -> &str {
            "stub"
        }
        fn configure(&mut self, _: &serde_json::Value) -> Result<(), PluginError> {
            Ok(())
        }
        fn query(&self, q: &MetricQuery, _: Duration) -> Result<QueryResult, PluginError> {
            if q.metric.as_str() == "bad" {
                return Err(PluginError::unavailable("down"));
            }
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            std::thread::sleep(Duration::from_millis(200));
            let v = (self.value)(q.metric.as_str(), n);
            Ok(QueryResult {
                series: vec![plugin_api::Series {
                    labels: Default::default(),
                    samples: vec![plugin_api::Sample { t: 0.0, v }].into(),
                }]
                .into(),
            })
        }
        fn status(&self) -> Result<plugin_api::BackendStatus, PluginError> {
            Err(PluginError::unavailable("down"))
        }
    }

    fn engine(value: fn(&str, usize) -> f64) -> (Arc<MetricsEngine>, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let backend = Arc::new(MetricsAdapter::boxed(Stub { calls: calls.clone(), value }));
        (
            Arc::new(MetricsEngine::new(
                Some(backend),
                "stub",
                String::new(),
                Duration::from_secs(5),
            )),
            calls,
        )
    }

    fn query(metric: &str) -> MetricQuery {
        MetricQuery {
            metric: metric.into(),
            matchers: Vec::new().into(),
            func: RangeFunc::Rate,
            window_secs: 60,
            group_by: Some(Vec::new().into()).into(),
            histogram: HistogramStat::None,
            time: QueryTime::Instant(100),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn identical_queries_in_flight_together_are_sent_once() {
        let (engine, calls) = engine(|metric, _| if metric == "a" { 1.0 } else { 2.0 });
        let results = engine
            .query_all(vec![query("a"), query("a"), query("b"), query("a"), query("b")])
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2, "two distinct queries, each sent once");
        let values: Vec<f64> = results.iter().map(|r| r.series[0].samples[0].v).collect();
        assert_eq!(values, [1.0, 1.0, 2.0, 1.0, 2.0]);
        // Once answered, the same query is sent again (no stale caching).
        engine.query(query("a")).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(engine.queries_sent(), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_query_abandoned_by_a_failed_request_is_not_replayed_later() {
        // Each answer is its call number, so an old answer shows.
        let (engine, calls) = engine(|_, call| call as f64);
        // `bad` fails first, so the request gives up on `a` while it is still running.
        assert!(engine.query_all(vec![query("a"), query("bad")]).await.is_err());
        // Let the abandoned `a` finish on its own.
        for _ in 0..50 {
            if engine.inflight.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            engine.inflight.lock().unwrap_or_else(|e| e.into_inner()).is_empty(),
            "the abandoned query left the map"
        );
        // A later identical query is sent again and gets a fresh answer, not the old one.
        let r = engine.query(query("a")).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(r.series[0].samples[0].v, 2.0, "the second call's answer");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_a_ttl_past_answers_are_reused_and_future_ones_are_not() {
        let (engine, calls) = engine(|_, call| call as f64);
        let engine =
            Arc::new(Arc::into_inner(engine).unwrap().with_cache(Duration::from_secs(60), 1 << 20));
        let at = |t: i64| MetricQuery { time: QueryTime::Instant(t), ..query("a") };
        let first = engine.query(at(100)).await.unwrap();
        let again = engine.query(at(100)).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "the second identical query is a cache hit");
        assert!(Arc::ptr_eq(&first, &again));
        let future = meshlens_params::now() + 3600;
        engine.query(at(future)).await.unwrap();
        engine.query(at(future)).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3, "a future time is never cached");
        // "now" is aligned to the TTL.
        assert_eq!(engine.default_time() % 60, 0);
    }

    /// A store with no data at all: every answer is empty.
    struct Empty(Arc<AtomicUsize>);

    impl MetricsStore for Empty {
        fn name(&self) -> &str {
            "empty"
        }
        fn configure(&mut self, _: &serde_json::Value) -> Result<(), PluginError> {
            Ok(())
        }
        fn query(&self, _: &MetricQuery, _: Duration) -> Result<QueryResult, PluginError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(QueryResult::default())
        }
        fn status(&self) -> Result<plugin_api::BackendStatus, PluginError> {
            Err(PluginError::unavailable("down"))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_without_either_histogram_is_asked_once_a_minute() {
        let calls = Arc::new(AtomicUsize::new(0));
        let backend = Arc::new(MetricsAdapter::boxed(Empty(calls.clone())));
        let engine = Arc::new(MetricsEngine::new(
            Some(backend),
            "empty",
            String::new(),
            Duration::from_secs(5),
        ));
        for _ in 0..3 {
            let unit = engine.duration_unit(DurationHistogram::Auto, 100).await.unwrap();
            assert_eq!(unit, DurationUnit::Milliseconds);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "asked once, then believed");
        // Once the answer is older than the recheck period, the store is asked again.
        let old =
            std::time::Instant::now().checked_sub(NEITHER_RECHECK).expect("uptime past a minute");
        *engine.detected.lock().unwrap() = Detection::Neither(old);
        engine.duration_unit(DurationHistogram::Auto, 100).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2, "asked again after a minute");
    }

    #[tokio::test]
    async fn without_a_backend_queries_are_unavailable() {
        let engine = Arc::new(MetricsEngine::new(
            None,
            "prometheus",
            "not loaded".into(),
            Duration::from_secs(1),
        ));
        let err = engine.query(query("a")).await.unwrap_err();
        assert!(matches!(err, MetricsError::NoBackend(_)));
        assert_eq!(ApiError::from(err).status().as_u16(), 503);
    }
}
