// Drawing the graph JSON with cytoscape: element data for the styles (labels, colours,
// badges), the layout in a Web Worker, and the PNG/SVG exports.
/* global cytoscape, cytoscapeDagre, cytoscapeFcose */

import { nodeName } from './find.js';
import { edgeRps, edgeErrPct } from './rates.js';
import { statusClass, statusOfErrorPercent } from './health.js';
import { LABELLED, fitReadable, labelBox } from './graph-labels.js';
import { palette } from './graph-theme.js';
import { bigStyle, setBigRenderer } from './graph-big.js';

cytoscape.use(cytoscapeDagre);
cytoscape.use(cytoscapeFcose);

// Node colours: the server's `healthStatus` (health appender); edge colours: the error rate
// (README, "The console"): >= 20 % failing, > 0.1 % degraded.
export const COLORS = { healthy: '#3e8635', degraded: '#ec7a08', failing: '#c9190b', na: '#8a8d90', tcp: '#0066cc' };
const SHAPES = { app: 'round-rectangle', workload: 'ellipse', service: 'triangle', unknown: 'diamond' };
const BIG = 300; // nodes: above this, fcose instead of dagre, and lighter edges
const RADIAL = 600; // nodes: above this, the linear-time radial tree (layout-radial.js)

/** Badges of a node, as short text (drawn under the name and listed in the side panel). */
export function badges(d) {
  const b = [];
  if (d.hasCB) b.push('CB');
  if (d.hasVS) b.push('VS');
  if (d.hasHTTPRoute) b.push('RT');
  if (d.hasMissingSC) b.push('no sidecar');
  if (d.isWaypoint) b.push('waypoint');
  else if (d.isAmbient) b.push('ambient');
  if (d.isDead) b.push('dead');
  if (d.isUnused) b.push('unused');
  if (d.isServiceEntry) b.push('SE');
  return b;
}

/** The kind of box a node is (`app`/`version` of the seed's groupBy, `cluster`/`namespace`/
 * `app` of boxBy), or '' for a graph node. */
export function boxKind(d) {
  return d.isBox || d.isGroup || (d.nodeType === 'box' ? 'box' : '');
}

// A boxBy box's label: what its members share.
function boxLabel(d) {
  if (d.isBox === 'cluster') return `cluster ${d.cluster || ''}`;
  if (d.isBox === 'namespace') return d.namespace || '';
  if (d.isGroup === 'version') return `${d.app} ${d.version || ''}`;
  return d.app || d.service || '';
}

/** `where`: also name the node's namespace (`ns`) and cluster (`cluster`) under its name. */
function nodeLabel(d, where) {
  if (boxKind(d)) return boxLabel(d);
  let name = nodeName(d);
  if (d.nodeType === 'app' && d.version && d.version !== 'unknown') name += ` ${d.version}`;
  const lines = [name];
  const ns = where.ns && d.namespace && d.namespace !== 'unknown' ? d.namespace : '';
  const cluster = where.cluster && d.cluster && d.cluster !== 'unknown' ? d.cluster : '';
  if (ns || cluster) lines.push(ns && cluster ? `${ns} · ${cluster}` : ns || cluster);
  const b = badges(d);
  if (b.length) lines.push('[' + b.join('] [') + ']');
  return lines.join('\n');
}

export function edgeLabel(d, mode) {
  const proto = d.traffic && d.traffic.protocol;
  let text = '';
  if (mode === 'rps') text = proto === 'tcp' ? `${Number(d.traffic.rates.tcp || 0).toFixed(0)} B/s` : (proto ? `${edgeRps(d).toFixed(2)} rps` : '');
  else if (mode === 'errorPct') text = proto && proto !== 'tcp' ? `${edgeErrPct(d).toFixed(1)}%` : '';
  else if (mode === 'responseTime') text = d.responseTime && d.responseTime !== '0' ? `${d.responseTime} ms` : '';
  return text;
}

function edgeColour(d) {
  const proto = d.traffic && d.traffic.protocol;
  if (!proto) return 'na';
  if (proto === 'tcp') return 'tcp';
  return statusOfErrorPercent(edgeErrPct(d));
}

