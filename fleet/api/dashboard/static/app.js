// The driftwave dashboard: reads and acts through the fleet's /v1 API with the user's token.
"use strict";

const TOKEN_KEY = "driftwave.token";
const REFRESH_MS = 2000;
let timer = null;

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + token() };
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

function esc(value) {
  return String(value === null || value === undefined ? "" : value)
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function badge(state) {
  const s = state || "pending";
  return `<span class="badge state-${esc(s)}" data-state="${esc(s)}">${esc(s)}</span>`;
}

function image(value) {
  if (!value) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.join(", ");
  return Object.keys(value).join(", ");
}

const FAILED = ["failed", "timed-out", "unreachable", "aborted", "halted", "rolled-back", "rollback-failed"];

// A step's note: its error (red when the step failed, else a warning: the step carries on),
// or what it waits for with the time left ("... (in 3h12m)").
function note(step) {
  if (step.error) {
    const failed = FAILED.includes(step.state);
    return `<span class="${failed ? "error" : "warning"}" data-note="${failed ? "error" : "warning"}">${failed ? "" : "warning: "}${esc(step.error)}</span>`;
  }
  if (step.waiting) return `<span class="waiting" data-note="waiting">${esc(step.waiting.message)}</span>`;
  return "";
}

// What the rollout waits for (with the time left), else its stored reason.
function reasonLine(s) {
  if (s.waiting) return `<span class="waiting" id="rollout-waiting">${esc(s.waiting.message)}</span>`;
  if (!s.reason) return "";
  return `<span class="${FAILED.includes(s.state) ? "error" : "muted"}">${esc(s.reason)}</span>`;
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

function when(stamp) { return stamp ? esc(stamp.replace("T", " ").replace(/\.\d+/, "")) : ""; }

function toast(message, isError) {
  const box = document.getElementById("toast");
  box.textContent = message;
  box.className = isError ? "error" : "";
  box.hidden = false;
  clearTimeout(box._hide);
  box._hide = setTimeout(() => { box.hidden = true; }, 8000);
}

function show(html) { document.getElementById("view").innerHTML = html; }

function signin(problem) {
  show(`<section><h1>Sign in</h1>
    <form class="signin" id="signin">
      <label for="token">API token</label>
      <input id="token" type="password" autocomplete="off" required>
      <button class="primary" type="submit">Sign in</button>
      <p class="error" id="signin-error">${esc(problem || "")}</p>
    </form></section>`);
  document.getElementById("signin").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    route();
  });
}

async function latestRollouts() {
  const listed = (await api("GET", "/v1/rollouts?limit=1000")).rollouts;
  const latest = {};
  for (const rollout of listed) latest[rollout.fleet] = rollout;
  return { listed, latest };
}

async function overview() {
  const fleets = (await api("GET", "/v1/fleets")).fleets;
  const { listed, latest } = await latestRollouts();
  let html = `<h1>Fleet overview</h1>`;
  for (const fleet of fleets) {
    const clusters = (await api("GET", `/v1/fleets/${encodeURIComponent(fleet)}/clusters`)).clusters;
    const steps = {};
    const current = latest[fleet];
    if (current) {
      const status = await api("GET", `/v1/rollouts/${current.id}`);
      for (const step of status.clusters) steps[step.cluster] = step;
    }
    const rings = [];
    for (const cluster of clusters) {
      if (!rings.includes(cluster.ring)) rings.push(cluster.ring);
    }
    html += `<section class="fleet" data-fleet="${esc(fleet)}"><h2>${esc(fleet)}</h2>`;
    if (current) {
      html += `<p>Latest rollout <a href="#/rollouts/${esc(current.id)}">${esc(current.id)}</a>
        (${esc(current.release)}) ${badge(current.state)}</p>`;
    }
    html += `<div class="rings">`;
    for (const ring of rings) {
      html += `<div class="ring" data-ring="${esc(ring)}"><div class="ring-name">${esc(ring)}</div><div class="clusters">`;
      for (const cluster of clusters.filter((c) => c.ring === ring)) {
        const step = steps[cluster.name];
        const shown = step ? (image(step.imageAfter) || image(step.imageBefore)) : "";
        html += `<div class="cluster" data-cluster="${esc(cluster.name)}">
          <a href="#/clusters/${esc(fleet)}/${esc(cluster.name)}">${esc(cluster.name)}</a>
          ${step ? badge(step.state) : '<span class="muted">no step</span>'}
          ${step ? `<div>${note(step)}</div>` : ""}
          <div class="image">${esc(shown)}</div>
          <div class="muted">${esc(cluster.region)} · seen ${when(cluster.lastSeen) || "never"}</div></div>`;
      }
      html += `</div></div>`;
    }
    html += `</div></section>`;
  }
  html += `<section><h2>Rollouts</h2><table id="rollouts"><tr><th>id</th><th>release</th><th>fleet</th><th>state</th><th>created</th><th>steps</th></tr>`;
  for (const r of listed.slice().reverse()) {
    html += `<tr data-rollout="${esc(r.id)}"><td><a href="#/rollouts/${esc(r.id)}">${esc(r.id)}</a></td>
      <td>${esc(r.release)}</td><td>${esc(r.fleet)}</td><td>${badge(r.state)}${r.paused ? " (paused)" : ""}</td>
      <td>${when(r.createdAt)}</td><td class="mono">${esc(JSON.stringify(r.steps))}</td></tr>`;
  }
  show(html + `</table></section>`);
}

