// Loom dev UI: the Eval tab. Eval sets of the current app, the current
// session added to a set as a case, runs, scores and the expected/actual
// differences of each invocation. It reads the app, user and session from
// the page and talks to ADK's evaluation routes.
import { Client, ApiError } from './api.js';
import { el } from './render.js';

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;
const client = new Client('');

const current = () => ({
  app: $('app-select').value,
  user: $('user-id').value.trim() || 'user',
  sid: $('session-id').textContent.trim(),
});

function say(text, kind = '') {
  const s = $('eval-status');
  s.textContent = text;
  s.className = `eval-note ${kind}`;
}

function fail(err) {
  console.error(err);
  say(err instanceof ApiError ? `${err.status}: ${err.message}` : String(err.message || err), 'error');
}

const evalPath = (app) => `/apps/${enc(app)}/eval_sets`;

async function loadSets(select) {
  const { app } = current();
  if (!app) return;
  const ids = await client.request('GET', evalPath(app));
  const box = $('eval-set-select');
  const keep = select || box.value;
  box.replaceChildren(...ids.map((id) => el('option', { value: id, text: id })));
  if (ids.includes(keep)) box.value = keep;
  $('eval-empty').hidden = ids.length > 0;
  await loadCases();
}

async function loadCases() {
  const { app } = current();
  const set = $('eval-set-select').value;
  const list = $('eval-cases');
  if (!set) {
    list.replaceChildren();
    return;
  }
  const ids = await client.request('GET', `${evalPath(app)}/${enc(set)}/evals`);
  list.replaceChildren(...ids.map((id) => el('li', { class: 'mono small', dataset: { id }, text: id })));
}

async function createSet() {
  const id = $('eval-new-set').value.trim();
  if (!id) return say('Name the new eval set (letters, digits, _).', 'error');
  await client.request('POST', `${evalPath(current().app)}/${enc(id)}`);
  $('eval-new-set').value = '';
  await loadSets(id);
  say(`Created eval set ${id}.`, 'ok');
}

async function addSession() {
  const { app, user, sid } = current();
  const set = $('eval-set-select').value;
  if (!set) return say('Create or pick an eval set first.', 'error');
  if (!sid) return say('Open a session to add it as a case.', 'error');
  const caseId = $('eval-case-id').value.trim() || `case_${sid.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 24)}`;
  await client.request('POST', `${evalPath(app)}/${enc(set)}/add_session`, { evalId: caseId, sessionId: sid, userId: user });
  $('eval-case-id').value = '';
  await loadCases();
  say(`Added the session as case ${caseId}.`, 'ok');
}

function metrics() {
  const out = [];
  for (const [id, name] of [['eval-m-response', 'response_match_score'], ['eval-m-trajectory', 'tool_trajectory_avg_score']]) {
    if ($(id).checked) out.push({ metricName: name, threshold: Number($(`${id}-t`).value) });
  }
  return out;
}

async function run() {
  const { app } = current();
  const set = $('eval-set-select').value;
  if (!set) return say('Create or pick an eval set first.', 'error');
  const m = metrics();
  if (!m.length) return say('Pick at least one metric.', 'error');
  $('eval-run').disabled = true;
  say('Running…');
  try {
    const results = await client.request('POST', `${evalPath(app)}/${enc(set)}/run_eval`, { evalIds: [], evalMetrics: m });
    renderResults(results);
    const passed = results.filter((r) => r.finalEvalStatus === 1).length;
    say(`${passed} of ${results.length} cases passed.`, passed === results.length ? 'ok' : 'error');
  } finally {
    $('eval-run').disabled = false;
  }
}

const STATUS = { 1: 'PASSED', 2: 'FAILED', 3: 'NOT EVALUATED' };
const score = (s) => (typeof s === 'number' ? s.toFixed(3) : '–');

function text(content) {
  return ((content && content.parts) || []).filter((p) => p.text && !p.thought).map((p) => p.text).join('\n');
}

function calls(inv) {
  const d = (inv && inv.intermediateData) || {};
  let list = d.toolUses || [];
  if (d.invocationEvents) {
    list = d.invocationEvents.flatMap((e) => ((e.content && e.content.parts) || []).filter((p) => p.functionCall).map((p) => p.functionCall));
  }
  return list.map((c) => `${c.name}(${JSON.stringify(c.args || {})})`).join(', ') || '(none)';
}

