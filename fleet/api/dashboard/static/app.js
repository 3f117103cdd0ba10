// The driftwave dashboard: reads and acts through the fleet's /v1 API with the user's token.
// This file: the API client, sign-in, the router and the refresh loop (views: overview.js,
// rollout.js, cluster.js, audit.js; formatting and state colours: format.js).
"use strict";

const TOKEN_KEY = "driftwave.token";
const REFRESH_MS = 2000;
let timer = null;
// The signed-in token, from GET /v1/whoami: name, role, rings, people (names by role).
let ME = { name: "", role: "viewer", rings: null, people: {} };

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

// A /v1 call with the signed-in token (none when the API runs without authentication);
// `withToken` overrides it (sign-in checks a token before keeping it).
async function api(method, path, body, withToken) {
  const bearer = withToken === undefined ? token() : withToken;
  const headers = bearer ? { "Authorization": "Bearer " + bearer } : {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const message = data && data.error ? data.error.message : response.statusText;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return data;
}

// The scheduler's heartbeat from /healthz: a banner while no scheduler ticks.
async function heartbeat() {
  const banner = document.getElementById("heartbeat");
  let health = null;
  try { health = await (await fetch("/healthz")).json(); } catch (e) { health = null; }
  const scheduler = health && health.scheduler;
  const stopped = !health || health.status !== "ok" || (scheduler && scheduler.status !== "ticking");
  banner.hidden = !stopped;
  banner.className = health && health.status === "ok" ? "warning" : "error";
  banner.textContent = !health ? "the API's health is unknown"
    : scheduler ? scheduler.message : `database: ${health.database}`;
}

function toast(message, isError) {
  const box = document.getElementById("toast");
  box.textContent = message;
  box.className = isError ? "error" : "";
  box.hidden = false;
  clearTimeout(box._hide);
  box._hide = setTimeout(() => { box.hidden = true; }, 8000);
}

function show(html) { document.getElementById("view").innerHTML = html; }

// The sign-in: with the API's OIDC issuer (signin.js) when it has one, or a pasted token (for
// automation tokens). A pasted token is kept only after the API accepted it (GET /v1/whoami);
// a refused one stays out of session storage and the form says why.
async function signin(problem) {
  document.getElementById("signout").hidden = true;
  document.getElementById("who").textContent = "";
  document.getElementById("auth").hidden = true;
  const oidc = (await settings()).oidc;
  const sso = oidc ? `<p><button class="primary" id="oidc-signin" type="button">Sign in with
    ${esc(new URL(oidc.issuer).host)}</button></p><p>or with an API token:</p>` : "";
  show(`<section><h1>Sign in</h1>${sso}
    <p class="error" id="oidc-error">${esc(problem || "")}</p>
    <form class="signin" id="signin">
      <label for="token">API token</label>
      <input id="token" type="password" autocomplete="off" required>
      <button class="primary" type="submit">Sign in</button>
      <p class="error" id="signin-error"></p>
    </form></section>`);
  if (oidc) {
    document.getElementById("oidc-signin").addEventListener("click", async () => {
      try { await oidcSignIn(); } catch (error) {
        document.getElementById("oidc-error").textContent = `The sign-in cannot start: ${error.message}`;
      }
    });
  }
  document.getElementById("signin").addEventListener("submit", async (event) => {
    event.preventDefault();
    const candidate = document.getElementById("token").value.trim();
    const said = document.getElementById("signin-error");
    said.textContent = "";
    try {
      await api("GET", "/v1/whoami", undefined, candidate);
    } catch (error) {
      said.textContent = refusal(error);
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, candidate);
    route();
  });
}

// Why a sign-in failed, as the person at the form needs it.
function refusal(error) {
  if (error.status === 401) {
    return "That token is not known to the API (HTTP 401): nothing was signed in. "
      + "Check the token, or ask an admin of this API for one.";
  }
  if (error.status) return `The API refused the sign-in (HTTP ${error.status}): ${error.message}`;
  return `The API cannot be reached: ${error.message}`;
}

// Who the page acts as: a signed-in token, or, when the API checks no token (served on a
// loopback address only), every visitor as admin, said in a banner and never asked for a token.
function identify(me) {
  const open = me.authenticated === false;
  const banner = document.getElementById("auth");
  banner.hidden = !open;
  banner.textContent = open
    ? "This API runs without authentication, on a loopback address only: anyone who can reach it "
      + "acts as admin. Start it with --auth-config (OIDC and tokens) or --tokens-file to require "
      + "sign-in."
    : "";
  document.getElementById("signout").hidden = open;
  document.getElementById("who").textContent = open ? "unauthenticated (admin)" : `${ME.name} (${ME.role})`;
}

// Copy buttons (trace ids): one listener for the whole page.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  try {
    await navigator.clipboard.writeText(button.dataset.copy);
    toast(`copied ${button.dataset.copy}`, false);
  } catch (e) {
    window.prompt("Copy the trace id:", button.dataset.copy);
  }
});

// The page's settings, read once: where trace ids link to (the API's DRIFTWAVE_TRACE_URL, with
// {traceId}) and the OIDC issuer people sign in with (null: none).
let SETTINGS;
async function settings() {
  if (SETTINGS === undefined) {
    try { SETTINGS = await (await fetch("/ui/settings.json")).json(); } catch (e) { SETTINGS = {}; }
  }
  return SETTINGS;
}
async function traceUrl() { return (await settings()).traceUrl || null; }

async function render() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const parts = hash.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "rollouts" && parts[1]) return rolloutView(parts[1]);
  if (parts[0] === "audit" && parts[1]) return rolloutAudit(parts[1]);
  if (parts[0] === "fleets" && parts[1] && parts[2] === "audit") return fleetAudit(parts[1]);
  if (parts[0] === "clusters" && parts[2]) return clusterView(parts[1], parts[2]);
  return overview();
}

async function route() {
  clearTimeout(timer);
  try {
    let me;
    try { me = await api("GET", "/v1/whoami"); } catch (error) { error.identity = true; throw error; }
    if (me.authenticated === false) sessionStorage.removeItem(TOKEN_KEY);
    ME = { name: me.name || "api", role: me.role || "viewer", rings: me.rings === undefined ? null : me.rings,
      people: me.people || {}, traceUrl: await traceUrl() };
    identify(me);
    await render();
    await heartbeat();
    document.body.dataset.loaded = String(Date.now());
  } catch (error) {
    if (error.status === 401 || (error.status === 403 && error.identity)) {
      const known = token() !== "";
      sessionStorage.removeItem(TOKEN_KEY);
      if (error.status === 403) return signin(`Signed in, but refused (HTTP 403): ${error.message}`);
      return signin(known ? `The API no longer accepts this sign-in (${error.message}): sign in again.` : "");
    }
    toast(error.message, true);
  }
  timer = setTimeout(route, REFRESH_MS);
}

document.getElementById("signout").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(OIDC_KEY);
  route();
});
window.addEventListener("hashchange", route);
oidcReturn().then((problem) => (problem ? signin(problem) : route()));
