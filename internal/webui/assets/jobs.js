// The jobs page: newest first, filtered by queue and state (kept in the
// URL so a filtered view can be shared), refreshed every 2 seconds.
import { api, jobTitle, duration, ended, escapeHtml, livePages, localTime, relTime, stateBadge } from "./util.js";
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
  const took = fin && j.result.started_at ? duration(Date.parse(fin) - Date.parse(j.result.started_at)) : "";
  const cmd = jobTitle(j);
  return `<tr>
    <td><a class="id" href="${href}">${escapeHtml(j.job_id)}</a>${j.params.scatter ? " " + memberTag(j) : ""}</td>
    <td>${escapeHtml(j.queue)}</td>
    <td>${stateBadge(j.state)}${j.cancel_requested && !fin ? ' <span class="muted">cancelling</span>' : ""}</td>
    <td class="num">${j.kind === "external" ? '<span class="muted">external</span>' : `${j.attempt}/${j.max_attempts}`}</td>
    <td class="cmd" title="${escapeHtml(cmd)}"><a href="${href}">${escapeHtml(cmd)}</a></td>
    <td title="${escapeHtml(localTime(j.created_at))}">${relTime(j.created_at, now)}</td>
    <td title="${escapeHtml(localTime(j.started_at))}">${started(j, now)}</td>
    <td title="${escapeHtml(localTime(fin))}">${fin ? relTime(fin, now) : ""}${took ? ` <span class="muted">(${took})</span>` : ""}</td>
    <td class="num">${j.line_count.toLocaleString()}</td>
  </tr>`;
}

// started says when a job's attempt started and, while it runs, for how
// long it has been running.
function started(j, now) {
  if (!j.started_at || j.state === "queued") return "";
  const running = j.state === "running" ? ` <span class="muted">(running ${duration(now - Date.parse(j.started_at))})</span>` : "";
  return relTime(j.started_at, now) + running;
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
