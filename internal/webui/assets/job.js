// The job page: the job's state, command, params, attempts and result, a
// cancel button, and its log, live. /jobs/<id>#L9000 opens the log at line
// 9000 and streams on from there.
import { api, confirmButton, jobTitle, duration, escapeHtml, isFinal, localTime, relTime, stateBadge, whoami } from "./util.js";
import { LogView } from "./logview.js";
import { LogStream } from "./stream.js";

const WINDOW = 5000; // lines shown on open without #L: the last ones
const PAGE = 1000; // lines per REST request
const REFRESH_MS = 3000; // job header refresh while the job is not finished

const jobId = decodeURIComponent(location.pathname.split("/").pop());
const $ = (sel) => document.querySelector(sel);

let job = null;
let stream = null;
let refreshTimer = null;
const view = new LogView($("#log"));

const status = {
  el: $("#status"),
  set(kind, text) {
    this.el.className = "statusbar " + kind;
    $("#status-text").textContent = text;
  },
};

// setLineCount shows how many lines the log has, as the stream learns it,
// between refreshes of the header.
function setLineCount() {
  $("#line-count").textContent = view.last ? `${view.last.toLocaleString()} lines` : "";
  const fact = $("#fact-lines");
  if (fact && job) fact.textContent = Math.max(job.line_count, view.last).toLocaleString();
}

// --- header -------------------------------------------------------------

function renderJob() {
  const external = job.kind === "external";
  document.title = `${jobTitle(job) || job.job_id} · spool`;
  $("#crumb-id").textContent = job.job_id;
  $("#command").textContent = jobTitle(job) || "(no command: recorded as rejected, never run)";
  $("#command").title = jobTitle(job);
  $("#state").innerHTML = stateBadge(job.state) + (job.cancel_requested && !isFinal(job.state) ? ' <span class="muted">cancel requested</span>' : "");
  const r = job.result;
  const facts = [
    ["queue", escapeHtml(job.queue)],
    external ? ["kind", '<span title="the log of a program spool did not start, sent to spool">external</span>'] : ["attempt", String(job.attempt)],
    ["created", `<span title="${escapeHtml(localTime(job.created_at))}">${relTime(job.created_at)}</span>`],
  ];
  if (r) {
    if (r.started_at) facts.push(["started", `<span title="${escapeHtml(localTime(r.started_at))}">${relTime(r.started_at)}</span>`]);
    if (r.finished_at) facts.push(["finished", `<span title="${escapeHtml(localTime(r.finished_at))}">${relTime(r.finished_at)}</span>`]);
    if (r.started_at && r.finished_at) facts.push(["took", duration(Date.parse(r.finished_at) - Date.parse(r.started_at))]);
    facts.push(["exit code", `<span class="${r.exit_code === 0 ? "" : "bad"}">${r.exit_code}</span>`]);
  } else if (job.state === "running" && job.lease_expires_at) {
    facts.push(["lease until", `<span title="${escapeHtml(localTime(job.lease_expires_at))}">${new Date(job.lease_expires_at).toLocaleTimeString()}</span>`]);
  }
  if (job.retries) facts.push(["retries", `${job.retried_attempts} of ${job.retries} used`]);
  if (job.state === "queued" && job.run_after) facts.push(["retry at", new Date(job.run_after).toLocaleTimeString()]);
  facts.push(["lines", `<span id="fact-lines">${Math.max(job.line_count, view.last).toLocaleString()}</span>`]);
  $("#facts").innerHTML = facts.map(([k, v]) => `<div><span>${k}</span><span>${v}</span></div>`).join("");
  renderScatter();
  $("#result-error").textContent = r && r.error ? r.error : "";
  $("#notes").innerHTML = (job.notes || []).map((n) => `<li>${escapeHtml(n)}</li>`).join("");
  renderParams();
  renderCancel();
}

// renderScatter says which scatter a batch or gather job belongs to, with
// the way to it.
function renderScatter() {
  const m = job.params && job.params.scatter;
  const el = $("#scatter-line");
  el.hidden = !m;
  if (!m) return;
  const link = `<a class="mono" href="/scatters/${encodeURIComponent(m.scatter_id)}">${escapeHtml(m.scatter_id)}</a>`;
  el.innerHTML = `Part of scatter ${link} ` + (m.gather ? "(the gather)" : `(batch ${m.batch_index} of ${m.batch_count})`);
}

// stdinPreview shows the start of a job's stdin (base64 in the JSON) as
// text, with its size.
function stdinPreview(b64) {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const text = new TextDecoder().decode(bytes.subarray(0, 200));
  return `${bytes.length} bytes: ${text}${bytes.length > 200 ? "…" : ""}`;
}

function renderParams() {
  const p = job.params || {};
  const rows = [];
  if (p.argv) rows.push(["argv", p.argv.map((a) => JSON.stringify(a)).join(" ")]);
  if (p.script) rows.push(["script", p.script]);
  for (const [k, v] of Object.entries(p.env || {})) rows.push([`env ${k}`, v]);
  if (p.working_dir) rows.push(["working dir", p.working_dir]);
  if (p.timeout_seconds) rows.push(["timeout", duration(p.timeout_seconds * 1000)]);
  if (p.repository_url) rows.push(["repository", p.repository_url + (p.ref ? ` @ ${p.ref}` : "")]);
  if (p.stdin) rows.push(["stdin", stdinPreview(p.stdin)]);
  if (job.source) rows.push(["source", job.source]);
  if (job.request_id) rows.push(["request id", job.request_id]);
  rows.push(["job id", job.job_id]);
  $("#params").innerHTML = rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join("");
}

