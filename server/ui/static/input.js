// The card with which the user answers a workflow node's request for input
// (an adk_request_input call): the node's message, a box for the answer and
// a Send button. An answer that is a JSON object is sent as it is; any other
// text as {"result": text}.

import { el } from './render.js';

export const INPUT = 'adk_request_input';

/** inputResponse turns the typed answer into the function response object. */
export function inputResponse(text) {
  const t = text.trim();
  if (t.startsWith('{')) {
    try {
      const v = JSON.parse(t);
      if (v && typeof v === 'object' && !Array.isArray(v)) return v;
    } catch { /* plain text */ }
  }
  return { result: t };
}

/** inputCard renders one request; handlers.responded and handlers.input
 * say whether it was answered and send the answer. */
export function inputCard(author, fc, handlers) {
  const args = fc.args || {};
  const head = el('div', { class: 'confirm-head' }, el('span', { class: 'confirm-icon', text: '?' }),
    el('span', { class: 'badge', text: author }), el('strong', { text: 'asks for input' }));
  const card = el('div', { class: 'confirm input-request', dataset: { callId: fc.id || '' } }, head,
    args.message ? el('p', { text: String(args.message) }) : null);
  if (handlers.responded && handlers.responded(fc.id)) {
    card.append(el('span', { class: 'note ok', text: 'Answered' }));
    return card;
  }
  const box = el('input', { type: 'text', class: 'input-answer', placeholder: 'Your answer (text or a JSON object)' });
  const send = el('button', { class: 'btn primary small', type: 'button', text: 'Send' });
  const submit = () => {
    if (!box.value.trim()) return;
    send.disabled = true;
    box.disabled = true;
    handlers.input(fc, inputResponse(box.value));
  };
  send.addEventListener('click', submit);
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      submit();
    }
  });
  card.append(el('div', { class: 'confirm-actions' }, box, send));
  return card;
}
