// Health status as the server computes it (the [health] rules, README "Health"): the console
// shows the health answers' `status` and the graph nodes' `healthStatus`, and has no node
// thresholds of its own. Edges, which carry no status, are coloured by their error rate:
// >= 20 % failing, > 0.1 % degraded (README, "The console").

export const DEGRADED = 0.1; // percent, edges only
export const FAILURE = 20; // percent, edges only

export function statusOfErrorPercent(pct) {
  if (!Number.isFinite(pct)) return 'na';
  if (pct >= FAILURE) return 'failing';
  if (pct > DEGRADED) return 'degraded';
  return 'healthy';
}

// The server's words, as the console's colour classes (`failure` is drawn as `failing`).
const CLASS = { healthy: 'healthy', degraded: 'degraded', failure: 'failing', na: 'na' };

/** The colour class of a server status (`na` when there is none). */
export function statusClass(status) {
  return CLASS[status] || 'na';
}

const rank = { na: 0, healthy: 1, degraded: 2, failing: 3 };
export function worst(...states) { return states.reduce((a, b) => (rank[b] > rank[a] ? b : a), 'na'); }

/** Status of one entry of namespaceHealth (its own `status`). */
export function appStatus(h) {
  return statusClass(h && h.status);
}

/** Status of an appHealth / workloadHealth / serviceHealth answer (its `status`). */
export function objectStatus(h) {
  return statusClass(h && h.status);
}
