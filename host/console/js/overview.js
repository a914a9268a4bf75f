// Overview: one card per namespace with its apps' health and its validation counts; with
// several clusters, one card per namespace of each cluster, named on the card.

import { api, enc } from './api.js';
import { el, inCluster, qs, spansClusters } from './dom.js';
import { navigate } from './app.js';
import { appStatus } from './health.js';

export async function renderOverview(main) {
  main.append(el('h1', {}, 'Namespaces'));
  const grid = el('div', { class: 'cards', 'data-testid': 'overview', 'data-state': 'loading' });
  main.append(grid);
  const namespaces = await api('namespaces');
  const named = spansClusters(namespaces);
  const cards = await Promise.all(namespaces.map((ns) => card(ns.name, ns.isAmbient, named ? ns.cluster : undefined)));
  grid.append(...cards);
  grid.dataset.state = 'drawn';
}

/** `cluster`: the namespace's cluster when the instance has several (else undefined). */
async function card(ns, ambient, cluster) {
  const [health, validations] = await Promise.all([
    api(inCluster(`namespaces/${enc(ns)}/health?type=app`, cluster)).catch((e) => ({ error: e.message })),
    api(inCluster(`namespaces/${enc(ns)}/mesh_validations`, cluster)).catch((e) => ({ error: e.message })),
  ]);
  const counts = { healthy: 0, degraded: 0, failing: 0, na: 0 };
  if (!health.error) for (const h of Object.values(health)) counts[appStatus(h)]++;
  let errors = 0, warnings = 0;
  if (!validations.error) {
    for (const kinds of Object.values(validations)) for (const objects of Object.values(kinds || {})) {
      for (const v of Object.values(objects || {})) for (const c of v.checks || []) {
        if (c.severity === 'error') errors++; else if (c.severity === 'warning') warnings++;
      }
    }
  }
  const target = 'graph' + qs({ namespaces: ns });
  const open = () => navigate(target);
  return el('article', {
    class: 'card', tabindex: 0, role: 'link', 'data-testid': 'ns-card', 'data-namespace': ns, 'data-cluster': cluster,
    'data-healthy': counts.healthy, 'data-degraded': counts.degraded, 'data-failing': counts.failing,
    'data-errors': errors, 'data-warnings': warnings, 'data-ambient': ambient ? 'true' : 'false',
    onclick: open, onkeydown: (e) => { if (e.key === 'Enter') open(); },
  },
  el('h2', {}, ns, ambient ? [' ', el('span', { class: 'badge', 'data-testid': 'ambient-badge', title: 'istio.io/dataplane-mode=ambient' }, 'ambient')] : null,
    cluster ? [' ', el('span', { class: 'badge cluster', 'data-testid': 'cluster-badge', title: 'cluster' }, cluster)] : null),
  el('p', { class: 'muted' }, 'Apps'),
  health.error ? el('p', { class: 'error' }, health.error) : el('ul', { class: 'counts' },
    el('li', { class: 'ok' }, el('b', {}, counts.healthy), ' healthy'),
    el('li', { class: 'warn' }, el('b', {}, counts.degraded), ' degraded'),
    el('li', { class: 'bad' }, el('b', {}, counts.failing), ' failing'),
    counts.na ? el('li', { class: 'muted' }, el('b', {}, counts.na), ' no data') : null),
  el('p', { class: 'muted' }, 'Config validation'),
  validations.error ? el('p', { class: 'error' }, validations.error) : el('ul', { class: 'counts' },
    el('li', { class: errors ? 'bad' : 'ok' }, el('b', {}, errors), errors === 1 ? ' error' : ' errors'),
    el('li', { class: warnings ? 'warn' : 'ok' }, el('b', {}, warnings), warnings === 1 ? ' warning' : ' warnings')),
  el('div', { class: 'card-links' },
    [[target, 'Graph'], [`apps${qs({ namespaces: ns })}`, 'Apps'], [`mesh${qs({ namespace: ns, clusterName: cluster })}`, 'Mesh config']].map(([href, text]) =>
      el('a', { href, 'data-link': true, onclick: (e) => e.stopPropagation() }, text))));
}
