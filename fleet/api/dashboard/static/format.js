// Shared formatting of the dashboard: escaping, state colours (one table, STATE_RANK), units,
// durations, relative times and countdowns that tick every second in the browser.
"use strict";

function esc(value) {
  return String(value === null || value === undefined ? "" : value)
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// ---- State colours: every state shown maps to ONE danger rank; each rank is one CSS class
// (`rank-<rank>`, style.css) and a data-rank attribute. Ranks, worst first:
//   danger  red    it failed or halted: it needs a person, nobody is fixing it by waiting
//   waiting amber  it waits for a person, a window or a queue
//   undone  orange it was rolled back: the fleet is where it started, not where it was asked to go
//   stopped slate  a person stopped it (aborted): the fleet stays where it stopped, on purpose;
//                  worth seeing (the rollout did not finish) but no one is needed
//   running blue   it is moving on its own
//   done    green  it reached the target (or a check passed)
//   idle    grey   nothing has happened yet, or it was skipped
const STATE_RANK = {
  // rollouts, waves, steps, rollbacks, gates
  failed: "danger", halted: "danger", "rollback-failed": "danger", "timed-out": "danger",
  unreachable: "danger",
  "awaiting-approval": "waiting", paused: "waiting", queued: "waiting", waiting: "waiting",
  "rolled-back": "undone", aborted: "stopped",
  running: "running", "rolling-back": "running", soaking: "running", gating: "running",
  dispatched: "running", progressing: "running", verifying: "running", requested: "running",
  succeeded: "done", verified: "done", converged: "done", passed: "done",
  pending: "idle", planned: "idle", skipped: "idle", cancelled: "idle",
  // an agent's health (contract B's contact.health)
  healthy: "done", degraded: "waiting", stale: "waiting", unknown: "idle",
  // how a step's cluster stands now on the fleet's last observation (the API's `now.holding`)
  regressed: "danger", "on-target": "done", observed: "running", superseded: "idle", unobserved: "idle",
};
const RANKS = ["danger", "waiting", "undone", "stopped", "running", "done", "idle"];
// The rollout states that ended badly (kept on the overview while recent).
const ENDED_BADLY = ["halted", "failed", "aborted", "rolled-back", "rollback-failed"];
const FINISHED = ["succeeded", ...ENDED_BADLY];

function rankOf(state) { return STATE_RANK[state] || "idle"; }

// The worse of ranks (the lowest index in RANKS).
function worst(ranks) {
  let found = "idle";
  for (const r of ranks) if (RANKS.indexOf(r) < RANKS.indexOf(found)) found = r;
  return found;
}

function badge(state, label) {
  const s = state || "pending";
  const rank = rankOf(s);
  return `<span class="badge rank-${rank}" data-state="${esc(s)}" data-rank="${rank}">${esc(label || s)}</span>`;
}

// ---- Numbers with units
function plural(n, one, many) { return `${n} ${n === 1 ? one : (many || one + "s")}`; }
function nodes(n) { return n === null || n === undefined ? "" : plural(n, "node"); }

// A duration in seconds, as people say it: "45 s", "4m12s", "2h05m", "3d4h".
function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(Number(seconds))) return "";
  let s = Math.max(0, Math.round(Number(seconds)));
  if (Number(seconds) < 10 && !Number.isInteger(Number(seconds))) return `${Number(seconds).toFixed(1)} s`;
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  s = Math.floor(s / 3600);
  return `${Math.floor(s / 24)}d${s % 24}h`;
}

// An RFC 3339 time as "2026-11-02 09:00:00 UTC".
function when(stamp) {
  return stamp ? esc(stamp.replace("T", " ").replace(/\.\d+/, "").replace(/Z$/, " UTC")) : "";
}

// How long ago, by the browser's clock: "12 s ago" (the exact time in the title).
function ago(stamp) {
  if (!stamp) return `<span class="muted" data-ago="">never</span>`;
  const seconds = (Date.now() - Date.parse(stamp)) / 1000;
  const text = seconds < 1 ? "just now" : `${duration(Math.floor(seconds))} ago`;
  return `<time datetime="${esc(stamp)}" title="${when(stamp)}" data-ago="${esc(stamp)}">${text}</time>`;
}

