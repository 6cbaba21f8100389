// Loom dev UI: wiring between the page, the API client and the renderers.
import { Client, ApiError } from './api.js';
import {
  el, chatItems, timelineItem, functionResponses, parts, json, relativeTime, CONFIRMATION,
  traceTree, spanAttributes, formatDuration, usageSummary, usageView,
} from './render.js';
import { GraphView } from './graph.js';
import { INPUT, inputCard } from './input.js';
import { signInOf, signInCard, answerContent, stateOf } from './signin.js';

const $ = (id) => document.getElementById(id);
const graph = new GraphView(document.getElementById('graph-view'));

const ui = {
  client: new Client(''),
  apps: [],
  app: '',
  user: localStorage.getItem('loom.user') || 'user',
  sessions: [],
  sid: '',
  events: [], // complete events of the session, in order
  byId: new Map(), // event id → index in events
  transient: [], // error frames of the last run (never stored by the server)
  live: new Map(), // author → {node, bubble} of the streaming answer
  running: null, // AbortController of the run in flight
  span: '', // id of the span whose details are shown
  showEmpty: false, // list the sessions that have no event
};

// ---------- status ----------

function setStatus(text, kind = '') {
  const s = $('status');
  s.textContent = text;
  s.className = `status ${kind}`;
}

function report(err) {
  console.error(err);
  setStatus(err instanceof ApiError ? `${err.status}: ${err.message}` : String(err.message || err), 'error');
}

// ---------- apps ----------

/** The option label of an app: apps from config files are marked, and so
 *  are those whose latest edit failed to load. */
function appLabel(a) {
  if (!a.source) return a.name;
  return `${a.name} (file${a.loadError ? ', load error' : ''})`;
}

async function loadApps() {
  ui.apps = await ui.client.listApps();
  const select = $('app-select');
  select.replaceChildren(...ui.apps.map((a) => el('option', { value: a.name, text: appLabel(a), title: a.source || '' })));
  const wanted = hashParam('app') || localStorage.getItem('loom.app');
  ui.app = ui.apps.some((a) => a.name === wanted) ? wanted : (ui.apps[0] && ui.apps[0].name) || '';
  select.value = ui.app;
  showAppDescription();
  graph.load(ui.client, ui.app);
}

function showAppDescription() {
  const app = ui.apps.find((a) => a.name === ui.app);
  const desc = $('app-description');
  desc.textContent = (app && app.description) || '';
  // A long description is cut to one line: its title and a click show it whole.
  desc.title = [desc.textContent, app && app.source ? `(${app.source})` : ''].filter(Boolean).join('\n');
  desc.classList.remove('expanded');
  desc.setAttribute('aria-expanded', 'false');
  const err = $('app-load-error');
  err.textContent = app && app.loadError ? `${app.loadError} (the previous version keeps serving)` : '';
  err.hidden = !err.textContent;
}

/** Re-reads the app list (apps from files change as they are edited),
 *  keeping the selection. */
async function refreshApps() {
  const apps = await ui.client.listApps();
  ui.apps = apps;
  const select = $('app-select');
  for (const opt of select.options) {
    const a = apps.find((x) => x.name === opt.value);
    if (a) { opt.text = appLabel(a); opt.title = a.source || ''; }
  }
  showAppDescription();
}

// ---------- sessions ----------

async function loadSessions() {
  if (!ui.app) return;
  const list = await ui.client.listSessions(ui.app, ui.user);
  ui.sessions = (Array.isArray(list) ? list : []).sort((a, b) => (b.lastUpdateTime || 0) - (a.lastUpdateTime || 0));
  renderSessions();
  describeSessions().catch((err) => console.error(err));
}

// Sessions are listed without their events (as ADK lists them), so the
// list learns what each session is about by reading it once: its first
// message labels it, and a session with no event yet is empty. What it
// learns is kept per session and update time (labels in localStorage).
const sessionInfo = new Map(); // key → {at, label, empty}
const LABELS = 'loom.sessionLabels';
const MAX_DESCRIBED = 40; // sessions read per listing, most recent first

function infoKey(sid) { return `${ui.app}\u0000${ui.user}\u0000${sid}`; }

function storedLabels() {
  try { return JSON.parse(localStorage.getItem(LABELS) || '{}') || {}; } catch { return {}; }
}

