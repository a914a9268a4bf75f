// The graph's colours for the page's theme (theme.css): cytoscape draws on a canvas, so its
// style cannot use the CSS variables; it takes these, and is restyled when the theme changes.

const LIGHT = { node: '#fff', text: '#151515', textBg: '#fff', edgeText: '#333', box: '#f2f6fb', boxLine: '#6a7b91', lock: '#151515',
  clusterBox: '#e9eef5', clusterLine: '#3d4d63' };
const DARK = { node: '#1e2226', text: '#e6e8ea', textBg: '#1e2226', edgeText: '#cfd3d7', box: '#262b30', boxLine: '#8a97a8', lock: '#e6e8ea',
  clusterBox: '#1a1e22', clusterLine: '#b4c0cf' };

export function darkTheme() {
  const t = document.documentElement.dataset.theme;
  if (t === 'dark' || t === 'light') return t === 'dark';
  return !!(window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches);
}

export const palette = () => (darkTheme() ? DARK : LIGHT);

/** Calls `fn` when the theme changes (the header's toggle or the system's); returns a stop. */
export function onThemeChange(fn) {
  const mo = new MutationObserver(fn);
  mo.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  const mq = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
  if (mq) mq.addEventListener('change', fn);
  return () => { mo.disconnect(); if (mq) mq.removeEventListener('change', fn); };
}
