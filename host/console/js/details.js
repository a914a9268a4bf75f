// App and workload pages: health, pods, services, runtimes, appDashboard charts (inbound /
// outbound, reporter, by-label choices) and the runtimes' custom dashboards. A remote's object
// has `clusterName` in the address; every API call and page link carries it along.

import { api, enc } from './api.js';
import { el, fmt, inCluster, link, pageLink, qs, table } from './dom.js';
import { objectStatus } from './health.js';
import { drawDashboard } from './charts.js';

export function healthSection(health, rateInterval, ns, cluster) {
  if (health.error) return el('p', { class: 'error' }, health.error);
  const st = objectStatus(health);
  const deps = health.deploymentStatuses || (health.deploymentStatus ? [health.deploymentStatus] : []);
  return el('section', { 'data-testid': 'health' },
    el('h2', {}, 'Health ', el('span', { class: `status ${st}`, 'data-testid': 'health-status' }, st)),
    table(['requests (last ' + rateInterval + ')', 'errors'], [[
      el('span', { 'data-testid': 'health-request-count', 'data-value': health.requests.requestCount }, fmt(health.requests.requestCount, 3)),
      el('span', { 'data-testid': 'health-error-count', 'data-value': health.requests.requestErrorCount }, fmt(health.requests.requestErrorCount, 3))]], { class: 'compact' }),
    deps.length ? table(['workload', 'available', 'replicas'], deps.map((w) => [ns ? pageLink('workload', ns, w.name, {}, cluster) : w.name, w.available, w.replicas]), { class: 'compact' }) : null);
}

/** The app/workload/service dashboard block (`kind`: apps, workloads, services) with its
 * choices; the URL keeps them (direction, reporter, byLabels). */
export async function dashboardSection(main, ns, app, params, kind = 'apps') {
  const choice = {
    direction: params.get('direction') || 'inbound',
    reporter: params.get('reporter') || (params.get('direction') === 'outbound' ? 'source' : 'destination'),
    byLabels: params.get('byLabels') || '',
    duration: params.get('duration') || '1800',
  };
  const section = el('section', { 'data-testid': 'dashboard', 'data-state': 'loading' }, el('h2', {}, 'Metrics'));
  const form = el('form', { class: 'controls', onsubmit: (e) => e.preventDefault() });
  const sel = (name, opts) => el('select', { name, 'data-testid': 'dash-' + name, 'aria-label': name },
    opts.map(([v, t]) => el('option', { value: v, selected: v === choice[name] }, t)));
  const box = el('div', { class: 'charts' });
  section.append(form, box);
  main.append(section);
  let cleanup = () => {};
  const load = async () => {
    section.dataset.state = 'loading';
    const q = new URLSearchParams({ direction: choice.direction, reporter: choice.reporter, duration: choice.duration, avg: 'true' });
    for (const qn of ['0.5', '0.95', '0.99']) q.append('quantiles[]', qn);
    for (const l of choice.byLabels.split(',').filter(Boolean)) q.append('byLabels[]', l);
    const path = inCluster(`namespaces/${enc(ns)}/${kind}/${enc(app)}/dashboard?${q}`, params.get('clusterName'));
    section.dataset.api = path;
    try {
      const dash = await api(path);
      cleanup();
      box.replaceChildren();
      if (!form.childElementCount) {
        const labels = el('select', { name: 'byLabels', 'data-testid': 'dash-byLabels', 'aria-label': 'by label' },
          el('option', { value: '' }, 'no grouping'),
          (dash.aggregations || []).map((a) => el('option', { value: a.label, selected: a.label === choice.byLabels }, 'by ' + a.displayName)));
        form.append(
          sel('direction', kind === 'services' ? [['inbound', 'Inbound']] : [['inbound', 'Inbound'], ['outbound', 'Outbound']]),
          sel('reporter', [['destination', 'reported by destination'], ['source', 'reported by source']]),
          sel('duration', [['600', 'last 10m'], ['1800', 'last 30m'], ['3600', 'last 1h'], ['10800', 'last 3h']]),
          labels);
        form.addEventListener('change', (e) => {
          choice[e.target.name] = e.target.value;
          const u = new URL(location.href);
          for (const [k, v] of Object.entries(choice)) if (v) u.searchParams.set(k, v); else u.searchParams.delete(k);
          history.replaceState(null, '', u);
          load();
        });
      }
      cleanup = drawDashboard(box, dash);
      section.dataset.state = 'drawn';
    } catch (e) {
      box.replaceChildren(el('p', { class: 'error' }, e.message));
      section.dataset.state = 'error';
    }
  };
  await load();
  return () => cleanup();
}

async function customDashboards(main, ns, app, runtimes, cluster) {
  const cleanups = [];
  for (const rt of runtimes || []) {
    for (const ref of rt.dashboardRefs || []) {
      const section = el('section', { 'data-testid': 'custom-dashboard', 'data-template': ref.template }, el('h2', {}, `${ref.title} (${rt.name})`));
      const box = el('div', { class: 'charts' });
      section.append(box);
      main.append(section);
      try {
        const dash = await api(inCluster(`namespaces/${enc(ns)}/apps/${enc(app)}/customdashboard/${enc(ref.template)}?duration=1800`, cluster));
        cleanups.push(drawDashboard(box, dash));
      } catch (e) {
        box.append(el('p', { class: 'error' }, e.message));
      }
    }
  }
  return () => cleanups.forEach((c) => c());
}

