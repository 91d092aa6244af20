// The gpsense workbench: runs queries against this server's /query, /explain and /trust, and
// draws each matched subgraph as SVG. No library, no other origin (the page's policy forbids both).
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';
/** Rows the table asks for; the downloads ask for the server's full limit. */
const TABLE_ROWS = 1000;
/** Rows drawn small under the table (every row is drawn large when selected). */
const THUMBNAILS = 8;

const $ = (id) => document.getElementById(id);

/** The last query run: its text, columns, rows and shape. */
const state = { text: '', vars: [], rows: [], shape: null, selected: -1 };
/** The last TruST answer. */
const trustState = { answer: null, selected: -1 };
let markerCount = 0;

// ---------------------------------------------------------------- small helpers

function html(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

const thousands = (n) => Number(n).toLocaleString('en-US');

function setStatus(id, text) {
  $(id).textContent = text;
}

function showError(id, text) {
  const box = $(id);
  box.textContent = text || '';
  box.hidden = !text;
}

async function getJson(url) {
  const r = await fetch(url, { headers: { Accept: 'application/json' } });
  if (!r.ok) throw new Error((await r.text()).trim() || `HTTP ${r.status}`);
  return r.json();
}

// ---------------------------------------------------------------- start

async function init() {
  $('run').addEventListener('click', run);
  $('query').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  });
  $('examples').addEventListener('change', () => {
    const chosen = $('examples').selectedOptions[0];
    if (chosen) $('query').value = chosen.dataset.query;
  });
  $('download-csv').addEventListener('click', () => download('text/csv', 'csv'));
  $('download-json').addEventListener('click', () =>
    download('application/sparql-results+json', 'json'));
  $('trust-form').addEventListener('submit', (e) => {
    e.preventDefault();
    trustSearch();
  });
  $('trust-query').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      trustSearch();
    }
  });
  try {
    const health = await getJson('/health');
    $('graph-info').textContent = `${health.graph}: ${thousands(health.nodes)} nodes, ` +
      `${thousands(health.edges)} edges, ${thousands(health.relations)} relations`;
  } catch (e) {
    $('graph-info').textContent = `The graph's description is unavailable: ${e.message}`;
  }
  try {
    showExamples(await getJson('/examples'));
  } catch (e) {
    setStatus('status', `No examples: ${e.message}`);
  }
}

function showExamples(ex) {
  const select = $('examples');
  for (const [i, q] of ex.examples.entries()) {
    const dialect = q.dialect === 'short' ? 'short dialect' : 'standard SPARQL';
    const option = html('option', { value: String(i) }, `${q.title} (${dialect})`);
    option.dataset.query = q.query;
    select.append(option);
  }
  if (ex.examples.length > 0) $('query').value = ex.examples[0].query;
  if (ex.relations.length > 0) {
    const listed = ex.relations.map((r) => `${r.name} (${thousands(r.edges)})`).join(', ');
    $('relations').textContent = `Most common relations: ${listed}.`;
  }
  if (ex.trust) {
    $('trust-query').value = ex.trust.query;
    $('trust-k').value = String(ex.trust.k);
  }
}

// ---------------------------------------------------------------- a query

async function run() {
  const text = $('query').value.trim();
  if (!text) {
    setStatus('status', 'Write a query first.');
    return;
  }
  $('run').disabled = true;
  showError('error', '');
  setStatus('status', 'Running…');
  const started = performance.now();
  const q = encodeURIComponent(text);
  try {
    const [answer, shape] = await Promise.all([
      fetch(`/query?query=${q}&max-rows=${TABLE_ROWS}`, {
        headers: { Accept: 'application/sparql-results+json' },
      }),
      fetch(`/explain?query=${q}`, { headers: { Accept: 'application/json' } }),
    ]);
    const ms = Math.round(performance.now() - started);
    if (!answer.ok) {
      showError('error', (await answer.text()).trim());
      setStatus('status', `The server answered ${answer.status}.`);
      clearResults();
      return;
    }
    state.text = text;
    state.shape = shape.ok ? await shape.json() : { failed: (await shape.text()).trim() };
    const truncated = answer.headers.get('x-gpsense-truncated') === 'true';
    await showAnswer(answer, truncated, ms);
    showPlan(state.shape);
    $('download-csv').disabled = false;
    $('download-json').disabled = false;
  } catch (e) {
    showError('error', `The request failed: ${e.message}`);
    setStatus('status', '');
  } finally {
    $('run').disabled = false;
  }
}