// Colours, shapes and flags are classes, not data mappers: elements with the same classes
// share one computed style, so adding thousands of elements does not evaluate a style each.
function nodeClasses(d, colour) {
  const kind = boxKind(d);
  if (kind) return `c-${colour} box box-${kind}`;
  const c = ['c-' + colour, 't-' + (SHAPES[d.nodeType] ? d.nodeType : 'unknown')];
  if (d.isServiceEntry) c.push('se');
  if (d.isUnused || d.isDead) c.push('idle');
  return c.join(' ');
}

/** Cytoscape element definitions for a graph JSON answer. */
export function toElements(graph, edgeMode) {
  const nodes = (graph.elements && graph.elements.nodes) || [];
  const edges = (graph.elements && graph.elements.edges) || [];
  const known = (key) => new Set(nodes.filter((n) => !boxKind(n.data)).map((n) => n.data[key]).filter((v) => v && v !== 'unknown'));
  const multiNs = known('namespace').size > 1;
  const multiCluster = known('cluster').size > 1;
  // A node inside a cluster box needs no cluster under its name (the box says it).
  const parentOf = new Map(nodes.map((n) => [n.data.id, n.data.parent]));
  const clusterBoxes = new Set(nodes.filter((n) => n.data.isBox === 'cluster').map((n) => n.data.id));
  const inClusterBox = (id) => {
    for (let p = parentOf.get(id), i = 0; p && i < 8; p = parentOf.get(p), i++) if (clusterBoxes.has(p)) return true;
    return false;
  };
  return {
    nodes: nodes.map((n) => {
      const colour = statusClass(n.data.healthStatus);
      const where = { ns: multiNs, cluster: multiCluster && !inClusterBox(n.data.id) };
      return {
        data: { ...n.data, label: nodeLabel(n.data, where), color: COLORS[colour] || COLORS.na, shape: SHAPES[n.data.nodeType] || 'ellipse' },
        classes: nodeClasses(n.data, colour),
      };
    }),
    edges: edges.map((e) => {
      const colour = edgeColour(e.data);
      return {
        data: { ...e.data, label: edgeLabel(e.data, edgeMode), color: COLORS[colour] },
        classes: 'c-' + colour + (e.data.isMTLS ? ' mtls' : ''),
      };
    }),
  };
}

// Above this many nodes labels are drawn only for the nodes in view, once they are readable
// (see labelInView), and edges are straight without arrows: the label boxes and bezier
// curves of thousands of elements are what made the first draw slow.
const LABEL_ZOOM = 0.7;
const LABELS_AT_MOST = 400;

