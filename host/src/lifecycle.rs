//! Liveness, readiness and the backend status that `/status` and `/metrics` read.
//!
//! Neither probe waits on anything: the backend's status is asked in the background every
//! `metrics.status_interval` and kept here, so a hung Prometheus slows no request.
//! Readiness is this replica's own state only: a backend outage is shared by every
//! replica, and following it would take all endpoints away from pages that never need it.

use std::{
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

/// The backend as last seen by the background probe.
#[derive(Clone, Debug, Default)]
pub struct BackendSeen {
    /// Name, version and URL from the last answer (empty before the first one).
    pub name: String,
    pub version: String,
    pub url: String,
    /// When it last answered.
    pub answered: Option<Instant>,
    /// Why the last probe failed, when it did.
    pub error: Option<String>,
}

/// Shared lifecycle state of the running service.
#[derive(Default)]
pub struct Lifecycle {
    draining: AtomicBool,
    listening: AtomicBool,
    backend: Mutex<BackendSeen>,
}

impl Lifecycle {
    /// The API port is bound and accepting.
    pub fn set_listening(&self) {
        self.listening.store(true, Ordering::SeqCst);
    }

    /// From now on `/ready` answers 503 (the first SIGTERM).
    pub fn begin_drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The backend as last seen.
    pub fn backend(&self) -> BackendSeen {
        self.backend.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Keeps what the background probe ([`crate::state::AppState::spawn_status_refresh`]) saw.
    pub fn record(&self, outcome: Result<plugin_api::BackendStatus, String>) {
        let mut seen = self.backend.lock().unwrap_or_else(|e| e.into_inner());
        match outcome {
            Ok(s) => {
                seen.name = s.name.to_string();
                seen.version = s.version.to_string();
                seen.url = s.url.to_string();
                seen.answered = Some(Instant::now());
                seen.error = None;
            }
            Err(e) => seen.error = Some(e),
        }
    }
}

impl Lifecycle {
    /// `Ok` when this replica should get traffic, or why not: it listens, its plugins are
    /// loaded (they are before the state exists), its home cluster's caches have synced
    /// (`cluster_synced`), and it is not draining. The metrics backend is not looked at (see
    /// the module comment); the reasons name no URL and carry no error text, as the probe is
    /// unauthenticated.
    pub fn readiness(&self, cluster_synced: bool) -> Result<(), String> {
        if self.draining() {
            return Err("shutting down".into());
        }
        if !self.listening.load(Ordering::SeqCst) {
            return Err("not listening yet".into());
        }
        if !cluster_synced {
            return Err("the Kubernetes caches have not synced yet".into());
        }
        Ok(())
    }

    /// Whether the backend answered its status probe within `stale_after`.
    pub fn backend_up(&self, stale_after: Duration) -> bool {
        self.backend().answered.is_some_and(|t| t.elapsed() <= stale_after)
    }

    /// The `/status` warning while the backend has not answered its status probe within
    /// `stale_after` (`None` while it has). `detailed` adds the probe's error text, for
    /// authenticated callers only.
    pub fn backend_warning(&self, stale_after: Duration, detailed: bool) -> Option<String> {
        let seen = self.backend();
        let why = match (&seen.error, detailed) {
            (Some(e), true) => format!(": {e}"),
            _ => String::new(),
        };
        match seen.answered {
            None if seen.error.is_some() => {
                Some(format!("the metrics backend has not answered yet{why}"))
            }
            // Not probed yet: nothing to warn about.
            None => None,
            Some(t) if t.elapsed() > stale_after => Some(format!(
                "the metrics backend has not answered for {}s{why}",
                t.elapsed().as_secs()
            )),
            Some(_) => None,
        }
    }
}

/// Replaces what looks like a file path or URL in a message by `[hidden]` (for callers that
/// did not authenticate).
pub fn redact(message: &str) -> String {
    message
        .split(' ')
        .map(|word| {
            let w = word.trim_matches(|c: char| {
                matches!(c, '(' | ')' | '"' | '\'' | ',' | ';' | ':' | '`')
            });
            let looks_like_path = w.contains("://")
                || (w.len() > 1
                    && (w.starts_with('/') || w.starts_with("./") || w.starts_with("~/")))
                || w.contains(std::path::MAIN_SEPARATOR_STR) && w.contains('.');
            if looks_like_path { word.replace(w, "[hidden]") } else { word.to_string() }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_and_urls_are_hidden() {
        assert_eq!(
            super::redact("plugin /opt/p/libx.so was not loaded: bad (see http://x:9090/api)"),
            "plugin [hidden] was not loaded: bad (see [hidden])"
        );
        assert_eq!(
            super::redact("config/demo/a.yaml: document 2 skipped"),
            "[hidden]: document 2 skipped"
        );
        assert_eq!(
            super::redact("no permission to list or watch CronJob"),
            "no permission to list or watch CronJob"
        );
        assert_eq!(
            super::redact("Istio version 0.8.0 is not supported, a/b"),
            "Istio version 0.8.0 is not supported, a/b"
        );
    }
}
