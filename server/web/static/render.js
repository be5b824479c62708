// render.js: safe DOM rendering for the KernelGen chat page. Every node is built with
// createElement/createElementNS/text nodes; no HTML string is ever parsed, so text written by a
// user or a model (spec text, files, markdown with <script>) always renders as text.
//
// CSS classes (all prefixed kg-):
//   Markdown: kg-h (every h1-h6), kg-p (paragraph), kg-list (ul/ol), kg-quote (blockquote), kg-hr (hr),
//     kg-pre (pre of a fenced block), kg-code (code inside kg-pre), kg-lang-<name> (fence language on kg-code),
//     kg-icode (inline `code`), kg-link (a), kg-table-wrap (div that scrolls a table sideways), kg-table (table),
//     kg-al-left / kg-al-center / kg-al-right (th/td alignment taken from the separator row)
//   Python tokens: kg-kw (keyword), kg-bi (builtin), kg-str (string, f-strings included), kg-com (comment),
//     kg-num (number), kg-dec (decorator such as @triton.jit), kg-fn (name after def/class)
//   Diff (renderDiff, and ```diff fences): kg-diff (the pre), one span per line: kg-add (+), kg-del (-),
//     kg-hunk (@@), kg-meta (---/+++ headers, diff/index lines), kg-ctx (other lines). Each line span holds
//     its own trailing "\n", so `.kg-diff span { display: block }` is safe.
//   Charts (SVG; colours are presentation attributes, which any CSS rule overrides): kg-chart (svg),
//     kg-chart-empty (svg that only holds the empty message), kg-chart-title, kg-axis (axis lines),
//     kg-grid (grid lines), kg-tick (tick labels), kg-axis-label, kg-legend (legend group),
//     kg-ref (dashed 1.0 line), kg-line (series path), kg-pt (point), kg-s-eager / kg-s-compile (series colour),
//     kg-kept (ring on the kept/best version), kg-roof (roofline path), kg-roof-label (peak labels),
//     kg-ridge (ridge marker and its dashed drop line), kg-pt-label (name next to the kept roofline point)

const SVG_NS = 'http://www.w3.org/2000/svg';
const URL_ATTR = /^(href|src|action|formaction|xlink:href|data|poster)$/i;

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (/^on/i.test(k)) throw new Error(`render.js: event handler attribute "${k}" refused`);
    if (v === null || v === undefined || v === false) continue;
    const val = v === true ? '' : String(v);
    if (URL_ATTR.test(k) && /^(javascript|vbscript):/i.test(val.replace(/[\u0000-\u0020]/g, ''))) {
      throw new Error(`render.js: unsafe URL in "${k}"`);
    }
    node.setAttribute(k, val);
  }
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/** Create an HTML element: attrs set as attributes (on* names throw), children appended (strings as text). */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  return append(node, children);
}

/** Create an SVG element: attrs set as attributes (on* names throw), children appended (strings as text). */
export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  return append(node, children);
}

// ---------------------------------------------------------------- inline markdown

const PUNCT = /[!-/:-@[-`{-~]/;
const WORDCH = /[\p{L}\p{N}]/u;
const safeUrl = (u) => /^(https?:\/\/|#|\/(?![/\\]))/i.test(u);

// Index of the closing delimiter d from `from`, skipping escapes and code spans; -1 if none.
function findClose(s, d, from) {
  for (let i = from; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') { i++; continue; }
    if (c === '`') { const run = /^`+/.exec(s.slice(i, i + 64))[0], end = s.indexOf(run, i + run.length);
      i = (end > 0 ? end : i) + run.length - 1; continue; }
    if (!s.startsWith(d, i) || /\s/.test(s[i - 1])) continue;
    if (d.length === 1 && s[i + 1] === d) { i++; continue; }
    if (d[0] === '_' && WORDCH.test(s[i + d.length] || '')) continue;
    return i;
  }
  return -1;
}

