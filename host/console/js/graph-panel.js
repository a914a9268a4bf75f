// The graph's side panel: a node's details, health, rates and links; an edge's traffic. A
// node's cluster is shown; when the instance has several clusters, the node's health and
// details are read in its cluster (`clusterName`) and its page links carry it.

import { api, enc } from './api.js';
import { el, fmt, inCluster, link, pageLink, qs, table } from './dom.js';
import { nodeName } from './find.js';
import { badges } from './graph-draw.js';
import { edgeRps, edgeErrPct, nodeRates } from './rates.js';
import { objectStatus } from './health.js';

let token = 0;

// Appends children, skipping the absent ones (DOM append would print them as "null").
const add = (parent, ...children) => parent.append(...children.filter((c) => c !== null && c !== undefined && c !== false));

export function closePanel(panel) {
  panel.hidden = true;
  panel.replaceChildren();
  delete panel.dataset.kind;
}

function frame(panel, kind, id, heading) {
  panel.hidden = false;
  panel.dataset.kind = kind;
  panel.dataset.id = id;
  const close = el('button', { type: 'button', class: 'close', 'aria-label': 'close', 'data-testid': 'panel-close',
    onclick: () => { closePanel(panel); panel.dispatchEvent(new Event('panel-close')); } }, '×');
  panel.replaceChildren(el('div', { class: 'panel-head' }, el('h2', {}, heading), close));
}

const valueCell = (testid, v, digits = 2) => el('span', { 'data-testid': testid, 'data-value': String(v) }, fmt(v, digits));

/** Which health/details operation a node maps to. */
function target(d) {
  if (d.isInaccessible || d.nodeType === 'unknown' || d.nodeType === 'box' || d.isGroup || d.isBox) return null;
  if (d.nodeType === 'service') return { kind: 'service', name: d.service, path: `services/${enc(d.service)}` };
  if (d.nodeType === 'workload' || (d.nodeType === 'app' && d.workload && !d.app)) {
    return { kind: 'workload', name: d.workload, path: `workloads/${enc(d.workload)}` };
  }
  if (d.app) return { kind: 'app', name: d.app, path: `apps/${enc(d.app)}` };
  return null;
}

/** "Focus on this node" with its hops: the graph view asks the server for the neighbourhood
 *  (`focus`, `hops`) when the panel sends `panel-focus`. */
function focusControl(panel, id, s) {
  const hops = el('input', { type: 'number', min: 0, max: 10, step: 1, value: s.hops || '1', 'data-testid': 'panel-hops', 'aria-label': 'hops', class: 'hops' });
  const go = el('button', { type: 'button', 'data-testid': 'panel-focus',
    onclick: () => panel.dispatchEvent(new CustomEvent('panel-focus', { detail: { id, hops: hops.value } })) }, 'Focus on this node');
  return el('p', { class: 'focus' }, go, ' within ', hops, ' hops');
}

/** The cluster a node's pages and calls name: its own, when the instance has several
 * (`named`) and the node's is known. */
function clusterOf(d, named) {
  return named && d.cluster && d.cluster !== 'unknown' ? d.cluster : undefined;
}

