// Mesh config: a namespace's objects by kind with their validation status, and one object's
// spec with its checks (message, severity, path). With several clusters the namespace
// picker names each namespace's cluster, and `clusterName` rides along in calls and links.

import { api, enc } from './api.js';
import { el, inCluster, link, pageLink, qs, spansClusters, table } from './dom.js';

// meshConfigList key → (objectValidations path type, namespaceValidations key, title, plural title)
export const KINDS = {
  virtualServices: ['virtualservices', 'virtualservice', 'VirtualService', 'VirtualServices'],
  destinationRules: ['destinationrules', 'destinationrule', 'DestinationRule', 'DestinationRules'],
  gateways: ['gateways', 'gateway', 'Gateway', 'Gateways'],
  serviceEntries: ['serviceentries', 'serviceentry', 'ServiceEntry', 'ServiceEntries'],
  rules: ['rules', 'rule', 'Rule', 'Rules'],
  quotaSpecs: ['quotaspecs', 'quotaspec', 'QuotaSpec', 'QuotaSpecs'],
  quotaSpecBindings: ['quotaspecbindings', 'quotaspecbinding', 'QuotaSpecBinding', 'QuotaSpecBindings'],
  authorizationPolicies: ['authorizationpolicies', 'authorizationpolicy', 'AuthorizationPolicy', 'AuthorizationPolicies'],
  peerAuthentications: ['peerauthentications', 'peerauthentication', 'PeerAuthentication', 'PeerAuthentications'],
  requestAuthentications: ['requestauthentications', 'requestauthentication', 'RequestAuthentication', 'RequestAuthentications'],
  sidecars: ['sidecars', 'sidecar', 'Sidecar', 'Sidecars'],
  k8sGateways: ['k8sgateways', 'k8sgateway', 'Gateway (Gateway API)', 'Gateways (Gateway API)'],
  k8sHTTPRoutes: ['k8shttproutes', 'k8shttproute', 'HTTPRoute', 'HTTPRoutes'],
  k8sGRPCRoutes: ['k8sgrpcroutes', 'k8sgrpcroute', 'GRPCRoute', 'GRPCRoutes'],
  k8sReferenceGrants: ['k8sreferencegrants', 'k8sreferencegrant', 'ReferenceGrant', 'ReferenceGrants'],
};

// A check's message, prefixed with its KIA code when it has one.
const checkText = (c) => (c.code ? `${c.code} ${c.message}` : c.message);

function statusOf(v) {
  if (!v) return ['na', 'not validated'];
  const sev = (v.checks || []).map((c) => c.severity);
  if (sev.includes('error') || v.valid === false) return ['failing', `${sev.filter((s) => s === 'error').length} error(s)`];
  if (sev.includes('warning')) return ['degraded', `${sev.length} warning(s)`];
  return ['healthy', 'valid'];
}

/** The picked namespace and, with several clusters, its cluster (`[ns, cluster]`). */
async function namespacePicker(main, current, currentCluster, target) {
  const listed = await api('namespaces');
  const named = spansClusters(listed);
  const first = listed[0] || {};
  const ns = current || first.name;
  const cluster = named ? currentCluster || (current ? undefined : first.cluster) : undefined;
  // No cluster named: the calls read the home cluster; the picker shows the first entry of that name.
  const picked = listed.find((n) => n.name === ns && (!cluster || n.cluster === cluster));
  // Option values are `cluster/namespace` with several clusters (a namespace name has no '/').
  const valueOf = (n) => (named ? `${n.cluster}/${n.name}` : n.name);
  const sel = el('select', { 'data-testid': 'mesh-namespace', 'aria-label': 'namespace',
    onchange: () => {
      const [c, n] = named ? [sel.value.slice(0, sel.value.lastIndexOf('/')), sel.value.slice(sel.value.lastIndexOf('/') + 1)] : [undefined, sel.value];
      history.pushState(null, '', target + qs({ namespace: n, clusterName: c }));
      window.dispatchEvent(new PopStateEvent('popstate'));
    } },
  listed.map((n) => el('option', { value: valueOf(n), selected: n === picked },
    named ? `${n.name} (${n.cluster})` : n.name)));
  main.append(el('label', { class: 'inline' }, 'Namespace ', sel));
  return [ns, cluster];
}

