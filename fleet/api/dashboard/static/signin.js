// The dashboard's OIDC sign-in: the authorization code flow with PKCE (RFC 7636). The page
// makes the verifier and the state, sends the browser to the issuer (GET /ui/oidc.json says
// where), and on its return to /ui/?code=...&state=... has the API redeem the code
// (POST /ui/oidc/token), keeping only the ID token, in this tab's session storage. The code is
// taken out of the address bar at once; no token is ever put in a URL.
"use strict";

const OIDC_KEY = "driftwave.oidc";

function b64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(size) { return b64url(crypto.getRandomValues(new Uint8Array(size))); }

// Go to the issuer's sign-in page; the verifier and state wait in session storage.
async function oidcSignIn() {
  const answer = await fetch("/ui/oidc.json");
  const settings = await answer.json();
  if (!answer.ok) throw new Error(settings.error ? settings.error.message : answer.statusText);
  const verifier = randomText(48);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const state = randomText(16);
  sessionStorage.setItem(OIDC_KEY, JSON.stringify({ state, verifier, back: location.hash }));
  const url = new URL(settings.authorizationEndpoint);
  const query = {
    client_id: settings.clientId, response_type: "code", scope: settings.scope,
    redirect_uri: location.origin + "/ui/", state,
    code_challenge: b64url(digest), code_challenge_method: "S256",
  };
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  location.assign(url.toString());
}

// On the way back from the issuer: null when this page load is no sign-in's return; else ""
// once the ID token is kept, or why the sign-in failed.
async function oidcReturn() {
  const params = new URLSearchParams(location.search);
  if (!params.has("code") && !params.has("error")) return null;
  const pending = JSON.parse(sessionStorage.getItem(OIDC_KEY) || "null");
  sessionStorage.removeItem(OIDC_KEY);
  history.replaceState(null, "", "/ui/" + ((pending && pending.back) || ""));
  if (params.has("error")) {
    return `The sign-in was refused: ${params.get("error_description") || params.get("error")}`;
  }
  if (!pending || pending.state !== params.get("state")) {
    return "This sign-in was not started here (its state does not match): sign in again.";
  }
  const answer = await fetch("/ui/oidc/token", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      code: params.get("code"), codeVerifier: pending.verifier, redirectUri: location.origin + "/ui/",
    }),
  });
  let data = null;
  try { data = await answer.json(); } catch (e) { data = null; }
  if (!answer.ok || !data || !data.idToken) {
    return `The sign-in failed (HTTP ${answer.status}): ${data && data.error ? data.error.message : answer.statusText}`;
  }
  sessionStorage.setItem(TOKEN_KEY, data.idToken);
  return "";
}
