// Replay: stepping the graph back through time. Each frame is the graph API at a `queryTime`
// (Unix seconds) on the answer cache's grid (`metricsCacheTtl` of the config API): the
// server caches an on-grid answer at its first request, so a frame replayed again within the
// cache's TTL is served from it. Nodes keep their positions from frame to frame (and new
// ones are put where nothing is), so what changed stands out.

import { el } from './dom.js';

const SPAN = 6 * 3600; // seconds of history the slider covers
const FRAME_MS = 1200; // how long a frame stays up while playing

/** The answer cache's grid in seconds, from getConfig's answer (1 when the cache is off). */
export function replayGrid(config) {
  return Math.max(1, Number(config && config.metricsCacheTtl) || 1);
}

/** `t` rounded down to the grid. */
export const snap = (t, grid) => t - (((t % grid) + grid) % grid);

const nowSecs = () => Math.floor(Date.now() / 1000);

/**
 * The replay control. `queryTime` is the address's (or undefined: live); `onFrame(t)` draws
 * the graph at `t` (undefined: live) and resolves once it is drawn; `replace` says whether the
 * address change replaces the history entry (while playing) or adds one.
 */
export function createReplay({ queryTime, grid, onFrame }) {
  const max = () => snap(nowSecs(), grid);
  const start = queryTime !== undefined && Number.isFinite(Number(queryTime)) ? Number(queryTime) : max();
  const time = el('input', {
    type: 'range', 'data-testid': 'replay-time', 'aria-label': 'replay time (Unix seconds)',
    min: String(snap(Math.min(start, max()) - SPAN, grid)), max: String(max()), step: String(grid), value: String(start),
  });
  const stepIn = el('input', {
    type: 'number', 'data-testid': 'replay-step', 'aria-label': 'replay step (seconds)',
    min: String(grid), step: String(grid), value: String(Math.max(grid, snap(60, grid))),
  });
  const shown = el('output', { class: 'replay-shown', 'data-testid': 'replay-shown' });
  const play = el('button', { type: 'button', 'data-testid': 'replay-play', 'aria-pressed': 'false' }, 'Play');
  const live = el('button', { type: 'button', 'data-testid': 'replay-live' }, 'Live');
  const root = el('details', { class: 'replay', 'data-testid': 'replay', open: queryTime !== undefined },
    el('summary', {}, 'Replay'),
    el('div', { class: 'replay-row' }, time, shown),
    el('div', { class: 'replay-row' }, el('label', {}, 'step (s) ', stepIn), play, live));

  const label = () => { shown.textContent = new Date(Number(time.value) * 1000).toLocaleString(); };
  label();
  let playing = false;
  let wake = null;

  const go = async (t, how) => {
    time.max = String(Math.max(Number(time.max), max()));
    time.value = String(t);
    label();
    await onFrame(t, how);
  };
  const stop = () => {
    playing = false;
    play.textContent = 'Play';
    play.setAttribute('aria-pressed', 'false');
    if (wake) { wake(); wake = null; }
  };
  async function run() {
    while (playing) {
      const step = Math.max(grid, snap(Number(stepIn.value) || grid, grid));
      const next = snap(Number(time.value), grid) + step;
      if (next > max()) { stop(); break; }
      await go(next, 'play');
      if (!playing) break;
      await new Promise((r) => { wake = r; setTimeout(r, FRAME_MS); });
    }
  }
  time.addEventListener('input', label);
  time.addEventListener('change', () => { stop(); go(snap(Number(time.value), grid), 'pick'); });
  play.addEventListener('click', () => {
    if (playing) { stop(); return; }
    playing = true;
    play.textContent = 'Pause';
    play.setAttribute('aria-pressed', 'true');
    root.open = true;
    run();
  });
  live.addEventListener('click', () => { stop(); time.value = String(max()); label(); onFrame(undefined, 'live'); });

  return {
    element: root,
    /** Shows the drawn frame's time (the answer's timestamp) on the slider. */
    drawn(ts) {
      if (!Number.isFinite(ts)) return;
      if (ts > Number(time.max)) time.max = String(snap(ts, grid));
      if (!playing && document.activeElement !== time) { time.value = String(ts); label(); }
    },
    stop,
  };
}

/**
 * Positions for a new frame: every node that was drawn before keeps its place; a new node
 * takes its place in the new layout, moved down past any kept node it would sit on.
 * `before` maps id -> {x, y} (the drawn frame), `laidOut` id -> [x, y] (the worker's layout).
 */
export function keepPlaces(before, laidOut) {
  const out = {};
  const taken = [];
  for (const id of Object.keys(laidOut)) {
    const b = before.get(id);
    if (b) { out[id] = [b.x, b.y]; taken.push([b.x, b.y]); }
  }
  const near = (x, y) => taken.some(([a, b]) => Math.abs(a - x) < 60 && Math.abs(b - y) < 50);
  for (const [id, p] of Object.entries(laidOut)) {
    if (out[id]) continue;
    let [x, y] = p;
    for (let i = 0; i < 200 && near(x, y); i++) y += 50;
    out[id] = [x, y];
    taken.push([x, y]);
  }
  return out;
}

/** The drawn nodes' positions by id (leaf nodes: boxes follow their children). */
export function placesOf(cy) {
  const m = new Map();
  cy.nodes().forEach((n) => { if (!n.isParent()) { const p = n.position(); m.set(n.id(), { x: p.x, y: p.y }); } });
  return m;
}
