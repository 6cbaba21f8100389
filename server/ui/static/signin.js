// The card with which the user completes an OAuth2 sign-in a tool asked for
// (an adk_request_credential call whose auth config holds an authorization
// URL): a Sign in button opens the authorization URL in a popup, whose
// redirect lands on the dev server's callback page; that page posts the
// redirect URL back here, and the answer goes to /run_sse as ADK's web UI
// sends it: the request's auth config with exchangedAuthCredential.oauth2
// holding authResponseUri (the redirect URL) and redirectUri. The URL can
// also be pasted by hand, for a redirect URI the dev server does not serve.

import { el } from './render.js';

export const CREDENTIAL = 'adk_request_credential';
const CONFIRMATION = 'adk_request_confirmation';

/** The dev server's OAuth2 callback route, the redirect URI the UI offers. */
export function callbackURL() {
  return new URL('oauth2/callback', document.baseURI).href;
}

/** oauth2Of returns the exchanged credential's oauth2 object of an auth
 * config (camelCase or snake_case keys), or null. */
function oauth2Of(authConfig) {
  if (!authConfig || typeof authConfig !== 'object') return null;
  const ex = authConfig.exchangedAuthCredential || authConfig.exchanged_auth_credential;
  const o = ex && ex.oauth2;
  return o && typeof o === 'object' ? o : null;
}

function pick(o, camel, snake) {
  const v = o[camel] ?? o[snake];
  return typeof v === 'string' ? v : '';
}

/** signIn describes the OAuth2 sign-in a credential request fc asks for, or
 * returns null when it asks for something else (an API key, say):
 * {authConfig, url: the authorization URL to open, redirectUri, state}. The
 * tool's redirect URI is kept when it names one; otherwise the UI's
 * callback route is the redirect URI, set in the authorization URL. */