// learnSession records what a session holds: its label (its first text of
// the user, clipped) or that it is empty.
function learnSession(sess) {
  const events = sess.events || [];
  let label = '';
  for (const ev of events) {
    if (ev.author !== 'user') continue;
    const text = parts(ev).filter((p) => typeof p.text === 'string').map((p) => p.text).join(' ').trim();
    if (text) { label = text.replace(/\s+/g, ' ').slice(0, 80); break; }
  }
  const key = infoKey(sess.id);
  sessionInfo.set(key, { at: sess.lastUpdateTime || 0, label, empty: events.length === 0 });
  if (label) {
    const all = storedLabels();
    if (all[key] !== label) {
      all[key] = label;
      const keys = Object.keys(all);
      for (const k of keys.slice(0, Math.max(0, keys.length - 500))) delete all[k]; // keep the newest 500
      try { localStorage.setItem(LABELS, JSON.stringify(all)); } catch { /* full: labels are a convenience */ }
    }
  }
}

// describeSessions reads the listed sessions the list knows nothing of yet.
async function describeSessions() {
  const app = ui.app;
  const user = ui.user;
  const labels = storedLabels();
  let changed = false;
  let read = 0;
  for (const s of ui.sessions) {
    const key = infoKey(s.id);
    const known = sessionInfo.get(key);
    if (known && (known.label || known.at === (s.lastUpdateTime || 0))) continue;
    if (labels[key]) {
      sessionInfo.set(key, { at: s.lastUpdateTime || 0, label: labels[key], empty: false });
      changed = true;
      continue;
    }
    if (read++ >= MAX_DESCRIBED) break;
    try {
      learnSession(await ui.client.getSession(app, user, s.id));
      changed = true;
    } catch { /* deleted meanwhile */ }
    if (app !== ui.app || user !== ui.user) return;
  }
  if (changed) renderSessions();
}

function renderSessions() {
  const list = $('session-list');
  const empty = ui.sessions.filter((s) => s.id !== ui.sid && (sessionInfo.get(infoKey(s.id)) || {}).empty);
  const shown = ui.showEmpty ? ui.sessions : ui.sessions.filter((s) => !empty.includes(s));
  const items = shown.map((s) => {
    const info = sessionInfo.get(infoKey(s.id)) || {};
    const name = info.label || (info.empty ? 'Empty session' : `Session ${s.id.slice(0, 8)}`);
    const del = el('button', {
      class: 'icon-btn', type: 'button', title: 'Delete session', 'aria-label': `Delete session ${name}`, text: '×',
      onclick: (e) => { e.stopPropagation(); deleteSession(s.id); },
    });
    return el('li', {
      class: `${s.id === ui.sid ? 'session active' : 'session'}${info.empty ? ' empty-session' : ''}`, dataset: { id: s.id }, tabindex: 0,
      title: s.id,
      onclick: () => selectSession(s.id),
      onkeydown: (e) => { if (e.key === 'Enter') selectSession(s.id); },
    },
    el('div', { class: 'session-main' },
      el('span', { class: `session-label${info.label ? '' : ' muted'}`, text: name }),
      el('span', { class: 'muted small' }, relativeTime(s.lastUpdateTime), ' · ', el('span', { class: 'mono session-id', text: s.id.slice(0, 8) }))),
    del);
  });
  if (empty.length) {
    items.push(el('li', { class: 'session-toggle' }, el('button', {
      class: 'btn small link', type: 'button', id: 'toggle-empty',
      text: ui.showEmpty ? 'Hide empty sessions' : `Show ${empty.length} empty session${empty.length > 1 ? 's' : ''}`,
      onclick: () => { ui.showEmpty = !ui.showEmpty; renderSessions(); },
    })));
  }
  list.replaceChildren(...items);
  $('no-sessions').hidden = ui.sessions.length > 0;
}

async function selectSession(sid) {
  if (ui.running) return;
  const sess = await ui.client.getSession(ui.app, ui.user, sid);
  learnSession(sess);
  ui.sid = sess.id;
  ui.transient = [];
  setEvents(sess.events || []);
  renderState(sess.state || {});
  setHash();
  renderSessions();
  $('session-id').textContent = ui.sid;
  await Promise.all([loadArtifacts(), loadTrace(), loadUsage()]);
}

async function newSession() {
  if (ui.running) return;
  if (ui.sid && ui.events.length === 0) {
    // The session shown is still empty: use it rather than add another.
    $('message').focus();
    return;
  }
  const sess = await ui.client.createSession(ui.app, ui.user);
  await loadSessions();
  await selectSession(sess.id);
  $('message').focus();
}

