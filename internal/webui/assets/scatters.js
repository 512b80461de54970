// The scatters page: newest first, a page at a time, with each one's
// progress. The first page refreshes itself, as the jobs page does.
import { commandLine, escapeHtml, livePages, localTime, relTime, stateBadge } from "./util.js";
import { ended, listScatters, progressBar } from "./scatterview.js";

const PAGE = 50;
const $ = (sel) => document.querySelector(sel);

function render(scatters) {
  const now = Date.now();
  if (!scatters.length) {
    $("#scatters").innerHTML = `<tr><td colspan="8" class="empty">No scatters yet. Start one with <code>spool scatter --items items.jsonl -- ./each-batch.sh</code>.</td></tr>`;
    return;
  }
  $("#scatters").innerHTML = scatters.map((s) => row(s, now)).join("");
}

function row(s, now) {
  const href = `/scatters/${encodeURIComponent(s.scatter_id)}`;
  const p = s.progress;
  const cmd = commandLine(s.spec.params);
  return `<tr>
    <td><a class="id" href="${href}">${escapeHtml(s.scatter_id)}</a></td>
    <td>${escapeHtml(s.spec.queue)}</td>
    <td>${stateBadge(s.state)}</td>
    <td class="bar">${progressBar(p, `Batches of scatter ${s.scatter_id} ended`, "small")}</td>
    <td class="num">${ended(p).toLocaleString()}/${p.batch_count.toLocaleString()}</td>
    <td class="num">${p.items_done.toLocaleString()}/${p.item_count.toLocaleString()}</td>
    <td class="cmd" title="${escapeHtml(cmd)}"><a href="${href}">${escapeHtml(cmd)}</a></td>
    <td title="${escapeHtml(localTime(s.created_at))}">${relTime(s.created_at, now)}</td>
  </tr>`;
}

livePages(async (cursor) => {
  const list = await listScatters(PAGE, cursor);
  return { items: list.scatters, next: list.next_cursor };
}, render);
