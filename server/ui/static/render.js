// DOM rendering of ADK events for the chat and the timeline. Every string
// from the server is set as text content: no server data is parsed as markup.

export const CONFIRMATION = 'adk_request_confirmation';
export const CREDENTIAL = 'adk_request_credential';
const INPUT_REQUEST = 'adk_request_input';

/** Creates an element: el('div', {class: 'x', onclick: f}, child, 'text'). */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k === 'style') node.style.cssText = v;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

/** A stable colour hue for an author name. */
export function hue(name) {
  if (name === 'user') return 220;
  let h = 0;
  for (const ch of name || '') h = (h * 31 + ch.codePointAt(0)) >>> 0;
  return (h % 12) * 30;
}

export function authorBadge(name) {
  return el('span', { class: 'badge', style: `--hue:${hue(name)}`, text: name || '?' });
}

export const parts = (ev) => (ev && ev.content && Array.isArray(ev.content.parts) ? ev.content.parts.filter(Boolean) : []);
export const functionCalls = (ev) => parts(ev).filter((p) => p.functionCall).map((p) => p.functionCall);
export const functionResponses = (ev) => parts(ev).filter((p) => p.functionResponse).map((p) => p.functionResponse);

/** The visible (non-thought) text of an event. */
export function textOf(ev) {
  return parts(ev).filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text).join('');
}

function thoughtOf(ev) {
  return parts(ev).filter((p) => p.thought && typeof p.text === 'string').map((p) => p.text).join('');
}

const isEmpty = (o) => !o || (typeof o === 'object' && Object.keys(o).length === 0);

export function formatTime(ts) {
  if (typeof ts !== 'number') return '';
  const d = new Date(ts * 1000);
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function relativeTime(ts) {
  if (typeof ts !== 'number') return '';
  const s = Date.now() / 1000 - ts;
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ts * 1000).toLocaleDateString();
}

export function json(value) {
  return el('pre', { class: 'json', text: JSON.stringify(value, null, 2) });
}

