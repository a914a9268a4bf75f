//! Whether a `kube` source's API server answers now, so that a host can set a lost remote
//! cluster aside (503, namespaces hidden) instead of serving its last-known objects as current.
//!
//! The signal is a light probe, `GET /version` with a short timeout, not the watches alone:
//! a watch only fails when its connection breaks, and an API server that stops answering
//! without closing connections (a partition, a hung process) would keep them open for
//! minutes. `/version` is tiny, served to every authenticated user, and costs the server
//! nothing. Watch failures still help: each one asks for a probe at once, so a server that
//! went away is usually reported within a second or two, not at the next periodic probe.
//!
//! When a lost server answers again, every cache starts a fresh watch (a full list), and the
//! cluster counts as back once each has listed: its objects are then current, whatever the
//! old watches were doing (pausing in backoff, or hung on a connection that went silent).

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use kube::Client;
use tokio::sync::{Notify, watch};

/// The watchers' longest retry pause before jitter (jitter adds up to as much again). Well
/// under the 30 s in which a returning cluster must be whole again.
pub(crate) const RETRY_MAX: Duration = Duration::from_millis(2500);
/// How often a healthy server is probed.
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// How often a server in doubt (a failure seen, lost, or listing again) is probed.
const PROBE_IN_DOUBT: Duration = Duration::from_secs(1);
/// The shortest gap between two probes, however many watches fail at once.
const MIN_GAP: Duration = Duration::from_millis(500);
/// A probe slower than this counts as a failure.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Consecutive failures before the server counts as lost: one lost packet or slow answer
/// must not hide a whole cluster. Worst case without a watch failure to hurry it:
/// 5 s + 3 s + 1 s + 3 s = 12 s after the server went away.
const FAILURES_TO_LOSE: u32 = 2;
/// Back after this long answering even if some cache has not listed again: a kind that
/// keeps failing for its own reason (a CRD deleted since discovery) must not keep a whole
/// cluster away.
const BACK_AT_LATEST: Duration = Duration::from_secs(15);

#[derive(Default)]
struct State {
    lost: Option<String>,
    failures: u32,
    /// Since when a lost server answers again.
    answering_since: Option<Instant>,
    /// Every cache, by kind name.
    caches: BTreeSet<String>,
    /// The caches that have not listed since the server came back.
    relisting: BTreeSet<String>,
}

impl State {
    /// Clears `lost` if the server answers and the caches are current again.
    fn try_back(&mut self, now: Instant, server: &str) {
        let Some(since) = self.answering_since else { return };
        if self.lost.is_none() {
            return;
        }
        if !self.relisting.is_empty() && now.duration_since(since) < BACK_AT_LATEST {
            return;
        }
        if !self.relisting.is_empty() {
            let kinds: Vec<&str> = self.relisting.iter().map(String::as_str).collect();
            tracing::warn!(
                "the Kubernetes API server at {server} answers, but {} did not list again",
                kinds.join(", ")
            );
        }
        self.lost = None;
        self.answering_since = None;
        self.relisting.clear();
        tracing::info!("the Kubernetes API server at {server} answers again: its cluster is back");
    }
}

/// One API server's liveness, updated by [`Liveness::run`].
pub(crate) struct Liveness {
    server: String,
    state: Mutex<State>,
    nudge: Notify,
    /// Bumped when a lost server answers again: every cache starts a fresh watch.
    restart: watch::Sender<u64>,
}

impl Liveness {
    pub(crate) fn new(server: String) -> Arc<Liveness> {
        Arc::new(Liveness {
            server,
            state: Mutex::default(),
            nudge: Notify::new(),
            restart: watch::Sender::new(0),
        })
    }

    /// Why the server cannot be used now (`None` when it can).
    pub(crate) fn lost(&self) -> Option<String> {
        self.lock().lost.clone()
    }

    /// Registers a cache. Its receiver changes when the cache must start a fresh watch; the
    /// value is the round to pass to [`Liveness::listed`].
    pub(crate) fn register(&self, kind: &str) -> watch::Receiver<u64> {
        self.lock().caches.insert(kind.to_string());
        self.restart.subscribe()
    }

    /// A cache completed a list (or may not list, and counts as absent) in restart `round`.
    pub(crate) fn listed(&self, kind: &str, round: u64) {
        if round != *self.restart.borrow() {
            return;
        }
        let mut s = self.lock();
        if s.relisting.remove(kind) {
            s.try_back(Instant::now(), &self.server);
        }
    }

    /// A watch failed (not for lack of rights): probe now rather than at the next tick.
    pub(crate) fn watch_failed(&self) {
        self.nudge.notify_one();
    }

