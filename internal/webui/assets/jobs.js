// The jobs page: newest first, filtered by queue and state (kept in the
// URL so a filtered view can be shared), refreshed every 2 seconds.
import { api, jobTitle, duration, ended, escapeHtml, lineCount, livePages, localTime, relTime, stateBadge, whenTime } from "./util.js";
import { memberTag } from "./scatterview.js";

const PAGE = 100;
const $ = (sel) => document.querySelector(sel);

const params = new URLSearchParams(location.search);
$("#queue").value = params.get("queue") || "";
$("#state").value = params.get("state") || "";

function query(cursor) {
  const q = new URLSearchParams({ limit: PAGE });
  if ($("#queue").value.trim()) q.set("queue", $("#queue").value.trim());
  if ($("#state").value) q.set("state", $("#state").value);
  if (cursor) q.set("cursor", cursor);
  return q;
}

function render(jobs) {
  const now = Date.now();
  if (!jobs.length) {
    $("#jobs").innerHTML = `<tr><td colspan="9" class="empty">No jobs${$("#queue").value || $("#state").value ? " match these filters" : " yet"}. Submit one with <code>spool submit -- echo hello</code>.</td></tr>`;
    return;
  }
  $("#jobs").innerHTML = jobs.map((j) => row(j, now)).join("");
}

function row(j, now) {
  const href = `/jobs/${encodeURIComponent(j.job_id)}`;
  const fin = ended(j);
  return `<tr>
    <td><a class="id" href="${href}" title="${escapeHtml(j.job_id)}">${shortId(j.job_id)}</a></td>
    <td class="queue" title="${escapeHtml(j.queue)}">${escapeHtml(j.queue)}</td>
    <td>${stateBadge(j.state)}${j.cancel_requested && !fin ? ' <span class="muted">cancelling</span>' : ""}${waits(j, now)}</td>
    <td class="num">${j.kind === "external" ? '<span class="muted">external</span>' : `${j.attempt}/${j.max_attempts}`}</td>
    ${commandCell(j, href)}
    <td title="${escapeHtml(localTime(j.created_at))}">${relTime(j.created_at, now)}</td>
    ${durationCell(j, now)}
    <td title="${escapeHtml(localTime(fin))}">${fin ? relTime(fin, now) : ""}</td>
    <td class="num" title="${j.line_count.toLocaleString()} lines">${lineCount(j.line_count)}</td>
  </tr>`;
}

// waits says, beside a scheduled job's state, what it waits for: its
// time, or the jobs it runs after.
function waits(j, now) {
  if (j.state !== "scheduled") return "";
  const parts = [];
  if (j.run_after && Date.parse(j.run_after) > now) parts.push(`<span title="${escapeHtml(localTime(j.run_after))}">${whenTime(j.run_after, now)}</span>`);
  if (j.after && j.after.length) parts.push(`after ${j.after.length === 1 ? "1 job" : `${j.after.length} jobs`}`);
  return parts.length ? ` <span class="muted waits">${parts.join(", ")}</span>` : "";
}

// shortId shows the end of a job's id: the ids of jobs made close together
// share their start (it is the time), so the end tells them apart; a
// scatter's jobs keep the suffix after their scatter's id (.3, .gather)
// whole. The start stays in the link, taking no room, so copying the cell
// copies the whole id the command line takes.
function shortId(id) {
  const dot = id.lastIndexOf(".");
  const cut = Math.max(0, (dot > 8 ? dot : id.length) - 8);
  if (cut < 4) return escapeHtml(id);
  return `<span class="id-head">${escapeHtml(id.slice(0, cut))}</span>${escapeHtml(id.slice(cut))}`;
}

// commandCell says what the job runs, with the scatter it is part of; a
// job recorded as rejected (a consumed message that is not a job spec)
// runs nothing, and says why instead.
function commandCell(j, href) {
  const cmd = jobTitle(j);
  const tag = j.params.scatter ? memberTag(j) : "";
  if (!cmd && j.result && j.result.error) {
    const why = `rejected: ${j.result.error}`;
    return `<td class="cmd" title="${escapeHtml(why)}">${tag}<a class="rejected" href="${href}">${escapeHtml(why)}</a></td>`;
  }
  return `<td class="cmd" title="${escapeHtml(cmd)}">${tag}<a href="${href}">${escapeHtml(cmd)}</a></td>`;
}

// durationCell says how long the job's attempt ran, or has been running;
// its title says when it started.
function durationCell(j, now) {
  const fin = ended(j);
  const start = (j.result && j.result.started_at) || (j.state === "running" && j.started_at);
  if (!start) return "<td></td>";
  const title = `started ${localTime(start)}` + (fin ? `, ended ${localTime(fin)}` : "");
  if (!fin) return `<td class="running" title="${escapeHtml(title)}">${duration(now - Date.parse(start))}</td>`;
  return `<td title="${escapeHtml(title)}">${duration(Date.parse(fin) - Date.parse(start))}</td>`;
}

function filtersChanged() {
  const q = new URLSearchParams();
  if ($("#queue").value.trim()) q.set("queue", $("#queue").value.trim());
  if ($("#state").value) q.set("state", $("#state").value);
  history.replaceState(null, "", q.size ? "?" + q : location.pathname);
  pages.first();
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
const pages = livePages(async (cursor) => {
  const list = await api("/api/v1/jobs?" + query(cursor));
  return { items: list.jobs, next: list.next_cursor };
}, render);
