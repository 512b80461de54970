// The queues page: each queue with what waits, runs and ended in it
// recently, how long its oldest job has waited and how many workers poll
// it, refreshed every 2 seconds. Pause and Resume act at once; pausing asks
// for a second click (confirmButton), since it stops work.
import { api, autoRefresh, confirmButton, duration, escapeHtml, localTime } from "./util.js";

const $ = (sel) => document.querySelector(sel);

function render(list) {
  // A pause waiting for its second click would be lost to a redraw: the
  // page waits for the next refresh instead.
  if (document.querySelector("#queues button.armed")) return;
  const hours = Math.round(list.window_seconds / 3600);
  $("#succeeded-head").textContent = `Succeeded ${hours}h`;
  $("#failed-head").textContent = `Failed ${hours}h`;
  if (!list.queues.length) {
    $("#queues").innerHTML = `<tr><td colspan="10" class="empty">No queues yet: a queue appears with its first job (<code>spool submit -q NAME -- CMD</code>).</td></tr>`;
    return;
  }
  const now = Date.now();
  $("#queues").innerHTML = list.queues.map((q) => row(q, now)).join("");
  for (const btn of document.querySelectorAll("button[data-queue]")) wire(btn);
}

function row(q, now) {
  const name = escapeHtml(q.name);
  const jobs = `/?queue=${encodeURIComponent(q.name)}`;
  const state = q.paused
    ? `<span class="state paused" title="paused ${escapeHtml(localTime(q.paused_at))}">paused</span>`
    : `<span class="state active">active</span>`;
  const oldest = q.oldest_queued_at ? `<span title="${escapeHtml(localTime(q.oldest_queued_at))}">${duration(now - Date.parse(q.oldest_queued_at))}</span>` : "";
  const action = q.paused ? "resume" : "pause";
  const label = q.paused ? "Resume" : "Pause";
  return `<tr>
    <td><a class="id" href="${jobs}">${name}</a></td>
    <td>${state}</td>
    <td class="num"><a href="${jobs}&state=queued">${q.queued.toLocaleString()}</a></td>
    <td class="num"><a href="${jobs}&state=running">${q.running.toLocaleString()}</a></td>
    <td class="num">${q.succeeded.toLocaleString()}</td>
    <td class="num${q.failed ? " bad" : ""}">${q.failed.toLocaleString()}</td>
    <td class="num">${q.cancelled.toLocaleString()}</td>
    <td>${oldest}</td>
    <td class="num">${q.workers}</td>
    <td><button class="btn small${q.paused ? "" : " danger"}" type="button" data-queue="${name}" data-action="${action}">${label}</button></td>
  </tr>`;
}

// wire makes a row's button pause (after a second click) or resume its
// queue, then redraws the page.
function wire(btn) {
  const act = async () => {
    await api(`/api/v1/queues/${encodeURIComponent(btn.dataset.queue)}/${btn.dataset.action}`, { method: "POST" });
    await refresh();
  };
  const failed = (e) => {
    $("#error").textContent = `${btn.textContent} failed: ${e.message}`;
  };
  if (btn.dataset.action === "pause") {
    confirmButton(btn, "Pause", act, failed, "Click again to pause");
    return;
  }
  btn.addEventListener("click", () => act().catch(failed));
}

const refresh = autoRefresh(async () => render(await api("/api/v1/queues")));
