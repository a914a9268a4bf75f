// A radial tree layout for very big graphs, in linear time (used by the layout worker above
// RADIAL nodes, where even fcose's draft takes seconds): each connected component is a BFS
// tree from its best-connected node, rings by depth, each subtree an angle proportional to
// its leaves; components are packed in rows, biggest first. Boxes (compound parents) are not
// placed: their members are, and the box follows them.
/* exported radialLayout */

function radialLayout(nodes, edges) {
  const ids = nodes.map((n) => n.id);
  const isParent = new Set(nodes.map((n) => n.parent).filter(Boolean));
  const leaves = ids.filter((id) => !isParent.has(id));
  const adj = new Map(leaves.map((id) => [id, []]));
  for (const e of edges) {
    if (e.source === e.target || !adj.has(e.source) || !adj.has(e.target)) continue;
    adj.get(e.source).push(e.target);
    adj.get(e.target).push(e.source);
  }
  const SPACING = 36; // between neighbours on a ring
  const RING = 60; // between rings
  const seen = new Set();
  const comps = [];
  for (const start of leaves) {
    if (seen.has(start)) continue;
    // The component, then a BFS tree from its highest-degree node.
    const members = [start];
    seen.add(start);
    for (let i = 0; i < members.length; i++) {
      for (const m of adj.get(members[i])) if (!seen.has(m)) { seen.add(m); members.push(m); }
    }
    let root = members[0];
    for (const m of members) if (adj.get(m).length > adj.get(root).length) root = m;
    const order = [root];
    const parent = new Map([[root, null]]);
    const depth = new Map([[root, 0]]);
    const children = new Map();
    for (let i = 0; i < order.length; i++) {
      const v = order[i];
      children.set(v, []);
      for (const m of adj.get(v)) {
        if (parent.has(m)) continue;
        parent.set(m, v);
        depth.set(m, depth.get(v) + 1);
        children.get(v).push(m);
        order.push(m);
      }
    }
    const weight = new Map();
    for (let i = order.length - 1; i >= 0; i--) {
      const v = order[i];
      weight.set(v, Math.max(1, children.get(v).reduce((a, c) => a + weight.get(c), 0)));
    }
    // Ring radii: far enough out for the ring's nodes, and at least RING past the last one.
    const perRing = [];
    for (const v of order) perRing[depth.get(v)] = (perRing[depth.get(v)] || 0) + 1;
    const radius = [0];
    for (let d = 1; d < perRing.length; d++) {
      radius[d] = Math.max(radius[d - 1] + RING, (perRing[d] * SPACING) / (2 * Math.PI));
    }
    const pos = new Map();
    const span = new Map([[root, [0, 2 * Math.PI]]]);
    for (const v of order) {
      const [a0, a1] = span.get(v);
      const d = depth.get(v);
      const mid = (a0 + a1) / 2;
      pos.set(v, [radius[d] * Math.cos(mid), radius[d] * Math.sin(mid)]);
      let a = a0;
      for (const c of children.get(v)) {
        const w = ((a1 - a0) * weight.get(c)) / weight.get(v);
        span.set(c, [a, a + w]);
        a += w;
      }
    }
    comps.push({ pos, r: radius[radius.length - 1] + SPACING });
  }
  // Rows of components, biggest first, about as wide as the whole is tall.
  comps.sort((a, b) => b.r - a.r);
  const area = comps.reduce((a, c) => a + 4 * c.r * c.r, 0);
  const rowWidth = Math.max(Math.sqrt(area) * 1.3, comps.length ? 2 * comps[0].r : 0);
  const out = {};
  let x = 0, y = 0, rowHeight = 0;
  for (const c of comps) {
    if (x > 0 && x + 2 * c.r > rowWidth) { x = 0; y += rowHeight; rowHeight = 0; }
    for (const [id, [px, py]] of c.pos) out[id] = [x + c.r + px, y + c.r + py];
    x += 2 * c.r;
    rowHeight = Math.max(rowHeight, 2 * c.r);
  }
  return out;
}
