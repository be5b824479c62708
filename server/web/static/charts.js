// charts.js: the chat page's SVG charts (speedup per round, roofline), built node by node like render.js.
//
//   Charts (SVG; colours are presentation attributes, which any CSS rule overrides): kg-chart (svg),
//     kg-chart-empty (svg that only holds the empty message), kg-chart-title, kg-axis (axis lines),
//     kg-grid (grid lines), kg-tick (tick labels), kg-axis-label, kg-legend (legend group),
//     kg-ref (dashed 1.0 line), kg-line (series path), kg-pt (point), kg-s-eager / kg-s-compile (series colour),
//     kg-kept (ring on the kept/best version), kg-roof (roofline path), kg-roof-label (peak labels),
//     kg-ridge (ridge marker and its dashed drop line), kg-pt-label (name next to the kept roofline point)

import { append, svg } from "./render.js";

const W = 640, H = 320, X0 = 60, X1 = 620, Y0 = 44, Y1 = 246;
const COLORS = { eager: '#2563eb', compile: '#d97706', roof: '#dc2626', point: '#059669' };
const TXT = { fill: 'currentColor' };
const fmt = (v) => String(Math.abs(v) >= 100 ? Math.round(v) : Number(v.toPrecision(3)));
const textWidth = (t) => [...t].reduce((a, ch) => a + (ch.codePointAt(0) > 0x2e80 ? 12 : 7), 0);

function frame(labels, height) {
  const title = labels.title ? String(labels.title) : '';
  const root = svg('svg', { class: 'kg-chart', viewBox: `0 0 ${W} ${height}`, role: 'img', 'aria-label': title || null,
    'font-size': 12 });
  if (title) root.appendChild(svg('text', { class: 'kg-chart-title', x: W / 2, y: 24, 'text-anchor': 'middle',
    'font-size': 15, 'font-weight': 600, ...TXT }, title));
  return root;
}

function emptyChart(labels) {
  const root = frame(labels, 120);
  root.classList.add('kg-chart-empty');
  root.appendChild(svg('text', { x: W / 2, y: labels.title ? 72 : 64, 'text-anchor': 'middle', 'font-size': 14,
    'fill-opacity': 0.7, ...TXT }, String(labels.empty || '-')));
  return root;
}

function axes(root, labels) {
  const line = (x1, y1, x2, y2) => svg('line', { class: 'kg-axis', x1, y1, x2, y2, stroke: 'currentColor',
    'stroke-opacity': 0.6 });
  root.append(line(X0, Y1, X1, Y1), line(X0, Y0, X0, Y1),
    svg('text', { class: 'kg-axis-label', x: (X0 + X1) / 2, y: Y1 + 38, 'text-anchor': 'middle', ...TXT }, labels[0] || ''),
    svg('text', { class: 'kg-axis-label', transform: `translate(16 ${(Y0 + Y1) / 2}) rotate(-90)`,
      'text-anchor': 'middle', ...TXT }, labels[1] || ''));
}

function tick(root, x, y, vertical, label) {
  root.appendChild(vertical
    ? svg('line', { class: 'kg-grid', x1: x, x2: x, y1: Y0, y2: Y1, stroke: 'currentColor', 'stroke-opacity': 0.12 })
    : svg('line', { class: 'kg-grid', x1: X0, x2: X1, y1: y, y2: y, stroke: 'currentColor', 'stroke-opacity': 0.12 }));
  if (label !== null) root.appendChild(svg('text', { class: 'kg-tick', x: vertical ? x : X0 - 6, y: vertical ? Y1 + 16 : y + 4,
    'text-anchor': vertical ? 'middle' : 'end', 'fill-opacity': 0.8, ...TXT }, label));
}

const ring = (cx, cy, color) => svg('circle', { class: 'kg-kept', cx, cy, r: 8, fill: 'none', stroke: color,
  'stroke-width': 2 });