function diffRows(label, expected, actual) {
  if (expected === actual) return [el('div', { class: 'eval-same' }, `  ${label}: ${actual}`)];
  return [
    el('div', { class: 'eval-expected' }, `- ${label}: ${expected}`),
    el('div', { class: 'eval-actual' }, `+ ${label}: ${actual}`),
  ];
}

function renderResults(results) {
  $('eval-results').replaceChildren(...results.map((r) => {
    const status = STATUS[r.finalEvalStatus] || String(r.finalEvalStatus);
    const table = el('table', { class: 'eval-table' },
      el('tr', {}, el('th', { text: 'Metric' }), el('th', { text: 'Score' }), el('th', { text: 'Threshold' }), el('th', { text: 'Status' })),
      (r.overallEvalMetricResults || []).map((m) => el('tr', { class: 'eval-metric', dataset: { metric: m.metricName } },
        el('td', { class: 'mono', text: m.metricName }),
        el('td', { class: 'eval-score mono', text: score(m.score) }),
        el('td', { class: 'mono', text: score(m.threshold) }),
        el('td', { class: `eval-badge s${m.evalStatus}`, text: STATUS[m.evalStatus] || '' }))));
    const invocations = (r.evalMetricResultPerInvocation || []).map((p, i) => el('details', { class: 'eval-invocation', open: r.finalEvalStatus !== 1 },
      el('summary', { text: `Invocation ${i + 1}: ${text(p.actualInvocation.userContent)}` }),
      el('pre', { class: 'eval-diff' },
        diffRows('tools', p.expectedInvocation ? calls(p.expectedInvocation) : '', calls(p.actualInvocation)),
        diffRows('response', p.expectedInvocation ? text(p.expectedInvocation.finalResponse) : '', text(p.actualInvocation.finalResponse)))));
    return el('section', { class: 'eval-result', dataset: { case: r.evalId } },
      el('h4', {}, el('span', { class: 'mono', text: r.evalId }), ' ', el('span', { class: `eval-badge eval-case-status s${r.finalEvalStatus}`, text: status })),
      table, invocations);
  }));
}

function build() {
  const panel = $('panel-eval');
  const threshold = (id, v) => el('input', { id: `${id}-t`, type: 'number', min: '0', max: '1', step: '0.05', value: v, class: 'eval-threshold', 'aria-label': 'threshold' });
  panel.append(el('div', { class: 'eval-view' },
    el('div', { class: 'eval-row' },
      el('select', { id: 'eval-set-select', 'aria-label': 'Eval set', onchange: () => loadCases().catch(fail) }),
      el('input', { id: 'eval-new-set', type: 'text', placeholder: 'new_set_id', spellcheck: 'false', 'aria-label': 'New eval set id' }),
      el('button', { id: 'eval-create', class: 'btn small', type: 'button', text: 'Create set', onclick: () => createSet().catch(fail) })),
    el('p', { id: 'eval-empty', class: 'empty', text: 'No eval sets yet: create one, then add sessions to it.' }),
    el('div', { class: 'eval-row' },
      el('input', { id: 'eval-case-id', type: 'text', placeholder: 'case id (optional)', spellcheck: 'false', 'aria-label': 'Eval case id' }),
      el('button', { id: 'eval-add-session', class: 'btn small', type: 'button', text: 'Add current session', onclick: () => addSession().catch(fail) })),
    el('ul', { id: 'eval-cases', class: 'eval-cases' }),
    el('div', { class: 'eval-row small' },
      el('label', { class: 'check' }, el('input', { id: 'eval-m-response', type: 'checkbox', checked: true }), ' response match ≥'), threshold('eval-m-response', '0.8'),
      el('label', { class: 'check' }, el('input', { id: 'eval-m-trajectory', type: 'checkbox', checked: true }), ' tool trajectory ≥'), threshold('eval-m-trajectory', '1')),
    el('div', { class: 'eval-row' },
      el('button', { id: 'eval-run', class: 'btn primary small', type: 'button', text: 'Run eval set', onclick: () => run().catch(fail) }),
      el('span', { id: 'eval-status', class: 'eval-note', role: 'status' })),
    el('div', { id: 'eval-results', class: 'eval-results' })));
}

function init() {
  build();
  const tab = document.querySelector('.tab[data-tab="eval"]');
  if (tab) tab.addEventListener('click', () => loadSets().catch(fail));
  $('app-select').addEventListener('change', () => {
    $('eval-results').replaceChildren();
    if (!$('panel-eval').hidden) loadSets().catch(fail);
  });
}

init();
