// The queues page: each queue with what is scheduled, waits, runs (and
// the most that may) and ended in it recently (and, minute by minute, in
// the last hour: endedChart), how long
// its oldest job has waited and how many workers poll it, refreshed every
// 2 seconds. Pause and Resume act at once; pausing asks
// for a second click (pauseButton), since it stops work.
import { api, autoRefresh, duration, escapeHtml, localTime, pauseButton } from "./util.js";

const $ = (sel) => document.querySelector(sel);

function render(list) {
  // A pause waiting for its second click would be lost to a redraw: the
  // page waits for the next refresh instead.
  if (document.querySelector("#queues button.armed")) return;
  const hours = Math.round(list.window_seconds / 3600);
  $("#succeeded-head").textContent = `Succeeded ${hours}h`;
  $("#failed-head").textContent = `Failed ${hours}h`;
  if (!list.queues.length) {
    $("#queues").innerHTML = `<tr><td colspan="13" class="empty">No queues yet: a queue appears with its first job (<code>spool submit -q NAME -- CMD</code>).</td></tr>`;
    return;
  }
  const now = Date.now();
  $("#queues").innerHTML = list.queues.map((q) => row(q, now)).join("");
  for (const btn of document.querySelectorAll("button[data-queue]")) {
    pauseButton(btn, `/api/v1/queues/${encodeURIComponent(btn.dataset.queue)}`, refresh);
  }
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
    <td class="num"><a href="${jobs}&state=scheduled">${(q.scheduled || 0).toLocaleString()}</a></td>
    <td class="num"><a href="${jobs}&state=queued">${q.queued.toLocaleString()}</a></td>
    <td class="num"><a href="${jobs}&state=running">${q.running.toLocaleString()}</a></td>
    <td class="num max-running">${q.max_running ? q.max_running.toLocaleString() : '<span class="muted" title="no limit">-</span>'}</td>
    <td class="num">${q.succeeded.toLocaleString()}</td>
    <td class="num${q.failed ? " bad" : ""}">${q.failed.toLocaleString()}</td>
    <td class="num">${q.cancelled.toLocaleString()}</td>
    <td class="chart">${endedChart(q.ended_per_minute || [])}</td>
    <td>${oldest}</td>
    <td class="num">${q.workers}</td>
    <td><button class="btn small${q.paused ? "" : " danger"}" type="button" data-queue="${name}" data-action="${action}">${label}</button></td>
  </tr>`;
}

// The chart's size: a bar a minute, two pixels wide with a pixel between.
const BAR = 2, GAP = 1, HEIGHT = 22;

// endedChart draws a queue's jobs ended per minute over the last hour (the
// server gives the 60 minutes, oldest first) as an inline SVG: a bar a
// minute, succeeded at the bottom, failed on them, cancelled on top, scaled
// to the busiest minute. Each minute's title gives its figures, so a
// pointer over a bar says what it is. Nothing ended in the hour: no chart.
function endedChart(minutes) {
  if (!minutes.length) return "";
  const total = (m) => m.succeeded + m.failed + m.cancelled;
  const peak = Math.max(1, ...minutes.map(total));
  const sum = (k) => minutes.reduce((n, m) => n + m[k], 0);
  const label = `Jobs ended per minute in the last hour: ${sum("succeeded")} succeeded, ${sum("failed")} failed, ${sum("cancelled")} cancelled (busiest minute ${peak})`;
  const bars = minutes.map((m, i) => {
    const x = i * (BAR + GAP);
    let y = HEIGHT;
    const seg = (n, cls) => {
      if (!n) return "";
      const h = Math.max(1, Math.round((n / peak) * HEIGHT));
      y -= h;
      return `<rect class="${cls}" x="${x}" y="${y}" width="${BAR}" height="${h}"></rect>`;
    };
    const at = new Date(m.minute).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    const title = `${at}: ${m.succeeded} succeeded, ${m.failed} failed, ${m.cancelled} cancelled`;
    // A full-height rect under the bar, so the whole column shows its title.
    return `<g class="minute" data-ended="${total(m)}"><title>${escapeHtml(title)}</title>` +
      `<rect class="hit" x="${x}" y="0" width="${BAR + GAP}" height="${HEIGHT}"></rect>` +
      seg(m.succeeded, "succeeded") + seg(m.failed, "failed") + seg(m.cancelled, "cancelled") + `</g>`;
  }).join("");
  const width = minutes.length * (BAR + GAP) - GAP;
  return `<svg class="ended-chart" width="${width}" height="${HEIGHT}" viewBox="0 0 ${width} ${HEIGHT}" role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title>${bars}</svg>`;
}

const refresh = autoRefresh(async () => render(await api("/api/v1/queues?ended_per_minute=true")));