async function deleteSession(sid) {
  const info = sessionInfo.get(infoKey(sid)) || {};
  if (!window.confirm(`Delete session ${info.label ? `"${info.label}" (${sid})` : sid}?`)) return;
  await ui.client.deleteSession(ui.app, ui.user, sid);
  if (sid === ui.sid) clearSession();
  await loadSessions();
  setStatus('Session deleted');
}

function clearSession() {
  ui.sid = '';
  ui.transient = [];
  setEvents([]);
  renderState({});
  renderArtifacts([]);
  renderTrace([]);
  renderUsage(null);
  $('session-id').textContent = '';
  setHash();
}

// ---------- events ----------

function setEvents(events) {
  ui.events = [];
  ui.byId = new Map();
  ui.live.clear();
  for (const ev of events) pushEvent(ev);
  renderAll();
}

// pushEvent records a complete event; a second frame with a known id (the
// actions part of an event with an artifact delta) is merged into the first.
function pushEvent(ev) {
  if (ev.id && ui.byId.has(ev.id)) {
    const prev = ui.events[ui.byId.get(ev.id)];
    const merged = { ...prev, ...ev, content: ev.content || prev.content };
    merged.actions = { ...(prev.actions || {}), ...(ev.actions || {}) };
    for (const k of ['stateDelta', 'artifactDelta']) {
      merged.actions[k] = { ...((prev.actions || {})[k] || {}), ...((ev.actions || {})[k] || {}) };
    }
    ui.events[ui.byId.get(ev.id)] = merged;
    return { merged: true, index: ui.byId.get(ev.id) };
  }
  if (ev.id) ui.byId.set(ev.id, ui.events.length);
  ui.events.push(ev);
  return { merged: false, index: ui.events.length - 1 };
}

function confirmationAnswers() {
  const answers = new Map();
  for (const ev of ui.events) {
    if (ev.author !== 'user') continue;
    for (const fr of functionResponses(ev)) {
      if (fr.name === CONFIRMATION) answers.set(fr.id, !!(fr.response && fr.response.confirmed));
    }
  }
  return answers;
}

// respondedIds returns the ids of every function call answered so far.
function respondedIds() {
  const ids = new Set();
  for (const ev of ui.events) for (const fr of functionResponses(ev)) ids.add(fr.id);
  return ids;
}

function handlers() {
  const answers = confirmationAnswers();
  const responded = respondedIds();
  return {
    answered: (id) => (answers.has(id) ? answers.get(id) : null),
    responded: (id) => responded.has(id),
    confirm: (fc, ok) => send({ role: 'user', parts: [{ functionResponse: { id: fc.id, name: CONFIRMATION, response: { confirmed: ok } } }] }),
    retry: (content) => send(content, draftOf(content)),
    retryTurn: (id, content) => send(content, null, id),
    userSaid: (text) => ui.events.some((ev) => ev.author === 'user' && (ev.content || {}).role !== 'model' && parts(ev).some((p) => p.text === text)),
    inputCard,
    input: (fc, response) => send({ role: 'user', parts: [{ functionResponse: { id: fc.id, name: INPUT, response } }] }),
    signIn: signInOf,
    signInCard,
    credential: (fc, redirectURL) => send(answerContent(fc, redirectURL)),
  };
}

// pendingSignIns returns the requests of the session for an OAuth2 sign-in
// (a tool's, or an agent tool's child's) that still wait for an answer.
function pendingSignIns() {
  const responded = respondedIds();
  const out = [];
  for (const ev of ui.events) {
    const waiting = new Set(ev.longRunningToolIds || []);
    for (const p of parts(ev)) {
      const fc = p.functionCall;
      if (fc && waiting.has(fc.id) && !responded.has(fc.id) && signInOf(fc)) out.push(fc);
    }
  }
  return out;
}

// signedIn answers the request whose state the redirect URL carries.
function signedIn(data, quiet) {
  if (!data || typeof data.authResponseUrl !== 'string') return;
  const state = stateOf(data.authResponseUrl);
  const fc = pendingSignIns().find((c) => signInOf(c).state === state);
  if (!fc) {
    if (!quiet) setStatus('A sign-in came back for no request waiting in this session.', 'error');
    return;
  }
  handlers().credential(fc, data.authResponseUrl);
}

