//! Bounds on what requests cost: the `[limits]` cost limits handed to the parsers,
//! admission control for expensive operations, the CPU pool, and the per-request scope
//! (deadline and cancellation) that CPU work and backend calls check.

use std::{
    sync::{
        Arc, OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use meshlens_dashboards::ParamLimits;
use meshlens_params::HumanDuration;
use meshlens_telemetry::Metrics;
use meshlens_traffic::GraphLimits;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// `[limits]`: what one request may cost, and how many run at once.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// `quantiles[]` values per request.
    pub max_quantiles: usize,
    /// `byLabels[]` values per request.
    pub max_by_labels: usize,
    /// Namespaces in one graph.
    pub max_graph_namespaces: usize,
    /// Longest `duration` and `rateInterval`.
    pub max_window: HumanDuration,
    /// How far past the server's clock `queryTime` may be.
    pub max_query_time_skew: HumanDuration,
    /// Points per range series (range / step).
    pub max_points: u64,
    /// Series accepted in one backend answer.
    pub max_answer_series: u64,
    /// Bytes accepted in one backend answer.
    pub max_answer_bytes: u64,
    /// Expensive requests (graph, dashboards, health, metrics, validations) running at once.
    pub max_concurrent_requests: usize,
    /// Expensive requests waiting for a slot; more are refused at once.
    pub max_queued_requests: usize,
    /// Longest wait for a slot before a 503 with `Retry-After`.
    pub queue_wait: HumanDuration,
    /// Backend queries in flight at once, over all requests.
    pub max_backend_queries: usize,
    /// Threads of the CPU pool (graph build, appenders, output); 0: one per core.
    pub cpu_threads: usize,
}

impl LimitsConfig {
    /// The checks of `[limits]` serde cannot make, each reported to `fail` with its key.
    pub(crate) fn problems(&self, fail: &mut impl FnMut(&str, &str)) {
        for (key, v) in [
            ("limits.max_points", self.max_points),
            ("limits.max_answer_series", self.max_answer_series),
            ("limits.max_answer_bytes", self.max_answer_bytes),
            ("limits.max_concurrent_requests", self.max_concurrent_requests as u64),
            ("limits.max_backend_queries", self.max_backend_queries as u64),
            ("limits.max_window", self.max_window.0.as_secs()),
        ] {
            if v == 0 {
                fail(key, "must be above zero");
            }
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_quantiles: 10,
            max_by_labels: 10,
            max_graph_namespaces: 1000,
            max_window: HumanDuration(Duration::from_secs(30 * 86_400)),
            max_query_time_skew: HumanDuration(Duration::from_secs(300)),
            max_points: 11_000,
            max_answer_series: 100_000,
            max_answer_bytes: 64 * 1024 * 1024,
            max_concurrent_requests: 16,
            max_queued_requests: 64,
            queue_wait: HumanDuration(Duration::from_secs(2)),
            max_backend_queries: 32,
            cpu_threads: 0,
        }
    }
}

impl LimitsConfig {
    /// The limits graph parameters are checked against, at the server's clock `now`.
    pub fn graph(&self, now: i64) -> GraphLimits {
        GraphLimits {
            max_namespaces: self.max_graph_namespaces,
            max_window_secs: self.max_window.0.as_secs(),
            max_future_secs: self.max_query_time_skew.0.as_secs(),
            now,
        }
    }

    /// The limits dashboard and namespaceMetrics parameters are checked against, at `now`.
    pub fn params(&self, now: i64) -> ParamLimits {
        ParamLimits {
            max_quantiles: self.max_quantiles,
            max_by_labels: self.max_by_labels,
            max_window_secs: self.max_window.0.as_secs(),
            max_future_secs: self.max_query_time_skew.0.as_secs(),
            max_points: i64::try_from(self.max_points).unwrap_or(i64::MAX),
            now,
        }
    }

    /// A window parameter (`rateInterval`) of `secs` seconds, or the 400 naming it and the limit.
    pub fn check_window(&self, name: &str, secs: u64) -> Result<u64, ApiError> {
        let max = self.max_window.0.as_secs();
        if secs > max {
            return Err(ApiError::bad_request(format!(
                "invalid value for query parameter '{name}': at most {max}s is accepted (limits.max_window)"
            )));
        }
        Ok(secs)
    }
}

/// Admission control for expensive operations: a fixed number run at once, a short
/// bounded queue waits for a slot, and the rest are refused with 503 and `Retry-After`.
/// A waiting request holds only its parsed request, never answers or buffers.
pub struct Admission {
    slots: Arc<Semaphore>,
    queued: AtomicUsize,
    max_queued: usize,
    wait: Duration,
    telemetry: Arc<Metrics>,
}

/// Undoes the queue count however the wait ends (admitted, timed out, or dropped).
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Admission {
    pub fn new(limits: &LimitsConfig) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(limits.max_concurrent_requests.max(1))),
            queued: AtomicUsize::new(0),
            max_queued: limits.max_queued_requests,
            wait: limits.queue_wait.0,
            telemetry: Arc::default(),
        }
    }

    /// Counts queued and refused requests in `telemetry` (the service's `/metrics`).
    pub fn with_telemetry(mut self, telemetry: Arc<Metrics>) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// A slot, at once or after a bounded wait; `Overloaded` when none comes.
    pub async fn admit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let m = &self.telemetry;
        if self.queued.fetch_add(1, Ordering::SeqCst) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            m.admission_refused.inc();
            return Err(ApiError::Overloaded(
                "the service is busy: too many requests are waiting; retry later".into(),
            ));
        }
        let _queued = Queued(&self.queued);
        m.admission_queued.inc();
        let waited = tokio::time::timeout(self.wait, self.slots.clone().acquire_owned()).await;
        m.admission_queued.dec();
        match waited {
            Ok(Ok(permit)) => Ok(permit),
            _ => {
                m.admission_refused.inc();
                Err(ApiError::Overloaded(
                    "the service is busy: no capacity within the queue wait; retry later".into(),
                ))
            }
        }
    }

    /// Slots in use (for tests and diagnostics).
    pub fn in_use(&self, limits: &LimitsConfig) -> usize {
        limits.max_concurrent_requests.max(1).saturating_sub(self.slots.available_permits())
    }
}