export async function renderApp(main, params) {
  const ns = params.get('namespace'), app = params.get('app');
  if (!ns || !app) { main.append(el('p', { class: 'error' }, 'This page needs namespace and app in its address.')); return; }
  const rateInterval = params.get('rateInterval') || '10m';
  const cluster = params.get('clusterName') || undefined;
  const [details, health, listed] = await Promise.all([
    api(inCluster(`namespaces/${enc(ns)}/apps/${enc(app)}`, cluster)),
    api(inCluster(`namespaces/${enc(ns)}/apps/${enc(app)}/health${qs({ rateInterval })}`, cluster)).catch((e) => ({ error: e.message })),
    api(inCluster(`namespaces/${enc(ns)}/workloads`, cluster)).catch(() => ({ workloads: [] })),
  ]);
  // Ambient workloads and waypoints have no sidecar by design: shown as such, not "missing".
  const plane = Object.fromEntries((listed.workloads || []).map((w) => [w.name, w.isWaypoint ? 'waypoint' : w.isAmbient ? 'ambient' : null]));
  main.append(el('h1', {}, `App ${app}`, el('small', {}, ` · namespace ${ns}${cluster ? ` · cluster ${cluster}` : ''}`)),
    el('p', { class: 'links' }, link(`graph${qs({ namespaces: ns, app, graphType: 'versionedApp' })}`, 'Graph of this app'), ' ',
      link(`mesh${qs({ namespace: ns, clusterName: cluster })}`, 'Mesh config')),
    el('div', { class: 'two-col' },
      healthSection(health, rateInterval, ns, cluster),
      el('section', {}, el('h2', {}, 'Workloads'), table(['workload', 'sidecar'], (details.workloads || []).map((w) =>
        [link(`workload${qs({ namespace: ns, workload: w.workloadName, clusterName: cluster })}`, w.workloadName), w.meshSidecar ? 'yes' : plane[w.workloadName] ? `no (${plane[w.workloadName]})` : 'missing'])),
      el('h2', {}, 'Services'), el('p', { 'data-testid': 'services' }, (details.serviceNames || []).length
        ? details.serviceNames.flatMap((s, i) => [i ? ', ' : '', link(`service${qs({ namespace: ns, service: s, clusterName: cluster })}`, s)]) : 'none'),
      el('h2', {}, 'Runtimes'), el('p', { 'data-testid': 'runtimes' }, (details.runtimes || []).map((r) => r.name).join(', ') || 'none'))));
  const c1 = await dashboardSection(main, ns, app, params);
  const c2 = await customDashboards(main, ns, app, details.runtimes, cluster);
  return () => { c1(); c2(); };
}

export async function renderWorkload(main, params) {
  const ns = params.get('namespace'), wl = params.get('workload');
  if (!ns || !wl) { main.append(el('p', { class: 'error' }, 'This page needs namespace and workload in its address.')); return; }
  const rateInterval = params.get('rateInterval') || '10m';
  const cluster = params.get('clusterName') || undefined;
  const [w, health] = await Promise.all([
    api(inCluster(`namespaces/${enc(ns)}/workloads/${enc(wl)}`, cluster)),
    api(inCluster(`namespaces/${enc(ns)}/workloads/${enc(wl)}/health${qs({ rateInterval })}`, cluster)).catch((e) => ({ error: e.message })),
  ]);
  const app = w.labels && w.labels.app;
  const runtimes = (w.templateAnnotations && w.templateAnnotations['kiali.io/runtimes']) || '';
  // Ambient workloads and waypoints have no sidecar by design: a badge, not "missing".
  const dataPlane = w.isWaypoint ? 'waypoint' : w.isAmbient ? 'ambient' : null;
  main.append(el('h1', {}, `Workload ${wl}`, el('small', {}, ` · ${w.type || ''} · namespace ${ns}${cluster ? ` · cluster ${cluster}` : ''}`),
    dataPlane ? [' ', el('span', { class: 'badge', 'data-testid': 'dataplane-badge' }, dataPlane)] : null),
    el('p', { class: 'links' }, link(`graph${qs({ namespaces: ns, workload: wl })}`, 'Graph of this workload'),
      app ? [' ', link(`app${qs({ namespace: ns, app, clusterName: cluster })}`, `App ${app}`)] : null),
    el('div', { class: 'two-col' },
      healthSection(health, rateInterval, ns, cluster),
      el('section', {}, el('h2', {}, 'Replicas'),
        table(['desired', 'available', 'unavailable'], [[w.replicas, w.availableReplicas, w.unavailableReplicas]], { class: 'compact' }),
        el('h2', {}, 'Labels'), el('p', {}, Object.entries(w.labels || {}).map(([k, v]) => el('span', { class: 'badge' }, `${k}=${v}`))),
        el('h2', {}, 'Runtimes'), el('p', { 'data-testid': 'runtimes' }, runtimes || 'none'))),
    el('section', { 'data-testid': 'pods' }, el('h2', {}, 'Pods'), table(['pod', 'phase', 'sidecar', 'created'],
      (w.pods || []).map((p) => [p.name, el('span', { class: `status ${p.phase === 'Running' ? 'healthy' : 'degraded'}` }, p.phase || '-'), p.meshSidecar ? 'yes' : dataPlane ? `no (${dataPlane})` : 'missing', p.createdAt || '']))),
    el('section', {}, el('h2', {}, 'Services'), table(['service', 'type', 'ip', 'ports'],
      (w.services || []).map((s) => [link(`service${qs({ namespace: ns, service: s.name, clusterName: cluster })}`, s.name), s.type, s.ip || '', (s.ports || []).map((p) => `${p.name || ''} ${p.port}/${p.protocol}`).join(', ')]))));
  return dashboardSection(main, ns, wl, params, 'workloads');
}
