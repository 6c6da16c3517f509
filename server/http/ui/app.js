// The operator view: a list of responses and a page per response, read from /v1/admin/...
// No framework, no build step, nothing fetched from elsewhere. Events stream as they commit
// (the admin stream sends the same SSE frames as GET /v1/responses/{id}?stream=true).
"use strict";

const $ = (sel) => document.querySelector(sel);
const view = $("#view");
const TERMINAL = new Set(["response.completed", "response.failed", "response.incomplete", "response.cancelled"]);
let stopStream = null;
let refreshTimer = null;

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function headers(extra = {}) {
  const h = { ...extra };
  const key = sessionStorage.getItem("key");
  const user = sessionStorage.getItem("user");
  if (key) h.Authorization = `Bearer ${key}`;
  if (user) h["x-agent-user-id"] = user;
  return h;
}
async function api(path, init = {}) {
  const res = await fetch(path, { ...init, headers: headers(init.headers || {}) });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body?.error?.message || `HTTP ${res.status}`);
  return body;
}
function age(seconds) {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}
const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "");
const badge = (s) => `<span class="badge s-${esc(s)}">${esc(s)}</span>`;
const short = (s, n = 120) => (s && s.length > n ? s.slice(0, n) + "…" : s || "");

function itemText(item) {
  if (!item) return "";
  if (item.type === "message") return (item.content || []).map((c) => c.text || c.refusal || "").join("");
  if (item.type === "function_call" || item.type === "mcp_approval_request") return `${item.name}(${item.arguments || ""})`;
  if (item.type === "function_call_output") return String(item.output ?? "");
  if (item.type === "mcp_call") return `${item.name}(${item.arguments || ""}) → ${item.output ?? ""}`;
  if (item.type === "reasoning") return (item.summary || []).map((s) => s.text).join("");
  return "";
}
function eventSummary(e) {
  const d = e.data || {};
  if (d.delta !== undefined) return short(String(d.delta), 80);
  if (d.item) return `${d.item.type} ${d.item.id || ""} ${d.item.status || ""}`;
  if (d.response) return d.response.status;
  return "";
}

// -- list ------------------------------------------------------------------------------------
async function showList() {
  const status = new URLSearchParams(location.hash.split("?")[1] || "").get("status") || "";
  view.innerHTML = `<div class="toolbar"><h2 style="margin:0">Responses</h2>
    <label>status <select id="status">${["", "queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]
      .map((s) => `<option ${s === status ? "selected" : ""} value="${s}">${s || "any"}</option>`).join("")}</select></label>
    <span id="counts" class="muted"></span></div><details id="app-input"></details><div id="list"><p class="muted">Loading…</p></div>`;
  $("#status").onchange = (ev) => { location.hash = ev.target.value ? `#/?status=${ev.target.value}` : "#/"; };
  const render = async () => {
    try {
      const [page, overview] = await Promise.all([
        api(`/v1/admin/responses?limit=100${status ? `&status=${status}` : ""}`),
        api("/v1/admin/overview"),
      ]);
      $("#counts").textContent = Object.entries(overview.counts).map(([k, v]) => `${k}: ${v}`).join("  ·  ");
      const input = overview.app_input;
      if (input && !$("#app-input").innerHTML) {
        $("#app-input").innerHTML = `<summary>app input: ${esc(input.kind)} · ${esc(input.input)}</summary>
          <pre class="mono">${esc(JSON.stringify(input.input_schema, null, 2))}</pre>`;
      }
      $("#replica").textContent = `replica ${overview.replica} · ${(overview.apps || [overview.app]).join(", ")} · ${overview.admin ? "every tenant" : "your responses"}`;
      $("#list").innerHTML = page.data.length === 0 ? `<p class="muted">No responses.</p>` : `<table><thead><tr>
        <th>response</th><th>status</th><th>app</th><th>age</th><th>owner replica</th><th>recoveries</th><th>mode</th>${overview.admin ? "<th>user</th>" : ""}</tr></thead><tbody>
        ${page.data.map((r) => `<tr data-id="${esc(r.id)}"><td><a class="mono" href="#/responses/${esc(r.id)}">${esc(r.id)}</a></td>
          <td>${badge(r.status)}${r.awaiting_input ? ' <span class="badge s-queued">awaiting input</span>' : ""}</td><td>${esc(r.app)}</td><td>${age(r.age_seconds)}</td>
          <td class="mono">${esc(r.owner || r.created_by)}</td><td>${r.recoveries}</td>
          <td>${r.background ? "background" : "foreground"} · ${esc(r.delivery)}</td>${overview.admin ? `<td class="mono">${esc(r.user_id)}</td>` : ""}</tr>`).join("")}
        </tbody></table>`;
    } catch (err) {
      $("#list").innerHTML = `<p class="error">${esc(err.message)}</p>`;
    }
  };
  await render();
  refreshTimer = setInterval(render, 2000);
}