// ---- Countdowns: the API says how many seconds are left (inSeconds, by its clock); the page
// anchors that on the browser's clock the first time it sees the event and ticks it down
// every second, so a refresh neither resets nor jumps it. It anchors again only when the API
// disagrees by more than DRIFT_S (the event moved, or the API's clock is not a wall clock).
const anchors = new Map();
const DRIFT_S = 5;

function deadline(key, inSeconds) {
  const fresh = Date.now() + Number(inSeconds) * 1000;
  const known = anchors.get(key);
  if (known === undefined || Math.abs(known - fresh) > DRIFT_S * 1000) anchors.set(key, fresh);
  return anchors.get(key);
}

// A countdown element: "soak ends in 4m12s". `key` names the event (its time, by the API).
function countdown(key, inSeconds, prefix, suffix) {
  if (inSeconds === null || inSeconds === undefined) return "";
  const end = deadline(key, inSeconds);
  return `<span class="countdown" data-until="${end}" data-prefix="${esc(prefix || "")}"
    data-suffix="${esc(suffix || "")}">${esc(prefix || "")}${countdownText(end)}${esc(suffix || "")}</span>`;
}

function countdownText(end) {
  const left = (end - Date.now()) / 1000;
  return left <= 0 ? "now (due)" : `in ${duration(Math.floor(left))}`;
}

function tick() {
  for (const el of document.querySelectorAll(".countdown[data-until]")) {
    const end = Number(el.dataset.until);
    el.textContent = `${el.dataset.prefix}${countdownText(end)}${el.dataset.suffix}`;
  }
  for (const el of document.querySelectorAll("time[data-ago]")) {
    const seconds = (Date.now() - Date.parse(el.dataset.ago)) / 1000;
    el.textContent = seconds < 1 ? "just now" : `${duration(Math.floor(seconds))} ago`;
  }
}
setInterval(tick, 250);  // a quarter second: each second shows on time

// ---- Gate checks: names in words, with the unit of what each measures.
const CHECKS = {
  steps: { label: "failed steps", unit: "clusters" },
  reachability: { label: "unreachable clusters", unit: "clusters" },
  convergence: { label: "time to converge", unit: "duration" },
  pendingPods: { label: "pending pods", unit: "pods" },
  launchFailures: { label: "launch failures in a row", unit: "failures" },
  driftHalts: { label: "drift halts", unit: "clusters" },
  failureBudget: { label: "failed clusters in the ring (failure budget)", unit: "clusters" },
  approval: { label: "approval", unit: "approval" },
};

function checkName(name) {
  if (CHECKS[name]) return CHECKS[name].label;
  if (name && name.startsWith("metric/")) return `metric ${name.slice(7)}`;
  return String(name || "").replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
}

function measure(value, unit) {
  if (value === null || value === undefined) return "–";
  if (unit === "duration") return duration(value);
  if (unit === "approval") return Number(value) >= 1 ? "given" : "not given";
  if (!unit) return String(value);
  return plural(Number(value), unit.replace(/s$/, ""), unit);
}

// "5.3 s / 30m00s", "0 pods / 0 pods": observed / threshold, each with its unit.
function checkValue(check) {
  const unit = (CHECKS[check.name] || {}).unit || "";
  if (unit === "approval") return measure(check.observed, unit);
  return `${measure(check.observed, unit)} / ${measure(check.threshold, unit)}`;
}

function money(perHour) {
  return perHour === null || perHour === undefined ? "" : `$${Number(perHour).toFixed(2)}/h`;
}

function percent(part, whole) {
  if (!whole) return "";
  return `${Math.round((100 * Math.min(part, whole)) / whole)}%`;
}

// ---- Pieces of a rollout's status shared by the views (contract A, with fallbacks).
function image(value) {
  if (!value) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.join(", ");
  return Object.keys(value).join(", ");
}