    /// Every cache has just completed its first list: the server answers and nothing is stale.
    pub(crate) fn synced(&self) {
        let mut s = self.lock();
        if s.lost.take().is_some() {
            tracing::info!(
                "the Kubernetes API server at {} answers: its cluster synced",
                self.server
            );
        }
        s.failures = 0;
        s.answering_since = None;
        s.relisting.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pause before the next probe.
    fn pause(&self) -> Duration {
        let s = self.lock();
        if s.lost.is_some() || s.failures > 0 { PROBE_IN_DOUBT } else { PROBE_EVERY }
    }

    /// Takes one probe's outcome into account (`Err` says why it failed).
    fn record(&self, outcome: Result<(), String>, now: Instant) {
        let mut s = self.lock();
        match outcome {
            Ok(()) => {
                s.failures = 0;
                if s.lost.is_none() || s.answering_since.is_some() {
                    s.try_back(now, &self.server);
                    return;
                }
                // Back from an outage: every cache lists afresh before the cluster counts.
                s.answering_since = Some(now);
                s.relisting = s.caches.clone();
                s.lost = Some(format!(
                    "the Kubernetes API server at {} answers again; its caches are listing",
                    self.server
                ));
                self.restart.send_modify(|r| *r += 1);
                s.try_back(now, &self.server);
            }
            Err(why) => {
                s.failures = s.failures.saturating_add(1);
                s.answering_since = None;
                if s.failures >= FAILURES_TO_LOSE {
                    if s.lost.is_none() {
                        tracing::warn!(
                            "the Kubernetes API server at {} cannot be reached ({why}): its cluster is set aside until it answers again",
                            self.server
                        );
                    }
                    s.lost = Some(format!(
                        "the Kubernetes API server at {} cannot be reached: {why}",
                        self.server
                    ));
                }
            }
        }
    }

    /// Probes for as long as the source lives (its task is aborted with the source). The
    /// first probe runs at once; a version read here fills `version` if it is still unknown.
    pub(crate) async fn run(self: Arc<Self>, client: Client, version: Arc<OnceLock<String>>) {
        loop {
            let outcome =
                match tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version()).await {
                    Ok(Ok(info)) => {
                        let _ = version.set(info.git_version);
                        Ok(())
                    }
                    // Any answer but a 5xx is a server that works (a 403 on /version included).
                    Ok(Err(kube::Error::Api(s))) if s.code < 500 => Ok(()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer to GET /version within {PROBE_TIMEOUT:?}")),
                };
            self.record(outcome, Instant::now());
            tokio::time::sleep(MIN_GAP).await;
            let rest = self.pause().saturating_sub(MIN_GAP);
            tokio::select! {
                _ = tokio::time::sleep(rest) => {}
                _ = self.nudge.notified() => {}
            }
        }
    }
}

/// The watchers' retry pauses: exponential from 250 ms, capped at [`RETRY_MAX`] (kube's
/// default grows to 30 s, too slow for a returning cluster), jittered so that the caches of
/// one cluster do not all retry at the same instant.
pub(crate) fn watch_backoff() -> kube::runtime::watcher::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(250))
        .with_max_delay(RETRY_MAX)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_after_two_failures_and_back_once_every_cache_listed_again() {
        let l = Liveness::new("http://x".into());
        let mut pods = l.register("Pod");
        let _services = l.register("Service");
        let t0 = Instant::now();
        l.record(Err("refused".into()), t0);
        assert_eq!(l.lost(), None, "one failure is not enough");
        l.record(Ok(()), t0);
        l.record(Err("refused".into()), t0);
        assert_eq!(l.lost(), None, "the failures must be consecutive");
        l.record(Err("refused".into()), t0);
        let why = l.lost().expect("lost after two failures");
        assert!(why.contains("http://x") && why.contains("refused"), "{why}");

        l.record(Ok(()), t0);
        assert!(pods.has_changed().unwrap(), "the caches were not told to list again");
        let round = *pods.borrow_and_update();
        assert!(l.lost().is_some(), "back before the caches listed");
        l.listed("Pod", round - 1);
        l.listed("Pod", round);
        l.record(Ok(()), t0 + Duration::from_secs(1));
        assert!(l.lost().is_some(), "back while Service had not listed");
        l.listed("Service", round);
        assert_eq!(l.lost(), None);
    }

    #[test]
    fn a_cache_that_never_lists_keeps_the_cluster_away_no_longer_than_the_latest() {
        let l = Liveness::new("http://x".into());
        let _gone = l.register("VirtualService");
        let t0 = Instant::now();
        l.record(Err("refused".into()), t0);
        l.record(Err("refused".into()), t0);
        l.record(Ok(()), t0);
        l.record(Ok(()), t0 + Duration::from_secs(5));
        assert!(l.lost().is_some());
        l.record(Ok(()), t0 + BACK_AT_LATEST);
        assert_eq!(l.lost(), None);
    }

    #[test]
    fn without_caches_an_answer_is_enough() {
        let l = Liveness::new("http://x".into());
        l.record(Err("refused".into()), Instant::now());
        l.record(Err("refused".into()), Instant::now());
        l.record(Ok(()), Instant::now());
        assert_eq!(l.lost(), None);
    }

    #[test]
    fn watch_pauses_stay_under_twice_the_cap() {
        let pauses: Vec<Duration> = watch_backoff().take(50).collect();
        assert!(pauses.iter().all(|p| *p <= 2 * RETRY_MAX), "{pauses:?}");
        assert!(pauses[0] < Duration::from_millis(600), "{pauses:?}");
    }
}
