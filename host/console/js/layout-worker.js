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
  const { seq, nodes, edges, layout } = msg.data;
  try {
    const t0 = performance.now();
    if (layout === 'radial') {
      /* global radialLayout */
      const positions = radialLayout(nodes, edges);
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
