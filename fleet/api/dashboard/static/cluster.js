// One cluster: its agent's health and last contact, what it runs now (the fleet's last
// observation, with its age), nodes per image over time (as the page
// polls the agent), the drift preview with its ETA on the cluster's own clock, the recent
// disruptions, and its steps across rollouts (state, rollback, how the cluster stands now).
"use strict";

const series = {};
const DISRUPTION = ["DisruptionStarted", "Disrupted", "Evicted", "EvictionBlocked", "Terminated",
  "DriftHalted", "DriftResumed", "Interrupted", "LaunchFailed", "RegistrationTimeout"];
const COLORS = ["#8c959f", "#0969da", "#1a7f37", "#cf222e", "#9a6700", "#8250df"];

// The chart of nodes per image, from the second observation on (one point draws no line):
// until then it says it is collecting and what the agent reports now.
function chart(points) {
  if (points.length < 2) {
    const now = points.length ? Object.entries(points[0].nodes) : [];
    const said = now.map(([name, n]) => `${nodes(n)} on ${name}`).join(", ") || "no node yet";
    return `<p class="muted" id="nodes-collecting">collecting: the chart starts at the agent's second report (now ${esc(said)})</p>`;
  }
  const images = [];
  for (const p of points) for (const name of Object.keys(p.nodes)) if (!images.includes(name)) images.push(name);
  const w = 680, h = 180, left = 64, bottom = 30, top = 10;
  const t0 = points.length ? points[0].t : 0;
  const span = Math.max(1, points.length ? points[points.length - 1].t - t0 : 1);
  const most = Math.max(1, ...points.map((p) => Object.values(p.nodes).reduce((a, b) => a + b, 0)));
  let svg = `<svg id="nodes-chart" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="nodes per image over time">`;
  svg += `<line x1="${left}" y1="${h - bottom}" x2="${w - 10}" y2="${h - bottom}" stroke="#999"/>`;
  svg += `<text x="${left - 4}" y="${top + 8}" font-size="10" text-anchor="end">${most} nodes</text>`;
  svg += `<text x="${left - 4}" y="${h - bottom}" font-size="10" text-anchor="end">0</text>`;
  images.forEach((name, i) => {
    const color = COLORS[i % COLORS.length];
    const coords = points.map((p) => `${(left + (w - left - 10) * (p.t - t0) / span).toFixed(1)},${(top + (h - top - bottom) * (1 - (p.nodes[name] || 0) / most)).toFixed(1)}`).join(" ");
    svg += `<polyline data-image="${esc(name)}" points="${coords}" fill="none" stroke="${color}" stroke-width="2"/>`;
    svg += `<rect x="${left + i * 200}" y="${h - 12}" width="10" height="4" fill="${color}"/><text x="${left + 14 + i * 200}" y="${h - 6}" font-size="10">${esc(name)}</text>`;
  });
  return svg + `</svg>`;
}

// The preview's ETA is on the cluster's own clock (agent/disruption/preview.py: `at` is the
// cluster's now, `eta` = at + etaSeconds): a simulated cluster's clock runs at its own
// speed, so the page says how long by that clock instead of passing it off as wall time.
function previewEta(preview) {
  if (!preview.drifted.length) return `<span id="preview-eta">nothing drifted</span>`;
  if (!preview.replace && !preview.delete) {
    return `<span id="preview-eta">no replacement left to start (held, or already under way)</span>`;
  }
  if (preview.etaSeconds === null || preview.etaSeconds === undefined) {
    return `<span id="preview-eta">no ETA from the agent: its Drifted budget allows no further replacement now and no budget change is scheduled</span>`;
  }
  const assumed = Number(preview.replaceSecondsAssumed || 0) ? `, ${duration(preview.replaceSecondsAssumed)} per replacement assumed` : "";
  return `<span id="preview-eta" title="the cluster's clock reads ${when(preview.at)}; done at ${when(preview.eta)} by it">done in ${duration(preview.etaSeconds)} of the cluster's clock (by ${when(preview.eta)} on it${assumed})</span>`;
}

// A preview row's action, coloured by the state it resembles: held waits, the others move.
const PREVIEW_ACTION = { hold: "waiting", replace: "running", delete: "running" };