function style(big) {
  const p = palette();
  const label = big ? 'node.lbl' : 'node';
  const edgeLabelSel = big ? 'edge.lbl' : 'edge';
  return [
    { selector: 'node', style: {
      'background-color': p.node, 'border-width': 2, 'border-color': COLORS.na, shape: 'ellipse',
      width: 28, height: 28, 'font-size': 10, 'text-wrap': 'wrap', 'text-valign': 'bottom',
      'text-margin-y': 4, 'min-zoomed-font-size': 7, color: p.text, 'text-background-color': p.textBg,
      'text-background-opacity': 0.7, 'text-background-padding': 1 } },
    { selector: label, style: { label: 'data(label)' } },
    ...Object.entries(SHAPES).map(([t, shape]) => ({ selector: 'node.t-' + t, style: { shape } })),
    // Big graphs fill nodes with their colour: at the fitted overview a node is a few pixels
    // wide and a white disc with a thin ring is invisible (seen in the screenshot).
    ...['healthy', 'degraded', 'failing', 'na'].map((c) => ({ selector: 'node.c-' + c,
      style: big ? { 'border-color': COLORS[c], 'background-color': COLORS[c] } : { 'border-color': COLORS[c] } })),
    { selector: 'node.se', style: { shape: 'round-diamond' } },
    { selector: 'node.idle', style: { 'border-style': 'dashed', opacity: 0.7 } },
    { selector: 'node.box', style: {
      'background-color': p.box, 'border-color': p.boxLine, 'border-width': 1, shape: 'round-rectangle',
      'text-valign': 'top', 'text-halign': 'center', 'text-margin-y': -2, 'font-weight': 'bold', padding: 12 } },
    { selector: 'node.box', style: { label: 'data(label)' } },
    // A cluster box (boxBy=cluster) holds the others: a heavier line and a larger name, drawn
    // inside its top edge (above it, it ran into a box laid out just above).
    { selector: 'node.box-cluster', style: {
      'background-color': p.clusterBox, 'border-color': p.clusterLine, 'border-width': 2, 'font-size': 13, padding: 24,
      'text-margin-y': 20,
      color: p.text, 'text-background-color': p.textBg, 'text-background-opacity': 0.85, 'text-background-padding': 2 } },
    { selector: 'edge', style: {
      width: 1.5, 'line-color': COLORS.na, 'target-arrow-color': COLORS.na,
      'target-arrow-shape': big ? 'none' : 'triangle', 'curve-style': big ? 'haystack' : 'bezier',
      'font-size': 9, 'min-zoomed-font-size': 7, 'text-rotation': 'autorotate',
      'text-background-color': p.textBg, 'text-background-opacity': 0.85, 'text-background-padding': 1, color: p.edgeText } },
    { selector: edgeLabelSel, style: { label: 'data(label)' } },
    ...['healthy', 'degraded', 'failing', 'tcp'].map((c) => ({ selector: 'edge.c-' + c, style: { 'line-color': COLORS[c], 'target-arrow-color': COLORS[c] } })),
    // The lock of an mTLS edge: a padlock-like hollow square where it starts (the middle
    // holds the label; see the legend).
    { selector: 'edge.mtls', style: { 'source-arrow-shape': 'square', 'source-arrow-fill': 'hollow', 'source-arrow-color': p.lock } },
    { selector: '.hidden', style: { display: 'none' } },
    { selector: '.found', style: { 'overlay-color': '#f4c145', 'overlay-opacity': 0.45, 'overlay-padding': 6 } },
    { selector: ':selected', style: { 'overlay-color': '#0066cc', 'overlay-opacity': 0.25, 'overlay-padding': 6 } },
  ];
}

export function createCy(container) {
  const cy = cytoscape({
    container, style: style(false), minZoom: 0.02, maxZoom: 4,
    boxSelectionEnabled: false, selectionType: 'single',
  });
  // Big graphs: labels for what is in view once zoomed in far enough (after panning stops).
  let timer = null;
  cy.on('viewport', () => {
    if (!cy.scratch('big')) return;
    clearTimeout(timer);
    timer = setTimeout(() => labelInView(cy), 120);
  });
  return cy;
}

/** Big graphs: the `lbl` class on the nodes (and their edges) in view when readable. */
export function labelInView(cy) {
  if (cy.destroyed()) return;
  const zoom = cy.zoom();
  let want = cy.collection();
  if (zoom >= LABEL_ZOOM) {
    const e = cy.extent();
    want = cy.nodes().filter((n) => {
      const p = n.position();
      return p.x >= e.x1 && p.x <= e.x2 && p.y >= e.y1 && p.y <= e.y2;
    });
    if (want.length > LABELS_AT_MOST) want = cy.collection();
    else want = want.union(want.connectedEdges());
  }
  const have = cy.elements('.lbl');
  cy.batch(() => {
    have.difference(want).removeClass('lbl');
    want.difference(have).addClass('lbl');
  });
}

let worker = null;
let seq = 0;
function layoutWorker() {
  if (!worker) worker = new Worker(new URL('./layout-worker.js', import.meta.url));
  return worker;
}

/** Starts the layout worker, so it loads its scripts while the first graph is still being
 * fetched. Only the graph view calls it: a worker started on every page had its script
 * imports cut off (and logged as errors) whenever the user left the page early. */
export function warmLayout() {
  try { layoutWorker(); } catch { /* layoutPositions falls back to a grid */ }
}