function clearResults() {
  state.rows = [];
  state.vars = [];
  state.selected = -1;
  $('results').replaceChildren();
  $('thumbnails').replaceChildren();
  $('results-note').textContent = '';
}

async function showAnswer(answer, truncated, ms) {
  const type = answer.headers.get('content-type') || '';
  clearResults();
  if (!type.startsWith('application/sparql-results+json')) {
    // CONSTRUCT and DESCRIBE: triples.
    const triples = await answer.text();
    $('results').replaceChildren(resultsText(triples));
    setStatus('status', `Triples in ${ms} ms.`);
    drawSelected();
    return;
  }
  const data = await answer.json();
  if (typeof data.boolean === 'boolean') {
    $('results').replaceChildren(resultsText(data.boolean ? 'yes' : 'no'));
    setStatus('status', `${data.boolean ? 'Yes' : 'No'} in ${ms} ms.`);
    drawSelected();
    return;
  }
  state.vars = data.head.vars;
  state.rows = data.results.bindings;
  const n = state.rows.length;
  setStatus('status', `${thousands(n)} row${n === 1 ? '' : 's'} in ${ms} ms.`);
  $('results-note').textContent = truncated
    ? `The first ${thousands(n)} rows are shown; download for all of them.`
    : (n > 0 ? 'Select a row (click, or Enter on it) to draw its match.' : '');
  $('results').replaceChildren(...resultsTable(state.vars, state.rows));
  showThumbnails();
  select(n > 0 ? 0 : -1, false);
}

function resultsText(text) {
  const body = html('tbody');
  const row = html('tr');
  row.append(html('td', {}, text));
  body.append(row);
  return body;
}

function resultsTable(vars, rows) {
  const head = html('thead');
  const hr = html('tr');
  hr.append(html('th', { scope: 'col', class: 'number' }, '#'));
  for (const v of vars) hr.append(html('th', { scope: 'col' }, `?${v}`));
  head.append(hr);
  const body = html('tbody');
  rows.forEach((row, i) => {
    const tr = html('tr', { tabindex: '0', 'data-row': String(i) });
    tr.append(html('td', { class: 'number' }, String(i + 1)));
    for (const v of vars) tr.append(html('td', {}, row[v] ? row[v].value : ''));
    tr.addEventListener('click', () => select(i, false));
    tr.addEventListener('keydown', (e) => rowKey(e, i, rows.length, select));
    body.append(tr);
  });
  return [head, body];
}

/** Enter or Space selects a row; the arrows move to the next or previous one. */
function rowKey(e, i, count, choose) {
  if (e.key === 'Enter' || e.key === ' ') {
    e.preventDefault();
    choose(i, true);
  } else if (e.key === 'ArrowDown' && i + 1 < count) {
    e.preventDefault();
    choose(i + 1, true);
  } else if (e.key === 'ArrowUp' && i > 0) {
    e.preventDefault();
    choose(i - 1, true);
  }
}

function select(i, focus) {
  state.selected = i;
  for (const tr of $('results').querySelectorAll('tbody tr')) {
    const on = Number(tr.dataset.row) === i;
    tr.classList.toggle('selected', on);
    if (on) tr.setAttribute('aria-current', 'true'); else tr.removeAttribute('aria-current');
    if (on && focus) tr.focus();
  }
  for (const b of $('thumbnails').querySelectorAll('button')) {
    b.classList.toggle('selected', Number(b.dataset.row) === i);
  }
  drawSelected();
}