// A step's note: its error (red when the step failed, else a warning: the step carries on),
// or what it waits for with the time left ("... (in 3h12m)").
function note(step) {
  if (step.error) {
    const failed = rankOf(step.state) === "danger" || rankOf(step.rollback) === "danger";
    return `<span class="${failed ? "error" : "warning"}" data-note="${failed ? "error" : "warning"}">${failed ? "" : "warning: "}${esc(step.error)}</span>`;
  }
  if (step.waiting) return `<span class="waiting" data-note="waiting">${esc(step.waiting.message)}</span>`;
  return "";
}

// What the cluster runs now on the fleet's last observation (the API's `now`), with the
// observation's age ticking in the browser: "rolled back: 40/40 on ami-0a1 · observed 12 s ago".
// A rolled-back or regressed cluster gets its own badge: a step's stored state stays
// "verified" for the record, but the page never shows such a cluster as on target.
function nowLine(now) {
  if (!now) return "";
  const holding = now.holding || "unobserved";
  const shown = holding === "superseded" ? `superseded by ${now.supersededBy}` : now.message;
  const mark = ["rolled-back", "regressed"].includes(holding) ? badge(holding) + " " : "";
  const age = now.observedAt ? ` · observed ${ago(now.observedAt)}` : "";
  return `<div class="now" data-holding="${esc(holding)}" data-rank="${rankOf(holding)}">${mark}${esc(shown)}${age}</div>`;
}

// The images a cluster's nodes run now, most nodes first (the API's `observed`), or "".
function imagesNow(observed) {
  if (!observed || !observed.nodesByImage) return "";
  return Object.entries(observed.nodesByImage).sort((a, b) => b[1] - a[1]).map(([name]) => name).join(", ");
}

// Where the rollout stands, numbered from 1: "ring staging (3 of 4) · wave 2 of 3".
function positionText(s) {
  const p = s.position;
  if (p && p.ring) {
    return `ring ${p.ring} (${p.ringNumber} of ${p.rings}) · wave ${p.wave} of ${p.waves}`;
  }
  if (p === null || !s.rings || !s.rings.length) return "no ring started yet";
  const ring = s.rings.find((r) => r.index === s.ringIndex) || s.rings[0];
  const number = s.rings.indexOf(ring) + 1;
  return `ring ${ring.name} (${number} of ${s.rings.length}) · wave ${Number(s.waveIndex || 0) + 1} of ${ring.waves.length}`;
}

// Why it stands there: the progress reason (contract A), else the wait or the stored reason.
function reasonText(s) {
  const p = s.progress || {};
  if (p.reason) return p.reason;
  if (s.waiting) return s.waiting.message;
  return s.reason || "";
}

// The next expected event with a live countdown: "soak of staging wave 2 ends in 4m12s".
function nextLine(s) {
  const next = (s.progress || {}).next;
  if (!next) return "";
  if (next.inSeconds === null || next.inSeconds === undefined) {
    return `<span class="next" data-next="">next: ${esc(next.event)}${next.at ? ` at ${when(next.at)}` : ""}</span>`;
  }
  return `<span class="next" data-next="${esc(next.at || "")}" title="${when(next.at)}">${esc(next.event)} ${countdown(`${s.id}|${next.event}`, next.inSeconds)}</span>`;
}

// The ETA in real time, with its basis (what the estimate counts and leaves out) as a title.
function etaLine(s) {
  const p = s.progress || {};
  if (FINISHED.includes(s.state)) return "";
  if (!p.eta && (p.etaSeconds === null || p.etaSeconds === undefined)) {
    return p.etaBasis ? `<span class="eta muted" data-eta="">no ETA: ${esc(p.etaBasis)}</span>` : "";
  }
  const left = p.etaSeconds !== null && p.etaSeconds !== undefined
    ? countdown(`eta|${s.id}`, p.etaSeconds, "done ", "") : "";
  return `<span class="eta" data-eta="${esc(p.eta || "")}" title="${esc(p.etaBasis || "")}">ETA ${left}${p.eta ? ` (${when(p.eta)})` : ""}</span>`;
}
