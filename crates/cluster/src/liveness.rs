//! Whether a `kube` source's API server answers now, so that a host can set a lost remote
//! cluster aside (503, namespaces hidden) instead of serving its last-known objects as current.
//!
//! The signal is a light probe, `GET /version` with a short timeout, not the watches alone:
//! a watch only fails when its connection breaks, and an API server that stops answering
//! without closing connections (a partition, a hung process) would keep them open for
//! minutes. `/version` is tiny, served to every authenticated user, and costs the server
//! nothing. Watch failures still help: each one asks for a probe at once, so a server that
//! went away is usually reported within a second or two, not at the next periodic probe.

use std::{
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use kube::Client;
use tokio::sync::Notify;

/// The watchers' longest retry pause before jitter (jitter adds up to as much again). Well
/// under the 30 s in which a returning cluster must be whole again.
pub(crate) const RETRY_MAX: Duration = Duration::from_millis(2500);
/// How often a healthy server is probed.
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// How often a server in doubt (a failure seen, lost, or just back) is probed.
const PROBE_IN_DOUBT: Duration = Duration::from_secs(1);
/// The shortest gap between two probes, however many watches fail at once.
const MIN_GAP: Duration = Duration::from_millis(500);
/// A probe slower than this counts as a failure.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Consecutive failures before the server counts as lost: one lost packet or slow answer
/// must not hide a whole cluster. Worst case without a watch failure to hurry it:
/// 5 s + 3 s + 1 s + 3 s = 12 s after the server went away.
const FAILURES_TO_LOSE: u32 = 2;
/// How long the server must have answered, with no watch failing meanwhile, before the
/// cluster counts as back: longer than a watcher's longest pause, so every watch has retried
/// by then, and succeeded since none failed (a resume that met 410 Gone and listed again
/// included).
const BACK_AFTER: Duration = Duration::from_millis(2 * RETRY_MAX.as_millis() as u64 + 1000);
/// Back after this long answering whatever the watches do: a kind that keeps failing for
/// its own reason (a CRD deleted since discovery) must not keep a whole cluster away.
const BACK_AT_LATEST: Duration = Duration::from_secs(15);

#[derive(Default)]
struct State {
    lost: Option<String>,
    failures: u32,
    answering_since: Option<Instant>,
    last_watch_failure: Option<Instant>,
}

/// One API server's liveness, updated by [`Liveness::run`].
pub(crate) struct Liveness {
    server: String,
    state: Mutex<State>,
    nudge: Notify,
}

impl Liveness {
    pub(crate) fn new(server: String) -> Arc<Liveness> {
        Arc::new(Liveness { server, state: Mutex::default(), nudge: Notify::new() })
    }

    /// Why the server cannot be used now (`None` when it can).
    pub(crate) fn lost(&self) -> Option<String> {
        self.lock().lost.clone()
    }

    /// A watch failed (not for lack of rights): probe now rather than at the next tick.
    pub(crate) fn watch_failed(&self) {
        self.lock().last_watch_failure = Some(Instant::now());
        self.nudge.notify_one();
    }

    /// Every cache has just completed its first list: the server answers and nothing is
    /// stale, so there is no reason to wait for watches to resume.
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
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pause before the next probe.
    fn pause(&self) -> Duration {
        let s = self.lock();
        if s.lost.is_some() || s.failures > 0 || s.answering_since.is_some() {
            PROBE_IN_DOUBT
        } else {
            PROBE_EVERY
        }
    }

    /// Takes one probe's outcome into account (`Err` says why it failed).
    fn record(&self, outcome: Result<(), String>, now: Instant) {
        let mut s = self.lock();
        match outcome {
            Ok(()) => {
                s.failures = 0;
                if s.lost.is_none() {
                    return;
                }
                let answering = now.duration_since(*s.answering_since.get_or_insert(now));
                let calm = s.last_watch_failure.is_none_or(|f| now.duration_since(f) >= BACK_AFTER);
                if (answering >= BACK_AFTER && calm) || answering >= BACK_AT_LATEST {
                    s.lost = None;
                    s.answering_since = None;
                    tracing::info!(
                        "the Kubernetes API server at {} answers again: its cluster is back",
                        self.server
                    );
                } else {
                    s.lost = Some(format!(
                        "the Kubernetes API server at {} answers again; its caches are catching up",
                        self.server
                    ));
                }
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
    fn lost_after_two_failures_and_back_only_after_the_watchers_longest_pause() {
        let l = Liveness::new("http://x".into());
        let t0 = Instant::now();
        l.record(Err("refused".into()), t0);
        assert_eq!(l.lost(), None, "one failure is not enough");
        l.record(Ok(()), t0);
        l.record(Err("refused".into()), t0);
        assert_eq!(l.lost(), None, "the failures must be consecutive");
        l.record(Err("refused".into()), t0);
        let why = l.lost().expect("lost after two failures");
        assert!(why.contains("http://x") && why.contains("refused"), "{why}");
        l.record(Ok(()), t0 + Duration::from_secs(1));
        assert!(l.lost().is_some(), "back too early: the watches may not have resumed");
        l.record(Ok(()), t0 + Duration::from_secs(1) + BACK_AFTER);
        assert_eq!(l.lost(), None);
        assert!(BACK_AFTER < Duration::from_secs(10));
    }

    #[test]
    fn a_failing_watch_delays_the_return_but_not_past_the_latest() {
        let l = Liveness::new("http://x".into());
        l.record(Err("refused".into()), Instant::now());
        l.record(Err("refused".into()), Instant::now());
        let t0 = Instant::now();
        l.record(Ok(()), t0);
        // A watch resumes into 410 Gone and must list again: not back yet.
        l.watch_failed();
        l.record(Ok(()), t0 + BACK_AFTER);
        assert!(l.lost().is_some(), "back while a watch had just failed");
        l.record(Ok(()), t0 + BACK_AT_LATEST);
        assert_eq!(l.lost(), None, "a failing watch kept the cluster away past the latest");
    }

    #[test]
    fn watch_pauses_stay_under_twice_the_cap() {
        let pauses: Vec<Duration> = watch_backoff().take(50).collect();
        assert!(pauses.iter().all(|p| *p <= 2 * RETRY_MAX), "{pauses:?}");
        assert!(pauses[0] < Duration::from_millis(600), "{pauses:?}");
    }
}
