// The scatter page: a scatter's state, progress, spec and gather, its
// batches a page at a time (?from=N: from batch N), and a cancel button.
// While the scatter is live the page refreshes itself, as the job page
// does its header, and stops once the scatter and the batch jobs shown
// have ended.
import { api, commandLine, confirmButton, duration, escapeHtml, isFinal, localTime, relTime, stateBadge, whoami } from "./util.js";
import { cancelScatter, getScatter, isLive, listBatches, progressBar, readingText } from "./scatterview.js";

const PAGE = 100; // batches a page
const REFRESH_MS = 2000;

const scatterId = decodeURIComponent(location.pathname.split("/").pop());
const $ = (sel) => document.querySelector(sel);

let sc = null;
let page = null; // the batches shown
let gather = null; // the gather job, once there is one
let from = Math.max(0, Math.floor(Number(new URLSearchParams(location.search).get("from")) || 0));
let timer = null;

// --- header -------------------------------------------------------------

function render() {
  const cmd = commandLine(sc.spec.params);
  document.title = `${cmd || sc.scatter_id} · scatter · spool`;
  $("#crumb-id").textContent = sc.scatter_id;
  $("#command").textContent = cmd;
  $("#command").title = cmd;
  $("#state").innerHTML = stateBadge(sc.state);
  $("#scatter-error").textContent = sc.error;
  const p = sc.progress;
  $("#progress").innerHTML = progressBar(p, "Batches ended");
  const reading = sc.reading && !sc.reading.done ? ` · ${readingText(sc)}` : "";
  $("#progress-count").textContent = `${(p.succeeded + p.failed + p.cancelled).toLocaleString()} / ${p.batch_count.toLocaleString()} batches · ${p.items_done.toLocaleString()} of ${p.item_count.toLocaleString()} items done${reading}`;
  $("#legend").innerHTML = ["succeeded", "failed", "cancelled", "running", "queued", "waiting"]
    .map((k) => `<li class="${k}"><span class="swatch" aria-hidden="true"></span><span class="n" id="count-${k}">${p[k].toLocaleString()}</span> ${k}</li>`)
    .join("");
  renderFacts();
  renderParams();
  renderCancel();
}

function renderFacts() {
  const s = sc.spec;
  const facts = [
    ["queue", escapeHtml(s.queue)],
    ["batches", sc.progress.batch_count.toLocaleString()],
    ["items", sc.progress.item_count.toLocaleString()],
    ["concurrency", s.max_concurrency ? `at most ${s.max_concurrency.toLocaleString()} at once` : "no limit"],
    ["tolerated failures", tolerance(s)],
    ["attempts", `${s.max_attempts} a batch` + (s.retries ? `, ${s.retries} retries` : "")],
    ["created", `<span title="${escapeHtml(localTime(sc.created_at))}">${relTime(sc.created_at)}</span>`],
  ];
  if (isFinal(sc.state)) {
    facts.push(["ended", `<span title="${escapeHtml(localTime(sc.updated_at))}">${relTime(sc.updated_at)}</span>`]);
    facts.push(["took", duration(Date.parse(sc.updated_at) - Date.parse(sc.created_at))]);
  }
  if (sc.gather_job_id) {
    const href = `/jobs/${encodeURIComponent(sc.gather_job_id)}`;
    facts.push(["gather", `<a class="mono" id="gather-link" href="${href}">${escapeHtml(sc.gather_job_id)}</a>${gather ? " " + stateBadge(gather.state) : ""}`]);
  } else if (s.gather) {
    facts.push(["gather", `<span class="muted">${isFinal(sc.state) ? "did not run" : "runs once every batch has ended"}</span>`]);
  }
  // The jobs to open to learn why it failed.
  if (sc.failed_job_ids.length) {
    const links = sc.failed_job_ids.map((id) => `<a class="mono" href="/jobs/${encodeURIComponent(id)}">${escapeHtml(id)}</a>`);
    facts.push(["failed jobs", links.join(", ")]);
  }
  if (sc.redrive_count) {
    facts.push(["redrives", `${sc.redrive_count} <span class="muted">(spool scatters redrive)</span>`]);
  }
  $("#facts").innerHTML = facts.map(([k, v]) => `<div><span>${k}</span><span>${v}</span></div>`).join("");
}

// tolerance says how many failed batches the scatter lets pass: the
// driver fails it once the failures pass any bound that is set.
function tolerance(s) {
  const c = s.tolerated_failure_count;
  const pct = s.tolerated_failure_percentage;
  const count = c !== undefined ? `${c} ${c === 1 ? "batch" : "batches"}` : "";
  const share = pct !== undefined ? `${pct}% of the batches` : "";
  if (count && share) return `${count} and ${share}`;
  return count || share || "none";
}

function renderParams() {
  const s = sc.spec;
  const p = s.params;
  const rows = [];
  if (p.argv) rows.push(["argv", p.argv.map((a) => JSON.stringify(a)).join(" ")]);
  if (p.script) rows.push(["script", p.script]);
  for (const [k, v] of Object.entries(p.env || {})) rows.push([`env ${k}`, v]);
  if (p.working_dir) rows.push(["working dir", p.working_dir]);
  if (p.timeout_seconds) rows.push(["timeout", duration(p.timeout_seconds * 1000)]);
  if (p.repository_url) rows.push(["repository", p.repository_url + (p.ref ? ` @ ${p.ref}` : "")]);
  rows.push(["batch input", prettyJSON(s.batch_input)]);
  if (s.source) rows.push(["items", readingText(sc)]);
  if (s.results) rows.push(["results", s.results + (sc.result_manifest ? ` (manifest ${sc.result_manifest})` : "")]);
  if (s.gather) rows.push(["gather command", commandLine(s.gather)]);
  rows.push(["scatter id", sc.scatter_id]);
  rows.push(["batch jobs", `${sc.scatter_id}.0 … ${sc.scatter_id}.${Math.max(sc.progress.batch_count - 1, 0)}`]);
  $("#params").innerHTML = rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join("");
}