// The sign-in popup's callback page posts the redirect URL to its opener
// (ADK's web UI gets the same message), or, when the authorization server
// severed the opener, to every dev UI page of the origin: only the page
// holding the request answers it.
window.addEventListener('message', (e) => {
  if (e.origin === window.location.origin) signedIn(e.data, false);
});
if ('BroadcastChannel' in window) new BroadcastChannel('loom-oauth2').onmessage = (e) => signedIn(e.data, true);

function renderAll() {
  const box = $('messages');
  const h = handlers();
  const nodes = [];
  for (const ev of [...ui.events, ...ui.transient]) nodes.push(...chatItems(ev, h));
  const last = ui.events[ui.events.length - 1];
  if (!ui.running && ui.transient.length === 0 && last && last.author === 'user' && last.id && parts(last).some((p) => typeof p.text === 'string')) {
    // A message whose turn stored nothing (it failed, or was stopped
    // before any answer): say so, and offer to run it again.
    nodes.push(el('div', { class: 'note unanswered' }, 'This message has no answer. ',
      el('button', { class: 'btn small retry', type: 'button', text: 'Retry', onclick: () => h.retryTurn(last.id, last.content) })));
  }
  if (nodes.length === 0) nodes.push(welcome());
  box.replaceChildren(...nodes);
  $('timeline').replaceChildren(...[...ui.events, ...ui.transient.filter((ev) => ev.error)].map((ev, i) => timelineItem(ev, i)));
  renumberTimeline();
  graph.update(ui.events);
  scrollDown(true);
}

// renumberTimeline numbers the events the timeline shows, 1 to n, and
// shows n as the tab's count: hidden checkpoints take no number, and the
// error notices of the last run (which are not events) none either.
function renumberTimeline() {
  const show = $('show-bookkeeping').checked;
  let n = 0;
  for (const li of $('timeline').children) {
    const idx = li.querySelector('.idx');
    if (!idx) continue;
    if (li.classList.contains('kind-error') && !li.dataset.id) {
      idx.textContent = '!';
    } else if (!show && li.classList.contains('bookkeeping')) {
      idx.textContent = '';
    } else {
      idx.textContent = String(++n);
    }
  }
  $('event-count').textContent = String(n);
}

function welcome() {
  return el('div', { class: 'welcome' },
    el('h3', { text: ui.sid ? 'A fresh session' : 'Talk to your agent' }),
    el('p', { text: ui.sid ? 'Say something to start the conversation.' : 'Pick a session on the left or type a message below: a new session is created for you.' }));
}

// appendEvent shows one complete event as it arrives from the stream.
function appendEvent(ev) {
  const live = ui.live.get(ev.author);
  if (live) {
    live.node.remove();
    ui.live.delete(ev.author);
  }
  const { merged, index } = pushEvent(ev);
  const timeline = $('timeline');
  if (merged) {
    const old = timeline.querySelector(`li.ev[data-id="${CSS.escape(ev.id)}"]`);
    if (old) old.replaceWith(timelineItem(ui.events[index], index));
    renumberTimeline();
    return;
  }
  document.querySelector('#messages .welcome')?.remove();
  $('messages').append(...chatItems(ev, handlers()));
  timeline.append(timelineItem(ev, timeline.children.length));
  renumberTimeline();
  graph.update(ui.events);
  scrollDown();
}

// appendPartial adds a streamed chunk to the author's live bubble.
function appendPartial(ev) {
  const text = parts(ev).filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text).join('');
  if (!text) return;
  let live = ui.live.get(ev.author);
  if (!live) {
    document.querySelector('#messages .welcome')?.remove();
    const bubble = el('div', { class: 'bubble' });
    const node = el('div', { class: 'msg agent live' }, el('div', { class: 'who' }, el('span', { class: 'badge', text: ev.author })), bubble);
    $('messages').append(node);
    live = { node, bubble };
    ui.live.set(ev.author, live);
  }
  live.bubble.textContent += text;
  scrollDown();
}

function scrollDown(force = false) {
  const box = $('messages');
  if (force || box.scrollHeight - box.scrollTop - box.clientHeight < 160) box.scrollTop = box.scrollHeight;
}

// ---------- running ----------

// draftOf returns the text of a typed message, or null for other content.
function draftOf(content) {
  const ps = (content && content.parts) || [];
  return ps.length === 1 && typeof ps[0].text === 'string' ? ps[0].text : null;
}

function describe(err) {
  return err instanceof ApiError ? `${err.status}: ${err.message}` : (err && err.message) || String(err);
}

