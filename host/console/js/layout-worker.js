// Runs the graph layout off the main thread: headless cytoscape with dagre (small graphs) or
// fcose (big ones), or the linear-time radial tree of layout-radial.js (very big ones),
// answering node positions by id. Classic worker (importScripts).
/* global cytoscape, cytoscapeDagre, cytoscapeFcose */
importScripts(
  '../vendor/cytoscape/cytoscape.min.js',
  '../vendor/dagre/dagre.min.js',
  '../vendor/cytoscape-dagre/cytoscape-dagre.js',
  '../vendor/layout-base/layout-base.js',
  '../vendor/cose-base/cose-base.js',
  '../vendor/cytoscape-fcose/cytoscape-fcose.js',
  'layout-radial.js',
);
cytoscape.use(cytoscapeDagre);
cytoscape.use(cytoscapeFcose);

self.onmessage = (msg) => {
  const { seq, nodes, edges, layout, view } = msg.data;
  try {
    const t0 = performance.now();
    if (layout === 'radial') {
      /* global radialLayout */
      const positions = radialLayout(nodes, edges);
      self.postMessage({ seq, positions, buildMs: 0, layoutMs: performance.now() - t0 });
      return;
    }
    if (layout === 'dagre' && view) {
      const positions = sizedDagre(nodes, edges, view);
      self.postMessage({ seq, positions, buildMs: 0, layoutMs: performance.now() - t0 });
      return;
    }
    const cy = cytoscape({
      headless: true,
      // dagre needs node sizes (label sizes would need a canvas, which a worker does not
      // have); fcose's draft spreads nodes by edge length alone, and without a style the
      // worker builds and lays out big graphs in about half the time.
      styleEnabled: layout === 'dagre',
      style: layout === 'dagre' ? [{ selector: 'node', style: { width: 40, height: 40, label: '' } }] : undefined,
      elements: { nodes: nodes.map((data) => ({ data })), edges: edges.map((data) => ({ data })) },
    });
    const started = performance.now();
    const opts = layout === 'dagre'
      ? { name: 'dagre', rankDir: 'LR', nodeSep: 30, rankSep: 90, animate: false }
      : { name: 'fcose', quality: 'default', animate: false, randomize: true,
          nodeRepulsion: 6000, idealEdgeLength: 70, numIter: 1500, packComponents: false };
    cy.layout(opts).run();
    const positions = {};
    cy.nodes().forEach((n) => {
      if (!n.isParent()) { const p = n.position(); positions[n.id()] = [p.x, p.y]; }
    });
    self.postMessage({ seq, positions, buildMs: started - t0, layoutMs: performance.now() - started });
  } catch (e) {
    self.postMessage({ seq, error: String(e && e.message || e) });
  }
};

// Up to 100 nodes (js/graph-labels.js): every node is the box of the node with its label
// (w, h), so dagre keeps names apart; both directions are laid out and the one whose
// bounding box fits the view (width, height) at the larger zoom wins. Positions are the
// nodes' centres (at the top of their boxes).
function sizedDagre(nodes, edges, [width, height]) {
  let best = null;
  for (const rankDir of ['LR', 'TB']) {
    const cy = cytoscape({
      headless: true, styleEnabled: true,
      style: [{ selector: 'node', style: { width: 'data(w)', height: 'data(h)', label: '' } }],
      elements: { nodes: nodes.map((data) => ({ data })), edges: edges.map((data) => ({ data })) },
    });
    cy.layout({ name: 'dagre', rankDir, nodeSep: 12, rankSep: rankDir === 'LR' ? 50 : 30, edgeSep: 8, animate: false }).run();
    let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
    const positions = {};
    cy.nodes().forEach((n) => {
      if (n.isParent()) return;
      const p = n.position(), w = n.data('w') || 28, h = n.data('h') || 28;
      x1 = Math.min(x1, p.x - w / 2); x2 = Math.max(x2, p.x + w / 2);
      y1 = Math.min(y1, p.y - h / 2); y2 = Math.max(y2, p.y + h / 2);
      positions[n.id()] = [p.x, p.y - (h - 28) / 2];
    });
    const zoom = Math.min((width - 60) / Math.max(1, x2 - x1), (height - 60) / Math.max(1, y2 - y1));
    if (!best || zoom > best.zoom) best = { zoom, positions };
    cy.destroy();
  }
  return best.positions;
}