function showThumbnails() {
  const drawing = state.shape && state.shape.drawing;
  if (!drawing || !drawing.nodes) return;
  const shown = state.rows.slice(0, THUMBNAILS).map((row, i) => {
    const b = html('button', { type: 'button', 'data-row': String(i), 'aria-label': `Draw row ${i + 1}` });
    b.append(draw(drawing, queryValues(drawing, row), { small: true }));
    b.addEventListener('click', () => select(i, false));
    return b;
  });
  $('thumbnails').replaceChildren(...shown);
}

/** The value each query node and edge has in `row` (by its result column), or null. */
function queryValues(drawing, row) {
  const pick = (item) => (item.column && row && row[item.column] ? row[item.column].value : null);
  return { nodes: drawing.nodes.map(pick), edges: drawing.edges.map(pick), notes: [] };
}

function drawSelected() {
  const box = $('drawing');
  const shape = state.shape;
  if (!shape || shape.failed !== undefined) {
    box.replaceChildren();
    $('drawing-caption').textContent = shape ? `No drawing: ${shape.failed}` : '';
    return;
  }
  const drawing = shape.drawing;
  if (!drawing || drawing.none) {
    box.replaceChildren();
    $('drawing-caption').textContent =
      `No drawing exists for this query: ${drawing ? drawing.none : 'it has no graph pattern'}.`;
    return;
  }
  const row = state.selected >= 0 ? state.rows[state.selected] : null;
  const full = shape.evaluator === 'full'
    ? ' Answered by the full SPARQL evaluator: every triple pattern of the query is drawn together.'
    : '';
  $('drawing-caption').textContent = (row
    ? `Row ${state.selected + 1}: the query's graph with the values this row binds.`
    : 'The query\u2019s graph.') + full;
  box.replaceChildren(draw(drawing, queryValues(drawing, row), { small: false }));
}

// ---------------------------------------------------------------- plan and figures

function showPlan(shape) {
  const table = $('plan');
  table.replaceChildren();
  $('explain').textContent = '';
  if (!shape || shape.failed !== undefined) {
    $('plan-summary').textContent = shape ? `No plan: ${shape.failed}` : '';
    return;
  }
  $('explain').textContent = shape.explain || '';
  if (!shape.plan) {
    $('plan-summary').textContent =
      'The full SPARQL evaluator answers this query: its basic graph patterns go to the matcher ' +
      'one by one, so there is no single plan.';
    return;
  }
  const p = shape.plan;
  const cut = shape.timed_out ? ' (timed out: incomplete)' : (shape.limit_reached ? ' (LIMIT reached)' : '');
  $('plan-summary').textContent = `${thousands(shape.matches)} solutions${cut}, ` +
    `${shape.semantics} semantics, ${shape.engine} engine; ${p.components} component` +
    `${p.components === 1 ? '' : 's'}; ${p.times_ms.total} ms (plan ${p.times_ms.plan}, ` +
    `filter ${p.times_ms.filter}, refine ${p.times_ms.refine}, join ${p.times_ms.join}).`;
  const head = html('thead');
  const hr = html('tr');
  for (const [t, cls] of [['Step', 'number'], ['Query node', ''], ['Why here', ''],
    ['Candidates after filtering', 'number'], ['after refinement', 'number']]) {
    hr.append(html('th', { scope: 'col', class: cls }, t));
  }
  head.append(hr);
  const body = html('tbody');
  p.steps.forEach((s, i) => {
    const tr = html('tr');
    const count = (n) => (n === null || n === undefined ? '-' : thousands(n));
    tr.append(html('td', { class: 'number' }, String(i + 1)), html('td', {}, s.node || ''),
      html('td', {}, why(s, i)), html('td', { class: 'number' }, count(s.after_filter)),
      html('td', { class: 'number' }, count(s.after_refine)));
    body.append(tr);
  });
  table.append(head, body);
}

