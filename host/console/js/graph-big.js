// The light drawing of big graphs (above BIG nodes; graph-draw.js decides): the first paint
// of a 2,000-node graph was the cost (README, "Big graphs"). Cytoscape computes a style for
// every element against every selector and then draws each one, so big graphs get as few
// selectors and properties as draw them: filled nodes without borders, straight one-pixel
// edges without arrows or labels, and text properties only on the nodes that carry a label
// (labelInView in graph-draw.js gives those the `lbl` class).

/** The stylesheet for big graphs in the theme's palette `p` (graph-theme.js); elements carry
 * `color` and `shape` data, see toElements. */
export function bigStyle(p) {
  const text = { label: 'data(label)', 'font-size': 10, 'text-wrap': 'wrap', 'min-zoomed-font-size': 7,
    color: p.text, 'text-background-color': p.textBg, 'text-background-opacity': 0.7, 'text-background-padding': 1 };
  // Colour and shape are data mappers here, not classes: each selector is matched against
  // every element, and the classes' fifteen selectors cost more than the mapped values.
  return [
    { selector: 'node', style: { width: 24, height: 24, 'border-width': 0, 'background-color': 'data(color)', shape: 'data(shape)' } },
    { selector: 'node.lbl', style: { ...text, 'text-valign': 'bottom', 'text-margin-y': 4 } },
    { selector: 'node.se', style: { shape: 'round-diamond' } },
    { selector: 'node.idle', style: { opacity: 0.6 } },
    { selector: 'node.box', style: { ...text, 'background-color': p.box, 'background-opacity': 0.6, 'border-width': 1,
      'border-color': p.boxLine, shape: 'round-rectangle', 'text-valign': 'top', 'font-weight': 'bold', padding: 12 } },
    { selector: 'node.box-cluster', style: { 'background-color': p.clusterBox, 'border-color': p.clusterLine, 'border-width': 2, 'font-size': 13 } },
    // Haystack edges: straight, no arrow, no control points to compute.
    { selector: 'edge', style: { width: 1, 'curve-style': 'haystack', 'haystack-radius': 0, 'line-color': 'data(color)' } },
    { selector: 'edge.lbl', style: { ...text, 'font-size': 9, 'text-background-opacity': 0.85 } },
    { selector: '.hidden', style: { display: 'none' } },
    { selector: '.found', style: { 'overlay-color': '#f4c145', 'overlay-opacity': 0.45, 'overlay-padding': 6 } },
    { selector: ':selected', style: { 'overlay-color': '#0066cc', 'overlay-opacity': 0.25, 'overlay-padding': 6 } },
  ];
}

/** Renderer settings while a big graph is shown: while the user pans or zooms, the
 * renderer moves a bitmap of the last frame instead of redrawing thousands of elements.
 * Cytoscape reads these from its renderer at each frame, so they can change between graphs. */
export function setBigRenderer(cy, big) {
  const r = cy.renderer();
  if (!r) return;
  r.textureOnViewport = big;
  r.hideEdgesOnViewport = big;
}