// [text](url) starting at s[i] === '['; returns {text, url, end} or null.
function parseLink(s, i) {
  let depth = 0, j = i;
  for (; j < s.length && j < i + 1000; j++) {
    if (s[j] === '\\') { j++; continue; }
    if (s[j] === '[') depth++;
    else if (s[j] === ']' && --depth === 0) break;
  }
  if (depth !== 0 || s[j + 1] !== '(') return null;
  let k = j + 2, par = 1;
  for (; k < s.length && k < j + 2000; k++) {
    if (s[k] === '\\') { k++; continue; }
    if (s[k] === '(') par++;
    else if (s[k] === ')' && --par === 0) break;
  }
  if (par !== 0) return null;
  let url = s.slice(j + 2, k).trim().replace(/\s+(["'(]).*$/s, '');
  if (url.startsWith('<') && url.endsWith('>')) url = url.slice(1, -1);
  return { text: s.slice(i + 1, j), url, end: k + 1 };
}

function inline(s, depth = 0) {
  const frag = document.createDocumentFragment();
  let buf = '';
  const noClose = new Set();
  const push = (n) => { if (buf) frag.appendChild(document.createTextNode(buf)); buf = ''; frag.appendChild(n); };
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length && PUNCT.test(s[i + 1])) { buf += s[++i]; continue; }
    if (c === '\n') {
      if (/ {2,}$/.test(buf)) { buf = buf.replace(/ +$/, ''); push(el('br')); } else buf += c;
      continue;
    }
    if (c === '`') {
      const run = /^`+/.exec(s.slice(i, i + 64))[0];
      let end = -1;
      if (!noClose.has(run.length)) {
        const re = /`+/g;
        re.lastIndex = i + run.length;
        for (let m; (m = re.exec(s)); ) if (m[0].length === run.length) { end = m.index; break; }
        if (end < 0) noClose.add(run.length);
      }
      if (end < 0) { buf += run; i += run.length - 1; continue; }
      let code = s.slice(i + run.length, end).replace(/\n/g, ' ');
      if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && code.trim()) code = code.slice(1, -1);
      push(el('code', { class: 'kg-icode' }, code));
      i = end + run.length - 1; continue;
    }
    if ((c === '*' || c === '_') && depth < 16) {
      const d = s[i + 1] === c ? c + c : c;
      const after = s[i + d.length] || '';
      const leftOk = c === '*' || !WORDCH.test(s[i - 1] || '');
      let end = -1;
      if (after && !/\s/.test(after) && leftOk && !noClose.has(d)) {
        end = findClose(s, d, i + d.length + 1);
        if (end < 0) noClose.add(d);
      }
      if (end < 0) { buf += d; i += d.length - 1; continue; }
      push(el(d.length === 2 ? 'strong' : 'em', null, inline(s.slice(i + d.length, end), depth + 1)));
      i = end + d.length - 1; continue;
    }
    const at = c === '!' && s[i + 1] === '[' ? i + 1 : c === '[' ? i : -1;
    const link = at >= 0 && depth < 16 ? parseLink(s, at) : null;
    if (link) {
      const kids = inline(link.text, depth + 1);
      if (safeUrl(link.url)) {
        const ext = /^https?:/i.test(link.url);
        push(el('a', { class: 'kg-link', href: link.url, target: ext ? '_blank' : null,
          rel: ext ? 'noopener noreferrer' : null }, kids));
      } else push(kids);
      i = link.end - 1; continue;
    }
    buf += c;
  }
  if (buf) frag.appendChild(document.createTextNode(buf));
  return frag;
}

// ---------------------------------------------------------------- block markdown

const RE = {
  fence: /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/,
  heading: /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/,
  hr: /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/,
  list: /^(\s*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|$)/,
  quote: /^ {0,3}> ?(.*)$/,
  sep: /^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$/,
};
const indentOf = (s) => /^\s*/.exec(s)[0].replace(/\t/g, '    ').length;

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = []; let cur = '';
  for (let k = 0; k < s.length; k++) {
    if (s[k] === '\\' && s[k + 1] === '|') { cur += '|'; k++; }
    else if (s[k] === '|') { cells.push(cur.trim()); cur = ''; }
    else cur += s[k];
  }
  cells.push(cur.trim());
  return cells;
}

const isTable = (lines, i) => i + 1 < lines.length && lines[i].includes('|') && lines[i + 1].includes('|')
  && RE.sep.test(lines[i + 1]) && splitRow(lines[i]).length === splitRow(lines[i + 1]).length;
const isOtherBlock = (lines, i) => RE.fence.test(lines[i]) || RE.heading.test(lines[i]) || RE.hr.test(lines[i])
  || RE.quote.test(lines[i]) || isTable(lines, i);

function fence(lines, i, m, out) {
  const indent = m[1].length, mark = m[2], lang = m[3].toLowerCase().replace(/[^a-z0-9_+-]/g, '');
  const close = new RegExp(`^\\s*\\${mark[0]}{${mark.length},}\\s*$`);
  const strip = new RegExp(`^ {0,${indent}}`);
  const body = [];
  for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i].replace(strip, ''));
  const text = body.join('\n');
  const content = /^(python|py|python3|triton)$/.test(lang) ? highlightPython(text)
    : /^(diff|patch)$/.test(lang) ? diffLines(text) : text;
  out.appendChild(el('pre', { class: 'kg-pre' }, el('code', { class: 'kg-code' + (lang ? ' kg-lang-' + lang : '') }, content)));
  return i + 1;
}

