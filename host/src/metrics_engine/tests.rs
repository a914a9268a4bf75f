use std::sync::{Mutex, atomic::AtomicUsize};

use plugin_api::{Cancel, MetricsAdapter, MetricsStore, PluginError};

use super::*;
use crate::error::ApiError;

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
        Ok(one_series(v))
    }
    fn status(&self) -> Result<plugin_api::BackendStatus, PluginError> {
        Err(PluginError::unavailable("down"))
    }
}

fn engine(value: fn(&str, usize) -> f64) -> (Arc<MetricsEngine>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let backend = Arc::new(MetricsAdapter::boxed(Stub { calls: calls.clone(), value }));
    (
        Arc::new(MetricsEngine::new(Some(backend), "stub", String::new(), Duration::from_secs(5))),
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
        .query_all(&bg(), vec![query("a"), query("a"), query("b"), query("a"), query("b")])
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "two distinct queries, each sent once");
    let values: Vec<f64> = results.iter().map(|r| r.series[0].samples[0].v).collect();
    assert_eq!(values, [1.0, 1.0, 2.0, 1.0, 2.0]);
    // Once answered, the same query is sent again (no stale caching).
    engine.query(&bg(), query("a")).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(engine.queries_sent(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_abandoned_by_a_failed_request_is_not_replayed_later() {
    // Each answer is its call number, so an old answer shows.
    let (engine, calls) = engine(|_, call| call as f64);
    // `bad` fails first, so the request gives up on `a` while it is still running.
    assert!(engine.query_all(&bg(), vec![query("a"), query("bad")]).await.is_err());
    // Let the abandoned `a` finish on its own.
    for _ in 0..50 {
        if engine.inflight.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(engine.inflight.is_empty(), "the abandoned query left the map");
    // A later identical query is sent again and gets a fresh answer, not the old one.
    let r = engine.query(&bg(), query("a")).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(r.series[0].samples[0].v, 2.0, "the second call's answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_ttl_past_answers_are_reused_and_future_ones_are_not() {
    let (engine, calls) = engine(|_, call| call as f64);
    let engine =
        Arc::new(Arc::into_inner(engine).unwrap().with_cache(Duration::from_secs(60), 1 << 20));
    let at = |t: i64| MetricQuery { time: QueryTime::Instant(t), ..query("a") };
    // On the TTL's grid (as a time that defaulted to now is): kept at the first answer.
    let first = engine.query(&bg(), at(120)).await.unwrap();
    let again = engine.query(&bg(), at(120)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the second identical query is a cache hit");
    assert!(Arc::ptr_eq(&first, &again));
    // Off the grid (a client's own "now"): kept from the second time it is asked.
    for _ in 0..3 {
        engine.query(&bg(), at(100)).await.unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3, "sent twice, then a cache hit");
    let future = meshlens_params::now() + 3600;
    engine.query(&bg(), at(future)).await.unwrap();
    engine.query(&bg(), at(future)).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 5, "a future time is never cached");
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
    let engine =
        Arc::new(MetricsEngine::new(Some(backend), "empty", String::new(), Duration::from_secs(5)));
    for _ in 0..3 {
        let unit = engine.duration_unit(&bg(), None, 100).await.unwrap();
        assert_eq!(unit, DurationHistogram::Milliseconds);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "asked once, then believed");
    // Once the answer is older than the recheck period, the store is asked again.
    let old = std::time::Instant::now().checked_sub(NEITHER_RECHECK).expect("uptime past a minute");
    *engine.detected.lock().unwrap() = Detection::Neither(old);
    engine.duration_unit(&bg(), None, 100).await.unwrap();
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
    let err = engine.query(&bg(), query("a")).await.unwrap_err();
    assert!(matches!(err, MetricsError::NoBackend(_)));
    assert_eq!(ApiError::from(err).status().as_u16(), 503);
}

/// The first `spin` calls run until their flag is set and then answer -1, as a backend
/// that finishes anyway would; later calls answer their call number at once. Keeps every
/// flag it was handed.
struct Spinner {
    spin: usize,
    calls: AtomicUsize,
    flags: Arc<Mutex<Vec<Cancel>>>,
    /// When the flag of a spinning call was seen set.
    seen: Arc<Mutex<Option<std::time::Instant>>>,
}

impl MetricsStore for Spinner {
    fn name(&self) -> &str {
        "spinner"
    }
    fn configure(&mut self, _: &serde_json::Value) -> Result<(), PluginError> {
        Ok(())
    }
    fn query(&self, _: &MetricQuery, _: Duration) -> Result<QueryResult, PluginError> {
        Err(PluginError::internal("the host calls query_cancellable"))
    }
    fn query_cancellable(
        &self,
        _: &MetricQuery,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<QueryResult, PluginError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.flags.lock().unwrap().push(cancel.clone());
        let until = std::time::Instant::now() + timeout;
        let v = if n <= self.spin {
            while !cancel.is_cancelled() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            if cancel.is_cancelled() {
                *self.seen.lock().unwrap() = Some(std::time::Instant::now());
            }
            -1.0
        } else {
            n as f64
        };
        Ok(one_series(v))
    }
    fn status(&self) -> Result<plugin_api::BackendStatus, PluginError> {
        Err(PluginError::unavailable("down"))
    }
}

struct Spinning {
    engine: Arc<MetricsEngine>,
    flags: Arc<Mutex<Vec<Cancel>>>,
    seen: Arc<Mutex<Option<std::time::Instant>>>,
}

impl Spinning {
    /// With the answer cache on, so a cancelled answer would show if it were kept.
    fn new(spin: usize) -> Spinning {
        let flags = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(None));
        let store =
            Spinner { spin, calls: AtomicUsize::new(0), flags: flags.clone(), seen: seen.clone() };
        let engine = MetricsEngine::new(
            Some(Arc::new(MetricsAdapter::boxed(store))),
            "spinner",
            String::new(),
            Duration::from_secs(30),
        )
        .with_cache(Duration::from_secs(60), 1 << 20);
        Spinning { engine: Arc::new(engine), flags, seen }
    }

    fn flag(&self, call: usize) -> Option<Cancel> {
        self.flags.lock().unwrap().get(call).cloned()
    }

    /// Waits (bounded) until `call` has reached the store.
    async fn started(&self, call: usize) -> Cancel {
        for _ in 0..500 {
            if let Some(f) = self.flag(call) {
                return f;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("call {call} never reached the store");
    }

    /// Waits (bounded) until the store saw a flag set; how long after `since`.
    async fn seen_after(&self, since: std::time::Instant) -> Duration {
        for _ in 0..500 {
            if let Some(at) = *self.seen.lock().unwrap() {
                return at.saturating_duration_since(since);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the store never saw its flag set");
    }

    async fn waiters_become(&self, n: usize) {
        self.waiters_of("a", n).await
    }

    async fn waiters_of(&self, metric: &str, n: usize) {
        let key = query(metric).cache_key();
        for _ in 0..500 {
            if self.engine.inflight.waiters(&key) == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(self.engine.inflight.waiters(&key), n, "callers waiting");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_whose_only_caller_leaves_is_cancelled_in_the_store() {
    let s = Spinning::new(1);
    let caller = tokio::spawn({
        let engine = s.engine.clone();
        async move { engine.query(&bg(), query("a")).await }
    });
    let flag = s.started(0).await;
    assert!(!flag.is_cancelled());
    let left = std::time::Instant::now();
    caller.abort();
    let took = s.seen_after(left).await;
    // A figure, not an assertion: speed is for benchmarks.
    println!("the store saw the flag {took:?} after the caller left");
    assert!(flag.is_cancelled());
    assert!(s.engine.inflight.is_empty(), "the cancelled query left the map");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coalesced_query_is_cancelled_only_when_every_caller_left() {
    let s = Spinning::new(1);
    let spawn = || {
        let engine = s.engine.clone();
        tokio::spawn(async move { engine.query(&bg(), query("a")).await })
    };
    let (first, second) = (spawn(), spawn());
    let flag = s.started(0).await;
    s.waiters_become(2).await;
    first.abort();
    s.waiters_become(1).await;
    // The flag is set under the map's lock as the count reaches zero, so this is final.
    assert!(!flag.is_cancelled(), "one caller still waits");
    second.abort();
    s.seen_after(std::time::Instant::now()).await;
    assert!(flag.is_cancelled());
    assert_eq!(s.flags.lock().unwrap().len(), 1, "sent once for both callers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_cancelled_query_an_identical_one_is_sent_again() {
    let s = Spinning::new(1);
    let caller = tokio::spawn({
        let engine = s.engine.clone();
        async move { engine.query(&bg(), query("a")).await }
    });
    s.started(0).await;
    caller.abort();
    s.waiters_become(0).await;
    // Asked again at once, while the cancelled call may still be on its way out: a new
    // call, not the old one joined, and its answer neither cached nor handed over (-1).
    let r = s.engine.query(&bg(), query("a")).await.unwrap();
    assert_eq!(r.series[0].samples[0].v, 2.0, "the second call's answer");
    s.seen_after(std::time::Instant::now()).await;
    // Let the cancelled call's task finish; it must not disturb what came after it.
    for _ in 0..100 {
        if s.engine.inflight.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let again = s.engine.query(&bg(), query("a")).await.unwrap();
    assert_eq!(again.series[0].samples[0].v, 2.0, "the cached second answer");
    assert_eq!(s.flags.lock().unwrap().len(), 2, "two calls reached the store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_waiting_for_a_backend_slot_is_dropped_without_reaching_the_store() {
    let mut s = Spinning::new(1);
    s.engine = Arc::new(Arc::into_inner(s.engine).unwrap().with_limits(1, u64::MAX));
    let spawn = |metric: &'static str| {
        let engine = s.engine.clone();
        tokio::spawn(async move { engine.query(&bg(), query(metric)).await })
    };
    let holder = spawn("a");
    s.started(0).await;
    let queued = spawn("b");
    s.waiters_of("b", 1).await;
    queued.abort();
    s.waiters_of("b", 0).await;
    holder.abort();
    s.seen_after(std::time::Instant::now()).await;
    // The slot is free again: a third query reaches the store as its second call.
    let r = s.engine.query(&bg(), query("c")).await.unwrap();
    assert_eq!(r.series[0].samples[0].v, 2.0);
    assert_eq!(s.flags.lock().unwrap().len(), 2, "the queued query never reached the store");
}

/// An answer of one unlabelled series with one sample, `v`.
fn one_series(v: f64) -> QueryResult {
    QueryResult {
        series: vec![plugin_api::Series {
            labels: Default::default(),
            samples: vec![plugin_api::Sample { t: 0.0, v }].into(),
        }]
        .into(),
    }
}

/// A context outside any request: only the engine's own timeout bounds a query.
fn bg() -> crate::context::RequestContext {
    crate::context::RequestContext::background()
}