// notSent reports a message the server never received: the text stays in
// the input (or is put back), and the error offers to retry.
function notSent(content, draft, err) {
  const box = $('message');
  if (draft !== null && box.value.trim() === '') box.value = draft;
  const notice = { error: `Message not sent (${describe(err)}). It is still in the input box.`, retry: content, timestamp: Date.now() / 1000 };
  ui.transient = [notice];
  renderAll();
  setStatus(err instanceof ApiError ? 'Not sent: the server refused the message' : 'Not sent: the server cannot be reached', 'error');
}

// storedMessage asks the server whether the run that failed before its
// stream started stored the user's message: it returns the id of a user
// event that the session gained since known (the ids it held before the
// send), or '' if there is none or the server cannot tell.
async function storedMessage(known) {
  try {
    const sess = await ui.client.getSession(ui.app, ui.user, ui.sid);
    const fresh = (sess.events || []).filter((ev) => ev.author === 'user' && ev.id && !known.has(ev.id));
    return fresh.length ? fresh[fresh.length - 1].id : '';
  } catch {
    return '';
  }
}

// latestUserMessage returns the id of the session's latest user event.
function latestUserMessage() {
  for (let i = ui.events.length - 1; i >= 0; i--) {
    if (ui.events[i].author === 'user' && ui.events[i].id) return ui.events[i].id;
  }
  return '';
}

// showThinking shows (or removes) the indicator of a run that has not
// produced anything yet.
function showThinking(on) {
  document.querySelector('#messages .thinking')?.remove();
  if (!on) return;
  document.querySelector('#messages .welcome')?.remove();
  $('messages').append(el('div', { class: 'msg agent thinking', role: 'status', 'aria-label': 'The agent is thinking' },
    el('div', { class: 'bubble' }, el('span', { class: 'dot' }), el('span', { class: 'dot' }), el('span', { class: 'dot' }))));
  scrollDown();
}

// send runs content. draft is the typed text it came from: it stays in the
// input until the server has taken the message, so nothing typed is lost
// when the server cannot be reached. retryOf, when set, is the id of the
// stored user event whose turn runs again: the server does not store the
// message a second time (Loom's loomRetryOf field).
async function send(content, draft = null, retryOf = '') {
  if (ui.running || !ui.app) return;
  try {
    if (!ui.sid) {
      const sess = await ui.client.createSession(ui.app, ui.user);
      ui.sid = sess.id;
      $('session-id').textContent = ui.sid;
      setHash();
      setEvents([]);
      loadSessions().catch(report);
    }
  } catch (err) {
    console.error(err);
    notSent(content, draft, err);
    return;
  }
  const known = new Set(ui.events.map((ev) => ev.id).filter(Boolean));
  ui.transient = [];
  if (retryOf) {
    renderAll();
  } else {
    appendEvent({ author: 'user', content, timestamp: Date.now() / 1000, local: true });
  }
  const taken = () => {
    if (draft !== null && $('message').value === draft) $('message').value = '';
    draft = null;
  };
  const controller = new AbortController();
  ui.running = controller;
  setRunning(true);
  showThinking(true);
  const request = {
    appName: ui.app, userId: ui.user, sessionId: ui.sid, newMessage: content, streaming: $('streaming').checked,
  };
  if (retryOf) request.loomRetryOf = retryOf;
  let failure = null; // why the turn failed, if it did
  let stopped = false;
  let received = false;
  let lost = null; // the error answered before the stream started
  try {
    for await (const frame of ui.client.run(request, controller.signal)) {
      if (!received) {
        received = true;
        taken();
      }
      showThinking(false);
      if (frame.error && !frame.author) {
        failure = frame.error;
      } else if (frame.partial) {
        appendPartial(frame);
      } else {
        appendEvent(frame);
      }
    }
  } catch (err) {
    if (err.name === 'AbortError' || controller.signal.aborted) {
      stopped = true;
    } else if (!received) {
      lost = err;
    } else {
      console.error(err);
      failure = describe(err);
    }
  } finally {
    showThinking(false);
    ui.running = null;
    setRunning(false);
  }
  if (stopped) {
    // What streamed stays, marked as stopped: it was never stored.
    for (const [author, live] of ui.live) {
      ui.transient.push({ author, content: { role: 'model', parts: [{ text: live.bubble.textContent }] }, stopped: true, timestamp: Date.now() / 1000 });
    }
    if (ui.live.size === 0) ui.transient.push({ note: 'Stopped.', stopped: true, timestamp: Date.now() / 1000 });
    taken();
    await refresh();
    setStatus('Stopped', '');
    return;
  }
  if (lost) {
    // An error before the stream: the server may still have stored the
    // message (a model that fails on its first call). Ask it.
    const stored = retryOf || (lost instanceof ApiError ? await storedMessage(known) : '');
    if (!stored) {
      // Nothing was stored: take the message back out of the chat.
      const i = ui.events.findIndex((ev) => ev.local);
      if (i >= 0) ui.events.splice(i, 1);
      console.error(lost);
      notSent(content, draft, lost);
      return;
    }
    taken();
    failure = describe(lost);
  }
  if (failure) {
    await refresh();
    const id = retryOf || latestUserMessage();
    ui.transient.push({ error: failure, retryOf: id, retryContent: content, timestamp: Date.now() / 1000 });
    renderAll();
    setStatus(`The turn failed: ${failure}`, 'error');
    return;
  }
  taken();
  setStatus('Ready', 'ok');
  await refresh();
}