export async function renderMesh(main, params) {
  main.append(el('h1', {}, 'Mesh config'));
  const [ns, cluster] = await namespacePicker(main, params.get('namespace'), params.get('clusterName') || undefined, 'mesh');
  if (!ns) return;
  const [list, validations] = await Promise.all([
    api(inCluster(`namespaces/${enc(ns)}/mesh`, cluster)),
    api(inCluster(`namespaces/${enc(ns)}/mesh_validations`, cluster)).catch(() => ({})),
  ]);
  const byKind = validations[ns] || {};
  const box = el('div', { 'data-testid': 'mesh-objects' });
  let total = 0;
  for (const [key, [pathType, vKey, , titles]] of Object.entries(KINDS)) {
    const objects = list[key] || [];
    if (!objects.length) continue;
    total += objects.length;
    box.append(el('h2', {}, titles), table(['name', 'status', 'checks'], objects.map((o) => {
      const name = o.metadata && o.metadata.name;
      const [st, text] = statusOf((byKind[vKey] || {})[name]);
      return [link(`mesh/object${qs({ namespace: ns, objectType: pathType, object: name, clusterName: cluster })}`, name, { 'data-testid': 'mesh-object-link' }),
        el('span', { class: `status ${st}`, 'data-testid': 'mesh-object-status', 'data-object': `${vKey}/${name}`, 'data-status': st }, text),
        ((byKind[vKey] || {})[name] || { checks: [] }).checks.map(checkText).join('; ')];
    })));
  }
  if (!total) box.append(el('p', { class: 'muted' }, 'No mesh config objects in this namespace.'));
  main.append(box);
}

/** The services a VirtualService's or DestinationRule's hosts name, linked to their pages
 * (`name`, `name.ns`, `name.ns.svc...`; other hosts are shown as they are). */
function hostLinks(obj, ns, clusterName) {
  const spec = (obj && obj.spec) || {};
  const hosts = [].concat(spec.hosts || [], spec.host ? [spec.host] : []);
  if (!hosts.length) return null;
  const cluster = (h) => { const p = String(h).split('.'); return p.length === 1 || (p.length === 2) || p[2] === 'svc' ? p : null; };
  return el('p', { 'data-testid': 'object-hosts' }, 'Hosts: ', hosts.flatMap((h, i) => {
    const p = cluster(h);
    const item = p && !h.includes('*') ? pageLink('service', p[1] || ns, p[0], { title: h }, clusterName) : h;
    return [i ? ', ' : '', item];
  }));
}

export async function renderMeshObject(main, params) {
  const ns = params.get('namespace'), type = params.get('objectType'), name = params.get('object');
  if (!ns || !type || !name) { main.append(el('p', { class: 'error' }, 'This page needs namespace, objectType and object in its address.')); return; }
  const entry = Object.entries(KINDS).find(([, [p]]) => p === type);
  if (!entry) { main.append(el('p', { class: 'error' }, `Unknown object type ${type}.`)); return; }
  const [key, [, vKey, title]] = entry;
  const cluster = params.get('clusterName') || undefined;
  const [list, v] = await Promise.all([
    api(inCluster(`namespaces/${enc(ns)}/mesh${qs({ objects: type })}`, cluster)),
    api(inCluster(`namespaces/${enc(ns)}/mesh/${enc(type)}/${enc(name)}/mesh_validations`, cluster)),
  ]);
  const obj = (list[key] || []).find((o) => o.metadata && o.metadata.name === name);
  const val = (v[vKey] || {})[name];
  const [st, text] = statusOf(val);
  main.append(el('h1', {}, `${title} ${name}`, el('small', {}, ` · namespace ${ns}${cluster ? ` · cluster ${cluster}` : ''}`)),
    el('p', {}, link(`mesh${qs({ namespace: ns, clusterName: cluster })}`, '← all mesh config of ' + ns)),
    el('p', {}, el('span', { class: `status ${st}`, 'data-testid': 'object-status' }, text)),
    hostLinks(obj, ns, cluster),
    el('h2', {}, 'Checks'),
    val && val.checks && val.checks.length
      ? table(['severity', 'code', 'message', 'path'], val.checks.map((c) => [el('span', { class: `status ${c.severity === 'error' ? 'failing' : 'degraded'}` }, c.severity), c.code || '', c.message, el('code', {}, c.path || '')]), { 'data-testid': 'object-checks' })
      : el('p', { class: 'muted', 'data-testid': 'object-checks' }, 'No checks: the object is valid.'),
    el('h2', {}, 'Spec'),
    el('pre', { class: 'spec', 'data-testid': 'object-spec' }, obj ? JSON.stringify(obj.spec, null, 2) : 'not found'));
}