/** Draw speedup vs eager and vs torch.compile per round as an SVG line chart (kept round ringed, 1.0 dashed). */
export function speedupChart(rounds, labels) {
  labels = labels || {};
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const rs = (Array.isArray(rounds) ? rounds : []).filter((r) => r && Number.isFinite(Number(r.index)))
    .sort((a, b) => a.index - b.index);
  const series = [['eager', 'kg-s-eager'], ['compile', 'kg-s-compile']];
  const vals = rs.flatMap((r) => series.map(([k]) => num(r[k]))).filter((v) => v !== null);
  if (!vals.length) return emptyChart(labels);
  const root = frame(labels, H);
  const idx = [...new Set(rs.map((r) => Number(r.index)))];
  const lo = idx[0], hi = idx[idx.length - 1];
  const sx = (i) => (hi === lo ? (X0 + X1) / 2 : X0 + 24 + ((i - lo) / (hi - lo)) * (X1 - X0 - 48));
  const vmax = Math.max(1, ...vals) * 1.1;
  const raw = vmax / 5, p = 10 ** Math.floor(Math.log10(raw)), f = raw / p;
  const step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p, top = Math.ceil(vmax / step) * step;
  const sy = (v) => Y1 - (Math.max(0, v) / top) * (Y1 - Y0);
  for (let k = 0; k * step <= top + step / 1e6; k++) tick(root, 0, sy(k * step), false, fmt(k * step));
  const every = Math.ceil(idx.length / 16);
  idx.forEach((i, k) => tick(root, sx(i), 0, true, k % every === 0 || k === idx.length - 1 ? String(i) : null));
  axes(root, [labels.round, labels.speedup]);
  root.appendChild(svg('line', { class: 'kg-ref', x1: X0, x2: X1, y1: sy(1), y2: sy(1), stroke: 'currentColor',
    'stroke-opacity': 0.55, 'stroke-dasharray': '6 4' }));
  for (const [key, cls] of series) {
    const pts = rs.filter((r) => num(r[key]) !== null).map((r) => [sx(Number(r.index)), sy(r[key]), r]);
    if (pts.length > 1) root.appendChild(svg('path', { class: `kg-line ${cls}`, fill: 'none', stroke: COLORS[key],
      'stroke-width': 2, d: pts.map(([x, y], k) => `${k ? 'L' : 'M'}${x.toFixed(1)},${y.toFixed(1)}`).join(' ') }));
    for (const [x, y, r] of pts) {
      if (r.kept) root.appendChild(ring(x, y, COLORS[key]));
      root.appendChild(svg('circle', { class: `kg-pt ${cls}`, cx: x, cy: y, r: 4, fill: COLORS[key] },
        svg('title', null, `${labels.round || 'round'} ${r.index}: x${r[key].toFixed(2)} ${labels[key] || key}`)));
    }
  }
  const items = [[labels.eager || 'eager', COLORS.eager, false], [labels.compile || 'torch.compile', COLORS.compile, false]];
  if (labels.kept) items.push([String(labels.kept), 'currentColor', true]);
  const widths = items.map(([t]) => 34 + textWidth(String(t)));
  let x = (W - widths.reduce((a, b) => a + b, 0)) / 2;
  const legend = root.appendChild(svg('g', { class: 'kg-legend' }));
  items.forEach(([t, color, isRing], k) => {
    const y = H - 18;
    if (isRing) legend.appendChild(ring(x + 9, y, color));
    else legend.append(svg('line', { x1: x, x2: x + 18, y1: y, y2: y, stroke: color, 'stroke-width': 2 }),
      svg('circle', { cx: x + 9, cy: y, r: 4, fill: color }));
    legend.appendChild(svg('text', { x: x + 24, y: y + 4, ...TXT }, String(t)));
    x += widths[k];
  });
  return root;
}

const decade = (k) => (k >= -3 && k <= 4 ? String(Number((10 ** k).toFixed(Math.max(0, -k)))) : `1e${k}`);