/// One request's deadline and cancellation flag. The router cancels it when the request
/// ends for any reason (answered, timed out, client gone); CPU work checks it between
/// steps and stops.
#[derive(Clone, Debug)]
pub struct Scope {
    pub deadline: Instant,
    /// When the request was cancelled (the first time).
    cancelled: Arc<OnceLock<Instant>>,
    /// The same news for plugin calls on the request's behalf (appenders), across the ABI.
    plugin_flag: plugin_api::Cancel,
}

impl Scope {
    pub fn new(timeout: Duration) -> Scope {
        Scope {
            deadline: Instant::now() + timeout,
            cancelled: Arc::new(OnceLock::new()),
            plugin_flag: plugin_api::Cancel::new(),
        }
    }

    /// Marks the request as gone. A request past its deadline is cancelled too, when the
    /// router gives up on it.
    pub fn cancel(&self) {
        let _ = self.cancelled.set(Instant::now());
        self.plugin_flag.cancel();
    }

    /// The flag a plugin called for this request checks: set once the request is cancelled.
    pub fn plugin_cancel(&self) -> plugin_api::Cancel {
        self.plugin_flag.clone()
    }

    /// Whether the work should stop: cancelled, or past the deadline.
    pub fn is_done(&self) -> bool {
        self.cancelled.get().is_some() || Instant::now() >= self.deadline
    }

    /// Since when the work should have stopped (cancelled, or the deadline passed, whichever
    /// came first); `None` while it is still wanted.
    pub fn done_since(&self) -> Option<Instant> {
        let past_deadline = (Instant::now() >= self.deadline).then_some(self.deadline);
        match (self.cancelled.get().copied(), past_deadline) {
            (Some(c), Some(d)) => Some(c.min(d)),
            (c, d) => c.or(d),
        }
    }

    /// `Err` once the work should stop (the request's answer is no longer wanted).
    pub fn check(&self) -> Result<(), ApiError> {
        if self.is_done() { Err(Scope::gone()) } else { Ok(()) }
    }

    /// The error of work stopped because its request is gone.
    pub fn gone() -> ApiError {
        ApiError::unavailable("the request was cancelled or timed out")
    }

