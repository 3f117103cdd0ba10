// The fleet overview: per fleet, the rollouts that matter (every live one, those that ended
// badly lately, the latest) under a header giving the worst of them, and the rings in
// promotion order with each cluster's step, image, agent health and last contact.
"use strict";

const RECENT_HOURS = 24;  // finished-badly rollouts stay on the overview this long
const RECENT_MAX = 10;    // at most this many of them per fleet

async function allRollouts() {
  const listed = (await api("GET", "/v1/rollouts?limit=1000")).rollouts;
  const live = (await api("GET", "/v1/rollouts?active=true&limit=1000")).rollouts;
  const byId = new Map();
  for (const r of [...listed, ...live]) byId.set(r.id, r);
  return [...byId.values()].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
}

// The rollouts of a fleet worth showing: every one not finished (newest first), those that
// ended badly within RECENT_HOURS of the fleet's latest activity, the latest success and the
// latest rollout.
function worthShowing(rollouts) {
  if (!rollouts.length) return [];
  const stamps = rollouts.flatMap((r) => [r.createdAt, r.finishedAt]).filter(Boolean).map(Date.parse);
  const since = Math.max(...stamps) - RECENT_HOURS * 3600 * 1000;
  const newest = rollouts.slice().reverse();
  const live = newest.filter((r) => !r.finishedAt);
  const bad = newest.filter((r) => r.finishedAt && ENDED_BADLY.includes(r.state)
    && Date.parse(r.finishedAt) >= since).slice(0, RECENT_MAX);
  const shown = [...live, ...bad];
  for (const r of [newest.find((x) => x.state === "succeeded"), newest[0]]) {
    if (r && !shown.includes(r)) shown.push(r);
  }
  return shown;
}

// "worst: halted · 2 halted · 1 succeeded", coloured by the worst rank.
function summary(statuses) {
  if (!statuses.length) return `<span class="summary rank-idle" data-rank="idle">no rollout yet</span>`;
  const counts = new Map();
  for (const s of statuses) counts.set(s.state, (counts.get(s.state) || 0) + 1);
  const ranked = [...counts.keys()].sort((a, b) => RANKS.indexOf(rankOf(a)) - RANKS.indexOf(rankOf(b)));
  const rank = rankOf(ranked[0]);
  const parts = ranked.map((state) => `${counts.get(state)} ${state}`).join(" · ");
  return `<span class="summary rank-${rank}" data-rank="${rank}" data-worst="${esc(ranked[0])}">worst: ${esc(ranked[0])} · ${esc(parts)}</span>`;
}

function rolloutRow(s, listed) {
  const finished = listed.finishedAt ? `ended ${when(listed.finishedAt)}` : `started ${when(listed.createdAt)}`;
  return `<tr data-rollout="${esc(s.id)}" data-rank="${rankOf(s.state)}">
    <td><a href="#/rollouts/${esc(s.id)}">${esc(s.id)}</a><div class="muted">${esc(s.release)}</div></td>
    <td>${badge(s.state)}${s.paused ? " " + badge("paused") : ""}</td>
    <td class="where">${esc(positionText(s))}<div class="muted">${finished}</div></td>
    <td class="reason">${esc(reasonText(s))}<div>${nextLine(s)}</div><div>${etaLine(s)}</div></td></tr>`;
}

// The rings in promotion order: the API's `rings` (contract B), else each cluster's
// ringIndex, else the order the clusters come in.
function ringOrder(data) {
  const clusters = data.clusters;
  const rings = Array.isArray(data.rings) ? data.rings.slice() : [];
  if (!rings.length) {
    const indexed = clusters.filter((c) => Number.isInteger(c.ringIndex));
    if (indexed.length === clusters.length) {
      for (const c of clusters.slice().sort((a, b) => a.ringIndex - b.ringIndex)) {
        if (!rings.includes(c.ring)) rings.push(c.ring);
      }
    }
  }
  for (const c of clusters) if (!rings.includes(c.ring)) rings.push(c.ring);
  return rings.filter((ring) => clusters.some((c) => c.ring === ring));
}

// The agent's health and last contact (contract B's contact; lastSeen when absent).
function contactLine(cluster) {
  const contact = cluster.contact || { lastContact: cluster.lastSeen || null, health: "unknown", message: "" };
  const health = contact.health || "unknown";
  const tried = contact.lastAttempt ? ` · last attempt ${when(contact.lastAttempt)}` : "";
  return `<div class="contact" data-health="${esc(health)}" title="${esc(contact.message || "")}${esc(tried)}">
    agent ${badge(health)} · last contact ${ago(contact.lastContact)}</div>`;
}

