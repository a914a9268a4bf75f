//! One reflector (list + watch) per kind, feeding a cache: retried with capped backoff,
//! restarted with a fresh list when the API server returns from an outage, and 403s turned
//! into "absent" rather than errors.

use meshlens_telemetry::Metrics;
use std::{
    collections::BTreeSet,
    fmt::Debug,
    hash::Hash,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use futures::StreamExt;
use kube::{
    Api, Client, Resource,
    runtime::{
        WatchStreamExt,
        reflector::{Store, store::Writer},
        watcher,
    },
};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::{
    liveness::{Liveness, watch_backoff},
    trim::Trim,
};

/// Kinds the service account may not list or watch (403): they count as absent, so they
/// neither block the first sync nor keep stale objects, and `/status` names them.
#[derive(Default)]
pub(crate) struct Forbidden {
    kinds: Mutex<BTreeSet<String>>,
    changed: watch::Sender<u64>,
}

impl Forbidden {
    /// Records whether `kind` is forbidden; true if that changed.
    pub(crate) fn set(&self, kind: &str, forbidden: bool) -> bool {
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        let changed = if forbidden { kinds.insert(kind.to_string()) } else { kinds.remove(kind) };
        drop(kinds);
        if changed {
            if forbidden {
                tracing::warn!(
                    "no permission to list or watch {kind}: treated as absent until access is granted"
                );
            } else {
                tracing::info!("access to {kind} granted: reading it again");
            }
            self.changed.send_modify(|n| *n += 1);
        }
        changed
    }

    pub(crate) fn has(&self, kind: &str) -> bool {
        self.kinds.lock().unwrap_or_else(|e| e.into_inner()).contains(kind)
    }

    pub(crate) fn list(&self) -> Vec<String> {
        self.kinds.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    /// Resolves once `kind` is forbidden.
    pub(crate) fn wait_for(
        self: &Arc<Self>,
        kind: String,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let this = self.clone();
        let mut rx = self.changed.subscribe();
        async move {
            let _ = rx.wait_for(|_| this.has(&kind)).await;
        }
    }
}

/// Whether a watcher error is the API server's 403.
fn is_forbidden(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 403,
        watcher::Error::WatchError(s) => s.code == 403,
        _ => false,
    }
}

/// Self-metrics of one watch event: a completed list is a sync, an error a restart.
fn observe<K>(
    m: &Metrics,
    what: &str,
    ev: &Result<watcher::Event<K>, watcher::Error>,
    live: &Liveness,
) {
    match ev {
        Ok(watcher::Event::InitDone) => crate::record_sync(m),
        Err(e) => {
            m.cluster_watch_restart(what);
            // A 403 is logged once, when the kind turns forbidden (`Forbidden::set`); while
            // the server is lost, the probe has said so once instead of every retry of every kind.
            if is_forbidden(e) {
                return;
            }
            if live.lost().is_some() {
                tracing::debug!("watch of {what} failed (will retry): {e}");
            } else {
                tracing::warn!("watch of {what} failed (will retry): {e}");
            }
        }
        Ok(_) => {}
    }
}

/// Starts one reflector; its events bump `generation` so the model knows to rebuild.
pub(crate) fn reflect<K>(
    api: Api<K>,
    dyntype: K::DynamicType,
    what: String,
    shared: &Shared,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> Store<K>
where
    K: Resource + Trim + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let mut writer = Writer::new(dyntype);
    let store = writer.as_reader();
    let (generation, forbidden) = (shared.generation.clone(), shared.forbidden.clone());
    let live = shared.live.clone();
    let telemetry = shared.telemetry.clone();
    let mut restart = live.register(&what);
    tasks.push(tokio::spawn(async move {
        loop {
            // A fresh watcher lists first; the store swaps in the new list when it is complete.
            let round = *restart.borrow_and_update();
            let stream = watcher(api.clone(), watcher::Config::default())
                .backoff(watch_backoff())
                // Only what the model reads is stored (see trim.rs).
                .modify(|o: &mut K| o.trim());
            let mut stream = std::pin::pin!(stream);
            loop {
                let ev = tokio::select! {
                    biased;
                    // The server is back from an outage: list again rather than trust this
                    // watch, which may be pausing or hung on a connection gone silent.
                    Ok(()) = restart.changed() => break,
                    ev = stream.next() => match ev {
                        Some(ev) => ev,
                        None => return,
                    },
                };
                if let Ok(e) = &ev {
                    writer.apply_watcher_event(e);
                }
                observe(&telemetry, &what, &ev, &live);
                // Only what changes the model's input bumps the generation: an outage's
                // retries must not make every request rebuild the model.
                let changed = match &ev {
                    // Retried with backoff, so access granted later is picked up without a restart.
                    Err(e) if is_forbidden(e) => {
                        live.listed(&what, round);
                        forbidden.set(&what, true)
                    }
                    Err(_) => {
                        live.watch_failed();
                        false
                    }
                    Ok(e) => {
                        if matches!(e, watcher::Event::InitDone) {
                            live.listed(&what, round);
                        }
                        forbidden.set(&what, false);
                        true
                    }
                };
                if changed {
                    generation.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }));
    store
}

/// The reflector of a kind with a static type (the store's type names it).
pub(crate) fn reflect_typed<K>(
    c: &Client,
    shared: &Shared,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> Store<K>
where
    K: Resource<DynamicType = ()> + Trim + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    reflect(Api::all(c.clone()), (), kind_name::<K>(), shared, tasks)
}

/// What every reflector shares.
pub(crate) struct Shared {
    pub(crate) generation: Arc<AtomicU64>,
    pub(crate) forbidden: Arc<Forbidden>,
    pub(crate) live: Arc<Liveness>,
    /// The self-metrics of the service this cluster belongs to.
    pub(crate) telemetry: Arc<Metrics>,
}

/// The kind's name as `/status` shows it (`CronJob`; `Pod` for the pod records).
pub(crate) fn kind_name<K: Resource<DynamicType = ()>>() -> String {
    K::kind(&()).into_owned()
}