// The cancel button asks for a second click (confirmButton).
const disarm = confirmButton($("#cancel"), "Cancel job", async () => {
  job = await api(`/api/v1/jobs/${encodeURIComponent(jobId)}/cancel`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ reason: "cancelled from the web UI" }),
  });
  renderJob();
}, (e) => showError(`Cancel failed: ${e.message}`));

function renderCancel() {
  const btn = $("#cancel");
  const can = !isFinal(job.state) && !job.cancel_requested;
  btn.hidden = !can;
  if (!can) disarm();
}

// refreshFailed is the message of a failed refresh, cleared by the next
// one that works (the server was restarting, say).
let refreshFailed = "";
async function refreshJob() {
  clearTimeout(refreshTimer);
  try {
    job = await api(`/api/v1/jobs/${encodeURIComponent(jobId)}`);
    renderJob();
    if (refreshFailed && $("#error").textContent === refreshFailed) showError("");
    refreshFailed = "";
  } catch (e) {
    refreshFailed = e.message;
    showError(e.message);
  }
  if (!isFinal(job.state)) refreshTimer = setTimeout(refreshJob, REFRESH_MS);
}

function showError(msg) {
  $("#error").textContent = msg;
}

// --- log ----------------------------------------------------------------

function logURL(params) {
  return `/api/v1/jobs/${encodeURIComponent(jobId)}/logs?` + new URLSearchParams(params);
}

function hashLine() {
  const m = /^#L(\d+)$/.exec(location.hash);
  return m ? Number(m[1]) : 0;
}

// openLog shows the log from line `from` (0: the last WINDOW lines) and
// then follows it live.
async function openLog(from) {
  stream?.stop();
  stream = null;
  view.reset();
  view.setFollow(!from);
  status.set("", "loading…");
  const after = from ? from - 1 : Math.max(0, job.line_count - WINDOW);
  let page;
  try {
    page = await api(logURL({ after_line: after, limit: PAGE }));
  } catch (e) {
    status.set("failed", `could not load the log: ${e.message}`);
    return;
  }
  view.append(page.events);
  view.flush();
  view.showEarlier(loadEarlier);
  setLineCount();
  if (from && !view.target(from)) {
    showError(`Line ${from} is past the end of the log (${page.pagination.total_lines.toLocaleString()} lines so far); showing what follows as it comes.`);
  }
  if (!page.pagination.has_more && isFinal(page.state)) {
    view.showEmpty("No output.");
    finished(job);
    return;
  }
  view.showEmpty(page.state === "queued" ? "Waiting for a worker…" : "No output yet.");
  stream = new LogStream(jobId, page.pagination.next_after_line, {
    onLines(lines) {
      view.append(lines);
      setLineCount();
    },
    onEnd(msg) {
      view.flush();
      setLineCount();
      finished(msg);
      refreshJob();
    },
    onStatus(s, d) {
      if (s === "live") status.set("live", "live");
      else if (s === "connecting") status.set("", "connecting…");
      else if (s === "reconnecting") status.set("reconnecting", `reconnecting… (try ${d.attempt})`);
    },
  }).start();
}

function finished(j) {
  const exit = j.result ? j.result.exit_code : j.exit_code;
  status.set(j.state === "succeeded" ? "finished" : "failed", `finished: ${j.state}, exit ${exit}`);
}

let loadingEarlier = false;
async function loadEarlier() {
  if (loadingEarlier || view.first <= 1) return;
  loadingEarlier = true;
  try {
    const page = await api(logURL({ before_line: view.first, limit: PAGE }));
    view.prepend(page.events);
    view.showEarlier(loadEarlier);
  } catch (e) {
    showError(`Could not load earlier lines: ${e.message}`);
  } finally {
    loadingEarlier = false;
  }
}

$("#follow").addEventListener("click", () => {
  view.setFollow(!view.follow);
  if (view.follow) view.scrollToEnd();
});
view.onFollow = (on) => $("#follow").classList.toggle("on", on);

// A click on a line number changes the hash: highlight that line, or open
// the log there if it is not loaded.
window.addEventListener("hashchange", () => {
  const n = hashLine();
  if (n && !view.target(n, "nearest")) openLog(n);
});

// notFound replaces the job's panels, which would stay empty, with what
// happened and the way back.
function notFound() {
  document.title = "No such job · spool";
  $("#crumb-id").textContent = jobId;
  $("#missing-id").textContent = jobId;
  $("#not-found").hidden = false;
  $("#job-head").hidden = true;
  $("#log-panel").hidden = true;
}

async function main() {
  await whoami().catch(() => {});
  try {
    job = await api(`/api/v1/jobs/${encodeURIComponent(jobId)}`);
  } catch (e) {
    if (e.status === 404) {
      notFound();
      return;
    }
    showError(e.message);
    status.set("failed", "no job");
    return;
  }
  renderJob();
  if (!isFinal(job.state)) refreshTimer = setTimeout(refreshJob, REFRESH_MS);
  await openLog(hashLine());
}

main();
