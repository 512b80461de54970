// The jobs page: newest first, filtered by queue and state (kept in the
// URL so a filtered view can be shared), refreshed every 2 seconds.
import { api, commandLine, duration, ended, escapeHtml, localTime, relTime, stateBadge, whoami } from "./util.js";
import { memberTag } from "./scatterview.js";

const REFRESH_MS = 2000;
const PAGE = 100;
const $ = (sel) => document.querySelector(sel);

const params = new URLSearchParams(location.search);
$("#queue").value = params.get("queue") || "";
$("#state").value = params.get("state") || "";

// cursors of the pages before the one shown, for "Newer"; the first page is
// the live one, refreshed on a timer.
let cursors = [];
let cursor = "";
let nextCursor = "";
let timer = null;

function query() {
  const q = new URLSearchParams({ limit: PAGE });
  if ($("#queue").value.trim()) q.set("queue", $("#queue").value.trim());
  if ($("#state").value) q.set("state", $("#state").value);
  if (cursor) q.set("cursor", cursor);
  return q;
}

async function refresh() {
  clearTimeout(timer);
  try {
    const list = await api("/api/v1/jobs?" + query());
    nextCursor = list.next_cursor || "";
    render(list.jobs);
    $("#error").textContent = "";
    $("#updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    $("#error").textContent = e.message;
  }
  if (!cursor) timer = setTimeout(refresh, document.hidden ? REFRESH_MS * 5 : REFRESH_MS);
}

function render(jobs) {
  const now = Date.now();
  $("#older").disabled = !nextCursor;
  $("#newer").disabled = !cursor;
  if (!jobs.length) {
    $("#jobs").innerHTML = `<tr><td colspan="8" class="empty">No jobs${$("#queue").value || $("#state").value ? " match these filters" : " yet"}. Submit one with <code>spool submit -- echo hello</code>.</td></tr>`;
    return;
  }
  $("#jobs").innerHTML = jobs.map((j) => row(j, now)).join("");
}

function row(j, now) {
  const href = `/jobs/${encodeURIComponent(j.job_id)}`;
  const fin = ended(j);
  const took = fin && j.result.started_at ? duration(Date.parse(fin) - Date.parse(j.result.started_at)) : "";
  const cmd = commandLine(j.params);
  return `<tr>
    <td><a class="id" href="${href}">${escapeHtml(j.job_id)}</a>${j.params.scatter ? " " + memberTag(j) : ""}</td>
    <td>${escapeHtml(j.queue)}</td>
    <td>${stateBadge(j.state)}${j.cancel_requested && !fin ? ' <span class="muted">cancelling</span>' : ""}</td>
    <td class="num">${j.attempt}/${j.max_attempts}</td>
    <td class="cmd" title="${escapeHtml(cmd)}"><a href="${href}">${escapeHtml(cmd)}</a></td>
    <td title="${escapeHtml(localTime(j.created_at))}">${relTime(j.created_at, now)}</td>
    <td title="${escapeHtml(localTime(fin))}">${fin ? relTime(fin, now) : ""}${took ? ` <span class="muted">(${took})</span>` : ""}</td>
    <td class="num">${j.line_count.toLocaleString()}</td>
  </tr>`;
}

function filtersChanged() {
  const q = new URLSearchParams();
  if ($("#queue").value.trim()) q.set("queue", $("#queue").value.trim());
  if ($("#state").value) q.set("state", $("#state").value);
  history.replaceState(null, "", q.size ? "?" + q : location.pathname);
  cursors = [];
  cursor = "";
  refresh();
}

let typing = null;
$("#queue").addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(filtersChanged, 300);
});
$("#state").addEventListener("change", filtersChanged);
$("#filters").addEventListener("submit", (e) => {
  e.preventDefault();
  filtersChanged();
});
$("#older").addEventListener("click", () => {
  cursors.push(cursor);
  cursor = nextCursor;
  refresh();
});
$("#newer").addEventListener("click", () => {
  cursor = cursors.pop() || "";
  refresh();
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && !cursor) refresh();
});

whoami()
  .catch(() => {})
  .then(refresh);