/** Positions by node id, computed in the worker (grid on the main thread if the worker fails). */
export function layoutPositions(els, view) {
  const nodes = els.nodes.map((n) => (n.data.parent ? { id: n.data.id, parent: n.data.parent } : { id: n.data.id }));
  // Up to LABELLED nodes: each node's box with its label, and the view's size (graph-labels.js).
  const sized = els.nodes.length <= LABELLED && view;
  if (sized) els.nodes.forEach((n, i) => Object.assign(nodes[i], labelBox(n.data.label)));
  const edges = els.edges.map((e) => ({ id: e.data.id, source: e.data.source, target: e.data.target }));
  const mine = ++seq;
  return new Promise((resolve) => {
    let w;
    try { w = layoutWorker(); } catch { resolve(null); return; }
    const done = (ev) => {
      if (ev.data.seq !== mine) return;
      w.removeEventListener('message', done);
      // The worker's own phases, for the benchmark (performance.getEntriesByName).
      if (ev.data.layoutMs !== undefined) {
        const end = performance.now();
        performance.measure('meshlens-layout-build', { end: end - ev.data.layoutMs, duration: ev.data.buildMs });
        performance.measure('meshlens-layout-run', { end, duration: ev.data.layoutMs });
      }
      resolve(ev.data.error ? null : ev.data.positions);
    };
    w.addEventListener('message', done);
    w.onerror = () => { worker = null; resolve(null); };
    w.postMessage({ seq: mine, nodes, edges, layout: nodes.length > RADIAL ? 'radial' : nodes.length > BIG ? 'fcose' : 'dagre', view: sized ? view : undefined });
  });
}

/** Zoom and pan that show every leaf node (positions known), without measuring labels. */
function fitPositions(cy, els, positions, pad) {
  let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
  for (const n of els.nodes) {
    const q = positions[n.data.id];
    if (!q) continue;
    const p = { x: q[0], y: q[1] };
    if (p.x < x1) x1 = p.x;
    if (p.x > x2) x2 = p.x;
    if (p.y < y1) y1 = p.y;
    if (p.y > y2) y2 = p.y;
  }
  if (!Number.isFinite(x1)) return;
  const w = cy.width(), h = cy.height(), r = 20; // node radius plus border
  const zoom = Math.min(cy.maxZoom(), Math.max(cy.minZoom(),
    Math.min((w - 2 * pad) / (x2 - x1 + 2 * r), (h - 2 * pad) / (y2 - y1 + 2 * r))));
  cy.viewport({ zoom, pan: { x: w / 2 - zoom * (x1 + x2) / 2, y: h / 2 - zoom * (y1 + y2) / 2 } });
}

/** Replaces the drawn elements; resolves once the worker's layout is applied. `opts.place`
 * may change the worker's positions (replay keeps nodes in place); `opts.keepView` keeps
 * the zoom and pan instead of fitting. */
export async function draw(cy, graph, edgeMode, opts = {}) {
  const els = toElements(graph, edgeMode);
  const pending = layoutPositions(els, [cy.width(), cy.height()]);
  const big = els.nodes.length > BIG;
  cy.scratch('big', big);
  // A replay frame keeps the view, and with it the names' font size (graph-labels.js).
  const font = opts.keepView && !big ? cy.scratch('labelFont') : null;
  cy.scratch('labelFont', font);
  // The elements are added once the worker's positions are in: one style pass and one
  // render (adding them earlier out of sight made the renderer measure everything twice).
  let positions = await pending;
  if (positions && opts.place) positions = opts.place(positions);
  performance.mark('meshlens-graph-laid-out');
  cy.batch(() => {
    cy.elements().remove();
    cy.style(big ? bigStyle(palette()) : style(false));
    setBigRenderer(cy, big);
    if (positions) for (const n of els.nodes) { const p = positions[n.data.id]; if (p) n.position = { x: p[0], y: p[1] }; }
    cy.add(els);
  });
  performance.mark('meshlens-graph-added');
  if (!positions) {
    cy.layout({ name: 'grid', animate: false }).run();
    cy.fit(undefined, 30);
    return els;
  }
  if (big) {
    if (!opts.keepView) fitPositions(cy, els, positions, 30);
    labelInView(cy);
  } else if (opts.keepView) {
    if (font) cy.nodes().not('.box').style('font-size', font);
    return els;
  } else if (els.nodes.length <= LABELLED) fitReadable(cy, 30);
  else cy.fit(undefined, 30);
  return els;
}

