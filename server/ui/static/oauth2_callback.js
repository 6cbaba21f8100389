// The OAuth2 redirect page of the dev UI: the authorization server sends
// the user here; the page hands the whole redirect URL to the dev UI that
// opened it (same origin only) and closes, or, opened any other way, shows
// the URL to paste into the sign-in card.
const url = window.location.href;
let posted = false;
try {
  if (window.opener && window.opener !== window) {
    window.opener.postMessage({ authResponseUrl: url }, window.location.origin);
    posted = true;
  }
} catch {
  posted = false;
}
if (posted) {
  document.getElementById('status').textContent = 'Signed in: you can close this window.';
  window.close();
} else {
  document.getElementById('status').textContent = 'The sign-in came back here.';
  document.getElementById('manual').hidden = false;
  const box = document.getElementById('url');
  box.hidden = false;
  box.value = url;
}
