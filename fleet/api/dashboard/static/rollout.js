// One rollout: where it stands and why, the next event with a countdown, the ETA, the actions
// the signed-in token may take now (and who may take the others), the rings and waves with
// their gate checks, each cluster's step and the approvals.
"use strict";

const ROLE_ORDER = ["viewer", "operator", "approver", "admin"];
const ACTIONS = ["approve", "resume", "pause", "abort", "rollback"];
const ACTION_ROLE = { approve: "approver", resume: "operator", pause: "operator", abort: "operator", rollback: "operator" };

function article(word) { return /^[aeiou]/.test(word) ? "an" : "a"; }

// Whether the signed-in token's role (and rings, for approve) allows the action.
function roleAllows(role, ring) {
  if (ROLE_ORDER.indexOf(ME.role) < ROLE_ORDER.indexOf(role)) return false;
  if (ring && ME.rings && ROLE_ORDER.indexOf(ME.role) < ROLE_ORDER.indexOf("admin")) return ME.rings.includes(ring);
  return true;
}

// The names of the tokens that may take an action needing `role` (whoami.people), or for
// approve the approvers of the waiting ring (progress.approval.approvers).
function whoMay(s, name, role) {
  const approval = (s.progress || {}).approval;
  if (name === "approve" && approval && Array.isArray(approval.approvers)) return approval.approvers;
  const people = ME.people || {};
  const names = [];
  for (const r of ROLE_ORDER.slice(ROLE_ORDER.indexOf(role))) for (const n of people[r] || []) if (!names.includes(n)) names.push(n);
  return names;
}

// The actions of contract A, or (an older API) what the state alone suggests.
function actionsOf(s) {
  if (s.actions) return s.actions;
  const live = !FINISHED.includes(s.state);
  const waiting = s.state === "awaiting-approval";
  const ring = waiting ? ((s.rings || []).find((r) => r.index === s.ringIndex) || {}).name : null;
  const no = (why) => ({ allowed: false, why });
  return {
    approve: waiting ? { allowed: true, role: "approver", ring } : no("the rollout waits for no approval"),
    pause: live && !s.paused ? { allowed: true, role: "operator" } : no("only a live, running rollout pauses"),
    resume: s.paused ? { allowed: true, role: "operator" } : no("the rollout is not paused"),
    abort: live ? { allowed: true, role: "operator" } : no("the rollout has finished"),
    rollback: ["halted", "failed", "aborted"].includes(s.state) ? { allowed: true, role: "operator" } : no("nothing to roll back"),
  };
}

function actionLabel(name, action) {
  if (name === "approve") return `Approve ring ${action.ring || ""}`.trim();
  return { pause: "Pause", resume: "Resume", abort: "Abort", rollback: "Roll back" }[name];
}

function actionsHtml(s) {
  const actions = actionsOf(s);
  const buttons = [], denied = [], notNow = [];
  for (const name of ACTIONS) {
    const a = actions[name];
    if (!a) continue;
    const role = a.role || ACTION_ROLE[name];
    const ring = name === "approve" ? (a.ring || ((s.progress || {}).approval || {}).ring || "") : "";
    if (!a.allowed) { notNow.push(`${name}: ${a.why || "not in this state"}`); continue; }
    if (roleAllows(role, ring)) {
      const cls = name === "approve" ? "primary" : ["abort", "rollback"].includes(name) ? "danger" : "";
      buttons.push(`<button class="${cls}" data-action="${name}" data-ring="${esc(ring)}">${esc(actionLabel(name, { ring }))}</button>`);
    } else {
      const names = whoMay(s, name, role);
      const scope = name === "approve" && ring ? ` of ring ${ring}` : "";
      const who = names.length ? `: ${names.join(", ")}` : " (no such token is known to this page)";
      denied.push(`<p class="muted denied" data-denied="${name}">${esc(name)}${esc(scope)} needs ${article(role)} ${esc(role)}${role === "admin" ? "" : " or higher"}${esc(who)}</p>`);
    }
  }
  const approval = (s.progress || {}).approval;
  const requires = approval && approval.requires ? `<p class="muted" id="approval-requires">approving ring ${esc(approval.ring)} requires ${esc(approval.requires)}</p>` : "";
  const none = `<span class="muted" id="no-actions">no action you (${esc(ME.name)}, ${esc(article(ME.role))} ${esc(ME.role)}) may take now</span>`;
  return `<div class="actions" id="actions">${buttons.join("") || none}</div>
    ${denied.join("")}${requires}
    ${notNow.length ? `<details class="muted"><summary>not offered in this state</summary>${notNow.map((t) => `<div>${esc(t)}</div>`).join("")}</details>` : ""}`;
}

function checksTable(checks) {
  if (!checks) return "";
  const rows = Array.isArray(checks) ? checks : Object.entries(checks).map(([name, v]) => ({ name, ...v }));
  let html = `<table class="checks"><tr><th>check</th><th>result</th><th>observed / threshold</th><th>detail</th></tr>`;
  for (const c of rows) {
    const result = c.passed ? "passed" : c.pending ? "pending" : "failed";
    html += `<tr data-check="${esc(c.name)}"><td>${esc(checkName(c.name))}</td><td>${badge(result)}</td>
      <td class="measure">${esc(checkValue(c))}</td><td class="muted">${esc(c.message || "")}</td></tr>`;
  }
  return html + `</table>`;
}

