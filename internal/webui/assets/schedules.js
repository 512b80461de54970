// The schedules page: each schedule with its cron expression and time
// zone, its queue, when it runs next and last ran, the job its last tick
// made and what it runs, refreshed every 2 seconds. Pause asks for a
// second click; Resume acts at once (pauseButton). /schedules#NAME marks
// one schedule's row (a job made by a tick links there).
import { api, autoRefresh, commandLine, escapeHtml, localTime, pauseButton, relTime, whenTime } from "./util.js";

const $ = (sel) => document.querySelector(sel);

function render(list) {
  // A pause waiting for its second click would be lost to a redraw: the
  // page waits for the next refresh instead.
  if (document.querySelector("#schedules button.armed")) return;
  if (!list.schedules.length) {
    $("#schedules").innerHTML = `<tr><td colspan="10" class="empty">No schedules yet: create one with <code>spool schedules create nightly --cron '0 3 * * *' -- make nightly</code>.</td></tr>`;
    return;
  }
  const now = Date.now();
  const marked = decodeURIComponent(location.hash.slice(1));
  $("#schedules").innerHTML = list.schedules.map((s) => row(s, now, s.name === marked)).join("");
  for (const btn of document.querySelectorAll("button[data-schedule]")) {
    pauseButton(btn, `/api/v1/schedules/${encodeURIComponent(btn.dataset.schedule)}`, refresh);
  }
}

function row(s, now, marked) {
  const name = escapeHtml(s.name);
  const queue = s.job.queue || "default";
  const state = s.paused ? `<span class="state paused">paused</span>` : `<span class="state active">active</span>`;
  const next = s.next_tick_at
    ? `<span title="${escapeHtml(localTime(s.next_tick_at))}">${whenTime(s.next_tick_at, now)}</span>`
    : `<span class="muted">${s.paused ? "none while paused" : ""}</span>`;
  const last = s.last_tick_at ? `<span title="${escapeHtml(localTime(s.last_tick_at))}">${relTime(s.last_tick_at, now)}</span>` : "";
  const lastJob = s.last_job_id
    ? `<a class="id" href="/jobs/${encodeURIComponent(s.last_job_id)}" title="${escapeHtml(s.last_job_id)}">${escapeHtml(s.last_job_id.slice(-8))}</a>`
    : "";
  const cmd = commandLine(s.job);
  const action = s.paused ? "resume" : "pause";
  return `<tr id="${name}"${marked ? ' class="marked"' : ""}>
    <td class="id">${name}</td>
    <td class="mono">${escapeHtml(s.cron)}</td>
    <td>${escapeHtml(s.timezone || "UTC")}</td>
    <td><a href="/?queue=${encodeURIComponent(queue)}">${escapeHtml(queue)}</a></td>
    <td>${state}</td>
    <td class="next-run">${next}</td>
    <td class="last-run">${last}</td>
    <td class="last-job">${lastJob}</td>
    <td class="cmd" title="${escapeHtml(cmd)}">${escapeHtml(cmd)}</td>
    <td><button class="btn small${s.paused ? "" : " danger"}" type="button" data-schedule="${name}" data-action="${action}">${s.paused ? "Resume" : "Pause"}</button></td>
  </tr>`;
}

const refresh = autoRefresh(async () => render(await api("/api/v1/schedules")));