    /// Time left before the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// A guard that cancels the scope when dropped.
    pub fn cancel_on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

/// Cancels its scope when dropped (the router holds one for the request's whole life).
pub struct CancelOnDrop(Scope);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// CPU-bound work (graph build, appenders, output) runs here, on one thread per core,
/// apart from the async workers and the blocking pool, so cheap operations keep answering
/// while graphs saturate it.
pub struct CpuPool {
    pool: rayon::ThreadPool,
    busy: Arc<AtomicUsize>,
    telemetry: Arc<Metrics>,
}

impl CpuPool {
    pub fn new(threads: usize) -> Result<CpuPool, String> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
        } else {
            threads
        };
        // The pool's threads log where the thread that made the pool logs: the global
        // subscriber in the binary; a test running services in its process gives each its own.
        let creator = tracing::dispatcher::get_default(|d| d.clone());
        let scoped = (!creator.is::<tracing::subscriber::NoSubscriber>()).then_some(creator);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("meshlens-cpu-{i}"))
            .spawn_handler(move |thread| {
                let mut b = std::thread::Builder::new();
                if let Some(name) = thread.name() {
                    b = b.name(name.to_string());
                }
                if let Some(size) = thread.stack_size() {
                    b = b.stack_size(size);
                }
                let d = scoped.clone();
                b.spawn(move || match d {
                    Some(d) => tracing::dispatcher::with_default(&d, || thread.run()),
                    None => thread.run(),
                })?;
                Ok(())
            })
            .build()
            .map_err(|e| format!("cannot start the CPU pool: {e}"))?;
        Ok(CpuPool { pool, busy: Arc::new(AtomicUsize::new(0)), telemetry: Arc::default() })
    }

    /// Shows the busy count in `telemetry` (the service's `/metrics`).
    pub fn with_telemetry(mut self, telemetry: Arc<Metrics>) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Jobs running now.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::SeqCst)
    }

    /// Runs `job` on the pool and waits for it. A job whose request is already gone when
    /// its turn comes is skipped; `keep` (the request's admission slot) is released only
    /// when the job has stopped, so the slot count bounds CPU work too.
    pub async fn run<T: Send + 'static>(
        &self,
        scope: &Scope,
        keep: Option<OwnedSemaphorePermit>,
        job: impl FnOnce(&Scope) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let scope = scope.clone();
        let busy = self.busy.clone();
        let telemetry = self.telemetry.clone();
        self.pool.spawn(move || {
            let _keep = keep;
            let result = match scope.check() {
                Ok(()) => {
                    let gauge = &telemetry.cpu_pool_busy;
                    busy.fetch_add(1, Ordering::SeqCst);
                    gauge.inc();
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&scope)))
                        .unwrap_or_else(|_| {
                            Err(ApiError::internal("internal error while building the answer"))
                        });
                    // With how long the pool ran on for a request already gone: the time that
                    // cancellation is to keep short.
                    if r.is_err()
                        && let Some(since) = scope.done_since()
                    {
                        let late_us =
                            u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
                        tracing::info!(
                            stopped_after_us = late_us,
                            "request gone: its CPU work stopped"
                        );
                    }
                    busy.fetch_sub(1, Ordering::SeqCst);
                    gauge.dec();
                    r
                }
                Err(e) => Err(e),
            };
            let _ = tx.send(result);
        });
        rx.await.map_err(|_| ApiError::internal("CPU task failed"))?
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    fn limits(concurrent: usize, queued: usize, wait_ms: u64) -> LimitsConfig {
        LimitsConfig {
            max_concurrent_requests: concurrent,
            max_queued_requests: queued,
            queue_wait: crate::config::HumanDuration(Duration::from_millis(wait_ms)),
            ..LimitsConfig::default()
        }
    }

    #[tokio::test]
    async fn excess_requests_wait_then_are_refused() {
        let a = Arc::new(Admission::new(&limits(1, 1, 50)));
        let first = a.admit().await.unwrap();
        // One may wait; a second waiter is refused at once; the waiter gives up after the wait.
        let waiter = tokio::spawn({
            let a = a.clone();
            async move { a.admit().await.map(|_| ()) }
        });
        tokio::task::yield_now().await;
        while a.queued.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        assert!(matches!(a.admit().await, Err(ApiError::Overloaded(_))));
        assert!(matches!(waiter.await.unwrap(), Err(ApiError::Overloaded(_))));
        assert_eq!(a.queued.load(Ordering::SeqCst), 0, "the queue count is undone");
        // A slot given back admits the next one.
        drop(first);
        let _slot = a.admit().await.unwrap();
    }

    #[test]
    fn a_scope_is_done_since_its_cancel_or_its_deadline_whichever_came_first() {
        let s = Scope::new(Duration::from_secs(60));
        assert!(!s.is_done() && s.done_since().is_none());
        let flag = s.clone().plugin_cancel();
        assert!(!flag.is_cancelled());
        let before = Instant::now();
        s.cancel();
        assert!(flag.is_cancelled(), "plugins called for the request see it too");
        let since = s.done_since().expect("cancelled");
        assert!(s.is_done() && since >= before && since <= Instant::now());
        s.cancel();
        assert_eq!(s.done_since(), Some(since), "the first cancel counts");
        let late = Scope::new(Duration::ZERO);
        assert_eq!(late.done_since(), Some(late.deadline));
        late.cancel();
        assert_eq!(late.done_since(), Some(late.deadline));
    }

    #[tokio::test]
    async fn the_cpu_pool_skips_work_of_a_request_already_gone() {
        let pool = CpuPool::new(1).unwrap();
        let scope = Scope::new(Duration::from_secs(5));
        assert_eq!(pool.run(&scope, None, |_| Ok(7)).await.unwrap(), 7);
        scope.cancel();
        let ran = Arc::new(AtomicBool::new(false));
        let r = {
            let ran = ran.clone();
            pool.run(&scope, None, move |_| {
                ran.store(true, Ordering::SeqCst);
                Ok(())
            })
            .await
        };
        assert!(r.is_err() && !ran.load(Ordering::SeqCst));
        // A panic in a job is an error for that request, and the pool goes on.
        let fresh = Scope::new(Duration::from_secs(5));
        assert!(
            pool.run(&fresh, None, |_| -> Result<(), ApiError> { panic!("boom") }).await.is_err()
        );
        assert_eq!(pool.run(&fresh, None, |_| Ok(1)).await.unwrap(), 1);
        assert_eq!(pool.busy(), 0);
    }
}
