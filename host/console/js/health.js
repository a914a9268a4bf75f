// Health status from the API's numbers. Thresholds (documented in README, "The console"):
// error ratio >= 20 % is failing, > 0.1 % is degraded; a workload with fewer available than
// desired replicas is degraded, none available (of some desired) is failing.

export const DEGRADED = 0.1; // percent
export const FAILURE = 20; // percent

export function statusOfErrorPercent(pct) {
  if (!Number.isFinite(pct)) return 'na';
  if (pct >= FAILURE) return 'failing';
  if (pct > DEGRADED) return 'degraded';
  return 'healthy';
}

function workloadsStatus(statuses) {
  let s = 'healthy';
  for (const w of statuses || []) {
    if (w.replicas > 0 && w.available === 0) return 'failing';
    if (w.available < w.replicas) s = 'degraded';
  }
  return s;
}

const rank = { na: 0, healthy: 1, degraded: 2, failing: 3 };
export function worst(...states) { return states.reduce((a, b) => (rank[b] > rank[a] ? b : a), 'na'); }

/** Status of one entry of namespaceHealth (type=app). */
export function appStatus(h) {
  const ratio = h && h.requests ? h.requests.errorRatio : undefined;
  const traffic = typeof ratio === 'number' && ratio >= 0 ? statusOfErrorPercent(ratio * 100) : 'na';
  const wl = h && h.workloadStatuses && h.workloadStatuses.length ? workloadsStatus(h.workloadStatuses) : 'na';
  return worst(traffic, wl);
}

/** Status of an appHealth / workloadHealth / serviceHealth answer. */
export function objectStatus(h) {
  const r = h && h.requests;
  const pct = r && r.requestCount > 0 ? (100 * r.requestErrorCount) / r.requestCount : NaN;
  const wl = h.deploymentStatuses ? workloadsStatus(h.deploymentStatuses)
    : h.deploymentStatus ? workloadsStatus([h.deploymentStatus]) : 'na';
  return worst(statusOfErrorPercent(pct), wl);
}