function table(lines, i, out) {
  const head = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((c) => (/^:-+:$/.test(c) ? 'center' : /^-+:$/.test(c) ? 'right'
    : /^:-+$/.test(c) ? 'left' : ''));
  const cell = (tag, text, k) => el(tag, { class: aligns[k] ? 'kg-al-' + aligns[k] : null }, inline(text));
  const tbody = el('tbody');
  for (i += 2; i < lines.length && lines[i].trim() && lines[i].includes('|') && !RE.fence.test(lines[i])
    && !RE.heading.test(lines[i]) && !RE.quote.test(lines[i]); i++) {
    const cells = splitRow(lines[i]);
    tbody.appendChild(el('tr', null, head.map((_, k) => cell('td', cells[k] || '', k))));
  }
  const thead = el('thead', null, el('tr', null, head.map((t, k) => cell('th', t, k))));
  out.appendChild(el('div', { class: 'kg-table-wrap' }, el('table', { class: 'kg-table' }, thead, tbody)));
  return i;
}

function list(lines, i, depth) {
  const m0 = RE.list.exec(lines[i]);
  const base = indentOf(lines[i]), ordered = /\d/.test(m0[2]), start = parseInt(m0[2], 10);
  const node = el(ordered ? 'ol' : 'ul', { class: 'kg-list', start: ordered && start !== 1 ? start : null });
  let li = null, buf = [];
  const flush = () => { if (li && buf.length) li.appendChild(inline(buf.join('\n').trim())); buf = []; };
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      let j = i + 1;
      while (j < lines.length && !lines[j].trim()) j++;
      const nextInd = j < lines.length ? indentOf(lines[j]) : -1;
      if (j < lines.length && (nextInd >= base + 2 || (RE.list.test(lines[j]) && nextInd >= base))) { i = j; continue; }
      break;
    }
    const m = RE.list.exec(line), ind = indentOf(line);
    if (m && !RE.hr.test(line)) {
      if (ind < base) break;
      if (ind >= base + 2 && li && depth < 6) {
        flush(); const r = list(lines, i, depth + 1); li.appendChild(r.node); i = r.i; continue;
      }
      if (/\d/.test(m[2]) !== ordered) break;
      flush(); li = node.appendChild(el('li')); buf = [m[3] || ''];
    } else if (isOtherBlock(lines, i) || !li) break;
    else buf.push(line.trim());
    i++;
  }
  flush();
  return { node, i };
}

function blocks(lines, depth) {
  const out = document.createDocumentFragment();
  let i = 0, m;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    if ((m = RE.fence.exec(line))) { i = fence(lines, i, m, out); continue; }
    if ((m = RE.heading.exec(line))) { out.appendChild(el('h' + m[1].length, { class: 'kg-h' }, inline(m[2] || ''))); i++; continue; }
    if (RE.hr.test(line)) { out.appendChild(el('hr', { class: 'kg-hr' })); i++; continue; }
    if (RE.quote.test(line) && depth < 8) {
      const inner = [];
      for (; i < lines.length && (m = RE.quote.exec(lines[i])); i++) inner.push(m[1]);
      out.appendChild(el('blockquote', { class: 'kg-quote' }, blocks(inner, depth + 1)));
      continue;
    }
    if (isTable(lines, i)) { i = table(lines, i, out); continue; }
    if ((m = RE.list.exec(line))) { const r = list(lines, i, 0); out.appendChild(r.node); i = r.i; continue; }
    const para = [line.replace(/^\s+/, '')];
    for (i++; i < lines.length && lines[i].trim() && !isOtherBlock(lines, i); i++) {
      const lm = RE.list.exec(lines[i]);
      if (lm && lm[3] && (!/\d/.test(lm[2]) || parseInt(lm[2], 10) === 1)) break;
      para.push(lines[i].replace(/^\s+/, ''));
    }
    out.appendChild(el('p', { class: 'kg-p' }, inline(para.join('\n').trimEnd())));
  }
  return out;
}

/** Render the markdown subset of KernelGen documents (headings, tables, lists, fences, inline marks) as DOM. */
export function renderMarkdown(text) {
  return blocks(String(text ?? '').replace(/\r\n?/g, '\n').split('\n'), 0);
}

// ---------------------------------------------------------------- Python and diffs

const PY_KW = new Set(('False None True and as assert async await break class continue def del elif else except '
  + 'finally for from global if import in is lambda nonlocal not or pass raise return try while with yield').split(' '));
