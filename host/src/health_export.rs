//! `meshlens_health_status`: the status of every app, service and workload of the exported
//! namespaces, refreshed in the background every `health.export_interval`, so that an
//! alerting rule can fire on it.
//!
//! Each refresh sends five queries per namespace (the app and workload statuses come from
//! the same three; six and four in a cluster with ambient workloads), through the metrics engine, so they are counted in the backend query
//! metrics like any other.

use std::{collections::HashSet, sync::Arc, time::Instant};

use meshlens_health::{Kind, Status, namespace_health, namespace_queries};
use meshlens_telemetry::HealthLabels;

use crate::{
    api::health::{DEFAULT_RATE_INTERVAL, ambient, entities, namespace_window},
    context::RequestContext,
    state::AppState,
};

/// Starts the refresh loop; one refresh at a time, a slow one delays the next.
pub fn spawn(state: Arc<AppState>) {
    let every = state.config.health.export_interval.0;
    tokio::spawn(async move {
        // The first refresh comes one interval after start-up, not during it; and a simulator
        // on the `query` clock, which a test moves to the times it asks about, is left alone
        // for that long.
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The label sets set by the last refresh, to drop objects that went away.
        let mut exported: HashSet<HealthLabels> = HashSet::new();
        loop {
            tick.tick().await;
            let started = Instant::now();
            match refresh(&state, &mut exported).await {
                // One line a refresh (a minute by default): what it cost.
                Ok((namespaces, queries)) => tracing::info!(
                    namespaces,
                    queries,
                    ms = started.elapsed().as_millis() as u64,
                    "health status exported"
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "health status export failed; keeping the last values")
                }
            }
        }
    });
}

/// One refresh: every exported namespace's objects. Returns the namespaces exported and the
/// queries planned.
pub async fn refresh(
    state: &Arc<AppState>,
    exported: &mut HashSet<HealthLabels>,
) -> Result<(usize, usize), String> {
    // The export covers the home cluster's objects, so it counts the home cluster's
    // telemetry only when the instance reads several (as the health operations do).
    let home = state.clusters.home();
    let cluster = home.cluster.state().await.map_err(|e| e.to_string())?;
    let scope = state.clusters.is_multi().then_some(home.name.as_str());
    let wanted = &state.config.health.export_namespaces;
    let rules = state.config.health.rules();
    let gauge = &state.telemetry.health_status;
    let now = state.metrics.default_time();
    let mut seen: HashSet<HealthLabels> = HashSet::new();
    let ambient = ambient(&cluster);
    let (mut namespaces, mut queries, mut failed) = (0, 0, 0);
    for ns_state in cluster.namespaces().filter(|n| wanted.is_empty() || wanted.contains(&n.name)) {
        let ns = ns_state.name.as_str();
        let ri = namespace_window(DEFAULT_RATE_INTERVAL, ns_state, now);
        // App and workload statuses share their queries.
        let app_queries = namespace_queries(ns, scope, Kind::App, &ambient, ri, now);
        let svc_queries = namespace_queries(ns, scope, Kind::Service, &ambient, ri, now);
        queries += app_queries.len() + svc_queries.len();
        // No client waits for the export: only the engine's timeout bounds its queries.
        let rc = RequestContext::background();
        let answers = tokio::try_join!(
            state.metrics.query_all(&rc, app_queries),
            state.metrics.query_all(&rc, svc_queries)
        );
        let (apps, services) = match answers {
            Ok(a) => a,
            Err(e) => {
                // One namespace's failure does not hold the others back; its objects keep
                // their last values until a refresh gets through.
                tracing::debug!(namespace = ns, error = %e, "health export: namespace skipped");
                seen.extend(exported.iter().filter(|l| l.namespace == ns).cloned());
                failed += 1;
                continue;
            }
        };
        namespaces += 1;
        for (kind, results) in
            [(Kind::App, &apps), (Kind::Workload, &apps), (Kind::Service, &services)]
        {
            let entities = entities(&cluster, ns_state, kind);
            let entries = namespace_health(rules, ns, kind, entities, results, &ambient);
            for (name, entry) in entries {
                for status in Status::ALL {
                    let labels = HealthLabels {
                        namespace: ns.to_string(),
                        kind: kind.as_str(),
                        name: name.clone(),
                        status: status.as_str(),
                    };
                    gauge.get_or_create(&labels).set(i64::from(status == entry.status));
                    seen.insert(labels);
                }
            }
        }
    }
    for gone in exported.difference(&seen) {
        gauge.remove(gone);
    }
    *exported = seen;
    if failed > 0 {
        if namespaces == 0 {
            return Err(format!("every one of {failed} namespaces failed"));
        }
        tracing::warn!(failed, "health export: namespaces skipped, their last values kept");
    }
    Ok((namespaces, queries))
}
