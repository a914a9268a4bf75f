// Service page: health, the workloads behind the service, the VirtualServices and
// DestinationRules whose hosts name it (with their validation), and its inbound charts. A
// remote's service has `clusterName` in the address: its calls and links carry it, and its
// routing objects are looked up in that cluster only (as validations resolve hosts).

import { api, enc } from './api.js';
import { el, inCluster, link, qs, table } from './dom.js';
import { dashboardSection, healthSection } from './details.js';
import { hostNames } from './lists.js';

function validOf(v) {
  const sev = ((v && v.checks) || []).map((c) => c.severity);
  if (sev.includes('error') || (v && v.valid === false)) return 'error';
  if (sev.includes('warning')) return 'warning';
  return 'valid';
}

/** VirtualServices and DestinationRules of every visible namespace (of the service's
 * cluster) that name the service. */
async function routingObjects(ns, svc, cluster) {
  const listed = await api('namespaces');
  const namespaces = [...new Set(listed.filter((n) => !cluster || !n.cluster || n.cluster === cluster).map((n) => n.name))];
  const per = await Promise.all(namespaces.map(async (objNs) => {
    const [list, val] = await Promise.all([
      api(inCluster(`namespaces/${enc(objNs)}/mesh?objects=virtualservices,destinationrules`, cluster)).catch(() => ({})),
      api(inCluster(`namespaces/${enc(objNs)}/mesh_validations`, cluster)).catch(() => ({})),
    ]);
    const byKind = val[objNs] || {};
    const out = [];
    for (const [key, kind, vKey, title] of [['virtualServices', 'virtualservices', 'virtualservice', 'VirtualService'],
      ['destinationRules', 'destinationrules', 'destinationrule', 'DestinationRule']]) {
      for (const o of list[key] || []) {
        const spec = o.spec || {};
        const hosts = [].concat(spec.hosts || [], spec.host ? [spec.host] : []);
        if (!hosts.some((h) => hostNames(h, objNs, svc, ns))) continue;
        const name = o.metadata && o.metadata.name;
        out.push({ ns: objNs, name, kind, title, valid: validOf((byKind[vKey] || {})[name]) });
      }
    }
    return out;
  }));
  return per.flat();
}

export async function renderService(main, params) {
  const ns = params.get('namespace'), svc = params.get('service');
  if (!ns || !svc) { main.append(el('p', { class: 'error' }, 'This page needs namespace and service in its address.')); return null; }
  const rateInterval = params.get('rateInterval') || '10m';
  const cluster = params.get('clusterName') || undefined;
  const [list, health, objects] = await Promise.all([
    api(inCluster(`namespaces/${enc(ns)}/services`, cluster)),
    api(inCluster(`namespaces/${enc(ns)}/services/${enc(svc)}/health${qs({ rateInterval })}`, cluster)).catch((e) => ({ error: e.message })),
    routingObjects(ns, svc, cluster),
  ]);
  const item = (list.services || []).find((s) => s.name === svc);
  if (!item) { main.append(el('p', { class: 'error', 'data-testid': 'view-error' }, `No service ${svc} in namespace ${ns}.`)); return null; }
  const statusClass = { valid: 'healthy', warning: 'degraded', error: 'failing' };
  main.append(el('h1', {}, `Service ${svc}`, el('small', {}, ` · namespace ${ns}${cluster ? ` · cluster ${cluster}` : ''}`)),
    el('p', { class: 'links' }, link(`graph${qs({ namespaces: ns, service: svc })}`, 'Graph of this service'), ' ',
      link(`services${qs({ namespaces: ns })}`, 'All services of ' + ns), ' ',
      link(`mesh${qs({ namespace: ns, clusterName: cluster })}`, 'Mesh config')),
    el('div', { class: 'two-col' },
      healthSection(health, rateInterval, ns, cluster),
      el('section', {},
        el('h2', {}, 'Workloads'),
        item.workloads.length
          ? el('ul', { 'data-testid': 'service-workloads' }, item.workloads.map((w) =>
            el('li', {}, link(`workload${qs({ namespace: ns, workload: w, clusterName: cluster })}`, w, { 'data-testid': 'workload-link', 'data-name': w }))))
          : el('p', { class: 'muted', 'data-testid': 'service-workloads' }, 'The selector selects no workload.'),
        el('h2', {}, 'Routing'),
        objects.length
          ? table(['object', 'kind', 'namespace', 'validation'], objects.map((o) => [
            link(`mesh/object${qs({ namespace: o.ns, objectType: o.kind, object: o.name, clusterName: cluster })}`, o.name,
              { 'data-testid': 'routing-object', 'data-kind': o.kind, 'data-name': o.name, 'data-namespace': o.ns, 'data-valid': o.valid }),
            o.title, o.ns, el('span', { class: `status ${statusClass[o.valid]}` }, o.valid)]), { class: 'compact' })
          : el('p', { class: 'muted' }, 'No VirtualService or DestinationRule names this service.'))));
  const q = new URLSearchParams(params);
  q.set('direction', 'inbound');
  return dashboardSection(main, ns, svc, q, 'services');
}