export function signIn(fc) {
  const authConfig = (fc.args || {}).authConfig || (fc.args || {}).auth_config;
  const o = oauth2Of(authConfig);
  const authUri = o && pick(o, 'authUri', 'auth_uri');
  if (!authUri) return null;
  let url;
  try {
    url = new URL(authUri);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  let redirectUri = pick(o, 'redirectUri', 'redirect_uri');
  if (!redirectUri) {
    redirectUri = callbackURL();
    url.searchParams.set('redirect_uri', redirectUri);
  }
  return { authConfig, url: url.href, redirectUri, state: pick(o, 'state', 'state') || url.searchParams.get('state') || '' };
}

/** childRequest returns the call an agent used as a tool is waiting on,
 * carried by its confirmation request fc (the agent tool's pause:
 * toolConfirmation.payload.agentToolPause.waiting[0]); null otherwise. */
function childRequest(fc) {
  if (!fc || fc.name !== CONFIRMATION) return null;
  const payload = ((fc.args || {}).toolConfirmation || {}).payload;
  const pause = payload && typeof payload === 'object' ? payload.agentToolPause : null;
  const w = pause && Array.isArray(pause.waiting) ? pause.waiting[0] : null;
  return w && typeof w === 'object' ? { id: w.id, name: w.name, args: w.args || {} } : null;
}

/** How many agent tools deep a relayed sign-in is looked for, as the
 * runtime follows them. */
const MAX_RELAY = 16;

/** nestedCredential returns the credential request that a confirmation
 * request fc relays from an agent used as a tool, however many agent tools
 * deep, when it is an OAuth2 sign-in; null otherwise. */
export function nestedCredential(fc) {
  let c = childRequest(fc);
  for (let i = 1; c && c.name === CONFIRMATION && i < MAX_RELAY; i++) c = childRequest(c);
  return c && c.name === CREDENTIAL && signIn(c) ? c : null;
}

/** signInOf returns the sign-in a request fc asks for: its own, or that of
 * the agent tool's child it carries; null when it asks for no sign-in. */
export function signInOf(fc) {
  if (fc && fc.name === CREDENTIAL) return signIn(fc);
  const child = nestedCredential(fc);
  return child ? signIn(child) : null;
}

/** responseFor is the response answering request fc with the redirect URL
 * the user came back to: the credential answer itself, or, for an agent
 * tool's paused child, the approval of the agent tool's request with the
 * child's own answer as payload, level by level. */
function responseFor(fc, redirectURL) {
  if (fc.name === CREDENTIAL) return answerFor(fc, redirectURL).response;
  return { confirmed: true, payload: responseFor(childRequest(fc), redirectURL) };
}

/** answerContent builds the message answering request fc with the redirect
 * URL the user came back to. */
export function answerContent(fc, redirectURL) {
  return { role: 'user', parts: [{ functionResponse: { id: fc.id, name: fc.name, response: responseFor(fc, redirectURL) } }] };
}

/** answerFor builds the function response answering fc with the redirect
 * URL the user came back to. */
export function answerFor(fc, redirectURL) {
  const s = signIn(fc);
  const response = structuredClone(s.authConfig);
  const key = response.exchangedAuthCredential ? 'exchangedAuthCredential' : 'exchanged_auth_credential';
  response[key] = { ...(response[key] || {}), oauth2: { ...oauth2Of(response), authResponseUri: redirectURL, redirectUri: s.redirectUri } };
  return { id: fc.id, name: CREDENTIAL, response };
}

/** checkRedirect returns why text is not a redirect URL holding an
 * authorization response, or '' when it is one. */
export function checkRedirect(text) {
  let u;
  try {
    u = new URL(text.trim());
  } catch {
    return 'That is not a URL.';
  }
  const q = new URLSearchParams(u.search || u.hash.slice(1));
  if (!q.get('code') && !q.get('error')) return 'That URL holds no authorization code.';
  return '';
}

/** stateOf returns the state parameter of a redirect URL. */
export function stateOf(redirectURL) {
  try {
    const u = new URL(redirectURL);
    return u.searchParams.get('state') || new URLSearchParams(u.hash.slice(1)).get('state') || '';
  } catch {
    return '';
  }
}

/** signInCard renders one sign-in request; handlers.responded(id) says
 * whether it was answered, handlers.credential(fc, url) sends the answer. */
export function signInCard(author, fc, handlers) {
  const s = signInOf(fc);
  const args = (nestedCredential(fc) || fc).args || {};
  const original = args.originalFunctionCall || {};
  const key = (s.authConfig || {}).credentialKey || (s.authConfig || {}).credential_key || '';
  const head = el('div', { class: 'confirm-head' }, el('span', { class: 'confirm-icon', text: '🔑' }),
    el('span', { class: 'badge', text: author }), el('strong', { text: 'asks you to sign in' }));
  const card = el('div', { class: 'confirm sign-in', dataset: { callId: fc.id || '', state: s.state } }, head,
    el('p', { text: `${original.name || 'A tool'} needs your authorization${key ? ` (${key})` : ''} at ${new URL(s.url).host}.` }));
  if (handlers.responded && handlers.responded(fc.id)) {
    card.append(el('span', { class: 'note ok', text: 'Signed in' }));
    return card;
  }
  const status = el('div', { class: 'sign-in-status small' });
  const button = el('button', { class: 'btn primary small sign-in-button', type: 'button', text: 'Sign in' });
  button.addEventListener('click', () => {
    const popup = window.open(s.url, 'loom-oauth', 'popup,width=600,height=720');
    status.textContent = popup
      ? 'Finish signing in in the window that opened.'
      : 'The browser blocked the sign-in window: allow pop-ups, or open the authorization URL yourself and paste the URL you are sent back to below.';
  });
  const box = el('input', { type: 'url', class: 'redirect-url', placeholder: 'Or paste the URL the sign-in sent you back to' });
  const send = el('button', { class: 'btn small', type: 'button', text: 'Send' });
  const submit = () => {
    const why = checkRedirect(box.value);
    if (why) {
      status.textContent = why;
      return;
    }
    send.disabled = true;
    box.disabled = true;
    button.disabled = true;
    handlers.credential(fc, box.value.trim());
  };
  send.addEventListener('click', submit);
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      submit();
    }
  });
  card.append(el('div', { class: 'confirm-actions' }, button), el('div', { class: 'confirm-actions' }, box, send), status);
  return card;
}