// -- one response ----------------------------------------------------------------------------
function renderDetail(d) {
  const s = d.summary;
  const pendingOpen = d.pending.filter((p) => p.status === "pending");
  const answeredBy = [...new Set(d.pending.map((p) => p.answered_by).filter(Boolean))];
  $("#head").innerHTML = `<div class="grid">
    <div><span>response</span><b class="mono">${esc(s.id)}</b></div>
    <div><span>status</span><b id="status">${badge(d.response.status)}</b>${d.awaiting_input ? ' <span class="badge s-queued">awaiting input</span>' : ""}</div>
    <div><span>app</span>${esc(s.app)}</div>
    <div><span>mode</span>${s.background ? "background" : "foreground"} · ${esc(s.delivery)}</div>
    <div><span>created</span>${when(s.created_at)} (${age(s.age_seconds)} ago)</div>
    <div><span>owner replica</span><span class="mono">${esc(s.owner || "(none: not running)")}</span></div>
    <div><span>created by</span><span class="mono">${esc(s.created_by)}</span></div>
    <div><span>recoveries</span>${s.recoveries}</div>
    <div><span>trace</span><span class="mono">${esc(s.trace_id || "(tracing off)")}</span></div>
    ${s.previous_response_id ? `<div><span>continues</span><a class="mono" href="#/responses/${esc(s.previous_response_id)}">${esc(s.previous_response_id)}</a></div>` : ""}
    ${answeredBy.map((id) => `<div><span>continued by</span><a class="mono" href="#/responses/${esc(id)}">${esc(id)}</a></div>`).join("")}
  </div>`;
  $("#pending").innerHTML = pendingOpen.length === 0 ? "" : `<h2>Awaiting input</h2>${pendingOpen.map((p) => `
    <div class="card" data-call="${esc(p.call_id)}">
      <div><b>${esc(p.answer === "mcp_approval_response" ? "Approve tool call" : p.answer === "function_call_output" ? "Answer request" : "Reply with a message")}</b>
        ${p.name ? `<code>${esc(p.name)}(${esc(p.arguments || "")})</code>` : ""} <span class="muted mono">${esc(p.call_id)}</span></div>
      ${p.answer === "mcp_approval_response"
        ? `<input class="reason" placeholder="reason (optional)" size="40">
           <button class="primary" data-approve="true">Approve</button><button data-approve="false">Reject</button>`
        : `<textarea placeholder="${p.answer === "message" ? "your message" : "the output (text or JSON)"}"></textarea>
           <button class="primary" data-send="${esc(p.answer)}">Send</button>`}
      <span class="error"></span></div>`).join("")}`;
  for (const card of document.querySelectorAll("#pending .card")) {
    const callId = card.dataset.call;
    const fail = (err) => { card.querySelector(".error").textContent = err.message; };
    for (const btn of card.querySelectorAll("button[data-approve]")) {
      btn.onclick = () => reply(s.id, [{ type: "mcp_approval_response", approval_request_id: callId, approve: btn.dataset.approve === "true",
        ...(card.querySelector(".reason").value ? { reason: card.querySelector(".reason").value } : {}) }]).catch(fail);
    }
    const send = card.querySelector("button[data-send]");
    if (send) send.onclick = () => {
      const text = card.querySelector("textarea").value;
      const input = send.dataset.send === "function_call_output" ? [{ type: "function_call_output", call_id: callId, output: text }] : text;
      reply(s.id, input).catch(fail);
    };
  }
  $("#lives").innerHTML = `<h2>Lives</h2><table><thead><tr><th>life</th><th>began</th><th>replica</th><th>taken over from</th><th>resumed from checkpoint</th></tr></thead><tbody>
    ${d.lives.map((l) => `<tr><td>${l.life}</td><td>${when(l.at)}</td><td class="mono">${esc(l.owner)}</td><td class="mono">${esc(l.previous_owner || "")}</td>
      <td class="mono">${esc(l.life === 1 ? "(created)" : l.checkpoint_id || "(its stored input)")}</td></tr>`).join("")}</tbody></table>`;
  $("#supersteps").innerHTML = `<h2>Supersteps</h2>${d.supersteps.length === 0 ? `<p class="muted">No workflow checkpoint (yet): a plain agent keeps its session with its end.</p>` : `<table><thead><tr>
    <th>#</th><th>paired checkpoint</th><th>events up to</th><th>events</th><th>items closed</th><th>size</th><th>committed</th></tr></thead><tbody>
    ${d.supersteps.map((c) => `<tr><td>${c.superstep}</td><td class="mono">${esc(c.checkpoint_id)}</td><td>${c.event_seq}</td><td>${c.events}</td>
      <td class="mono">${esc(c.items_closed.join(", "))}</td><td>${c.bytes} B</td><td>${when(c.created_at)}</td></tr>`).join("")}</tbody></table>`}`;
  const jc = d.journal.counts;
  $("#journal").innerHTML = `<h2>Journal</h2><p>${jc.recorded} calls recorded, ${jc.replayed} replayed instead of made again, ${jc.rerun} tools run again under their idempotency key.</p>
    ${d.journal.records.length === 0 ? `<p class="muted">No record held (a re-run would replay nothing).</p>` : `<table><thead><tr><th>agent</th><th>call</th><th>record</th><th>size</th><th>recorded</th></tr></thead><tbody>
    ${d.journal.records.map((j) => `<tr><td class="mono">${esc(j.executor)}</td><td class="mono">${esc(j.place)}</td><td>${esc(j.state)}</td><td>${j.bytes} B</td><td>${when(j.created_at)}</td></tr>`).join("")}</tbody></table>`}`;
  $("#items").innerHTML = `<h2>Items</h2>${d.items.length === 0 ? `<p class="muted">None closed yet.</p>` : `<table><thead><tr><th>index</th><th>type</th><th>status</th><th>content</th></tr></thead><tbody>
    ${d.items.map((i) => `<tr><td>${i.output_index}</td><td>${esc(i.item.type)}</td><td>${badge(i.status)}${i.included ? "" : " <span class=muted>(not in output)</span>"}</td>
      <td>${esc(short(itemText(i.item), 300))}</td></tr>`).join("")}</tbody></table>`}`;
  const done = !["queued", "in_progress"].includes(d.response.status);
  $("#final").innerHTML = done ? `<h2>Final output</h2><div id="final-output" class="output">${esc((d.response.output || []).map(itemText).join("\n\n") || "(no output)")}</div>
    ${d.response.error ? `<p class="error">${esc(d.response.error.code)}: ${esc(d.response.error.message)}</p>` : ""}` : "";
  $("#webhooks").innerHTML = d.webhooks.length === 0 ? "" : `<h2>Webhook deliveries</h2><table><thead><tr><th>event</th><th>endpoint</th><th>status</th><th>attempts</th><th>last error</th></tr></thead><tbody>
    ${d.webhooks.map((w) => `<tr><td class="mono">${esc(w.type)} ${esc(w.event_id)}</td><td class="mono">${esc(w.endpoint)}</td><td>${badge(w.status)}</td><td>${w.attempts}</td><td>${esc(w.last_error || "")}</td></tr>`).join("")}</tbody></table>`;
}

