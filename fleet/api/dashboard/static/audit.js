// Audit trails (contract C): a rollout's (#/audit/ID) and a fleet's own changes
// (#/fleets/NAME/audit): time, actor, action, object, reason, what changed (only the keys
// that differ, before → after) and the trace.
"use strict";

function isPlain(value) { return value !== null && typeof value === "object" && !Array.isArray(value); }

// The leaves of before and after that differ, by dotted path.
function changes(before, after, prefix) {
  const out = [];
  if (isPlain(before) || isPlain(after)) {
    const a = isPlain(before) ? before : {}, b = isPlain(after) ? after : {};
    if (!isPlain(before) && before !== null && before !== undefined) out.push({ path: prefix || "value", before, after });
    else if (!isPlain(after) && after !== null && after !== undefined) out.push({ path: prefix || "value", before, after });
    else {
      for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])]) {
        out.push(...changes(a[key], b[key], prefix ? `${prefix}.${key}` : key));
      }
    }
    return out;
  }
  if (empty(before) && empty(after)) return out;
  if (JSON.stringify(before) !== JSON.stringify(after)) out.push({ path: prefix || "value", before, after });
  return out;
}

// Nothing recorded: none, or an empty list or mapping.
function empty(value) {
  if (value === null || value === undefined) return true;
  if (Array.isArray(value)) return !value.length;
  return isPlain(value) && !Object.keys(value).length;
}

// One value in words: a maintenance window as "0 22 * * * for 2h Europe/Berlin", a mapping
// as "key: value, ...", a list joined by commas.
function words(value) {
  if (Array.isArray(value)) return value.map(words).join(", ");
  if (isPlain(value)) {
    if (value.schedule) return `${value.schedule} for ${value.duration} ${value.timeZone || "UTC"}`;
    return Object.entries(value).map(([k, v]) => `${k}: ${words(v)}`).join(", ");
  }
  return String(value);
}

function shown(value) {
  return empty(value) ? `<i class="muted">none</i>` : esc(words(value));
}

function diffHtml(entry) {
  const found = changes(entry.before, entry.after, "");
  if (!found.length) return `<span class="muted">no change recorded</span>`;
  return `<ul class="diff">${found.map((c) => `<li data-key="${esc(c.path)}"><code>${esc(c.path)}</code>: <del>${shown(c.before)}</del> → <ins>${shown(c.after)}</ins></li>`).join("")}</ul>`;
}

function auditTable(entries) {
  let html = `<table id="audit"><tr><th>time</th><th>actor</th><th>action</th><th>object</th><th>reason</th><th>before → after</th><th>trace</th></tr>`;
  for (const e of entries) {
    html += `<tr data-audit="${esc(e.id)}" data-action="${esc(e.action)}"><td>${when(e.at)}</td><td>${esc(e.actor)}</td><td>${esc(e.action)}</td>
      <td class="mono">${esc(e.object)}</td><td class="reason">${e.reason ? esc(e.reason) : '<span class="muted">–</span>'}</td>
      <td>${diffHtml(e)}</td><td title="span ${esc(e.spanId || "")}">${traceLink(e.traceId)}</td></tr>`;
  }
  return html + `</table>`;
}

async function rolloutAudit(id) {
  const data = await api("GET", `/v1/rollouts/${encodeURIComponent(id)}/audit`);
  show(`<h1>Audit trail of rollout <a href="#/rollouts/${esc(id)}">${esc(id)}</a></h1>
    <section>${auditTable(data.entries.slice().reverse())}</section>`);
}

async function fleetAudit(name) {
  let data;
  try {
    data = await api("GET", `/v1/fleets/${encodeURIComponent(name)}/audit`);
  } catch (error) {
    show(`<h1>Changes to fleet ${esc(name)}</h1><section><p class="error" id="audit-error">${esc(error.message)}</p></section>`);
    return;
  }
  const entries = (data.entries || []).slice().reverse();
  show(`<h1>Changes to fleet ${esc(name)}</h1>
    <section><p class="muted">newest first: applies of the Fleet (clusters, rings, windows, freezes) and what else touched it</p>
    ${auditTable(entries)}</section>`);
}
