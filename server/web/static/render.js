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

/** Append children to a node: strings as text nodes, arrays flattened, null and undefined skipped. */
export function append(node, children) {
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
