// List pages: apps, workloads, services and mesh config objects of the namespaces in
// `?namespaces=a,b` (all visible ones when absent), with health, rates and badges. The
// filter (`filter`) and the sort (`sort`, `desc`) live in the address. With several
// clusters a namespace is read in every cluster that has it (`clusterName`), and a Cluster
// column appears once the rows come from more than one.

import { api, enc } from './api.js';
import { el, fmt, inCluster, link, qs, spansClusters } from './dom.js';
import { statusOfErrorPercent, worst } from './health.js';
import { KINDS } from './mesh.js';

// The health API's `status` when it has one; else the console's thresholds (health.js) on
// the worse of inbound and outbound error ratios and the workloads' replicas.
const LIST_STATUS = { healthy: 'healthy', degraded: 'degraded', failing: 'failure', failure: 'failure', na: 'na' };
function healthOf(h) {
  if (!h) return 'na';
  if (typeof h.status === 'string' && LIST_STATUS[h.status]) return LIST_STATUS[h.status];
  const r = h.requests || {};
  const ratio = (x) => (typeof x === 'number' && x >= 0 ? statusOfErrorPercent(x * 100) : 'na');
  const wl = h.workloadStatuses || (h.workloadStatus ? [h.workloadStatus] : []);
  let replicas = wl.length ? 'healthy' : 'na';
  for (const w of wl) {
    if (w.replicas > 0 && w.available === 0) replicas = 'failing';
    else if (w.available < w.replicas && replicas !== 'failing') replicas = 'degraded';
  }
  return LIST_STATUS[worst(ratio(r.inboundErrorRatio), ratio(r.outboundErrorRatio), replicas)];
}

// Per page: the list call, the namespaceHealth type, and the label that names a row in the
// inbound request metrics (rates are the rows' inbound traffic, reported by the source).
const PAGES = {
  apps: {
    title: 'Apps', health: 'app', label: 'destination_app',
    rows: async (ns, c) => (await api(inCluster(`namespaces/${enc(ns)}/apps`, c))).applications
      .map((a) => ({ name: a.name, cluster: a.cluster, sidecar: a.meshSidecar, ambient: a.isAmbient })),
    href: (ns, n, c) => `app${qs({ namespace: ns, app: n, clusterName: c })}`,
  },
  workloads: {
    title: 'Workloads', health: 'workload', label: 'destination_workload',
    rows: async (ns, c) => (await api(inCluster(`namespaces/${enc(ns)}/workloads`, c))).workloads
      .map((w) => ({ name: w.name, cluster: w.cluster, sidecar: w.meshSidecar, ambient: w.isAmbient, waypoint: w.isWaypoint, type: w.type })),
    href: (ns, n, c) => `workload${qs({ namespace: ns, workload: n, clusterName: c })}`,
  },
  services: {
    title: 'Services', health: 'service', label: 'destination_service_name',
    rows: async (ns, c) => (await api(inCluster(`namespaces/${enc(ns)}/services`, c))).services
      .map((s) => ({ name: s.name, cluster: s.cluster, sidecar: s.meshSidecar, ambient: s.isAmbient })),
    href: (ns, n, c) => `service${qs({ namespace: ns, service: n, clusterName: c })}`,
  },
};

/** Inbound request and error rates by `label` over the last 10 minutes, of one namespace
 * (of cluster `cluster` when one is named). */
async function rates(ns, label, cluster) {
  const q = new URLSearchParams({ direction: 'inbound', reporter: 'source', duration: '60', step: '60', rateInterval: '10m' });
  q.append('filters[]', 'request_count');
  q.append('filters[]', 'request_error_count');
  q.append('byLabels[]', label);
  const m = await api(inCluster(`namespaces/${enc(ns)}/metrics?${q}`, cluster));
  const last = (series) => {
    const out = new Map();
    for (const s of (series && series.matrix) || []) {
      const v = s.values && s.values.length ? Number(s.values[s.values.length - 1][1]) : NaN;
      if (Number.isFinite(v)) out.set(s.metric[label], v);
    }
    return out;
  };
  return { req: last(m.metrics.request_count), err: last(m.metrics.request_error_count) };
}

// Hosts a VirtualService or DestinationRule names: short names and FQDNs of a namespace.
function hostsOf(o) {
  const s = o.spec || {};
  return [].concat(s.hosts || [], s.host ? [s.host] : []);
}
/** Whether `host` (as written in an object of namespace `objNs`) names service `svc` of `ns`. */
export function hostNames(host, objNs, svc, ns) {
  const parts = String(host).split('.');
  if (parts[0] !== svc) return false;
  return parts.length === 1 ? objNs === ns : parts[1] === ns;
}

function validOf(v) {
  const sev = ((v && v.checks) || []).map((c) => c.severity);
  if (sev.includes('error') || (v && v.valid === false)) return 'error';
  if (sev.includes('warning')) return 'warning';
  return 'valid';
}

/** The rows of namespace `ns`; `cluster`: the cluster it is read in (sent as `clusterName`
 * only when the instance has several, `named`). */