async function reply(id, input) {
  const created = await api(`/v1/admin/responses/${id}/reply`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ input }) });
  location.hash = `#/responses/${created.id}`;
}

function addEvent(e) {
  const body = $("#timeline tbody");
  const row = document.createElement("tr");
  row.className = "live";
  row.innerHTML = `<td>${e.seq}</td><td class="mono">${esc(e.type)}</td><td>${esc(eventSummary(e))}</td>`;
  body.appendChild(row);
  while (body.children.length > 500) body.removeChild(body.firstChild);
  const n = Number($("#event-count").dataset.n) + 1;
  $("#event-count").dataset.n = n;
  $("#event-count").textContent = `${n} events`;
  if (e.data.response) $("#status").innerHTML = badge(e.data.response.status);
}

async function streamEvents(id, after, onEvent, signal) {
  const res = await fetch(`/v1/admin/responses/${id}/stream?after=${after}`, { headers: headers(), signal });
  if (!res.ok || !res.body) throw new Error(`stream: HTTP ${res.status}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    for (let i; (i = buf.indexOf("\n\n")) >= 0; buf = buf.slice(i + 2)) {
      const lines = buf.slice(0, i).split("\n");
      const data = lines.find((l) => l.startsWith("data: "));
      const idLine = lines.find((l) => l.startsWith("id: "));
      const type = lines.find((l) => l.startsWith("event: "));
      if (!data || !type) continue;
      const e = { seq: Number(idLine ? idLine.slice(4) : -1), type: type.slice(7), data: JSON.parse(data.slice(6)) };
      if (onEvent(e) === false) return;
    }
  }
}

async function showResponse(id) {
  view.innerHTML = `<p><a href="#/">← all responses</a></p><div id="head"></div><div id="pending"></div><div id="final"></div>
    <div id="lives"></div><div id="supersteps"></div><div id="journal"></div><div id="items"></div>
    <h2>Timeline <span id="event-count" class="muted" data-n="0"></span></h2>
    <table id="timeline"><thead><tr><th>seq</th><th>event</th><th>what</th></tr></thead><tbody></tbody></table>
    <div id="webhooks"></div>`;
  let detail;
  try {
    detail = await api(`/v1/admin/responses/${id}`);
  } catch (err) {
    view.innerHTML = `<p><a href="#/">← all responses</a></p><p class="error">${esc(err.message)}</p>`;
    return;
  }
  renderDetail(detail);
  for (const e of detail.events) addEvent(e);
  const last = detail.events.length ? detail.events[detail.events.length - 1].seq : -1;
  if (!["queued", "in_progress"].includes(detail.response.status)) return;
  const controller = new AbortController();
  stopStream = () => controller.abort();
  let pending = null;
  const refresh = () => {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      try { renderDetail(await api(`/v1/admin/responses/${id}`)); } catch (_) { /* the next one */ }
    }, 400);
  };
  streamEvents(id, last, (e) => {
    addEvent(e);
    if (e.type === "response.output_item.done") refresh();
    if (TERMINAL.has(e.type)) { clearTimeout(pending); pending = null; api(`/v1/admin/responses/${id}`).then(renderDetail); return false; }
    return true;
  }, controller.signal).catch((err) => { if (err.name !== "AbortError") console.warn(err); });
}

function route() {
  if (stopStream) { stopStream(); stopStream = null; }
  if (refreshTimer) { clearInterval(refreshTimer); refreshTimer = null; }
  const m = location.hash.match(/^#\/responses\/([^?]+)/);
  if (m) showResponse(decodeURIComponent(m[1]));
  else showList();
}

$("#key").value = sessionStorage.getItem("key") || "";
$("#user").value = sessionStorage.getItem("user") || "";
$("#credentials").onsubmit = (ev) => {
  ev.preventDefault();
  sessionStorage.setItem("key", $("#key").value.trim());
  sessionStorage.setItem("user", $("#user").value.trim());
  route();
};
window.addEventListener("hashchange", route);
route();
