// The OAuth2 redirect page of the dev UI: the authorization server sends
// the user here; the page hands the whole redirect URL to the dev UI that
// opened it ({authResponseUrl}, to the opener on this origin only, as
// ADK's web UI expects) and closes. When the opener is gone (an
// authorization server's Cross-Origin-Opener-Policy severs it) the URL goes
// to the dev UI's pages on this origin through a BroadcastChannel, and the
// page shows it to paste by hand should no page be waiting for it.
const url = window.location.href;
const message = { authResponseUrl: url };
let toOpener = false;
try {
  if (window.opener && window.opener !== window) {
    window.opener.postMessage(message, window.location.origin);
    toOpener = true;
  }
} catch {
  toOpener = false;
}
if (!toOpener && 'BroadcastChannel' in window) {
  const channel = new BroadcastChannel('loom-oauth2');
  channel.postMessage(message);
  channel.close();
}
if (toOpener) {
  document.getElementById('status').textContent = 'Signed in: you can close this window.';
} else {
  document.getElementById('status').textContent = 'The sign-in came back here.';
  document.getElementById('manual').hidden = false;
  const box = document.getElementById('url');
  box.hidden = false;
  box.value = url;
}
window.close();