function checksTable(checks) {
  if (!checks) return "";
  const rows = Array.isArray(checks) ? checks : Object.entries(checks).map(([name, v]) => ({ name, ...v }));
  let html = `<table class="checks"><tr><th>check</th><th>passed</th><th>observed</th><th>threshold</th></tr>`;
  for (const c of rows) {
    html += `<tr><td>${esc(c.name)}</td><td>${badge(c.passed ? "passed" : "failed")}</td>
      <td>${esc(c.observed)}</td><td>${esc(c.threshold)}</td></tr>`;
  }
  return html + `</table>`;
}

async function command(id, name, ring) {
  // approve names the ring it approves: the one the rollout stands at (the API refuses it,
  // naming the ring that waits, when the rollout waits for none or for another).
  const body = name === "approve" ? { ring } : undefined;
  const what = name === "approve" ? `approve ring ${ring} of` : name;
  if (!window.confirm(`${what} rollout ${id}?`)) return;
  try {
    const result = await api("POST", `/v1/rollouts/${id}/${name}`, body);
    const what = result.approved ? `approved ${result.approved}` : `${name}: ${result.state}`;
    toast(`${id}: ${what}`, false);
  } catch (error) {
    toast(`${name} refused (${error.status}): ${error.message}`, true);
  }
  await render();
}

async function rollout(id) {
  const s = await api("GET", `/v1/rollouts/${id}`);
  const waiting = (s.rings.find((r) => r.index === s.ringIndex) || {}).name || "";
  let html = `<h1>Rollout ${esc(s.id)} ${badge(s.state)}${s.paused ? ' <span class="badge state-paused">paused</span>' : ""}</h1>
    <section><p>Release <b>${esc(s.release)}</b> on fleet <b>${esc(s.fleet)}</b>; ring ${esc(s.ringIndex)}, wave ${esc(s.waveIndex)}.
    ${reasonLine(s)}</p>
    <p class="muted">trace <span class="mono">${esc(s.traceId)}</span> · <a href="#/audit/${esc(s.id)}">audit trail</a></p>
    <div class="actions">
      <button class="primary" data-action="approve" data-ring="${esc(waiting)}">Approve ${esc(waiting)}</button>
      <button data-action="pause">Pause</button>
      <button data-action="resume">Resume</button>
      <button class="danger" data-action="abort">Abort</button>
      <button class="danger" data-action="rollback">Roll back</button>
    </div></section>`;
  html += `<section><h2>Rings and waves</h2><div class="timeline">`;
  for (const ring of s.rings) {
    for (const wave of ring.waves) {
      html += `<div class="wave" data-wave="${esc(wave.id)}"><div>${esc(ring.name)} · wave ${esc(wave.index)}</div>
        <div class="bar state-${esc(wave.state)}">${esc(wave.state)} · ${esc(wave.clusters.join(", "))}
        ${wave.startedAt ? " · from " + when(wave.startedAt) : ""}${wave.finishedAt ? " to " + when(wave.finishedAt) : ""}</div></div>`;
      if (wave.gate) {
        html += `<div class="wave"><div class="muted">gate ${wave.gate.passed ? "passed" : "not passed"}</div><div>${checksTable(wave.gate.checks)}</div></div>`;
      }
    }
  }
  html += `</div></section><section><h2>Clusters</h2><table id="steps"><tr><th>cluster</th><th>ring</th><th>state</th><th>phase</th><th>image before → after</th><th>nodes</th><th>replaced</th><th>note</th></tr>`;
  for (const c of s.clusters) {
    html += `<tr data-cluster="${esc(c.cluster)}"><td><a href="#/clusters/${esc(s.fleet)}/${esc(c.cluster)}">${esc(c.cluster)}</a></td>
      <td>${esc(c.ring)}</td><td>${badge(c.state)}${c.rollback ? " " + badge(c.rollback) : ""}</td><td>${esc(c.phase)}</td>
      <td class="image">${esc(image(c.imageBefore))} → ${esc(image(c.imageAfter))}</td>
      <td>${esc(c.nodes)}</td><td>${esc(c.nodesReplaced)}</td><td>${note(c)}</td></tr>`;
  }
  html += `</table></section><section><h2>Approvals</h2>`;
  html += s.approvals.length ? s.approvals.map((a) => `<p>${esc(a.ring)} by <b>${esc(a.actor)}</b> at ${when(a.at)} ${esc(a.comment)}</p>`).join("") : `<p class="muted">none</p>`;
  show(html + `</section>`);
  for (const button of document.querySelectorAll("[data-action]")) {
    button.addEventListener("click", () => command(s.id, button.dataset.action, button.dataset.ring));
  }
}