/** Draw a log-log roofline (memory slope, compute ceiling, ridge) with the measured versions as points. */
export function rooflineChart(points, roof, labels) {
  labels = labels || {};
  const bw = Number(roof && roof.peak_gbs), pk = Number(roof && roof.peak_tflops);
  const pts = (Array.isArray(points) ? points : []).filter((p) => p && Number(p.intensity) > 0
    && Number(p.tflops) > 0 && Number.isFinite(Number(p.intensity)) && Number.isFinite(Number(p.tflops)));
  if (!(bw > 0 && pk > 0 && Number.isFinite(bw) && Number.isFinite(pk)) || !pts.length) return emptyChart(labels);
  const root = frame(labels, H);
  const lg = Math.log10, ridge = (pk * 1000) / bw, attain = (i) => Math.min(pk, (i * bw) / 1000);
  const I = pts.map((p) => Number(p.intensity)), T = pts.map((p) => Number(p.tflops));
  const xa = Math.floor(lg(Math.min(...I, ridge / 10) / 1.5)), xb = Math.ceil(lg(Math.max(...I, ridge * 10) * 1.5));
  const ya = Math.floor(lg(Math.min(...T, attain(10 ** xa)) / 1.5)), yb = Math.ceil(lg(Math.max(...T, pk) * 1.5));
  const sx = (i) => X0 + ((lg(i) - xa) / (xb - xa)) * (X1 - X0);
  const sy = (t) => Y1 - ((lg(t) - ya) / (yb - ya)) * (Y1 - Y0);
  const xe = Math.ceil((xb - xa) / 10), ye = Math.ceil((yb - ya) / 8);
  for (let k = xa; k <= xb; k++) if ((k - xa) % xe === 0) tick(root, sx(10 ** k), 0, true, decade(k));
  for (let k = ya; k <= yb; k++) if ((k - ya) % ye === 0) tick(root, 0, sy(10 ** k), false, decade(k));
  axes(root, [labels.x || 'arithmetic intensity (FLOP/byte)', labels.y || 'TFLOP/s']);
  const xs = Math.max(10 ** xa, (10 ** ya * 1000) / bw);
  const peaks = `${fmt(bw)} GB/s, ${fmt(pk)} TFLOP/s`;
  root.appendChild(svg('path', { class: 'kg-roof', fill: 'none', stroke: COLORS.roof, 'stroke-width': 2.5,
    d: `M${sx(xs).toFixed(1)},${sy(attain(xs)).toFixed(1)} L${sx(ridge).toFixed(1)},${sy(pk).toFixed(1)} L${X1},${sy(pk).toFixed(1)}` },
  svg('title', null, peaks)));
  root.append(svg('text', { class: 'kg-roof-label', x: X1 - 4, y: sy(pk) - 6, 'text-anchor': 'end', ...TXT },
    `${fmt(pk)} TFLOP/s`),
  svg('line', { class: 'kg-ridge', x1: sx(ridge), x2: sx(ridge), y1: sy(pk), y2: Y1, stroke: COLORS.roof,
    'stroke-opacity': 0.6, 'stroke-dasharray': '4 4' }),
  svg('circle', { class: 'kg-ridge', cx: sx(ridge), cy: sy(pk), r: 4, fill: COLORS.roof },
    svg('title', null, `${labels.ridge || 'ridge'}: ${fmt(ridge)} FLOP/byte (${peaks})`)),
  svg('text', { class: 'kg-ridge', x: sx(ridge) + 6, y: Y1 - 6, 'font-size': 11, 'fill-opacity': 0.8, ...TXT },
    `${labels.ridge || 'ridge'} ${fmt(ridge)}`));
  pts.forEach((p, k) => {
    const x = sx(I[k]), y = sy(T[k]), share = (100 * T[k]) / attain(I[k]);
    const name = String(p.label ?? '');
    if (p.kept) {
      root.appendChild(ring(x, y, COLORS.point));
      const left = x > W * 0.7;  // near the right edge the name goes to the left of the point
      if (name) root.appendChild(svg('text', { class: 'kg-pt-label', x: left ? x - 11 : x + 11, y: y + 4,
        'text-anchor': left ? 'end' : 'start', ...TXT }, name));
    }
    root.appendChild(svg('circle', { class: 'kg-pt', cx: x, cy: y, r: 4.5, fill: COLORS.point, 'fill-opacity': 0.85 },
      svg('title', null, `${name}: ${fmt(I[k])} FLOP/byte, ${fmt(T[k])} TFLOP/s `
        + `(${share.toFixed(1)}% ${labels.share || 'of roofline'})`)));
  });
  return root;
}