/** Applies the page's theme to the drawn graph (font sizes set on nodes stay). */
export function restyle(cy) {
  if (cy.destroyed()) return;
  cy.style(cy.scratch('big') ? bigStyle(palette()) : style(false));
  const font = cy.scratch('labelFont');
  if (font) cy.nodes().not('.box').style('font-size', font);
}

export function relabelEdges(cy, mode) {
  cy.batch(() => cy.edges().forEach((e) => e.data('label', edgeLabel(e.data(), mode))));
}

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

/** The visible graph as an SVG document (boxes, edges, nodes, labels; model coordinates). */
export function toSvg(cy) {
  const bb = cy.elements(':visible').boundingBox({ includeLabels: true });
  const pad = 20;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" viewBox="${bb.x1 - pad} ${bb.y1 - pad} ${bb.w + 2 * pad} ${bb.h + 2 * pad}" width="${Math.ceil(bb.w + 2 * pad)}" height="${Math.ceil(bb.h + 2 * pad)}" font-family="sans-serif">`,
    `<rect x="${bb.x1 - pad}" y="${bb.y1 - pad}" width="${bb.w + 2 * pad}" height="${bb.h + 2 * pad}" fill="#fff"/>`];
  cy.nodes('.box:visible').forEach((n) => {
    const b = n.boundingBox({ includeLabels: false });
    parts.push(`<rect class="box" data-id="${esc(n.id())}" x="${b.x1}" y="${b.y1}" width="${b.w}" height="${b.h}" rx="6" fill="#f2f6fb" stroke="#6a7b91"/><text x="${b.x1 + b.w / 2}" y="${b.y1 - 4}" font-size="10" font-weight="bold" text-anchor="middle">${esc(n.data('label'))}</text>`);
  });
  cy.edges(':visible').forEach((e) => {
    const s = e.sourceEndpoint(), t = e.targetEndpoint(), c = e.data('color');
    parts.push(`<line class="edge" data-id="${esc(e.id())}" x1="${s.x}" y1="${s.y}" x2="${t.x}" y2="${t.y}" stroke="${c}" stroke-width="1.5"/>`);
    const ang = Math.atan2(t.y - s.y, t.x - s.x), a = 7;
    parts.push(`<polygon points="${t.x},${t.y} ${t.x - a * Math.cos(ang - 0.4)},${t.y - a * Math.sin(ang - 0.4)} ${t.x - a * Math.cos(ang + 0.4)},${t.y - a * Math.sin(ang + 0.4)}" fill="${c}"/>`);
    if (e.data('label')) parts.push(`<text x="${(s.x + t.x) / 2}" y="${(s.y + t.y) / 2 - 3}" font-size="9" text-anchor="middle">${esc(e.data('label'))}</text>`);
  });
  cy.nodes(':visible').not('.box').forEach((n) => {
    const p = n.position(), r = 14, c = n.data('color');
    const shape = n.data('shape');
    const id = `class="node" data-id="${esc(n.id())}"`;
    if (shape === 'triangle') parts.push(`<polygon ${id} points="${p.x},${p.y - r} ${p.x + r},${p.y + r} ${p.x - r},${p.y + r}" fill="#fff" stroke="${c}" stroke-width="2"/>`);
    else if (shape === 'round-rectangle') parts.push(`<rect ${id} x="${p.x - r}" y="${p.y - r}" width="${2 * r}" height="${2 * r}" rx="4" fill="#fff" stroke="${c}" stroke-width="2"/>`);
    else if (shape === 'diamond' || n.hasClass('se')) parts.push(`<polygon ${id} points="${p.x},${p.y - r} ${p.x + r},${p.y} ${p.x},${p.y + r} ${p.x - r},${p.y}" fill="#fff" stroke="${c}" stroke-width="2"/>`);
    else parts.push(`<circle ${id} cx="${p.x}" cy="${p.y}" r="${r}" fill="#fff" stroke="${c}" stroke-width="2"/>`);
    String(n.data('label')).split('\n').forEach((line, i) => {
      parts.push(`<text x="${p.x}" y="${p.y + r + 12 + i * 11}" font-size="10" text-anchor="middle">${esc(line)}</text>`);
    });
  });
  parts.push('</svg>');
  return parts.join('\n');
}