function clip(s, n) {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

// callArgs renders function-call arguments as (key: value, ...).
function callArgs(args) {
  if (isEmpty(args)) return '()';
  if (typeof args !== 'object' || Array.isArray(args)) return `(${clip(JSON.stringify(args), 90)})`;
  return `(${clip(Object.entries(args).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', '), 90)})`;
}

// compactJSON renders a value on one line, clipped.
function compactJSON(v) {
  return clip(JSON.stringify(v) ?? 'null', 110);
}

// responseOf is a function response's result as the server meant it: the
// wire omits an empty response object, which is {} (as the terminal shows),
// not null.
export const responseOf = (fr) => fr.response ?? {};

// approvalCall describes the tool call a confirmation request is about.
function approvalCall(fc) {
  const original = (fc.args || {}).originalFunctionCall || {};
  return `${original.name || 'tool'}${callArgs(original.args)}`;
}

/** The error code of the event that closes an aborted (stopped) turn. */
const ABORTED = 'INVOCATION_ABORTED';

/**
 * Whether an event is runtime bookkeeping: a workflow checkpoint
 * (actions.agentState) or an end-of-agent marker, with no content and no
 * state or artifact change. The timeline hides them unless asked.
 */
export function isBookkeeping(ev) {
  const a = ev.actions || {};
  if (ev.error || ev.errorCode || ev.errorMessage || parts(ev).length) return false;
  if (!isEmpty(a.stateDelta) || !isEmpty(a.artifactDelta) || a.transferToAgent || a.escalate) return false;
  return !isEmpty(a.agentState) || !!a.endOfAgent;
}

/** A one-line summary of an event for the timeline: {kind, label}. */
export function summarize(ev) {
  const a = ev.actions || {};
  if (ev.error) return { kind: 'error', label: ev.error };
  if (ev.errorCode === ABORTED) return { kind: 'stopped', label: 'stopped: the turn was aborted' };
  if (ev.errorCode || ev.errorMessage) return { kind: 'error', label: [ev.errorCode, ev.errorMessage].filter(Boolean).join(': ') };
  const calls = functionCalls(ev);
  if (calls.length && calls.every((c) => c.name === CONFIRMATION)) {
    return { kind: 'approval', label: calls.map((c) => `asks for approval: ${approvalCall(c)}`).join('; ') };
  }
  if (calls.length) return { kind: 'call', label: calls.map((c) => c.name).join(', ') };
  const responses = functionResponses(ev);
  if (responses.length && responses.every((r) => r.name === CONFIRMATION)) {
    return { kind: 'approval', label: responses.map((r) => (responseOf(r).confirmed === true ? 'approved' : 'rejected')).join(', ') + ` (${CONFIRMATION})` };
  }
  if (responses.length) return { kind: 'response', label: responses.map((r) => r.name).join(', ') };
  const text = textOf(ev);
  if (text) return { kind: 'text', label: text.length > 80 ? `${text.slice(0, 77)}…` : text };
  if (thoughtOf(ev)) return { kind: 'thought', label: 'thinking' };
  if (a.transferToAgent) return { kind: 'transfer', label: `→ ${a.transferToAgent}` };
  if (a.escalate) return { kind: 'escalate', label: 'escalate' };
  if (!isEmpty(a.stateDelta)) return { kind: 'state', label: Object.keys(a.stateDelta).join(', ') };
  if (!isEmpty(a.artifactDelta)) return { kind: 'artifact', label: Object.keys(a.artifactDelta).join(', ') };
  if (a.endOfAgent) return { kind: 'end', label: `end of agent ${ev.author || ''}`.trim() };
  if (!isEmpty(a.agentState)) {
    const kv = Object.entries(a.agentState).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
    return { kind: 'checkpoint', label: clip(`checkpoint of ${ev.author || 'agent'}: ${kv}`, 110) };
  }
  return { kind: 'event', label: '' };
}

function section(title, ...body) {
  return el('div', { class: 'ev-section' }, el('h4', { text: title }), ...body);
}

/** The timeline card of one complete event. */
export function timelineItem(ev, index) {
  const { kind, label } = summarize(ev);
  const a = ev.actions || {};
  const body = el('div', { class: 'ev-body' });
  const text = textOf(ev);
  if (text) body.append(section('Text', el('p', { class: 'ev-text', text })));
  const thought = thoughtOf(ev);
  if (thought) body.append(section('Thought', el('p', { class: 'ev-text muted', text: thought })));
  for (const fc of functionCalls(ev)) {
    body.append(section(`Function call · ${fc.name}`, el('div', { class: 'mono small muted', text: fc.id ? `id ${fc.id}` : '' }), json(fc.args || {})));
  }
  for (const fr of functionResponses(ev)) {
    body.append(section(`Function response · ${fr.name}`, el('div', { class: 'mono small muted', text: fr.id ? `id ${fr.id}` : '' }), json(responseOf(fr))));
  }
  if (!isEmpty(a.stateDelta)) body.append(section('State delta', json(a.stateDelta)));
  if (!isEmpty(a.artifactDelta)) body.append(section('Artifact delta', json(a.artifactDelta)));
  if (!isEmpty(a.agentState)) body.append(section('Agent state (checkpoint)', json(a.agentState)));
  const flags = [];
  if (a.transferToAgent) flags.push(`transfer to ${a.transferToAgent}`);
  if (a.escalate) flags.push('escalate');
  if (a.skipSummarization) flags.push('skip summarization');
  if (a.endOfAgent) flags.push('end of agent');
  if (ev.turnComplete) flags.push('turn complete');
  if (ev.interrupted) flags.push('interrupted');
  if (Array.isArray(ev.longRunningToolIds) && ev.longRunningToolIds.length) flags.push(`long-running: ${ev.longRunningToolIds.join(', ')}`);
  if (flags.length) body.append(section('Actions', el('ul', { class: 'flags' }, flags.map((f) => el('li', { text: f })))));
  if (!isEmpty(a.requestedToolConfirmations)) body.append(section('Requested confirmations', json(a.requestedToolConfirmations)));
  if (ev.errorCode || ev.errorMessage || ev.error) {
    body.append(section('Error', el('p', { class: 'error-text', text: ev.error || [ev.errorCode, ev.errorMessage].filter(Boolean).join(': ') })));
  }
  const meta = [ev.id && `id ${ev.id}`, ev.invocationId && `invocation ${ev.invocationId}`, ev.branch && `branch ${ev.branch}`,
    ev.usageMetadata && ev.usageMetadata.totalTokenCount && `${ev.usageMetadata.totalTokenCount} tokens`].filter(Boolean);
  if (meta.length) body.append(el('div', { class: 'ev-meta mono small muted', text: meta.join(' · ') }));
  body.append(el('details', { class: 'raw' }, el('summary', { text: 'Raw JSON' }), json(ev)));

  return el('li', { class: `ev kind-${kind}${isBookkeeping(ev) ? ' bookkeeping' : ''}`, dataset: { id: ev.id || '' } },
    el('details', {},
      el('summary', {},
        el('span', { class: 'idx', text: `${index + 1}` }),
        authorBadge(ev.author || (ev.error ? 'error' : '?')),
        el('span', { class: `kind kind-${kind}`, text: kind }),
        el('span', { class: 'label', text: label, title: label }),
        el('time', { text: formatTime(ev.timestamp) })),
      body));
}

/**
 * Appends the chat rendering of one complete event to box. handlers:
 * confirm(call, confirmed), answered(callId) → boolean.
 */
export function chatItems(ev, handlers) {
  const out = [];
  const author = ev.author || '';
  const a = ev.actions || {};
  if (ev.error) {
    let retry = null;
    if (ev.retry && handlers.retry) {
      retry = el('button', { class: 'btn small retry', type: 'button', text: 'Retry', onclick: () => handlers.retry(ev.retry) });
    } else if (ev.retryOf && handlers.retryTurn) {
      retry = el('button', { class: 'btn small retry', type: 'button', text: 'Retry', title: 'Run this turn again', onclick: () => handlers.retryTurn(ev.retryOf, ev.retryContent) });
    }
    const what = ev.retryOf ? 'The turn failed: ' : 'Error: ';
    out.push(el('div', { class: `msg error${ev.retryOf ? ' turn-error' : ''}` }, el('strong', { text: what }), ev.error, retry ? ' ' : null, retry));
    return out;
  }
  if (ev.stopped && ev.note) {
    out.push(el('div', { class: 'note stopped', text: ev.note }));
    return out;
  }
  const longRunning = new Set(ev.longRunningToolIds || []);
  if (author === 'user') {
    const text = textOf(ev);
    if (text) out.push(el('div', { class: 'msg user', dataset: { id: ev.id || '' } }, el('div', { class: 'bubble', text })));
    for (const fr of functionResponses(ev)) {
      if (fr.name === CONFIRMATION) {
        const ok = fr.response && fr.response.confirmed === true;
        out.push(el('div', { class: `note ${ok ? 'ok' : 'warn'}`, text: ok ? '✓ You approved the tool call.' : '✗ You rejected the tool call.' }));
      } else if (fr.name === CREDENTIAL) {
        // Never shown: the answer holds the authorization response.
        out.push(el('div', { class: 'note ok credential-sent', text: '🔑 You sent the credentials the tool asked for.' }));
      } else {
        out.push(el('div', { class: 'tool response' }, el('span', { class: 'tool-icon', text: '←' }),
          el('span', { class: 'mono', text: `${fr.name} ← ${compactJSON(responseOf(fr))}` })));
      }
    }
    return out;
  }
  if (ev.content && ev.content.role === 'user' && textOf(ev)) {
    // The input a workflow hands to a node (ADK records it under the
    // workflow's name): not something the agent said. The user's own
    // message is not echoed back; other input shows as a note.
    const text = textOf(ev);
    if (!(handlers.userSaid && handlers.userSaid(text))) {
      const node = ((ev.nodeInfo && ev.nodeInfo.path) || '').split('/').pop().replace(/@\d+$/, '');
      out.push(el('div', { class: 'note node-input' }, authorBadge(author), ` passed to ${node || 'a node'}: ${clip(text, 200)}`));
    }
    return out;
  }
  const thought = thoughtOf(ev);
  if (thought) out.push(el('details', { class: 'thought' }, el('summary', { text: `${author} is thinking…` }), el('p', { text: thought })));
  const text = textOf(ev);
  if (text) {
    out.push(el('div', { class: `msg agent${ev.stopped ? ' stopped' : ''}`, dataset: { id: ev.id || '' } },
      el('div', { class: 'who' }, authorBadge(author), ev.stopped ? el('span', { class: 'pill stopped-pill', text: 'stopped' }) : null),
      el('div', { class: 'bubble', text })));
  }
  for (const fc of functionCalls(ev)) {
    if ((fc.name === CREDENTIAL || fc.name === CONFIRMATION) && longRunning.has(fc.id) && handlers.signIn && handlers.signIn(fc)) {
      out.push(handlers.signInCard(author, fc, handlers));
      continue;
    }
    if (fc.name === CONFIRMATION && longRunning.has(fc.id)) {
      out.push(confirmationCard(author, fc, handlers));
      continue;
    }
    if (fc.name === INPUT_REQUEST && longRunning.has(fc.id) && handlers.inputCard) {
      out.push(handlers.inputCard(author, fc, handlers));
      continue;
    }
    out.push(el('div', { class: 'tool call', dataset: { callId: fc.id || '' } },
      el('span', { class: 'tool-icon', text: '→' }), authorBadge(author),
      el('span', { class: 'mono', text: `${fc.name}${callArgs(fc.args)}` }),
      longRunning.has(fc.id) ? el('span', { class: 'pill', text: 'long-running' }) : null));
    if (longRunning.has(fc.id) && handlers.responded && !handlers.responded(fc.id)) {
      // The invocation is paused until a client sends this call's result.
      const what = fc.name === CREDENTIAL
        ? `credentials for ${((fc.args || {}).originalFunctionCall || {}).name || 'a tool'}`
        : `the result of ${fc.name} (call ${fc.id})`;
      out.push(el('div', { class: 'note warn paused', dataset: { callId: fc.id || '' }, text: `Paused: waiting for ${what}.` }));
    }
  }
  for (const fr of functionResponses(ev)) {
    if (fr.name === 'transfer_to_agent') continue;
    out.push(el('div', { class: 'tool response' }, el('span', { class: 'tool-icon', text: '←' }),
      el('span', { class: 'mono', text: `${fr.name} ${compactJSON(responseOf(fr))}` })));
  }
  if (!parts(ev).length && !isEmpty(a.stateDelta)) {
    // A reply that only changed state: say what changed.
    const kv = Object.entries(a.stateDelta).map(([k, v]) => `${k}=${typeof v === 'string' ? v : compactJSON(v)}`).join(', ');
    out.push(el('div', { class: 'note state-note' }, authorBadge(author), ` state updated: ${clip(kv, 200)}`));
  }
  if (a.transferToAgent) out.push(el('div', { class: 'note', text: `${author} transferred the conversation to ${a.transferToAgent}` }));
  if (a.escalate) out.push(el('div', { class: 'note', text: `${author} escalated` }));
  if (ev.errorCode === ABORTED) {
    // The runtime closed a stopped turn: not a failure of the agent.
    out.push(el('div', { class: 'note stopped', text: 'Stopped.' }));
  } else if (ev.errorCode || ev.errorMessage) {
    out.push(el('div', { class: 'msg error' }, el('strong', { text: `${author}: ` }), [ev.errorCode, ev.errorMessage].filter(Boolean).join(': ')));
  }
  return out;
}

function confirmationCard(author, fc, handlers) {
  const args = fc.args || {};
  const original = args.originalFunctionCall || {};
  const hint = (args.toolConfirmation && args.toolConfirmation.hint) || '';
  const answered = handlers.answered(fc.id);
  const approve = el('button', { class: 'btn primary small', type: 'button', text: 'Approve' });
  const reject = el('button', { class: 'btn danger small', type: 'button', text: 'Reject' });
  const buttons = el('div', { class: 'confirm-actions' }, approve, reject);
  const card = el('div', { class: 'confirm', dataset: { callId: fc.id || '' } },
    el('div', { class: 'confirm-head' }, el('span', { class: 'confirm-icon', text: '!' }), authorBadge(author), el('strong', { text: 'asks for confirmation' })),
    hint ? el('p', { text: hint }) : null,
    el('div', { class: 'mono small', text: `${original.name || 'tool'}${callArgs(original.args)}` }),
    buttons);
  if (answered !== null) {
    buttons.replaceChildren(el('span', { class: answered ? 'note ok' : 'note warn', text: answered ? 'Approved' : 'Rejected' }));
  } else {
    const answer = (ok) => () => {
      approve.disabled = true;
      reject.disabled = true;
      handlers.confirm(fc, ok);
    };
    approve.addEventListener('click', answer(true));
    reject.addEventListener('click', answer(false));
  }
  return card;
}

// ---------- traces ----------

/** A span duration (nanoseconds) for people: µs, ms or s. */
export function formatDuration(ns) {
  if (typeof ns !== 'number' || !(ns >= 0)) return '';
  if (ns < 1e6) return `${Math.round(ns / 1e3)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(ns < 1e7 ? 2 : 1)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

// spanKind classifies a span by its name, for its colour.
function spanKind(name) {
  if (name === 'invocation') return 'invocation';
  if (name === 'call_llm') return 'llm';
  if (name.startsWith('execute_tool')) return 'tool';
  if (name.startsWith('invoke_agent')) return 'agent';
  if (name.startsWith('execute_node')) return 'node';
  return 'other';
}

// spanNote is what a row adds to a span's name: a workflow node's attempt
// (when it may be retried), the route it chose, its pause; a failure; an
// agent that continued a resumed invocation.
export function spanNote(s) {
  const a = s.attributes || {};
  const notes = [];
  if (a['loom.node.max_attempts'] > 1) notes.push(`attempt ${a['loom.node.attempt']}/${a['loom.node.max_attempts']}`);
  if (a['loom.node.route']) notes.push(`→ ${a['loom.node.route']}`);
  if (a['loom.node.paused']) notes.push('paused');
  if (a['loom.resumed']) notes.push('resumed');
  if (a['error.type']) notes.push(`failed: ${a['error.type']}`);
  return notes.join(' · ');
}

/**
 * The waterfall of a session's spans: one block per trace (invocation),
 * spans indented under their parents, each with a bar placed on the trace's
 * time scale and its duration. onSelect(span, row) is called on a click.
 */
export function traceTree(spans, onSelect) {
  if (!Array.isArray(spans) || spans.length === 0) {
    return el('p', { class: 'empty', text: 'No spans recorded for this session yet. Send a message to record some.' });
  }
  const byId = new Map(spans.map((s) => [s.span_id, s]));
  const children = new Map();
  const roots = [];
  for (const s of spans) {
    if (s.parent_span_id && byId.has(s.parent_span_id)) {
      if (!children.has(s.parent_span_id)) children.set(s.parent_span_id, []);
      children.get(s.parent_span_id).push(s);
    } else {
      roots.push(s);
    }
  }
  const byStart = (a, b) => a.start_time - b.start_time;
  roots.sort(byStart);
  for (const list of children.values()) list.sort(byStart);

  return el('div', { class: 'traces' }, roots.map((root) => {
    const rows = [];
    const walk = (s, depth) => {
      rows.push({ s, depth });
      for (const c of children.get(s.span_id) || []) walk(c, depth + 1);
    };
    walk(root, 0);
    const t0 = Math.min(...rows.map((r) => r.s.start_time));
    const t1 = Math.max(...rows.map((r) => r.s.end_time));
    const total = Math.max(t1 - t0, 1);
    const head = el('div', { class: 'trace-head small muted' },
      el('span', { class: 'mono', text: (root.attributes && root.attributes['gcp.vertex.agent.invocation_id']) || root.trace_id }),
      el('span', { text: formatDuration(t1 - t0) }));
    return el('div', { class: 'trace' }, head, el('ol', { class: 'span-list' }, rows.map(({ s, depth }) => {
      const left = ((s.start_time - t0) / total) * 100;
      const width = Math.max(((s.end_time - s.start_time) / total) * 100, 0.5);
      const note = spanNote(s);
      const failed = s.attributes && s.attributes['error.type'] ? ' span-failed' : '';
      const label = note ? `${s.name} (${note})` : s.name;
      const row = el('li', {
        class: `span-row span-${spanKind(s.name)}${failed}`, tabindex: 0, title: label,
        dataset: { spanId: s.span_id, name: s.name },
      },
      el('span', { class: 'span-name', style: `padding-left:${depth * 14}px`, text: label, title: label }),
      el('span', { class: 'span-track' }, el('span', { class: 'span-bar', style: `left:${left}%;width:${Math.min(width, 100 - left)}%` })),
      el('span', { class: 'span-dur', text: formatDuration(s.end_time - s.start_time) }));
      row.addEventListener('click', () => onSelect(s, row));
      row.addEventListener('keydown', (e) => { if (e.key === 'Enter') onSelect(s, row); });
      return row;
    })));
  }));
}

/**
 * The attributes of a span as a table; JSON payloads (requests, responses,
 * tool arguments) are shown pretty-printed.
 */
export function spanAttributes(attrs) {
  const keys = Object.keys(attrs || {}).sort();
  if (keys.length === 0) return el('p', { class: 'empty', text: 'No span recorded for this event.' });
  return el('table', { class: 'kv span-attrs' }, el('tbody', {}, keys.map((k) => {
    const v = attrs[k];
    let cell;
    if (typeof v === 'string' && /^[[{]/.test(v)) {
      try { cell = json(JSON.parse(v)); } catch { cell = el('span', { class: 'value', text: v }); }
    } else {
      cell = el('span', { class: 'value', text: typeof v === 'string' ? v : JSON.stringify(v) });
    }
    return el('tr', { dataset: { key: k } }, el('th', {}, el('span', { class: 'mono', text: k })), el('td', {}, cell));
  })));
}

// ---------- usage ----------

/** A token count for people: 12,345. */
export function formatTokens(n) {
  return typeof n === 'number' && n >= 0 ? Math.round(n).toLocaleString('en-US') : '0';
}

/** A cost in the prices' currency, with the precision small sums need. */
export function formatCost(v) {
  if (typeof v !== 'number' || !(v >= 0)) return '';
  if (v === 0) return '$0';
  if (v < 0.0001) return '<$0.0001';
  return `$${v.toFixed(v < 1 ? 4 : 2)}`;
}

// costOf says what a usage cost: its cost, marked when some of its
// responses came from models without a price, or '' when none had one.
export function costOf(u) {
  if (!u || !u.responses || u.unpriced_responses >= u.responses) return '';
  return formatCost(u.cost) + (u.unpriced_responses > 0 ? ' + unpriced' : '');
}

/** One line for a usage: "3,300 tokens · $0.0046" (tokens only without prices). */
export function usageSummary(u) {
  if (!u) return '';
  const cost = costOf(u);
  return `${formatTokens(u.total_tokens)} tokens${cost ? ` · ${cost}` : ''}`;
}

/** The Usage tab: the session's totals by token type, then each turn's. */
export function usageView(usage) {
  const total = (usage && usage.total) || {};
  const turns = (usage && Array.isArray(usage.turns)) ? usage.turns : [];
  if (!total.responses) {
    return el('p', { class: 'empty', text: 'No token usage in this session yet. Model responses that report usage are counted here.' });
  }
  const row = (label, value, key) => el('tr', { dataset: { key } }, el('th', { text: label }), el('td', { class: 'mono', text: value }));
  const cost = costOf(total);
  const totals = el('table', { class: 'kv usage-total' }, el('tbody', {},
    row('Input tokens', formatTokens(total.prompt_tokens), 'prompt'),
    row('of which cached', formatTokens(total.cached_tokens), 'cached'),
    row('Output tokens', formatTokens(total.candidates_tokens), 'candidates'),
    total.thoughts_tokens ? row('Thinking tokens', formatTokens(total.thoughts_tokens), 'thoughts') : null,
    row('Total tokens', formatTokens(total.total_tokens), 'total'),
    row('Cost', cost || 'no price for these models', 'cost'),
    row('Model responses', String(total.responses), 'responses')));
  const head = el('tr', {}, ['Turn', 'Input', 'Output', 'Total', 'Cost'].map((h) => el('th', { text: h })));
  const body = turns.map((t, i) => el('tr', { class: 'usage-turn', dataset: { invocation: t.invocation_id || '' }, title: t.invocation_id || '' },
    el('td', { text: String(i + 1) }),
    el('td', { class: 'mono', text: formatTokens(t.prompt_tokens) }),
    el('td', { class: 'mono', text: formatTokens(t.candidates_tokens + (t.thoughts_tokens || 0)) }),
    el('td', { class: 'mono turn-total', text: formatTokens(t.total_tokens) }),
    el('td', { class: 'mono turn-cost', text: costOf(t) || '—' })));
  return el('div', { class: 'usage' },
    el('h4', { text: 'Session' }), totals,
    el('h4', { text: 'Turns' }), el('table', { class: 'usage-turns' }, el('thead', {}, head), el('tbody', {}, body)));
}
