// Dashboard charts with uPlot: one chart per dashboard chart, one series per returned
// series (metric series, or each histogram statistic's series).
/* global uPlot */

import { el } from './dom.js';

const PALETTE = ['#0066cc', '#3e8635', '#ec7a08', '#c9190b', '#6753ac', '#009596', '#8a8d90', '#f4c145', '#a30000', '#4cb140'];

function labelOf(metric, stat) {
  const parts = Object.entries(metric || {}).filter(([k]) => k !== '__name__').map(([k, v]) => `${k}=${v}`);
  return [stat, ...parts].filter(Boolean).join(' ') || 'total';
}

/** [{label, values: [[t, v], ...]}] of a chart. */
export function chartSeries(chart) {
  const out = [];
  for (const s of (chart.metric && chart.metric.matrix) || []) out.push({ label: labelOf(s.metric), values: s.values || [] });
  for (const [stat, series] of Object.entries(chart.histogram || {})) {
    for (const s of (series && series.matrix) || []) out.push({ label: labelOf(s.metric, stat === 'avg' ? 'avg' : `p${Number(stat) * 100}`), values: s.values || [] });
  }
  return out;
}

function aligned(series) {
  const xs = [...new Set(series.flatMap((s) => s.values.map((v) => Number(v[0]))))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = series.map((s) => {
    const col = new Array(xs.length).fill(null);
    for (const [t, v] of s.values) { const n = Number(v); col[index.get(Number(t))] = Number.isFinite(n) ? n : null; }
    return col;
  });
  return [xs, ...ys];
}

/** Draws a dashboard's charts into `box`; returns a cleanup that destroys the plots. */
export function drawDashboard(box, dashboard) {
  const plots = [];
  const width = () => Math.max(260, Math.min(560, box.clientWidth - 24));
  for (const chart of dashboard.charts || []) {
    const series = chartSeries(chart);
    const holder = el('figure', { class: 'chart', 'data-testid': 'chart', 'data-chart': chart.name, 'data-series': String(series.length) },
      el('figcaption', {}, `${chart.name}${chart.unit ? ` (${chart.unit})` : ''}`));
    box.append(holder);
    if (!series.length) { holder.append(el('p', { class: 'muted' }, 'No data in this window.')); continue; }
    const opts = {
      width: width(), height: 180,
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: true }))],
      axes: [{}, { size: 60 }],
      legend: { live: false },
    };
    plots.push(new uPlot(opts, aligned(series), holder));
  }
  return () => plots.forEach((p) => p.destroy());
}