const PY_BI = new Set(('abs all any bool bytes callable chr classmethod dict dir divmod enumerate filter float format '
  + 'frozenset getattr globals hasattr hash hex id input int isinstance issubclass iter len list map max min next '
  + 'object oct open ord pow print property range repr reversed round set setattr slice sorted staticmethod str sum '
  + 'super tuple type vars zip Exception ValueError TypeError RuntimeError KeyError IndexError AttributeError '
  + 'NotImplementedError AssertionError ImportError StopIteration OSError SystemExit').split(' '));
const END = '(?![\\s\\S])';
const PY_TOKEN = new RegExp([
  '(#[^\\n]*)',
  `((?:\\b[rRbBuUfF]{1,2})?(?:'''[\\s\\S]*?(?:'''|${END})|"""[\\s\\S]*?(?:"""|${END})`
    + `|'(?:[^'\\\\\\n]|\\\\[\\s\\S])*(?:'|(?=\\n)|${END})|"(?:[^"\\\\\\n]|\\\\[\\s\\S])*(?:"|(?=\\n)|${END})))`,
  '(@[\\p{L}_][\\p{L}\\p{N}_.]*)',
  '([\\p{L}_][\\p{L}\\p{N}_]*)',
  '(\\b0[xXoObB][\\da-fA-F_]+|(?:\\b\\d[\\d_]*\\.?[\\d_]*|(?<![\\w.])\\.\\d[\\d_]*)(?:[eE][+-]?\\d+)?[jJ]?)',
].join('|'), 'gu');

/** Highlight Python/Triton source as spans (kg-kw, kg-bi, kg-str, kg-com, kg-num, kg-dec, kg-fn); text kept exact. */
export function highlightPython(code) {
  code = String(code ?? '');
  const frag = document.createDocumentFragment();
  const re = new RegExp(PY_TOKEN.source, 'gu');
  let last = 0, text = '', wantName = false, m;
  while ((m = re.exec(code))) {
    const gap = code.slice(last, m.index);
    let cls = null;
    if (m[1]) cls = 'kg-com';
    else if (m[2]) cls = 'kg-str';
    else if (m[3]) cls = /^[ \t]*$/.test(code.slice(code.lastIndexOf('\n', m.index - 1) + 1, m.index)) ? 'kg-dec' : null;
    else if (m[4]) {
      cls = wantName && /^[ \t]+$/.test(gap) ? 'kg-fn' : PY_KW.has(m[4]) ? 'kg-kw' : PY_BI.has(m[4]) ? 'kg-bi' : null;
    } else if (m[5]) cls = 'kg-num';
    wantName = m[4] === 'def' || m[4] === 'class';
    text += gap;
    if (!cls) text += m[0];
    else { if (text) frag.appendChild(document.createTextNode(text)); text = ''; frag.appendChild(el('span', { class: cls }, m[0])); }
    last = re.lastIndex;
  }
  text += code.slice(last);
  if (text) frag.appendChild(document.createTextNode(text));
  return frag;
}

function diffLines(diff) {
  const frag = document.createDocumentFragment();
  const lines = String(diff ?? '').split('\n');
  let inHunk = false;
  lines.forEach((line, k) => {
    const nl = k < lines.length - 1 ? '\n' : '';
    if (!line && !nl) return;
    const next = lines[k + 1] || '', after = lines[k + 2] || '', prev = lines[k - 1] || '';
    let cls = 'kg-ctx';
    if (line.startsWith('@@')) { cls = 'kg-hunk'; inHunk = true; }
    else if (/^(diff |index |similarity |rename |new file|deleted file)/.test(line)) { cls = 'kg-meta'; inHunk = false; }
    else if (line.startsWith('--- ') && next.startsWith('+++ ') && (!inHunk || after.startsWith('@@'))) cls = 'kg-meta';
    else if (line.startsWith('+++ ') && prev.startsWith('--- ') && (!inHunk || next.startsWith('@@'))) cls = 'kg-meta';
    else if (line[0] === '+') cls = 'kg-add';
    else if (line[0] === '-') cls = 'kg-del';
    frag.appendChild(el('span', { class: cls }, line + nl));
  });
  return frag;
}

/** Render a unified diff as <pre class="kg-diff"> with one classed span per line; text kept exact. */
export function renderDiff(diff) {
  return el('pre', { class: 'kg-diff' }, diffLines(diff));
}

// ---------------------------------------------------------------- charts

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
      svg('title', null, `${name}: ${fmt(I[k])} FLOP/byte, ${fmt(T[k])} TFLOP/s (${share.toFixed(1)}% of roofline)`)));
  });
  return root;
}
