// Tiny DOM helpers (no framework).

/** `el('div', {class: 'x', onclick: fn}, child, 'text')` */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

/** A table from a header row and rows of cells. */
export function table(head, rows, attrs = {}) {
  return el('table', attrs,
    el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c) => el('td', {}, c))))));
}

export function fmt(n, digits = 2) {
  const x = Number(n);
  return Number.isFinite(x) ? x.toFixed(digits) : '-';
}

/** A console link (handled by the router). */
export function link(href, text, attrs = {}) {
  return el('a', { href, 'data-link': true, ...attrs }, text);
}

/** A link to the page of an app, workload or service (`kind`) of namespace `ns`; `cluster`
 * (a remote's object) goes along as `clusterName`. */
export function pageLink(kind, ns, name, attrs = {}, cluster = undefined) {
  return link(`${kind}${qs({ namespace: ns, [kind]: name, clusterName: cluster })}`, name, { 'data-kind': kind, 'data-name': name, ...attrs });
}

/** An API path (maybe with a query) in cluster `cluster`: the `clusterName` parameter of the
 * namespace-scoped operations (README, "Several clusters"); unchanged when none is named. */
export function inCluster(path, cluster) {
  if (!cluster) return path;
  return `${path}${path.includes('?') ? '&' : '?'}clusterName=${encodeURIComponent(cluster)}`;
}

/** Whether `/api/namespaces`' entries span more than one cluster (only then do the pages
 * name clusters and send `clusterName`, so a single-cluster instance looks as before). */
export function spansClusters(namespaces) {
  return new Set((namespaces || []).map((n) => n.cluster).filter(Boolean)).size > 1;
}

/** Query string from an object, skipping empty values. */
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    u.set(k, v);
  }
  const s = u.toString();
  return s ? '?' + s : '';
}

export function enc(s) { return encodeURIComponent(s); }

/** Triggers a download of `blob` as `name`. */
export function download(blob, name) {
  const a = el('a', { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}