function prettyJSON(s) {
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch {
    return s;
  }
}

// The cancel button asks for a second click, as the job page's does.
const disarm = confirmButton($("#cancel"), "Cancel scatter", async () => {
  sc = await cancelScatter(scatterId, "cancelled from the web UI");
  render();
  // The batch jobs were cancelled with it: show them so.
  await refresh();
}, (e) => showError(`Cancel failed: ${e.message}`));

function renderCancel() {
  const can = isLive(sc.state);
  $("#cancel").hidden = !can;
  if (!can) disarm();
}

// --- batches ------------------------------------------------------------

function renderBatches() {
  const n = sc.progress.batch_count;
  const rows = page.batches;
  $("#batch-range").textContent = rows.length ? `${rows[0].batch_index.toLocaleString()}–${rows[rows.length - 1].batch_index.toLocaleString()} of ${n.toLocaleString()}` : "";
  $("#batches").innerHTML = rows.length ? rows.map(row).join("") : `<tr><td colspan="6" class="empty">No batches here.</td></tr>`;
  pagerLink($("#prev"), from > 0 ? Math.max(0, from - PAGE) : -1);
  pagerLink($("#next"), page.next_index || -1);
}

// pagerLink points a pager link at the page from batch i, or disables it
// (i < 0). The pages are plain links, so each has its own address.
function pagerLink(a, i) {
  if (i < 0) {
    a.removeAttribute("href");
    a.setAttribute("aria-disabled", "true");
    return;
  }
  a.href = i ? `?from=${i}` : location.pathname;
  a.removeAttribute("aria-disabled");
}

function row(b) {
  const id = `${sc.scatter_id}.${b.batch_index}`;
  const j = b.job;
  if (!j) {
    // Not handed to the queue: held back by the concurrency limit, or,
    // once the scatter has ended, never to run.
    const badge = isLive(sc.state) ? stateBadge("waiting") : '<span class="state not-run">not run</span>';
    return `<tr class="waiting">
      <td class="num">${b.batch_index}</td>
      <td><span class="id muted">${escapeHtml(id)}</span></td>
      <td>${badge}</td>
      <td class="num">${b.item_count ? b.item_count.toLocaleString() : ""}</td>
      <td class="num"></td>
      <td class="num"></td>
    </tr>`;
  }
  const href = `/jobs/${encodeURIComponent(j.job_id)}`;
  const r = j.result;
  const took = r && r.started_at && r.finished_at ? duration(Date.parse(r.finished_at) - Date.parse(r.started_at)) : "";
  return `<tr>
    <td class="num"><a href="${href}" tabindex="-1">${b.batch_index}</a></td>
    <td><a class="id" href="${href}">${escapeHtml(j.job_id)}</a></td>
    <td>${stateBadge(j.state)}${j.cancel_requested && !isFinal(j.state) ? ' <span class="muted">cancelling</span>' : ""}</td>
    <td class="num">${b.item_count.toLocaleString()}</td>
    <td class="num">${j.attempt}/${j.max_attempts}</td>
    <td class="num">${took}</td>
  </tr>`;
}

// --- refresh ------------------------------------------------------------

// busy: what the page shows may still change, so it keeps refreshing.
// That is while the scatter is live, and after it until its queued and
// running batches have ended too: a scatter is cancelled (or fails) at
// once, its batch jobs a moment later, and its driver counts them then.
function busy() {
  const p = sc.progress;
  return (
    isLive(sc.state) ||
    p.queued + p.running > 0 ||
    page.batches.some((b) => b.job && !isFinal(b.job.state)) ||
    (gather && !isFinal(gather.state))
  );
}

async function load() {
  sc = await getScatter(scatterId);
  // An address past the last batch (the scatter is smaller than the link
  // was made for) shows the last page.
  if (from >= sc.progress.batch_count) from = Math.max(0, Math.floor((sc.progress.batch_count - 1) / PAGE) * PAGE);
  page = await listBatches(scatterId, from, PAGE);
  gather = sc.gather_job_id ? await api(`/api/v1/jobs/${encodeURIComponent(sc.gather_job_id)}`).catch(() => null) : null;
  render();
  renderBatches();
  $("#updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

// refreshFailed is the message of a failed refresh, cleared by the next
// one that works (the server was restarting, say).
let refreshFailed = "";
async function refresh() {
  clearTimeout(timer);
  try {
    await load();
    if (refreshFailed && $("#error").textContent === refreshFailed) showError("");
    refreshFailed = "";
  } catch (e) {
    refreshFailed = e.message;
    showError(e.message);
  }
  schedule();
}

function schedule() {
  clearTimeout(timer);
  if (busy()) timer = setTimeout(refresh, document.hidden ? REFRESH_MS * 5 : REFRESH_MS);
}

document.addEventListener("visibilitychange", () => {
  if (!document.hidden && sc && busy()) refresh();
});

function showError(msg) {
  $("#error").textContent = msg;
}

// notFound replaces the scatter's panels, which would stay empty, with what
// happened and the way back.
function notFound() {
  document.title = "No such scatter · spool";
  $("#crumb-id").textContent = scatterId;
  $("#missing-id").textContent = scatterId;
  $("#not-found").hidden = false;
  $("#scatter-head").hidden = true;
  $("#batches-panel").hidden = true;
}

async function main() {
  await whoami().catch(() => {});
  try {
    await load();
  } catch (e) {
    if (e.status === 404) {
      notFound();
      return;
    }
    showError(e.message);
    return;
  }
  schedule();
}

main();
