// The graph view. The URL carries the whole state with the API's parameter names
// (namespaces, graphType, duration, groupBy, boxBy, injectServiceNodes, includeMesh, appenders,
// ambientTraffic, waypoints, queryTime, hide, find, focus, hops; app/version/service/workload for a node's own graph)
// plus the view's own (refresh, edgeLabels, select). hide, find and focus are the server's
// work (issue #34): hidden elements are never sent, found ones carry isFind. After each draw
// the container [data-testid=graph] carries data-state, data-nodes, data-edges, data-node-ids
// and data-found-ids.

import { api, apiUrl, enc } from './api.js';
import { el, qs, download, spansClusters } from './dom.js';
import { compile } from './find.js';
import { createCy, draw, relabelEdges, restyle, toSvg, warmLayout } from './graph-draw.js';
import { onThemeChange, palette } from './graph-theme.js';
import { showNodePanel, showEdgePanel, closePanel } from './graph-panel.js';
import { createReplay, keepPlaces, placesOf, replayGrid } from './replay.js';

const GRAPH_TYPES = ['app', 'versionedApp', 'workload', 'service'];
const DURATIONS = ['1m', '5m', '10m', '30m', '1h', '3h', '6h', '12h', '1d'];
const REFRESH = { off: 0, '10s': 10e3, '30s': 30e3, '1m': 60e3 };
const EDGE_LABELS = { none: 'No edge labels', rps: 'Request rate', errorPct: 'Error %', responseTime: 'Response time' };
const API_KEYS = ['namespaces', 'graphType', 'duration', 'groupBy', 'boxBy', 'injectServiceNodes', 'includeMesh', 'appenders', 'ambientTraffic', 'waypoints', 'queryTime', 'hide', 'find', 'focus', 'hops'];
// The API's ambientTraffic values (README, "Ambient mesh"); `total` is the default.
const AMBIENT_TRAFFIC = { total: 'ambient: total', ztunnel: 'ambient: ztunnel', waypoint: 'ambient: waypoint', none: 'ambient: none' };
// clusterName picks the node's cluster in a node's own graph (the namespaces graph spans all).
const TARGET_KEYS = ['app', 'version', 'service', 'workload', 'clusterName'];
// Kiali v2's boxBy (comma-separated cluster, namespace, app): the useful combinations, as one
// select (three more checkboxes would push the graph down at 1280 px).
const BOX_BY = { '': 'boxBy: none', cluster: 'boxBy cluster', namespace: 'boxBy namespace', app: 'boxBy app',
  'cluster,namespace': 'boxBy cluster, namespace', 'cluster,namespace,app': 'boxBy cluster, namespace, app' };
const VIEW_KEYS = ['refresh', 'edgeLabels', 'select'];

function readState(params) {
  const s = {};
  for (const k of [...API_KEYS, ...TARGET_KEYS, ...VIEW_KEYS]) if (params.has(k)) s[k] = params.get(k);
  s.graphType ||= 'workload';
  s.duration ||= '10m';
  s.refresh ||= 'off';
  s.edgeLabels ||= 'none';
  return s;
}

/** The API path (with query) the state asks for; `extra` adds e.g. format=dot. */
export function graphApiPath(s, extra = {}) {
  const ns = (s.namespaces || '').split(',').filter(Boolean);
  let path = 'namespaces/graph';
  if (s.workload) path = `namespaces/${enc(ns[0])}/workloads/${enc(s.workload)}/graph`;
  else if (s.service) path = `namespaces/${enc(ns[0])}/services/${enc(s.service)}/graph`;
  else if (s.app) path = `namespaces/${enc(ns[0])}/applications/${enc(s.app)}${s.version ? '/versions/' + enc(s.version) : ''}/graph`;
  const q = {};
  for (const k of API_KEYS) if (s[k] !== undefined && !(k === 'namespaces' && path !== 'namespaces/graph')) q[k] = s[k];
  if (s.service) delete q.injectServiceNodes; // not offered on graphService
  if (path !== 'namespaces/graph' && s.clusterName) q.clusterName = s.clusterName;
  return path + qs({ ...q, ...extra });
}