async function audit(id) {
  const data = await api("GET", `/v1/rollouts/${id}/audit`);
  let html = `<h1>Audit trail of <a href="#/rollouts/${esc(id)}">${esc(id)}</a></h1><section><table id="audit">
    <tr><th>at</th><th>actor</th><th>action</th><th>object</th><th>trace</th><th>span</th></tr>`;
  for (const e of data.entries) {
    html += `<tr><td>${when(e.at)}</td><td>${esc(e.actor)}</td><td>${esc(e.action)}</td><td>${esc(e.object)}</td>
      <td class="mono">${esc(e.traceId)}</td><td class="mono">${esc(e.spanId)}</td></tr>`;
  }
  show(html + `</table></section>`);
}

const series = {};
const DISRUPTION = ["DisruptionStarted", "Disrupted", "Evicted", "EvictionBlocked", "Terminated",
  "DriftHalted", "DriftResumed", "Interrupted", "LaunchFailed", "RegistrationTimeout"];
const COLORS = ["#8c959f", "#0969da", "#1a7f37", "#cf222e", "#9a6700", "#8250df"];

function chart(points) {
  const images = [];
  for (const p of points) for (const image of Object.keys(p.nodes)) if (!images.includes(image)) images.push(image);
  const w = 640, h = 180, left = 40, bottom = 30, top = 10;
  const t0 = points.length ? points[0].t : 0;
  const span = Math.max(1, points.length ? points[points.length - 1].t - t0 : 1);
  const most = Math.max(1, ...points.map((p) => Object.values(p.nodes).reduce((a, b) => a + b, 0)));
  let svg = `<svg id="nodes-chart" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="nodes per image over time">`;
  svg += `<line x1="${left}" y1="${h - bottom}" x2="${w - 10}" y2="${h - bottom}" stroke="#999"/>`;
  svg += `<text x="${left - 4}" y="${top + 8}" font-size="10" text-anchor="end">${most}</text>`;
  svg += `<text x="${left - 4}" y="${h - bottom}" font-size="10" text-anchor="end">0</text>`;
  images.forEach((image, i) => {
    const color = COLORS[i % COLORS.length];
    const coords = points.map((p) => `${(left + (w - left - 10) * (p.t - t0) / span).toFixed(1)},${(top + (h - top - bottom) * (1 - (p.nodes[image] || 0) / most)).toFixed(1)}`).join(" ");
    svg += `<polyline data-image="${esc(image)}" points="${coords}" fill="none" stroke="${color}" stroke-width="2"/>`;
    svg += `<rect x="${left + i * 200}" y="${h - 12}" width="10" height="4" fill="${color}"/><text x="${left + 14 + i * 200}" y="${h - 6}" font-size="10">${esc(image)}</text>`;
  });
  return svg + `</svg>`;
}

function previewHtml(preview) {
  if (!preview) return `<p class="muted">no preview</p>`;
  let html = `<p>${esc(preview.drifted.length)} drifted · ${esc(preview.replace)} to replace · ${esc(preview.held)} held · ETA ${when(preview.eta)}</p>`;
  if (preview.haltedNodePools && preview.haltedNodePools.length) html += `<p class="error">halted: ${esc(JSON.stringify(preview.haltedNodePools))}</p>`;
  if (preview.drifted.length) {
    const keys = Object.keys(preview.drifted[0]).slice(0, 6);
    html += `<table id="preview"><tr>${keys.map((k) => `<th>${esc(k)}</th>`).join("")}</tr>`;
    for (const row of preview.drifted.slice(0, 50)) {
      html += `<tr>${keys.map((k) => `<td>${esc(typeof row[k] === "object" ? JSON.stringify(row[k]) : row[k])}</td>`).join("")}</tr>`;
    }
    html += `</table>`;
  }
  return html;
}