async function namespaceRows(page, ns, cluster, named) {
  const c = named ? cluster : undefined;
  if (page === 'istio') {
    const [list, validations] = await Promise.all([
      api(inCluster(`namespaces/${enc(ns)}/mesh`, c)),
      api(inCluster(`namespaces/${enc(ns)}/mesh_validations`, c)).catch(() => ({})),
    ]);
    const byKind = validations[ns] || {};
    const rows = [];
    for (const [key, [kind, vKey, title]] of Object.entries(KINDS)) {
      for (const o of list[key] || []) {
        const name = o.metadata && o.metadata.name;
        if (!name) continue;
        rows.push({ ns, cluster, name, kind, title, valid: validOf((byKind[vKey] || {})[name]),
          href: `mesh/object${qs({ namespace: ns, objectType: kind, object: name, clusterName: c })}` });
      }
    }
    return rows;
  }
  const p = PAGES[page];
  const [items, health, r, vs] = await Promise.all([
    p.rows(ns, c),
    api(inCluster(`namespaces/${enc(ns)}/health?type=${p.health}`, c)).catch(() => ({})),
    rates(ns, p.label, c).catch(() => ({ req: new Map(), err: new Map() })),
    page === 'services' ? api(inCluster(`namespaces/${enc(ns)}/mesh?objects=virtualservices`, c)).catch(() => ({})) : null,
  ]);
  const vsHosts = ((vs && vs.virtualServices) || []).flatMap((o) => hostsOf(o));
  return items.map((it) => {
    const req = r.req.get(it.name);
    const err = r.err.get(it.name) || 0;
    const badges = [];
    // Ambient workloads and waypoints have no sidecar by design: a badge, not "missing".
    if (it.waypoint) badges.push('waypoint');
    else if (it.ambient) badges.push('ambient');
    else if (!it.sidecar) badges.push('missing sidecar');
    if (page === 'services' && vsHosts.some((h) => hostNames(h, ns, it.name, ns))) badges.push('virtual service');
    // The item's own cluster when the list names it, else the namespace entry's.
    const rowCluster = it.cluster || cluster;
    return { ns, cluster: rowCluster, name: it.name, health: healthOf(health[it.name]), req: req === undefined ? null : req,
      errPct: req ? (100 * err) / req : null, badges, href: p.href(ns, it.name, named ? rowCluster : undefined), type: it.type };
  });
}

const COLUMNS = {
  istio: [['name', 'Name'], ['namespace', 'Namespace'], ['kind', 'Kind'], ['valid', 'Validation']],
  other: [['name', 'Name'], ['namespace', 'Namespace'], ['health', 'Health'], ['req', 'Request rate'], ['err', 'Error rate'], ['badges', 'Badges']],
};
/** The page's columns; the Cluster column (after Namespace) only when the rows span clusters. */
function columnsOf(page, withCluster) {
  const cols = COLUMNS[page === 'istio' ? 'istio' : 'other'];
  return withCluster ? [...cols.slice(0, 2), ['cluster', 'Cluster'], ...cols.slice(2)] : cols;
}
const HEALTH_RANK = { na: 0, healthy: 1, degraded: 2, failure: 3 };
const VALID_RANK = { valid: 0, warning: 1, error: 2 };
function sortKey(row, col) {
  switch (col) {
    case 'namespace': return row.ns;
    case 'cluster': return row.cluster || '';
    case 'health': return HEALTH_RANK[row.health];
    case 'req': return row.req === null ? -1 : row.req;
    case 'err': return row.errPct === null ? -1 : row.errPct;
    case 'badges': return row.badges.length;
    case 'kind': return row.kind;
    case 'valid': return VALID_RANK[row.valid];
    default: return row.name;
  }
}