function urlOf(s) {
  const q = {};
  for (const k of [...API_KEYS, ...TARGET_KEYS, ...VIEW_KEYS]) if (s[k] !== undefined && s[k] !== '') q[k] = s[k];
  if (q.refresh === 'off') delete q.refresh;
  if (q.edgeLabels === 'none') delete q.edgeLabels;
  return 'graph' + qs(q);
}

function select(name, options, value, testid) {
  return el('select', { name, 'data-testid': testid, 'aria-label': name },
    Object.entries(options).map(([v, label]) => el('option', { value: v, selected: v === value }, label)));
}

export async function renderGraph(main, params) {
  const s = readState(params);
  // The appenders come from the server (getConfig's graphAppenders: the bundled list in
  // Rust plus loaded plugins), so the console never keeps a copy of its own.
  const [namespaces, config] = await Promise.all([api('namespaces'), api('config')]);
  const grid = replayGrid(config);
  // A namespace of several clusters is one choice: the graph covers it in every cluster.
  const nsList = [...new Set(namespaces.map((n) => n.name))];
  const named = spansClusters(namespaces);
  const appenderNames = config.graphAppenders;
  if (!s.namespaces) {
    s.namespaces = nsList.join(',');
    history.replaceState(null, '', urlOf(s));
  }
  // An expression from the address that cannot be read is shown, not sent.
  const addressErrors = [['find', s.find], ['hide', s.hide]].map(([k, v]) => [k, exprError(v, k)]).filter(([, e]) => e);
  for (const [k] of addressErrors) delete s[k];
  const chosen = new Set(s.namespaces.split(','));
  const enabled = s.appenders === undefined ? new Set(appenderNames) : new Set(s.appenders.split(',').filter(Boolean));

  const nsSelect = el('select', { multiple: true, name: 'namespaces', 'data-testid': 'ctl-namespaces', 'aria-label': 'namespaces', size: Math.min(4, nsList.length) },
    nsList.map((n) => el('option', { value: n, selected: chosen.has(n) }, n)));
  const typeSel = select('graphType', Object.fromEntries(GRAPH_TYPES.map((t) => [t, t])), s.graphType, 'ctl-graphType');
  const durSel = select('duration', Object.fromEntries(DURATIONS.map((d) => [d, 'last ' + d])), s.duration, 'ctl-duration');
  if (![...durSel.options].some((o) => o.value === s.duration)) durSel.append(el('option', { value: s.duration, selected: true }, 'last ' + s.duration));
  const refSel = select('refresh', Object.fromEntries(Object.keys(REFRESH).map((r) => [r, r === 'off' ? 'refresh off' : 'every ' + r])), s.refresh, 'ctl-refresh');
  const groupSel = select('groupBy', { none: 'no boxes', app: 'box by app', version: 'box by version' }, s.groupBy || 'none', 'ctl-groupBy');
  const boxSel = select('boxBy', BOX_BY, s.boxBy || '', 'ctl-boxBy');
  if (![...boxSel.options].some((o) => o.value === (s.boxBy || ''))) boxSel.append(el('option', { value: s.boxBy, selected: true }, 'boxBy ' + s.boxBy));
  const labelSel = select('edgeLabels', EDGE_LABELS, s.edgeLabels, 'ctl-edgeLabels');
  const ambientSel = select('ambientTraffic', AMBIENT_TRAFFIC, s.ambientTraffic || 'total', 'ctl-ambientTraffic');
  const waypoints = el('input', { type: 'checkbox', name: 'waypoints', 'data-testid': 'ctl-waypoints', checked: s.waypoints === 'true' });
  const inject = el('input', { type: 'checkbox', name: 'injectServiceNodes', 'data-testid': 'ctl-injectServiceNodes', checked: s.injectServiceNodes === 'true' });
  const mesh = el('input', { type: 'checkbox', name: 'includeMesh', 'data-testid': 'ctl-includeMesh', checked: s.includeMesh === 'true' });
  const appenderBoxes = appenderNames.map((a) => el('label', { class: 'chk' },
    el('input', { type: 'checkbox', name: 'appender', value: a, 'data-testid': 'ctl-appender-' + a, checked: enabled.has(a) }), a));
  const findIn = el('input', { type: 'search', name: 'find', placeholder: 'find: rps > 10, ns = bookinfo, hasCB', value: s.find || '', 'data-testid': 'ctl-find' });
  const hideIn = el('input', { type: 'search', name: 'hide', placeholder: 'hide: node = service', value: s.hide || '', 'data-testid': 'ctl-hide' });
  const exprErr = el('span', { class: 'error', 'data-testid': 'expr-error', role: 'alert' });
  const unfocus = el('button', { type: 'button', 'data-testid': 'ctl-unfocus', hidden: !s.focus }, `Unfocus (${s.hops || 1} hops)`);
  const exportSel = el('select', { 'data-testid': 'ctl-export', 'aria-label': 'export' },
    ['Export…', 'PNG', 'SVG', 'JSON', 'DOT'].map((f, i) => el('option', { value: i ? f : '' }, f)));
  const reload = el('button', { type: 'button', 'data-testid': 'ctl-reload' }, 'Reload');
  const target = s.workload || s.service || s.app;
  const title = el('h1', {}, target ? `Graph of ${s.workload ? 'workload' : s.service ? 'service' : 'app'} ${target}${s.version ? ' ' + s.version : ''}` : 'Graph');

  exprErr.textContent = addressErrors.map(([, e]) => e).join('; ');
  const container = el('div', { class: 'graph', 'data-testid': 'graph', 'data-state': 'loading' });
  const status = el('div', { class: 'graph-status', 'data-testid': 'graph-status' });
  const panel = el('aside', { class: 'panel', 'data-testid': 'panel', hidden: true });
  // load() is defined below; the control only calls it after the first draw.
  const replay = createReplay({ queryTime: s.queryTime, grid, onFrame: (t, how) => frame(t, how) });
  // The replay control sits beside the title, so opening it does not push the graph down.
  main.append(el('div', { class: 'graph-head' }, title, replay.element),
    el('form', { class: 'controls', onsubmit: (e) => e.preventDefault() },
      el('fieldset', {}, el('legend', {}, 'Namespaces'), nsSelect),
      el('fieldset', {}, el('legend', {}, 'View'), typeSel, durSel, refSel, groupSel, boxSel, labelSel,
        el('label', { class: 'chk' }, inject, 'service nodes'), el('label', { class: 'chk' }, mesh, 'mesh namespace'),
        ambientSel, el('label', { class: 'chk' }, waypoints, 'waypoints')),
      el('details', { class: 'appenders' }, el('summary', {}, 'Appenders'), appenderBoxes),
      el('fieldset', { class: 'find' }, el('legend', {}, 'Find / hide'), findIn, hideIn, unfocus, exprErr),
      el('div', { class: 'actions' }, reload, exportSel)),
    el('div', { class: 'graph-area' }, container, panel), status,
    el('p', { class: 'legend', 'data-testid': 'legend' },
      'nodes: the server\'s health status (',
      el('span', { class: 'sw ok' }), 'healthy ', el('span', { class: 'sw warn' }), 'degraded ', el('span', { class: 'sw bad' }), 'failure ', el('span', { class: 'sw na' }), 'n/a) · ',
      'edges: error rate ', el('span', { class: 'sw ok' }), '≤ 0.1 % ', el('span', { class: 'sw warn' }), '> 0.1 % ', el('span', { class: 'sw bad' }), '≥ 20 % ',
      el('span', { class: 'sw na' }), 'no traffic ', el('span', { class: 'sw tcp' }), 'TCP · ', el('span', { class: 'lock' }), 'mTLS (at the edge\'s start) · ',
      '○ workload ▢ app △ service ◇ service entry / unknown · dashed: unused or dead · [CB] circuit breaker [VS] virtual service [SE] service entry [ambient] ztunnel-captured [waypoint] waypoint proxy'));

  const cy = createCy(container);
  // For scripts and tests that need positions (e.g. to click a node): the cytoscape instance.
  window.meshlensGraph = cy;
  let controller = null;
  let timer = null;
  let graph = null;

  const pushUrl = (replace) => {
    const url = urlOf(s);
    if (replace) history.replaceState(null, '', url); else history.pushState(null, '', url);
  };

  // Shown: not hidden itself, nor inside a hidden box; an edge also needs both ends shown.
  // (Worked out here rather than read from the renderer, which updates styles lazily.)
  const nodeShown = (n) => !n.hasClass('hidden') && n.ancestors('.hidden').empty();
  const shown = (e) => (e.isNode() ? nodeShown(e) : !e.hasClass('hidden') && nodeShown(e.source()) && nodeShown(e.target()));

  function visibleCounts() {
    // Nothing hidden (the usual case, and every fresh draw): no per-element checks.
    const anyHidden = cy.$('.hidden').nonempty();
    const nodes = anyHidden ? cy.nodes().filter(shown) : cy.nodes();
    container.dataset.nodes = String(nodes.length);
    container.dataset.edges = String(anyHidden ? cy.edges().filter(shown).length : cy.edges().length);
    container.dataset.nodeIds = nodes.map((n) => n.id()).join(',');
    status.textContent = `${nodes.length} nodes, ${container.dataset.edges} edges` +
      (graph ? ` · ${new Date(graph.timestamp * 1000).toLocaleTimeString()} · last ${s.duration}` : '');
  }

  /** Checks an expression before it is sent (the server reads it; this only says early
   *  why one cannot be read); the message, or '' when it can be read or is empty. */
  function exprError(text, what) {
    if (!text || !text.trim()) return '';
    try { compile(text); return ''; } catch (e) { return `${what}: ${e.message}`; }
  }

  /** Marks what the server found (isFind); hidden elements were never sent. */
  function applyExpressions() {
    cy.batch(() => {
      cy.$('.found').removeClass('found');
      cy.elements().filter((e) => e.data('isFind') === true).addClass('found');
    });
    container.dataset.foundIds = cy.elements('.found').map((e) => e.id()).join(',');
    visibleCounts();
  }

  function restoreSelection() {
    if (!s.select) { closePanel(panel); return; }
    const ele = cy.getElementById(s.select);
    if (ele.empty()) { closePanel(panel); return; }
    cy.elements().unselect();
    ele.select();
    if (ele.isNode()) showNodePanel(panel, ele, s, named); else showEdgePanel(panel, ele, named);
  }

  /** Draws the graph at replay time `t` (undefined: live), keeping node positions and view. */
  function frame(t, how) {
    s.queryTime = t === undefined ? undefined : String(t);
    pushUrl(how === 'play');
    return load({ keep: true });
  }

  async function load({ keep = false } = {}) {
    if (controller) controller.abort();
    controller = new AbortController();
    const mine = controller;
    container.dataset.state = 'loading';
    delete container.dataset.error;
    performance.mark('meshlens-graph-request');
    warmLayout();
    try {
      graph = await api(graphApiPath(s), { signal: mine.signal });
      if (mine.signal.aborted) return;
      performance.mark('meshlens-graph-fetched');
      const before = keep && cy.nodes().nonempty() ? placesOf(cy) : null;
      await draw(cy, graph, s.edgeLabels, before ? { place: (laidOut) => keepPlaces(before, laidOut), keepView: true } : {});
      if (mine.signal.aborted) return;
      applyExpressions();
      restoreSelection();
      performance.mark('meshlens-graph-counted');
      // Drawn means painted: wait for the frame that shows the new elements.
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      if (mine.signal.aborted) return;
      performance.mark('meshlens-graph-drawn');
      performance.measure('meshlens-graph', 'meshlens-graph-request', 'meshlens-graph-drawn');
      container.dataset.queryTime = String(graph.timestamp);
      replay.drawn(graph.timestamp);
      container.dataset.state = 'drawn';
    } catch (e) {
      if (e.name === 'AbortError' || mine.signal.aborted) return;
      container.dataset.state = 'error';
      container.dataset.error = e.message;
      status.replaceChildren(el('span', { class: 'error', 'data-testid': 'graph-error' }, e.message));
    }
  }

  function schedule() {
    clearInterval(timer);
    const ms = REFRESH[s.refresh] || 0;
    if (ms) timer = setInterval(load, ms);
  }

  const changed = (refetch, replace = false) => { pushUrl(replace); if (refetch) load(); };
  nsSelect.addEventListener('change', () => {
    s.namespaces = [...nsSelect.selectedOptions].map((o) => o.value).join(',');
    changed(true);
  });
  for (const [sel, key] of [[typeSel, 'graphType'], [durSel, 'duration'], [groupSel, 'groupBy']]) {
    sel.addEventListener('change', () => { s[key] = sel.value === 'none' && key === 'groupBy' ? undefined : sel.value; changed(true); });
  }
  refSel.addEventListener('change', () => { s.refresh = refSel.value; schedule(); changed(false); });
  labelSel.addEventListener('change', () => { s.edgeLabels = labelSel.value; relabelEdges(cy, s.edgeLabels); changed(false); });
  inject.addEventListener('change', () => { s.injectServiceNodes = inject.checked ? 'true' : undefined; changed(true); });
  mesh.addEventListener('change', () => { s.includeMesh = mesh.checked ? 'true' : undefined; changed(true); });
  ambientSel.addEventListener('change', () => { s.ambientTraffic = ambientSel.value === 'total' ? undefined : ambientSel.value; changed(true); });
  waypoints.addEventListener('change', () => { s.waypoints = waypoints.checked ? 'true' : undefined; changed(true); });
  boxSel.addEventListener('change', () => { s.boxBy = boxSel.value || undefined; changed(true); });
  for (const box of appenderBoxes) box.addEventListener('change', () => {
    const on = appenderBoxes.map((b) => b.querySelector('input')).filter((i) => i.checked).map((i) => i.value);
    s.appenders = on.length === appenderNames.length ? undefined : on.join(',');
    changed(true);
  });
  for (const [input, key] of [[findIn, 'find'], [hideIn, 'hide']]) {
    input.addEventListener('change', () => {
      const err = exprError(input.value, key);
      exprErr.textContent = err;
      // A bad expression says why and changes nothing.
      if (err) return;
      s[key] = input.value.trim() || undefined;
      changed(true, true);
    });
  }
  panel.addEventListener('panel-focus', (e) => {
    s.focus = e.detail.id;
    s.hops = e.detail.hops;
    unfocus.hidden = false;
    unfocus.textContent = `Unfocus (${s.hops} hops)`;
    changed(true);
  });
  unfocus.addEventListener('click', () => {
    s.focus = undefined;
    s.hops = undefined;
    unfocus.hidden = true;
    changed(true);
  });
  reload.addEventListener('click', load);
  exportSel.addEventListener('change', async () => {
    const f = exportSel.value;
    exportSel.value = '';
    const base = `meshlens-graph-${s.graphType}`;
    if (f === 'PNG') download(await cy.png({ output: 'blob-promise', full: true, bg: palette().node, scale: 2 }), base + '.png');
    else if (f === 'SVG') download(new Blob([toSvg(cy)], { type: 'image/svg+xml' }), base + '.svg');
    else if (f === 'JSON') download(new Blob([JSON.stringify(graph, null, 2)], { type: 'application/json' }), base + '.json');
    else if (f === 'DOT') download(new Blob([await api(graphApiPath(s, { format: 'dot' }), { as: 'text' })], { type: 'text/vnd.graphviz' }), base + '.dot');
  });
  exportSel.dataset.jsonUrl = apiUrl(graphApiPath(s));

  cy.on('tap', 'node', (ev) => {
    if (ev.target.hasClass('box')) return;
    s.select = ev.target.id();
    pushUrl(true);
    showNodePanel(panel, ev.target, s, named);
  });
  cy.on('tap', 'edge', (ev) => { s.select = ev.target.id(); pushUrl(true); showEdgePanel(panel, ev.target, named); });
  cy.on('tap', (ev) => {
    if (ev.target === cy) { s.select = undefined; pushUrl(true); cy.elements().unselect(); closePanel(panel); }
  });
  panel.addEventListener('panel-close', () => { s.select = undefined; pushUrl(true); cy.elements().unselect(); });

  schedule();
  load();
  const themeOff = onThemeChange(() => restyle(cy));
  return () => { themeOff(); replay.stop(); clearInterval(timer); if (controller) controller.abort(); window.meshlensGraph = undefined; cy.destroy(); };
}