// refresh reloads the session from the server, the source of truth, keeping
// the error notices of the last run (which are not stored).
async function refresh() {
  if (!ui.sid) return;
  try {
    const sess = await ui.client.getSession(ui.app, ui.user, ui.sid);
    learnSession(sess);
    const transient = ui.transient;
    setEvents(sess.events || []);
    ui.transient = transient;
    if (transient.length) renderAll();
    renderState(sess.state || {});
    await Promise.all([loadArtifacts(), loadSessions(), loadTrace(), loadUsage()]);
  } catch (err) {
    report(err);
  } finally {
    // How many refreshes have finished: what a page test waits on before it
    // touches what the refresh rendered.
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
  }
}

function setRunning(on) {
  $('send').disabled = on;
  $('stop').hidden = !on;
  $('composer').classList.toggle('busy', on);
  if (on) setStatus('Running…', 'busy');
}

// ---------- state ----------

function renderState(state) {
  const keys = Object.keys(state).sort();
  $('state-count').textContent = String(keys.length);
  const view = $('state-view');
  if (keys.length === 0) {
    view.replaceChildren(el('p', { class: 'empty', text: 'No state yet. Tools, callbacks and output keys write here.' }));
    return;
  }
  view.replaceChildren(el('table', { class: 'kv' }, el('tbody', {}, keys.map((k) => {
    const v = state[k];
    const scope = k.startsWith('app:') ? 'app' : k.startsWith('user:') ? 'user' : '';
    return el('tr', {},
      el('th', {}, el('span', { class: 'mono', text: k }), scope ? el('span', { class: 'pill', text: scope }) : null),
      el('td', {}, v !== null && typeof v === 'object' ? json(v) : el('span', { class: 'value', text: typeof v === 'string' ? v : JSON.stringify(v) })));
  }))));
}

// ---------- artifacts ----------

async function loadArtifacts() {
  if (!ui.sid) return renderArtifacts([]);
  const names = await ui.client.listArtifacts(ui.app, ui.user, ui.sid);
  renderArtifacts(Array.isArray(names) ? names : []);
}

function renderArtifacts(names) {
  $('artifact-count').textContent = String(names.length);
  const list = $('artifact-list');
  $('artifact-view').replaceChildren();
  if (names.length === 0) {
    list.replaceChildren(el('li', { class: 'empty', text: 'No artifacts in this session.' }));
    return;
  }
  list.replaceChildren(...names.map((name) => {
    const versions = el('select', { class: 'small', 'aria-label': `Versions of ${name}` }, el('option', { value: '', text: 'latest' }));
    versions.addEventListener('focus', async () => {
      if (versions.dataset.loaded) return;
      versions.dataset.loaded = '1';
      try {
        const vs = await ui.client.artifactVersions(ui.app, ui.user, ui.sid, name);
        versions.append(...(vs || []).slice().reverse().map((v) => el('option', { value: String(v), text: `v${v}` })));
      } catch (err) { report(err); }
    }, { once: true });
    const version = () => (versions.value === '' ? null : versions.value);
    return el('li', { class: 'artifact', dataset: { name } },
      el('span', { class: 'mono artifact-name', text: name, title: name }),
      versions,
      el('button', { class: 'btn small', type: 'button', text: 'View', onclick: () => viewArtifact(name, version()).catch(report) }),
      el('button', { class: 'btn small', type: 'button', text: 'Download', onclick: () => downloadArtifact(name, version()).catch(report) }));
  }));
}