function makeRenderer(page) {
  return async function renderList(main, params) {
    const title = page === 'istio' ? 'Mesh config objects' : PAGES[page].title;
    const state = { filter: params.get('filter') || '', sort: params.get('sort') || 'name', desc: params.get('desc') === 'true' };
    let cols = columnsOf(page, false);
    const filter = el('input', { type: 'search', 'data-testid': 'list-filter', placeholder: 'Filter by name', 'aria-label': 'filter by name', value: state.filter });
    const head = el('tr', {}, cols.map(([key, text]) => el('th', { 'data-sort': key, tabindex: 0, role: 'button', 'aria-sort': 'none' }, text)));
    const body = el('tbody');
    const tableEl = el('table', { 'data-testid': 'list', 'data-state': 'loading', class: 'list' }, el('thead', {}, head), body);
    main.append(el('h1', {}, title), el('div', { class: 'controls' }, filter), el('div', { class: 'table-wrap' }, tableEl));

    const wanted = (params.get('namespaces') || '').split(',').map((s) => s.trim()).filter(Boolean);
    // Every cluster's namespaces: a namespace named in the address is read in each cluster
    // that has it (one that none lists is still asked for, and its error shown).
    const listed = await api('namespaces').catch((e) => { if (!wanted.length) throw e; return []; });
    const named = spansClusters(listed);
    const targets = wanted.length
      ? wanted.flatMap((name) => { const m = listed.filter((n) => n.name === name); return m.length ? m : [{ name }]; })
      : listed;
    const results = await Promise.all(targets.map((t) => namespaceRows(page, t.name, t.cluster, named)
      .catch((e) => ({ error: `${t.name}${named && t.cluster ? ` (${t.cluster})` : ''}: ${e.message}` }))));
    const rows = results.filter(Array.isArray).flat();
    for (const r of results) if (r.error) main.append(el('p', { class: 'error', 'data-testid': 'list-error' }, r.error));
    const withCluster = new Set(rows.map((r) => r.cluster).filter(Boolean)).size > 1;
    if (withCluster) {
      cols = columnsOf(page, true);
      head.replaceChildren(...cols.map(([key, text]) => el('th', { 'data-sort': key, tabindex: 0, role: 'button', 'aria-sort': 'none' }, text)));
    }
    tableEl.dataset.clusters = withCluster ? 'true' : 'false';

    const keep = () => {
      const u = new URL(location.href);
      for (const [k, v] of [['filter', state.filter], ['sort', state.sort === 'name' ? '' : state.sort], ['desc', state.desc ? 'true' : '']]) {
        if (v) u.searchParams.set(k, v); else u.searchParams.delete(k);
      }
      history.replaceState(null, '', u);
    };
    const draw = () => {
      const needle = state.filter.toLowerCase();
      const shown = rows.filter((r) => r.name.toLowerCase().includes(needle));
      const dir = state.desc ? -1 : 1;
      shown.sort((a, b) => {
        const x = sortKey(a, state.sort), y = sortKey(b, state.sort);
        const c = x < y ? -1 : x > y ? 1 : 0;
        return dir * c || a.name.localeCompare(b.name) || a.ns.localeCompare(b.ns) || (a.cluster || '').localeCompare(b.cluster || '');
      });
      for (const th of head.children) {
        th.setAttribute('aria-sort', th.dataset.sort === state.sort ? (state.desc ? 'descending' : 'ascending') : 'none');
      }
      body.replaceChildren(...shown.map((r) => rowOf(page, r, withCluster)));
      if (!shown.length) body.append(el('tr', {}, el('td', { colspan: cols.length, class: 'muted' }, rows.length ? 'No row matches the filter.' : 'Nothing here.')));
      tableEl.dataset.rows = String(shown.length);
    };
    const sortBy = (key) => {
      if (state.sort === key) state.desc = !state.desc; else { state.sort = key; state.desc = false; }
      keep();
      draw();
    };
    for (const th of head.children) {
      th.addEventListener('click', () => sortBy(th.dataset.sort));
      th.addEventListener('keydown', (e) => { if (e.key === 'Enter') sortBy(th.dataset.sort); });
    }
    filter.addEventListener('input', () => { state.filter = filter.value; keep(); draw(); });
    draw();
    tableEl.dataset.state = 'drawn';
    // Rows appear all at once: this is the time to the first row (the benchmark reads it).
    performance.mark('meshlens-list-drawn');
  };
}

function rowOf(page, r, withCluster) {
  const clusterCell = withCluster ? el('td', { 'data-testid': 'cell-cluster' }, r.cluster || '-') : null;
  if (page === 'istio') {
    return el('tr', { 'data-testid': 'row', 'data-namespace': r.ns, 'data-cluster': r.cluster, 'data-name': r.name, 'data-kind': r.kind, 'data-valid': r.valid },
      el('td', {}, link(r.href, r.name)), el('td', {}, r.ns), clusterCell, el('td', {}, r.title),
      el('td', {}, el('span', { class: `status ${{ error: 'failing', warning: 'degraded', valid: 'healthy' }[r.valid]}` }, r.valid)));
  }
  const statusClass = { failure: 'failing' }[r.health] || r.health;
  return el('tr', { 'data-testid': 'row', 'data-namespace': r.ns, 'data-cluster': r.cluster, 'data-name': r.name, 'data-health': r.health },
    el('td', {}, link(r.href, r.name)),
    el('td', {}, r.ns),
    clusterCell,
    el('td', {}, el('span', { class: `status ${statusClass}` }, r.health === 'na' ? 'n/a' : r.health)),
    el('td', { class: 'num', 'data-value': r.req === null ? '' : r.req }, r.req === null ? '-' : fmt(r.req, 2) + '/s'),
    el('td', { class: 'num', 'data-value': r.errPct === null ? '' : r.errPct }, r.errPct === null ? '-' : fmt(r.errPct, 1) + '%'),
    el('td', {}, r.badges.map((b) => el('span', { class: 'badge', 'data-badge': b }, b))));
}

export const renderApps = makeRenderer('apps');
export const renderWorkloads = makeRenderer('workloads');
export const renderServices = makeRenderer('services');
export const renderIstio = makeRenderer('istio');
