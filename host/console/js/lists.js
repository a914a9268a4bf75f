// List pages: apps, workloads, services and mesh config objects of the namespaces in
// `?namespaces=a,b` (all visible ones when absent), with health, rates and badges. The
// filter (`filter`) and the sort (`sort`, `desc`) live in the address.

import { api, enc } from './api.js';
import { el, fmt, link, qs } from './dom.js';
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
    rows: async (ns) => (await api(`namespaces/${enc(ns)}/apps`)).applications
      .map((a) => ({ name: a.name, sidecar: a.meshSidecar, ambient: a.isAmbient })),
    href: (ns, n) => `app${qs({ namespace: ns, app: n })}`,
  },
  workloads: {
    title: 'Workloads', health: 'workload', label: 'destination_workload',
    rows: async (ns) => (await api(`namespaces/${enc(ns)}/workloads`)).workloads
      .map((w) => ({ name: w.name, sidecar: w.meshSidecar, ambient: w.isAmbient, waypoint: w.isWaypoint, type: w.type })),
    href: (ns, n) => `workload${qs({ namespace: ns, workload: n })}`,
  },
  services: {
    title: 'Services', health: 'service', label: 'destination_service_name',
    rows: async (ns) => (await api(`namespaces/${enc(ns)}/services`)).services
      .map((s) => ({ name: s.name, sidecar: s.meshSidecar, ambient: s.isAmbient })),
    href: (ns, n) => `service${qs({ namespace: ns, service: n })}`,
  },
};

/** Inbound request and error rates by `label` over the last 10 minutes, of one namespace. */
async function rates(ns, label) {
  const q = new URLSearchParams({ direction: 'inbound', reporter: 'source', duration: '60', step: '60', rateInterval: '10m' });
  q.append('filters[]', 'request_count');
  q.append('filters[]', 'request_error_count');
  q.append('byLabels[]', label);
  const m = await api(`namespaces/${enc(ns)}/metrics?${q}`);
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

async function namespaceRows(page, ns) {
  if (page === 'istio') {
    const [list, validations] = await Promise.all([
      api(`namespaces/${enc(ns)}/mesh`),
      api(`namespaces/${enc(ns)}/mesh_validations`).catch(() => ({})),
    ]);
    const byKind = validations[ns] || {};
    const rows = [];
    for (const [key, [kind, vKey, title]] of Object.entries(KINDS)) {
      for (const o of list[key] || []) {
        const name = o.metadata && o.metadata.name;
        if (!name) continue;
        rows.push({ ns, name, kind, title, valid: validOf((byKind[vKey] || {})[name]),
          href: `mesh/object${qs({ namespace: ns, objectType: kind, object: name })}` });
      }
    }
    return rows;
  }
  const p = PAGES[page];
  const [items, health, r, vs] = await Promise.all([
    p.rows(ns),
    api(`namespaces/${enc(ns)}/health?type=${p.health}`).catch(() => ({})),
    rates(ns, p.label).catch(() => ({ req: new Map(), err: new Map() })),
    page === 'services' ? api(`namespaces/${enc(ns)}/mesh?objects=virtualservices`).catch(() => ({})) : null,
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
    return { ns, name: it.name, health: healthOf(health[it.name]), req: req === undefined ? null : req,
      errPct: req ? (100 * err) / req : null, badges, href: p.href(ns, it.name), type: it.type };
  });
}

const COLUMNS = {
  istio: [['name', 'Name'], ['namespace', 'Namespace'], ['kind', 'Kind'], ['valid', 'Validation']],
  other: [['name', 'Name'], ['namespace', 'Namespace'], ['health', 'Health'], ['req', 'Request rate'], ['err', 'Error rate'], ['badges', 'Badges']],
};
const HEALTH_RANK = { na: 0, healthy: 1, degraded: 2, failure: 3 };
const VALID_RANK = { valid: 0, warning: 1, error: 2 };
function sortKey(row, col) {
  switch (col) {
    case 'namespace': return row.ns;
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
    const cols = COLUMNS[page === 'istio' ? 'istio' : 'other'];
    const filter = el('input', { type: 'search', 'data-testid': 'list-filter', placeholder: 'Filter by name', 'aria-label': 'filter by name', value: state.filter });
    const head = el('tr', {}, cols.map(([key, text]) => el('th', { 'data-sort': key, tabindex: 0, role: 'button', 'aria-sort': 'none' }, text)));
    const body = el('tbody');
    const tableEl = el('table', { 'data-testid': 'list', 'data-state': 'loading', class: 'list' }, el('thead', {}, head), body);
    main.append(el('h1', {}, title), el('div', { class: 'controls' }, filter), el('div', { class: 'table-wrap' }, tableEl));

    const wanted = (params.get('namespaces') || '').split(',').map((s) => s.trim()).filter(Boolean);
    const namespaces = wanted.length ? wanted : (await api('namespaces')).map((n) => n.name);
    const results = await Promise.all(namespaces.map((ns) => namespaceRows(page, ns).catch((e) => ({ error: `${ns}: ${e.message}` }))));
    const rows = results.filter(Array.isArray).flat();
    for (const r of results) if (r.error) main.append(el('p', { class: 'error', 'data-testid': 'list-error' }, r.error));

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
        return dir * c || a.name.localeCompare(b.name) || a.ns.localeCompare(b.ns);
      });
      for (const th of head.children) {
        th.setAttribute('aria-sort', th.dataset.sort === state.sort ? (state.desc ? 'descending' : 'ascending') : 'none');
      }
      body.replaceChildren(...shown.map((r) => rowOf(page, r)));
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

function rowOf(page, r) {
  if (page === 'istio') {
    return el('tr', { 'data-testid': 'row', 'data-namespace': r.ns, 'data-name': r.name, 'data-kind': r.kind, 'data-valid': r.valid },
      el('td', {}, link(r.href, r.name)), el('td', {}, r.ns), el('td', {}, r.title),
      el('td', {}, el('span', { class: `status ${{ error: 'failing', warning: 'degraded', valid: 'healthy' }[r.valid]}` }, r.valid)));
  }
  const statusClass = { failure: 'failing' }[r.health] || r.health;
  return el('tr', { 'data-testid': 'row', 'data-namespace': r.ns, 'data-name': r.name, 'data-health': r.health },
    el('td', {}, link(r.href, r.name)),
    el('td', {}, r.ns),
    el('td', {}, el('span', { class: `status ${statusClass}` }, r.health === 'na' ? 'n/a' : r.health)),
    el('td', { class: 'num', 'data-value': r.req === null ? '' : r.req }, r.req === null ? '-' : fmt(r.req, 2) + '/s'),
    el('td', { class: 'num', 'data-value': r.errPct === null ? '' : r.errPct }, r.errPct === null ? '-' : fmt(r.errPct, 1) + '%'),
    el('td', {}, r.badges.map((b) => el('span', { class: 'badge', 'data-badge': b }, b))));
}

export const renderApps = makeRenderer('apps');
export const renderWorkloads = makeRenderer('workloads');
export const renderServices = makeRenderer('services');
export const renderIstio = makeRenderer('istio');
