// Readable names on graphs of up to LABELLED nodes (issue #33): at the fitted view every
// node's name is drawn at READABLE_PX or more (zoom x font size), with few labels overlapping.
// The layout worker is given each node's box with its label (estimated here: a worker has no
// canvas to measure text), so dagre keeps labels apart and the graph is laid out in the
// direction (left-right or top-down) that fits the view best; after the fit, a view still too
// small for the names gets a larger font. Bigger graphs keep the labels-in-view behaviour
// of graph-draw.js.

export const LABELLED = 100;
export const READABLE_PX = 8.5; // a little above the 8 px floor, for rounding
const NODE = 28; // the node's size in the style
const FONT = 10; // the style's node font size
const MAX_FONT = 22;

/** The box of a node with its label under it, in model units at the style's font size. */
export function labelBox(label) {
  const lines = String(label || '').split('\n');
  const chars = Math.max(...lines.map((l) => l.length));
  // DejaVu Sans / system-ui average about 0.6 em per character; 1.25 em per line.
  const w = Math.max(NODE, chars * FONT * 0.62) + 8;
  const h = NODE + 4 + lines.length * FONT * 1.25 + 6;
  return { w: Math.ceil(w), h: Math.ceil(h) };
}

/** Fits the drawn graph; raises the names' font until zoom x font size is readable. */
export function fitReadable(cy, pad) {
  cy.fit(undefined, pad);
  let font = FONT;
  for (let i = 0; i < 4 && cy.zoom() * font < READABLE_PX && font < MAX_FONT; i++) {
    font = Math.min(MAX_FONT, Math.ceil((READABLE_PX / cy.zoom()) * 10) / 10);
    cy.nodes().not('.box').style('font-size', font);
    cy.fit(undefined, pad);
  }
  cy.scratch('labelFont', font);
}