/** The planner's reason for a step, without the step number and node the table already shows. */
function why(step, i) {
  const text = step.why || '';
  const prefix = `${i + 1}. ${step.node}: `;
  return text.startsWith(prefix) ? text.slice(prefix.length) : text;
}

// ---------------------------------------------------------------- downloads

async function download(accept, extension) {
  if (!state.text) return;
  setStatus('status', `Preparing the ${extension.toUpperCase()} file…`);
  try {
    const r = await fetch(`/query?query=${encodeURIComponent(state.text)}`, { headers: { Accept: accept } });
    if (!r.ok) throw new Error((await r.text()).trim());
    const url = URL.createObjectURL(await r.blob());
    const a = html('a', { href: url, download: `gpsense-results.${extension}` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    setStatus('status', `Downloaded gpsense-results.${extension}.`);
  } catch (e) {
    showError('error', `The download failed: ${e.message}`);
  }
}

// ---------------------------------------------------------------- TruST

async function trustSearch() {
  const text = $('trust-query').value.trim();
  const k = $('trust-k').value;
  if (!text) {
    setStatus('trust-status', 'Write a TruST query first.');
    return;
  }
  showError('trust-error', '');
  setStatus('trust-status', 'Searching…');
  $('trust-run').disabled = true;
  const started = performance.now();
  try {
    const r = await fetch(`/trust?query=${encodeURIComponent(text)}&k=${encodeURIComponent(k)}`, {
      headers: { Accept: 'application/json' },
    });
    if (!r.ok) {
      showError('trust-error', (await r.text()).trim());
      setStatus('trust-status', `The server answered ${r.status}.`);
      return;
    }
    const answer = await r.json();
    const ms = Math.round(performance.now() - started);
    trustState.answer = answer;
    const n = answer.matches.length;
    const notes = [];
    if (answer.timed_out) notes.push('timed out: the matchings complete by then');
    for (const rel of answer.unknown_relations) notes.push(`no relation ${rel}: matched by topology only`);
    setStatus('trust-status', `${n} matching${n === 1 ? '' : 's'} in ${ms} ms` +
      `${notes.length ? ` (${notes.join('; ')})` : ''}.`);
    showTrustTable(answer);
    trustSelect(n > 0 ? 0 : -1, false);
  } catch (e) {
    showError('trust-error', `The request failed: ${e.message}`);
    setStatus('trust-status', '');
  } finally {
    $('trust-run').disabled = false;
  }
}

function showTrustTable(answer) {
  const nodeOf = answer.columns.map((c) => answer.drawing.nodes.findIndex((n) => n.column === c));
  const head = html('thead');
  const hr = html('tr');
  hr.append(html('th', { scope: 'col', class: 'number' }, '#'),
    html('th', { scope: 'col', class: 'number' }, 'score'));
  for (const c of answer.columns) hr.append(html('th', { scope: 'col' }, c));
  head.append(hr);
  const body = html('tbody');
  answer.matches.forEach((m, i) => {
    const tr = html('tr', { tabindex: '0', 'data-row': String(i) });
    tr.append(html('td', { class: 'number' }, String(i + 1)),
      html('td', { class: 'number' }, m.score.toFixed(4)));
    for (const node of nodeOf) tr.append(html('td', {}, node >= 0 ? m.nodes[node] : ''));
    tr.addEventListener('click', () => trustSelect(i, false));
    tr.addEventListener('keydown', (e) => rowKey(e, i, answer.matches.length, trustSelect));
    body.append(tr);
  });
  $('trust-results').replaceChildren(head, body);
}

function trustSelect(i, focus) {
  trustState.selected = i;
  for (const tr of $('trust-results').querySelectorAll('tbody tr')) {
    const on = Number(tr.dataset.row) === i;
    tr.classList.toggle('selected', on);
    if (on) tr.setAttribute('aria-current', 'true'); else tr.removeAttribute('aria-current');
    if (on && focus) tr.focus();
  }
  const answer = trustState.answer;
  const m = i >= 0 ? answer.matches[i] : null;
  const values = {
    nodes: answer.drawing.nodes.map((_, j) => (m ? m.nodes[j] : null)),
    edges: answer.drawing.edges.map(() => null),
    notes: answer.drawing.edges.map((_, j) => {
      if (!m) return null;
      const e = m.edges[j];
      if (e.found === 'exact') return null;
      return e.relation ? `${e.found}: ${e.relation}` : e.found;
    }),
  };
  $('trust-drawing').replaceChildren(draw(answer.drawing, values, { small: false }));
}

// ---------------------------------------------------------------- the drawing

/**
 * Places the nodes of a small graph: a force-directed layout from a circle (deterministic), with
 * edges drawn to point rightwards where they can (a query reads from its subjects to its objects).
 */
function layout(count, edges) {
  if (count === 1) return [[0, 0]];
  const pos = [];
  for (let i = 0; i < count; i++) {
    const a = Math.PI * (0.5 + (2 * i) / count);
    pos.push([Math.cos(a), Math.sin(a)]);
  }
  const rounds = 500;
  for (let round = 0; round < rounds; round++) {
    const step = 0.1 * (1 - round / rounds) + 0.005;
    const move = pos.map(() => [0, 0]);
    for (let i = 0; i < count; i++) {
      for (let j = i + 1; j < count; j++) {
        const dx = pos[i][0] - pos[j][0];
        const dy = pos[i][1] - pos[j][1];
        const d = Math.max(Math.hypot(dx, dy), 0.01);
        const f = 1 / d / d;
        move[i][0] += dx * f; move[i][1] += dy * f;
        move[j][0] -= dx * f; move[j][1] -= dy * f;
      }
    }
    for (const e of edges) {
      if (e.from === e.to) continue;
      const dx = pos[e.from][0] - pos[e.to][0];
      const dy = pos[e.from][1] - pos[e.to][1];
      const d = Math.max(Math.hypot(dx, dy), 0.01);
      move[e.from][0] -= dx * d; move[e.from][1] -= dy * d;
      move[e.to][0] += dx * d; move[e.to][1] += dy * d;
      // Rightwards: the object at least a little to the right of the subject.
      const lag = 0.9 - (pos[e.to][0] - pos[e.from][0]);
      if (lag > 0) {
        move[e.to][0] += lag;
        move[e.from][0] -= lag;
      }
    }
    for (let i = 0; i < count; i++) {
      const len = Math.max(Math.hypot(move[i][0], move[i][1]), 1e-9);
      const s = Math.min(len, step) / len;
      pos[i][0] += move[i][0] * s;
      pos[i][1] += move[i][1] * s;
    }
  }
  const cx = pos.reduce((s, p) => s + p[0], 0) / count;
  const cy = pos.reduce((s, p) => s + p[1], 0) / count;
  return pos.map(([x, y]) => [x - cx, y - cy]);
}

/** Width of a text in the drawing's font (an estimate: no measuring before it is shown). */
const textWidth = (text, size) => text.length * size * 0.6;

/**
 * One SVG of the graph `drawing` ({nodes: [{name, kind}], edges: [{from, to, label, variable}]})
 * with `values` ({nodes, edges, notes}: per node and edge its bound value or note, or null).
 */
function draw(drawing, values, { small }) {
  const nodes = drawing.nodes.map((n, i) => nodeBox(n, values.nodes[i]));
  const spread = small ? 150 : 190;
  const placed = layout(nodes.length, drawing.edges);
  nodes.forEach((n, i) => {
    // Wide nodes push their neighbours apart.
    n.x = placed[i][0] * (spread * 1.3 + n.w / 3);
    n.y = placed[i][1] * spread * 0.55;
  });
  const id = `arrow-${++markerCount}`;
  const root = svg('svg', { role: 'img', class: 'graph' });
  const defs = svg('defs');
  const marker = svg('marker', {
    id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse',
  });
  marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z' }));
  defs.append(marker);
  root.append(defs);
  const edgeLayer = svg('g', { class: 'edges' });
  const labelLayer = svg('g', { class: 'edge-labels' });
  const nodeLayer = svg('g', { class: 'nodes' });
  const bounds = { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity };
  const grow = (x0, y0, x1, y1) => {
    bounds.x0 = Math.min(bounds.x0, x0); bounds.y0 = Math.min(bounds.y0, y0);
    bounds.x1 = Math.max(bounds.x1, x1); bounds.y1 = Math.max(bounds.y1, y1);
  };
  const pairs = new Map();
  drawing.edges.forEach((e, i) => {
    const key = [Math.min(e.from, e.to), Math.max(e.from, e.to)].join(',');
    if (!pairs.has(key)) pairs.set(key, []);
    pairs.get(key).push(i);
  });
  drawing.edges.forEach((e, i) => {
    const key = [Math.min(e.from, e.to), Math.max(e.from, e.to)].join(',');
    const siblings = pairs.get(key);
    const bend = (siblings.indexOf(i) - (siblings.length - 1) / 2) * 48;
    const geometry = edgeGeometry(nodes[e.from], nodes[e.to], e.from === e.to ? 0 : bend, e.from < e.to);
    const classes = ['edge'];
    if (e.variable) classes.push('variable');
    const note = values.notes[i];
    if (note && note.startsWith('missing')) classes.push('missing');
    const g = svg('g', { class: classes.join(' '), 'data-from': e.from, 'data-to': e.to });
    g.append(svg('path', { d: geometry.d, 'marker-end': `url(#${id})` }));
    edgeLayer.append(g);
    let text = e.label;
    if (values.edges[i]) text = `${e.label} = ${values.edges[i]}`;
    if (note) text = `${text} (${note})`;
    const w = textWidth(text, 12) + 12;
    const label = svg('g', { class: 'edge-label' });
    label.append(svg('rect', { x: geometry.lx - w / 2, y: geometry.ly - 10, width: w, height: 20, rx: 4 }),
      svg('text', { x: geometry.lx, y: geometry.ly }, text));
    labelLayer.append(label);
    grow(geometry.lx - w / 2, geometry.ly - 12, geometry.lx + w / 2, geometry.ly + 12);
    grow(geometry.x0, geometry.y0, geometry.x0, geometry.y0);
  });
  nodes.forEach((n) => {
    nodeLayer.append(nodeElement(n));
    grow(n.x - n.w / 2, n.y - n.h / 2, n.x + n.w / 2, n.y + n.h / 2);
  });
  root.append(edgeLayer, nodeLayer, labelLayer);
  const pad = 12;
  const width = bounds.x1 - bounds.x0 + 2 * pad;
  const height = bounds.y1 - bounds.y0 + 2 * pad;
  root.setAttribute('viewBox', `${bounds.x0 - pad} ${bounds.y0 - pad} ${width} ${height}`);
  // Shown a little larger than drawn, and never wider than the panel (the style sheet).
  const zoom = small ? 1 : 1.4;
  root.setAttribute('width', String(Math.round(width * zoom)));
  root.setAttribute('height', String(Math.round(height * zoom)));
  const described = drawing.nodes.map((n, i) => (values.nodes[i] ? `${n.name} = ${values.nodes[i]}` : n.name));
  root.setAttribute('aria-label', `Query graph: ${described.join(', ')}`);
  return root;
}

/** A node's text lines and size: concepts as boxes, variables as ellipses. */
function nodeBox(n, value) {
  const concept = n.kind === 'concept';
  // A concept shows its name, and what it matched where that differs (TruST).
  const title = concept ? (value && value !== n.name ? n.name : null) : n.name;
  const main = concept ? (value || n.name) : value;
  const widest = Math.max(title ? textWidth(title, 12) : 0, main ? textWidth(main, 14) : 0);
  const lines = (title ? 1 : 0) + (main ? 1 : 0);
  if (concept) return { n, concept, title, main, w: Math.max(widest + 28, 64), h: lines === 2 ? 46 : 34 };
  return { n, concept, title, main, w: Math.max(widest + 40, 70), h: lines === 2 ? 54 : 38 };
}

function nodeElement(b) {
  const g = svg('g', { class: `node ${b.concept ? 'concept' : 'variable'}`, 'data-name': b.n.name });
  if (b.concept) {
    g.append(svg('rect', { x: b.x - b.w / 2, y: b.y - b.h / 2, width: b.w, height: b.h, rx: 6 }));
  } else {
    g.append(svg('ellipse', { cx: b.x, cy: b.y, rx: b.w / 2, ry: b.h / 2 }));
  }
  if (b.title && b.main) {
    g.append(svg('text', { class: 'name', x: b.x, y: b.y - 9 }, b.title),
      svg('text', { class: 'value', x: b.x, y: b.y + 10 }, b.main));
  } else if (b.main) {
    g.append(svg('text', { class: b.concept ? 'value' : 'value', x: b.x, y: b.y }, b.main));
  } else {
    g.append(svg('text', { class: 'name', x: b.x, y: b.y }, b.title));
  }
  return g;
}

/** Where a ray from a node's centre in direction (dx, dy) leaves its shape. */
function rim(b, dx, dy) {
  const len = Math.hypot(dx, dy) || 1;
  const ux = dx / len; const uy = dy / len;
  let t;
  if (b.concept) {
    t = Math.min(ux ? b.w / 2 / Math.abs(ux) : Infinity, uy ? b.h / 2 / Math.abs(uy) : Infinity);
  } else {
    t = 1 / Math.sqrt((ux / (b.w / 2)) ** 2 + (uy / (b.h / 2)) ** 2);
  }
  return [b.x + ux * (t + 2), b.y + uy * (t + 2)];
}

/** An edge's path (straight, bent when several join the same nodes, a loop on one node) and its label's place. */
function edgeGeometry(a, b, bend, forward) {
  if (a === b) {
    const top = a.y - a.h / 2;
    const d = `M${a.x - 14},${top} C${a.x - 50},${top - 70} ${a.x + 50},${top - 70} ${a.x + 14},${top}`;
    return { d, lx: a.x, ly: top - 56, x0: a.x, y0: top - 60 };
  }
  const dx = b.x - a.x; const dy = b.y - a.y;
  const len = Math.hypot(dx, dy) || 1;
  // The bend is on the same side whichever way the edge points.
  const sign = forward ? 1 : -1;
  const cx = (a.x + b.x) / 2 + (-dy / len) * bend * sign;
  const cy = (a.y + b.y) / 2 + (dx / len) * bend * sign;
  const [x0, y0] = rim(a, cx - a.x, cy - a.y);
  const [x1, y1] = rim(b, cx - b.x, cy - b.y);
  const d = bend === 0 ? `M${x0},${y0} L${x1},${y1}` : `M${x0},${y0} Q${cx},${cy} ${x1},${y1}`;
  const lx = bend === 0 ? (x0 + x1) / 2 : 0.25 * x0 + 0.5 * cx + 0.25 * x1;
  const ly = bend === 0 ? (y0 + y1) / 2 : 0.25 * y0 + 0.5 * cy + 0.25 * y1;
  return { d, lx, ly, x0, y0 };
}

document.addEventListener('DOMContentLoaded', init);