async function cluster(fleet, name) {
  const clusters = (await api("GET", `/v1/fleets/${encodeURIComponent(fleet)}/clusters`)).clusters;
  const info = clusters.find((c) => c.name === name) || {};
  let live = `<section><h2>Agent</h2><p class="error" id="agent-error"></p></section>`;
  try {
    const agent = await api("GET", `/v1/fleets/${encodeURIComponent(fleet)}/clusters/${encodeURIComponent(name)}/agent`);
    const key = fleet + "/" + name;
    const points = series[key] = series[key] || [];
    const t = Date.parse(agent.status.time) / 1000;
    if (!points.length || points[points.length - 1].t !== t) points.push({ t, nodes: agent.status.nodesByImage });
    if (points.length > 600) points.shift();
    const events = agent.events.filter((e) => DISRUPTION.includes(e.type)).slice(-30).reverse();
    live = `<section><h2>Nodes per image over time</h2>${chart(points)}
      <p class="muted">${esc(agent.status.nodes)} nodes · ${esc(agent.status.drifted)} drifted · ${esc(agent.status.pendingPods)} pods pending · $${esc(Number(agent.status.costPerHour).toFixed(2))}/h · Kubernetes ${esc(agent.status.kubernetesVersion)}</p></section>
      <section><h2>Drift preview</h2>${previewHtml(agent.preview)}</section>
      <section><h2>Recent disruptions</h2><table id="disruptions"><tr><th>time</th><th>event</th><th>object</th><th>reason</th></tr>
      ${events.map((e) => `<tr><td>${when(e.time)}</td><td>${esc(e.type)}</td><td>${esc(e.object)}</td><td>${esc(e.reason)}</td></tr>`).join("")}</table></section>`;
  } catch (error) {
    live = `<section><h2>Agent</h2><p class="error" id="agent-error">${esc(error.message)}</p></section>`;
  }
  const { listed } = await latestRollouts();
  let rows = "";
  for (const r of listed.filter((x) => x.fleet === fleet).reverse()) {
    const status = await api("GET", `/v1/rollouts/${r.id}`);
    for (const c of status.clusters.filter((x) => x.cluster === name)) {
      rows += `<tr><td><a href="#/rollouts/${esc(r.id)}">${esc(r.id)}</a></td><td>${esc(r.release)}</td><td>${badge(c.state)}</td>
        <td class="image">${esc(image(c.imageBefore))} → ${esc(image(c.imageAfter))}</td><td>${esc(c.nodes)}</td>
        <td>${esc(c.nodesReplaced)}</td><td>${when(c.finishedAt)}</td><td class="error">${esc(c.error)}</td></tr>`;
    }
  }
  show(`<h1>Cluster ${esc(name)}</h1><section><p>Ring <b>${esc(info.ring)}</b> · account ${esc(info.account)} ·
    ${esc(info.region)} · agent <span class="mono">${esc(info.endpoint)}</span> · last seen ${when(info.lastSeen) || "never"}</p></section>
    ${live}
    <section><h2>Steps across rollouts</h2><table id="cluster-steps"><tr><th>rollout</th><th>release</th><th>state</th>
    <th>image before → after</th><th>nodes</th><th>replaced</th><th>finished</th><th>error</th></tr>${rows}</table></section>`);
}

async function render() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const parts = hash.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "rollouts" && parts[1]) return rollout(parts[1]);
  if (parts[0] === "audit" && parts[1]) return audit(parts[1]);
  if (parts[0] === "clusters" && parts[2]) return cluster(parts[1], parts[2]);
  return overview();
}

async function route() {
  clearTimeout(timer);
  if (!token()) return signin("");
  document.getElementById("signout").hidden = false;
  try {
    const me = await api("GET", "/v1/whoami");
    document.getElementById("who").textContent = `${me.name || "api"} (${me.role})`;
    await render();
    await heartbeat();
    document.body.dataset.loaded = String(Date.now());
  } catch (error) {
    if (error.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      return signin("That token is not known to the API.");
    }
    toast(error.message, true);
  }
  timer = setTimeout(route, REFRESH_MS);
}

document.getElementById("signout").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  route();
});
window.addEventListener("hashchange", route);
route();