export async function showNodePanel(panel, node, s, named = false) {
  const mine = ++token;
  const d = node.data();
  const c = clusterOf(d, named);
  frame(panel, 'node', d.id, nodeName(d) + (d.nodeType === 'app' && d.version ? ` ${d.version}` : ''));
  const r = nodeRates(d);
  const inEdges = node.incomers('edge'), outEdges = node.outgoers('edge');
  const sum = (edges) => edges.reduce((acc, e) => acc + edgeRps(e.data()), 0);
  add(panel,
    el('p', { class: 'muted' }, `${d.nodeType} · namespace ${d.namespace}`,
      d.cluster ? [' · cluster ', el('span', { 'data-testid': 'panel-cluster' }, d.cluster)] : null),
    badges(d).length ? el('p', { class: 'badges', 'data-testid': 'panel-badges' }, badges(d).map((b) => el('span', { class: 'badge' }, b))) : null,
    el('h3', {}, 'Traffic'),
    table(['', 'req/s', 'err/s', 'edges'], [
      ['in', valueCell('rate-in', r.in), valueCell('rate-in-err', r.inErr), `${inEdges.length} (${fmt(sum(inEdges))} rps)`],
      ['out', valueCell('rate-out', r.out), '', `${outEdges.length} (${fmt(sum(outEdges))} rps)`],
    ], { class: 'compact' }),
    r.tcpIn || r.tcpOut ? el('p', {}, `TCP: ${fmt(r.tcpIn, 0)} B/s in, ${fmt(r.tcpOut, 0)} B/s out`) : null,
    focusControl(panel, d.id, s),
  );
  const t = target(d);
  if (!t) return;
  const ns = d.namespace;
  // The name in the heading links to its page too.
  const h2 = panel.querySelector('.panel-head h2');
  h2.replaceChildren(pageLink(t.kind, ns, t.name, { 'data-testid': 'panel-name-link' }, c), d.nodeType === 'app' && d.version ? ` ${d.version}` : '');
  const links = el('p', { class: 'links' });
  if (t.kind === 'app') links.append(link(`app${qs({ namespace: ns, app: t.name, clusterName: c })}`, 'App page', { 'data-testid': 'panel-link-details' }));
  if (t.kind === 'workload') links.append(link(`workload${qs({ namespace: ns, workload: t.name, clusterName: c })}`, 'Workload page', { 'data-testid': 'panel-link-details' }));
  if (t.kind === 'service') links.append(link(`service${qs({ namespace: ns, service: t.name, clusterName: c })}`, 'Service page', { 'data-testid': 'panel-link-details' }));
  if (t.kind === 'service' && d.app) links.append(' ', link(`app${qs({ namespace: ns, app: d.app, clusterName: c })}`, 'App page'));
  links.append(' ', link(`graph${qs({ namespaces: ns, [t.kind]: t.name, clusterName: c, graphType: s.graphType, duration: s.duration })}`, `Graph of this ${t.kind}`, { 'data-testid': 'panel-link-graph' }));
  panel.append(links);
  const healthBox = el('div', { 'data-testid': 'panel-health', 'data-state': 'loading' }, el('h3', {}, 'Health'));
  const detailsBox = el('div', { 'data-testid': 'panel-details' });
  panel.append(healthBox, detailsBox);
  const rateInterval = s.duration || '10m';
  const [health, details] = await Promise.all([
    api(inCluster(`namespaces/${enc(ns)}/${t.path}/health${qs({ rateInterval })}`, c)).catch((e) => ({ error: e.message })),
    t.kind === 'service' ? null : api(inCluster(`namespaces/${enc(ns)}/${t.path}`, c)).catch((e) => ({ error: e.message })),
  ]);
  if (mine !== token) return;
  healthBox.dataset.kind = t.kind;
  healthBox.dataset.rateInterval = rateInterval;
  if (health.error) {
    healthBox.append(el('p', { class: 'error' }, health.error));
  } else {
    const st = objectStatus(health);
    healthBox.append(
      el('p', {}, el('span', { class: `status ${st}`, 'data-testid': 'health-status' }, st), ` (last ${rateInterval})`),
      table(['requests', 'errors'], [[valueCell('health-request-count', health.requests.requestCount, 3),
        valueCell('health-error-count', health.requests.requestErrorCount, 3)]], { class: 'compact' }));
    const deps = health.deploymentStatuses || (health.deploymentStatus ? [health.deploymentStatus] : []);
    if (deps.length) healthBox.append(table(['workload', 'ready'], deps.map((w) => [pageLink('workload', ns, w.name, {}, c), `${w.available} / ${w.replicas}`]), { class: 'compact' }));
  }
  healthBox.dataset.state = 'drawn';
  if (details && !details.error) {
    if (t.kind === 'app') {
      detailsBox.append(el('h3', {}, 'Workloads'), el('ul', {}, (details.workloads || []).map((w) =>
        el('li', {}, link(`workload${qs({ namespace: ns, workload: w.workloadName, clusterName: c })}`, w.workloadName), w.meshSidecar ? '' : d.isAmbient ? ' (ambient)' : ' (no sidecar)'))),
      el('h3', {}, 'Services'), el('p', {}, (details.serviceNames || []).length
        ? details.serviceNames.flatMap((sv, i) => [i ? ', ' : '', pageLink('service', ns, sv, {}, c)]) : 'none'));
    } else {
      detailsBox.append(el('h3', {}, 'Workload'), table(['replicas', 'available', 'pods'],
        [[details.replicas, details.availableReplicas, Array.isArray(details.pods) ? details.pods.length : '-']], { class: 'compact' }));
    }
  } else if (details && details.error) {
    detailsBox.append(el('p', { class: 'error' }, details.error));
  }
}

export function showEdgePanel(panel, edge, named = false) {
  const d = edge.data();
  const src = edge.source().data(), dst = edge.target().data();
  frame(panel, 'edge', d.id, `${nodeName(src)} → ${nodeName(dst)}`);
  // Each end's name links to its page (when it has one).
  const end = (n) => { const t = target(n); return t ? pageLink(t.kind, n.namespace, t.name, { 'data-testid': 'panel-end-link' }, clusterOf(n, named)) : nodeName(n); };
  panel.querySelector('.panel-head h2').replaceChildren(end(src), ' → ', end(dst));
  const t = d.traffic || {};
  const rates = Object.entries(t.rates || {});
  add(panel,
    el('p', { class: 'muted' }, named && src.cluster && dst.cluster
      ? `${src.namespace} (${src.cluster}) → ${dst.namespace} (${dst.cluster})` : `${src.namespace} → ${dst.namespace}`),
    table(['protocol', 'response time', 'mTLS'], [[el('span', { 'data-testid': 'edge-protocol' }, t.protocol || 'none'),
      el('span', { 'data-testid': 'edge-response-time' }, d.responseTime && d.responseTime !== '0' ? `${d.responseTime} ms` : '-'),
      d.isMTLS ? 'yes' : 'no']], { class: 'compact' }),
    el('h3', {}, 'Traffic'),
    rates.length ? table(['rate', 'value'], rates.map(([k, v]) => [k, el('span', { 'data-testid': 'edge-rate-' + k }, v)]), { class: 'compact' })
      : el('p', { class: 'muted' }, 'No traffic in this window.'),
    t.protocol && t.protocol !== 'tcp' ? el('p', {}, `${fmt(edgeRps(d))} requests/s, ${fmt(edgeErrPct(d), 1)} % errors`) : null,
  );
}