function previewHtml(preview) {
  if (!preview) return `<p class="muted">no preview</p>`;
  let html = `<p>${esc(plural(preview.drifted.length, "drifted node"))} · ${esc(nodes(preview.replace))} to replace · ${esc(nodes(preview.delete || 0))} to delete · ${esc(nodes(preview.held))} held · ${previewEta(preview)}</p>`;
  if (preview.haltedNodePools && preview.haltedNodePools.length) html += `<p class="error">drift halted: ${esc(JSON.stringify(preview.haltedNodePools))}</p>`;
  if (preview.drifted.length) {
    html += `<table id="preview"><tr><th>node</th><th>NodePool</th><th>drift reason</th><th>drifted since (cluster clock)</th><th>action</th><th>why held, or note</th></tr>`;
    for (const row of preview.drifted.slice(0, 50)) {
      const why = row.blocker || row.drainNote || row.deleteNote || "";
      html += `<tr data-node="${esc(row.node)}"><td>${esc(row.node)}</td><td>${esc(row.nodePool)}</td><td>${esc(row.reason)}</td>
        <td>${when(row.since)}</td><td>${badge(PREVIEW_ACTION[row.action] || "pending", row.action)}</td><td>${esc(why)}</td></tr>`;
    }
    html += `</table>`;
    if (preview.drifted.length > 50) html += `<p class="muted">and ${esc(preview.drifted.length - 50)} more</p>`;
  }
  return html;
}

async function agentSections(fleet, name) {
  try {
    const agent = await api("GET", `/v1/fleets/${encodeURIComponent(fleet)}/clusters/${encodeURIComponent(name)}/agent`);
    const key = fleet + "/" + name;
    const points = series[key] = series[key] || [];
    const t = Date.parse(agent.status.time) / 1000;
    if (!points.length || points[points.length - 1].t !== t) points.push({ t, nodes: agent.status.nodesByImage });
    if (points.length > 600) points.shift();
    const events = agent.events.filter((e) => DISRUPTION.includes(e.type)).slice(-30).reverse();
    const st = agent.status;
    return `<section><h2>Nodes per image over time</h2>${chart(points)}
      <p class="muted" id="agent-status">${esc(nodes(st.nodes))} · ${esc(plural(st.drifted, "drifted node"))} · ${esc(plural(st.pendingPods, "pod"))} pending · ${esc(money(st.costPerHour))} · Kubernetes ${esc(st.kubernetesVersion)} · cluster clock ${when(st.time)}</p></section>
      <section><h2>Drift preview</h2>${previewHtml(agent.preview)}</section>
      <section><h2>Recent disruptions</h2><table id="disruptions"><tr><th>time (cluster clock)</th><th>event</th><th>object</th><th>reason</th></tr>
      ${events.map((e) => `<tr><td>${when(e.time)}</td><td>${esc(e.type)}</td><td>${esc(e.object)}</td><td>${esc(e.reason)}</td></tr>`).join("")}</table></section>`;
  } catch (error) {
    return `<section><h2>Agent</h2><p class="error" id="agent-error">${esc(error.message)}</p></section>`;
  }
}

async function clusterView(fleet, name) {
  const data = await api("GET", `/v1/fleets/${encodeURIComponent(fleet)}/clusters`);
  const info = data.clusters.find((c) => c.name === name) || {};
  const live = await agentSections(fleet, name);
  const rollouts = (await allRollouts()).filter((x) => x.fleet === fleet).reverse();
  let rows = "";
  for (const r of rollouts) {
    const status = await api("GET", `/v1/rollouts/${encodeURIComponent(r.id)}`);
    for (const c of status.clusters.filter((x) => x.cluster === name)) {
      rows += `<tr data-step="${esc(c.step)}"><td><a href="#/rollouts/${esc(r.id)}">${esc(r.id)}</a></td><td>${esc(r.release)}</td><td>${badge(c.state)}</td>
        <td class="rollback">${c.rollback ? badge(c.rollback) : ""}</td><td>${nowLine(c.now)}</td>
        <td class="image">${esc(image(c.imageBefore))} → ${esc(image(c.imageAfter))}</td><td>${esc(nodes(c.nodes))}</td>
        <td>${esc(replaced(c))}</td><td>${when(c.finishedAt)}</td><td class="error">${esc(c.error)}</td></tr>`;
    }
  }
  show(`<h1>Cluster ${esc(name)}</h1><section><p>Ring <b>${esc(info.ring)}</b> · account ${esc(info.account)} ·
    ${esc(info.region)} · agent <span class="mono">${esc(info.endpoint)}</span> · ${esc(windowsText(info))}</p>
    ${info.name ? contactLine(info) : ""}
    <p id="runs-now">runs now: ${info.observed ? `${esc(info.observed.nodes)} node(s) on ${esc(imagesNow(info.observed))} · observed ${ago(info.observed.observedAt)}` : "never observed"}</p></section>
    ${live}
    <section><h2>Steps across rollouts</h2><table id="cluster-steps"><tr><th>rollout</th><th>release</th><th>state</th>
    <th>rollback</th><th>now (last observation)</th><th>image before → after</th><th>nodes</th><th>replaced</th><th>finished</th><th>error</th></tr>${rows}</table></section>`);
}
