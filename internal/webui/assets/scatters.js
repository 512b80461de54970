// The scatters page: newest first, a page at a time, with each one's
// progress. The first page refreshes itself, as the jobs page does.
import { commandLine, escapeHtml, localTime, relTime, stateBadge, whoami } from "./util.js";
import { ended, listScatters, progressBar } from "./scatterview.js";

const REFRESH_MS = 2000;
const PAGE = 50;
const $ = (sel) => document.querySelector(sel);

// cursors of the pages before the one shown, for "Newer"; the first page is
// the live one, refreshed on a timer.
let cursors = [];
let cursor = "";
let nextCursor = "";
let timer = null;

async function refresh() {
  clearTimeout(timer);
  try {
    const list = await listScatters(PAGE, cursor);
    nextCursor = list.next_cursor;
    render(list.scatters);
    $("#error").textContent = "";
    $("#updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    $("#error").textContent = e.message;
  }
  if (!cursor) timer = setTimeout(refresh, document.hidden ? REFRESH_MS * 5 : REFRESH_MS);
}

function render(scatters) {
  const now = Date.now();
  $("#older").disabled = !nextCursor;
  $("#newer").disabled = !cursor;
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