function windowsText(cluster) {
  const windows = cluster.maintenanceWindows;
  if (Array.isArray(windows) && windows.length) {
    return windows.map((w) => `window ${w.schedule} for ${w.duration} ${w.timeZone || "UTC"}`).join("; ");
  }
  return cluster.windows ? plural(cluster.windows, "maintenance window") : "no maintenance window";
}

// The step's state: a badge, or plain muted words when the cluster no longer holds what the
// state claims (rolled back or regressed since: the "now" line below carries the colour).
function stepMark(step, now) {
  const undone = now && ["rolled-back", "regressed"].includes(now.holding);
  if (!undone) return badge(step.state);
  return `<span class="muted step-record" data-state="${esc(step.state)}">step ${esc(step.state)}</span>`;
}

// A cluster: its step in the rollout shown, what it runs now on the fleet's last observation
// (its latest step's judgement from the cluster list, else the shown step's) with the age, the
// images its nodes run now (the step's images only when the fleet never observed it), and its
// agent's contact.
function clusterCard(fleet, cluster, found) {
  const step = found && found.step;
  const now = cluster.now || (step && step.now);
  const shown = imagesNow(cluster.observed) || (step ? (image(step.imageAfter) || image(step.imageBefore)) : "");
  const rid = found ? ` in <a href="#/rollouts/${esc(found.rollout)}">${esc(found.rollout)}</a>` : "";
  return `<div class="cluster" data-cluster="${esc(cluster.name)}">
    <a href="#/clusters/${esc(fleet)}/${esc(cluster.name)}">${esc(cluster.name)}</a>
    ${step ? stepMark(step, now) + `<span class="muted">${rid}</span>` : '<span class="muted">no step</span>'}
    ${nowLine(now)}
    ${step ? `<div>${note(step)}</div>` : ""}
    <div class="image" title="the images its nodes run now">${esc(shown)}</div>
    ${contactLine(cluster)}
    <div class="muted">${esc(cluster.region)} · ${esc(windowsText(cluster))}</div></div>`;
}

async function fleetSection(fleet, rollouts) {
  const path = `/v1/fleets/${encodeURIComponent(fleet)}`;
  const data = await api("GET", `${path}/clusters`);
  const shown = worthShowing(rollouts.filter((r) => r.fleet === fleet));
  const statuses = [];
  for (const r of shown) statuses.push(await api("GET", `/v1/rollouts/${encodeURIComponent(r.id)}`));
  // each cluster's step: from a live rollout first, else the newest shown
  const steps = {};
  for (const s of statuses) {
    for (const step of s.clusters) if (!steps[step.cluster]) steps[step.cluster] = { step, rollout: s.id };
  }
  let html = `<section class="fleet" data-fleet="${esc(fleet)}"><h2>${esc(fleet)} ${summary(statuses)}</h2>
    <p class="muted"><a class="fleet-audit" href="#/fleets/${encodeURIComponent(fleet)}/audit">changes to this fleet</a>
    · live rollouts, those that ended badly in the last ${RECENT_HOURS} h, the latest success</p>`;
  if (statuses.length) {
    html += `<table class="rollouts" id="rollouts-${esc(fleet)}"><tr><th>rollout</th><th>state</th><th>where</th><th>why, next, ETA</th></tr>`;
    statuses.forEach((s, i) => { html += rolloutRow(s, shown[i]); });
    html += `</table>`;
  }
  html += `<div class="rings">`;
  const rings = ringOrder(data);
  rings.forEach((ring, i) => {
    html += `<div class="ring" data-ring="${esc(ring)}"><div class="ring-name">${i + 1}. ${esc(ring)}</div><div class="clusters">`;
    for (const cluster of data.clusters.filter((c) => c.ring === ring)) html += clusterCard(fleet, cluster, steps[cluster.name]);
    html += `</div></div>`;
  });
  return html + `</div></section>`;
}

async function overview() {
  const fleets = (await api("GET", "/v1/fleets")).fleets;
  const rollouts = await allRollouts();
  let html = `<h1>Fleet overview</h1>`;
  for (const fleet of fleets) html += await fleetSection(fleet, rollouts);
  if (!fleets.length) html += `<section><p class="muted">no fleet applied yet (driftwave fleet apply)</p></section>`;
  show(html);
}