function timeline(s) {
  let html = `<section><h2>Rings and waves</h2><div class="timeline">`;
  s.rings.forEach((ring, r) => {
    for (const wave of ring.waves) {
      const span = `${wave.startedAt ? " · from " + when(wave.startedAt) : ""}${wave.finishedAt ? " to " + when(wave.finishedAt) : ""}`;
      const soak = wave.soakUntil && !wave.finishedAt ? ` · soaks until ${when(wave.soakUntil)}` : "";
      html += `<div class="wave" data-wave="${esc(wave.id)}"><div>ring ${r + 1} ${esc(ring.name)} · wave ${esc(wave.index)} of ${ring.waves.length}</div>
        <div class="bar rank-${rankOf(wave.state)}" data-state="${esc(wave.state)}">${esc(wave.state)} · ${esc(plural(wave.clusters.length, "cluster"))}: ${esc(wave.clusters.join(", "))}${span}${soak}</div></div>`;
      if (wave.gate) {
        const verdict = wave.gate.passed === null ? "pending" : wave.gate.passed ? "passed" : "failed";
        html += `<div class="wave"><div class="muted">gate ${badge(verdict)}</div><div>${checksTable(wave.gate.checks)}</div></div>`;
      }
    }
  });
  return html + `</div></section>`;
}

// The nodes a step replaced against the cluster's nodes: "38 of 40 nodes (95%)". The two count
// different things: the agent counts every NodeClaim that ended while the wave moved (a node
// replaced twice counts twice, one consolidated away counts too), the total is the NodeClaims
// at the end. When the count passes the total both are said as they are, never as "40 of 39".
function replaced(c) {
  if (c.nodesReplaced === null || c.nodesReplaced === undefined) return "";
  if (!c.nodes) return nodes(c.nodesReplaced);
  if (c.nodesReplaced > c.nodes) return `${c.nodesReplaced} replaced · ${nodes(c.nodes)} now`;
  return `${c.nodesReplaced} of ${nodes(c.nodes)} (${percent(c.nodesReplaced, c.nodes)})`;
}

function stepsTable(s) {
  let html = `<section><h2>Clusters</h2><table id="steps"><tr><th>cluster</th><th>ring · wave</th><th>state</th><th>phase</th><th>image before → after</th><th>nodes</th><th>replaced</th><th>note</th>`;
  html += `<th>now (last observation)</th></tr>`;
  for (const c of s.clusters) {
    html += `<tr data-cluster="${esc(c.cluster)}"><td><a href="#/clusters/${esc(s.fleet)}/${esc(c.cluster)}">${esc(c.cluster)}</a></td>
      <td>${esc(c.ring)} · wave ${esc(c.wave)}</td><td>${badge(c.state)}${c.rollback ? " rollback " + badge(c.rollback) : ""}</td><td>${esc(c.phase)}</td>
      <td class="image">${esc(image(c.imageBefore))} → ${esc(image(c.imageAfter))}</td>
      <td>${esc(nodes(c.nodes))}</td><td>${esc(replaced(c))}</td><td>${note(c)}</td>
      <td>${nowLine(c.now)}</td></tr>`;
  }
  return html + `</table></section>`;
}

function traceLink(traceId) {
  if (!traceId) return "";
  const link = ME.traceUrl ? ` <a class="trace" href="${esc(ME.traceUrl.replace("{traceId}", traceId))}" target="_blank" rel="noopener">open trace</a>` : "";
  return `<span class="mono" data-trace="${esc(traceId)}" title="trace ${esc(traceId)}">${esc(traceId.slice(0, 12))}…</span>
    <button type="button" class="copy" data-copy="${esc(traceId)}" title="copy the trace id">copy</button>${link}`;
}

async function command(id, name, ring) {
  // approve names the ring it approves: the one the rollout stands at (the API refuses it,
  // naming the ring that waits, when the rollout waits for none or for another).
  const body = name === "approve" ? { ring } : undefined;
  const what = name === "approve" ? `approve ring ${ring} of` : name;
  if (!window.confirm(`${what} rollout ${id}?`)) return;
  try {
    const result = await api("POST", `/v1/rollouts/${id}/${name}`, body);
    const done = result.approved ? `approved ${result.approved}` : `${name}: ${result.state}`;
    toast(`${id}: ${done}`, false);
  } catch (error) {
    toast(`${name} refused (${error.status}): ${error.message}`, true);
  }
  await render();
}

async function rolloutView(id) {
  const s = await api("GET", `/v1/rollouts/${encodeURIComponent(id)}`);
  const reason = reasonText(s);
  let html = `<h1>Rollout ${esc(s.id)} ${badge(s.state)}${s.paused ? " " + badge("paused") : ""}</h1>
    <section><p>Release <b>${esc(s.release)}</b> on fleet <b>${esc(s.fleet)}</b> · <span id="position">${esc(positionText(s))}</span></p>
    <p id="rollout-reason" class="${rankOf(s.state) === "danger" ? "error" : s.waiting ? "waiting" : ""}">${s.waiting ? `<span id="rollout-waiting">${esc(s.waiting.message)}</span>` : esc(reason)}</p>
    ${s.waiting && reason !== s.waiting.message ? `<p class="muted">${esc(reason)}</p>` : ""}
    <p>${nextLine(s)} ${etaLine(s)}</p>
    <p class="muted">trace ${traceLink(s.traceId)} · <a href="#/audit/${esc(s.id)}">audit trail</a></p>
    ${actionsHtml(s)}</section>`;
  html += timeline(s) + stepsTable(s) + `<section><h2>Approvals</h2>`;
  html += s.approvals.length ? s.approvals.map((a) => `<p>${esc(a.ring)} by <b>${esc(a.actor)}</b> at ${when(a.at)} ${esc(a.comment)}</p>`).join("") : `<p class="muted">none</p>`;
  show(html + `</section>`);
  for (const button of document.querySelectorAll("[data-action]")) {
    button.addEventListener("click", () => command(s.id, button.dataset.action, button.dataset.ring));
  }
}