function decodeBase64(data) {
  const std = data.replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(std + '='.repeat((4 - (std.length % 4)) % 4));
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

// partBlob turns an artifact part into a Blob with its MIME type.
function partBlob(part) {
  if (part && part.inlineData) {
    const type = part.inlineData.mimeType || 'application/octet-stream';
    return new Blob([decodeBase64(part.inlineData.data || '')], { type });
  }
  if (part && typeof part.text === 'string') return new Blob([part.text], { type: 'text/plain' });
  return new Blob([JSON.stringify(part, null, 2)], { type: 'application/json' });
}

async function viewArtifact(name, version) {
  const part = await ui.client.loadArtifact(ui.app, ui.user, ui.sid, name, version);
  const blob = partBlob(part);
  const view = $('artifact-view');
  const head = el('div', { class: 'artifact-head' }, el('strong', { class: 'mono', text: name }),
    el('span', { class: 'muted small', text: `${blob.type} · ${blob.size} bytes${version !== null ? ` · v${version}` : ''}` }));
  let body;
  if (blob.type.startsWith('image/')) {
    body = el('img', { src: URL.createObjectURL(blob), alt: name });
  } else if (blob.type.startsWith('text/') || /json|xml|javascript|yaml|csv/.test(blob.type)) {
    body = el('pre', { class: 'artifact-text', text: await blob.text() });
  } else {
    body = el('p', { class: 'muted', text: 'Binary content: use Download.' });
  }
  view.replaceChildren(head, body);
}

async function downloadArtifact(name, version) {
  const part = await ui.client.loadArtifact(ui.app, ui.user, ui.sid, name, version);
  const url = URL.createObjectURL(partBlob(part));
  const a = el('a', { href: url, download: name.split('/').pop() || 'artifact' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// ---------- trace ----------

// loadTrace shows the spans recorded for the session's invocations.
async function loadTrace() {
  if (!ui.sid) return renderTrace([]);
  const sid = ui.sid;
  const spans = await ui.client.sessionTrace(ui.app, ui.user, sid);
  if (sid === ui.sid) renderTrace(Array.isArray(spans) ? spans : []);
}

function renderTrace(spans) {
  $('trace-count').textContent = String(spans.length);
  $('trace-view').replaceChildren(traceTree(spans, showSpan));
  // A reload (after a turn, or on opening the tab) keeps the span shown,
  // if it is still there, even if it was picked while the reload was on
  // its way.
  const span = ui.span && spans.find((s) => s.span_id === ui.span);
  const row = span && [...document.querySelectorAll('#trace-view .span-row')].find((r) => r.dataset.spanId === span.span_id);
  if (row) {
    showSpan(span, row, false);
  } else {
    ui.span = '';
    $('span-detail').replaceChildren();
  }
}

function showSpan(span, row, scroll = true) {
  ui.span = span.span_id;
  for (const r of document.querySelectorAll('#trace-view .span-row.selected')) r.classList.remove('selected');
  row.classList.add('selected');
  const detail = $('span-detail');
  detail.replaceChildren(
    el('div', { class: 'artifact-head' }, el('strong', { class: 'mono span-title', text: span.name }),
      el('span', { class: 'muted small', text: formatDuration(span.end_time - span.start_time) })),
    spanAttributes(span.attributes));
  // The details sit below the span list: bring them into view.
  if (scroll) detail.scrollIntoView({ block: 'start', behavior: 'instant' });
}

// showEventSpan adds, when a timeline event is first opened, the attributes
// of the span that produced it (its model or tool call).
function showEventSpan(e) {
  const details = e.target;
  const li = details.parentElement;
  if (!details.open || !li || !li.matches('li.ev') || details !== li.firstElementChild) return;
  const id = li.dataset.id;
  if (!id || li.dataset.traced) return;
  li.dataset.traced = 'true';
  const title = el('h4', { text: 'Trace span' });
  const box = el('div', { class: 'ev-section ev-trace' }, title, el('p', { class: 'muted small', text: 'Loading…' }));
  const body = details.querySelector('.ev-body');
  body.insertBefore(box, body.querySelector(':scope > .raw'));
  ui.client.eventTrace(ui.app, ui.user, id)
    .then((attrs) => box.replaceChildren(title, spanAttributes(attrs)))
    .catch((err) => box.replaceChildren(title, el('p', { class: 'error-text', text: err.message || String(err) })));
}

// ---------- usage ----------

// loadUsage shows the session's token usage and cost, from the server's
// sum over the stored events.
// A backend without the route (another ADK server) leaves the tab empty
// rather than failing the session's view.
async function loadUsage() {
  if (!ui.sid) return renderUsage(null);
  const sid = ui.sid;
  let usage = null;
  try {
    usage = await ui.client.sessionUsage(ui.app, ui.user, sid);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    console.warn('session usage:', err.message);
  }
  if (sid === ui.sid) renderUsage(usage);
}

function renderUsage(usage) {
  const total = usage && usage.total;
  $('session-usage').textContent = total && total.responses ? usageSummary(total) : '';
  $('usage-view').replaceChildren(usageView(usage));
}

// ---------- location ----------

function hashParam(key) {
  return new URLSearchParams(location.hash.slice(1)).get(key);
}

function setHash() {
  const p = new URLSearchParams();
  if (ui.app) p.set('app', ui.app);
  if (ui.sid) p.set('session', ui.sid);
  history.replaceState(null, '', `#${p}`);
}

// ---------- wiring ----------

function wire() {
  $('app-select').addEventListener('focus', () => { refreshApps().catch(report); });
  $('app-select').addEventListener('change', async (e) => {
    ui.app = e.target.value;
    localStorage.setItem('loom.app', ui.app);
    showAppDescription();
    graph.load(ui.client, ui.app);
    clearSession();
    await loadSessions().catch(report);
  });
  const user = $('user-id');
  user.value = ui.user;
  user.addEventListener('change', async () => {
    ui.user = user.value.trim() || 'user';
    user.value = ui.user;
    localStorage.setItem('loom.user', ui.user);
    clearSession();
    await loadSessions().catch(report);
  });
  $('app-description').addEventListener('click', (e) => {
    const on = e.currentTarget.classList.toggle('expanded');
    e.currentTarget.setAttribute('aria-expanded', String(on));
  });
  $('new-session').addEventListener('click', () => newSession().catch(report));
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const box = $('message');
    const text = box.value.trim();
    if (!text || ui.running) return;
    // The text stays in the box until the server has taken the message.
    send({ role: 'user', parts: [{ text }] }, box.value);
  });
  $('message').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => {
    if (!ui.running) return;
    // Stop the invocation on the server too, not only this stream.
    ui.client.cancelRuns(ui.app, ui.user, ui.sid).catch((err) => console.error(err));
    ui.running.abort();
  });
  for (const tab of document.querySelectorAll('.tab')) {
    tab.addEventListener('click', () => {
      for (const t of document.querySelectorAll('.tab')) {
        const on = t === tab;
        t.classList.toggle('active', on);
        t.setAttribute('aria-selected', String(on));
        $(`panel-${t.dataset.tab}`).hidden = !on;
      }
      if (tab.dataset.tab === 'trace') loadTrace().catch(report);
      if (tab.dataset.tab === 'graph') graph.show();
    });
  }
  const bookkeeping = $('show-bookkeeping');
  const showBookkeeping = () => {
    $('timeline').classList.toggle('show-bookkeeping', bookkeeping.checked);
    renumberTimeline();
  };
  bookkeeping.addEventListener('change', showBookkeeping);
  showBookkeeping();
  // toggle does not bubble: listen in the capture phase.
  $('timeline').addEventListener('toggle', showEventSpan, true);
}

async function main() {
  wire();
  try {
    const res = await fetch('assets/config/runtime-config.json');
    if (res.ok) {
      const cfg = await res.json();
      if (cfg && typeof cfg.backendUrl === 'string') ui.client = new Client(cfg.backendUrl);
    }
  } catch { /* same origin */ }
  try {
    const [version] = await Promise.all([ui.client.version().catch(() => null), loadApps()]);
    if (ui.apps.some((a) => a.source)) {
      // Apps from config files reload as they are edited: keep their
      // status current.
      setInterval(() => { if (!document.hidden) refreshApps().catch(() => {}); }, 3000);
    }
    if (version && version.version) $('version').textContent = /^\d/.test(version.version) ? `v${version.version}` : version.version;
    await loadSessions();
    const sid = hashParam('session');
    if (sid && ui.sessions.some((s) => s.id === sid)) await selectSession(sid);
    else clearSession();
    setStatus('Ready', 'ok');
  } catch (err) {
    report(err);
  }
  document.body.dataset.ready = 'true';
}

main();
