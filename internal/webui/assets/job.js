// The job page: the job's state, command, params, attempts and result,
// cancel and rerun buttons, and its log, live. /jobs/<id>#L9000 opens the log at line
// 9000 and streams on from there. The log can be searched (on the server,
// so a log of millions of lines is never loaded for it), shown with the
// time of each line, and downloaded whole; a click on a line number copies
// a link to the line. Keys: End goes to the tail and follows it, Home to
// the top of what is loaded, / to the search box.
import { plainText } from "./ansi.js";
import { api, confirmButton, jobTitle, duration, escapeHtml, isFinal, localTime, relTime, stateBadge, whenTime, whoami } from "./util.js";
import { LogView } from "./logview.js";
import { LogStream } from "./stream.js";
import { signIn } from "./auth.js";

const WINDOW = 5000; // lines shown on open without #L: the last ones
const PAGE = 1000; // lines per REST request
const REFRESH_MS = 3000; // job header refresh while the job is not finished
const SEARCH_PAGE = 100; // matches per search request
const TIMES_KEY = "spool.showTimes"; // remembers the timestamps toggle

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
  if (job.state === "running" && job.started_at) {
    facts.push(["started", `<span title="${escapeHtml(localTime(job.started_at))}">${relTime(job.started_at)}</span>`]);
    facts.push(["running for", `<span id="fact-elapsed">${duration(Date.now() - Date.parse(job.started_at))}</span>`]);
  }
  if (r) {
    if (r.started_at) facts.push(["started", `<span title="${escapeHtml(localTime(r.started_at))}">${relTime(r.started_at)}</span>`]);
    if (r.finished_at) facts.push(["finished", `<span title="${escapeHtml(localTime(r.finished_at))}">${relTime(r.finished_at)}</span>`]);
    if (r.started_at && r.finished_at) facts.push(["took", duration(Date.parse(r.finished_at) - Date.parse(r.started_at))]);
    facts.push(["exit code", `<span class="${r.exit_code === 0 ? "" : "bad"}">${r.exit_code}</span>`]);
  } else if (job.state === "running" && job.lease_expires_at) {
    facts.push(["lease until", `<span title="${escapeHtml(localTime(job.lease_expires_at))}">${new Date(job.lease_expires_at).toLocaleTimeString()}</span>`]);
  }
  if (job.retries) facts.push(["retries", `${job.retried_attempts} of ${job.retries} used`]);
  if (job.state === "scheduled" && job.run_after) {
    facts.push([job.retried_attempts ? "retry at" : "queued at", `<span id="fact-run-after" title="${escapeHtml(whenTime(job.run_after))}">${escapeHtml(localTime(job.run_after))}</span>`]);
  }
  if (job.priority) facts.push(["priority", `<span id="fact-priority">${job.priority}</span>`]);
  if (job.schedule) facts.push(["schedule", `<a id="fact-schedule" href="/schedules#${encodeURIComponent(job.schedule)}">${escapeHtml(job.schedule)}</a>`]);
  facts.push(["lines", `<span id="fact-lines">${Math.max(job.line_count, view.last).toLocaleString()}</span>`]);
  $("#facts").innerHTML = facts.map(([k, v]) => `<div><span>${k}</span><span>${v}</span></div>`).join("");
  renderScatter();
  renderReruns();
  renderChain();
  renderDeliveries();
  $("#result-error").textContent = r && r.error ? r.error : "";
  $("#notes").innerHTML = (job.notes || []).map((n) => `<li>${escapeHtml(n)}</li>`).join("");
  renderParams();
  renderCancel();
  renderRerun();
  loadArtifacts();
}

// The elapsed time of a running job counts up between header refreshes.
setInterval(() => {
  const el = $("#fact-elapsed");
  if (el && job && job.state === "running" && job.started_at) el.textContent = duration(Date.now() - Date.parse(job.started_at));
}, 1000);

// renderReruns links the job this one runs again and the jobs that run it
// again.
function renderReruns() {
  const parts = [];
  if (job.rerun_of) parts.push(`Rerun of ${jobLink(job.rerun_of)}.`);
  if (job.reruns && job.reruns.length) parts.push(`Rerun as ${job.reruns.map(jobLink).join(", ")}.`);
  const el = $("#rerun-line");
  el.hidden = !parts.length;
  el.innerHTML = parts.join(" ");
}

// jobLink is a link to a job's page.
const jobLink = (id) => `<a class="mono" href="/jobs/${encodeURIComponent(id)}">${escapeHtml(id)}</a>`;

// renderChain links the jobs this one runs after (and, while it is
// scheduled, says it waits for them) and the jobs that run after it.
function renderChain() {
  const after = job.after || [];
  const followers = job.followers || [];
  const a = $("#after-line");
  a.hidden = !after.length;
  const waiting = job.state === "scheduled" ? "Waits for" : "Ran after";
  a.innerHTML = after.length ? `${waiting} ${after.map(jobLink).join(", ")}${job.state === "scheduled" ? " to succeed" : ""}.` : "";
  const f = $("#followers-line");
  f.hidden = !followers.length;
  f.innerHTML = followers.length ? `Followed by ${followers.map(jobLink).join(", ")}.` : "";
}

// renderDeliveries shows the URLs told of the job's end and each POST to
// them: when, the answer, how long it took, and what went wrong.
function renderDeliveries() {
  const urls = job.notify || [];
  const ds = job.deliveries || [];
  $("#deliveries").hidden = !urls.length && !ds.length;
  let line = urls.length ? `Told of its end: ${urls.map(escapeHtml).join(", ")}.` : "";
  if (job.notify_due) line += ` Next try ${whenTime(job.notify_due)}.`;
  else if (urls.length && !isFinal(job.state)) line += " Nothing is sent before it ends.";
  $("#notify-line").innerHTML = line;
  $("#delivery-rows").innerHTML = ds.map((d) => {
    const result = d.delivered ? '<span class="ok">delivered</span>'
      : `<span class="bad">${d.given_up ? "given up: " : "failed: "}${escapeHtml(d.error || "")}</span>`;
    return `<tr>
      <td title="${escapeHtml(localTime(d.at))}">${relTime(d.at)}</td>
      <td class="cmd" title="${escapeHtml(d.url)}">${escapeHtml(d.url)}</td>
      <td class="num">${d.try}</td>
      <td class="num">${d.status || "-"}</td>
      <td class="num">${duration(d.took_seconds * 1000)}</td>
      <td>${result}</td>
    </tr>`;
  }).join("");
}

// --- artifacts ----------------------------------------------------------

// artifactsShown is the state of the job when its artifacts were last
// read: they are read again when it changes (a running job's worker
// uploads them as its command ends).
let artifactsShown = "";

// loadArtifacts lists the files the job kept, each a download link. A
// server that keeps no files answers 503: the section stays hidden.
async function loadArtifacts() {
  if (!job || job.kind === "external" || artifactsShown === job.state) return;
  artifactsShown = job.state;
  let list;
  try {
    list = await api(`/api/v1/jobs/${encodeURIComponent(jobId)}/artifacts`);
  } catch {
    return;
  }
  const files = list.artifacts || [];
  const globs = (job.params && job.params.artifacts) || [];
  $("#artifacts").hidden = !files.length && !globs.length;
  const total = files.reduce((n, a) => n + a.size, 0);
  let line = files.length ? `${files.length} file${files.length === 1 ? "" : "s"}, ${bytes(total)}.` : "None kept yet.";
  if (globs.length) line += ` Kept from ${globs.map((g) => `<code>${escapeHtml(g)}</code>`).join(", ")} once the command ends.`;
  $("#artifacts-line").innerHTML = line;
  $("#artifact-rows").innerHTML = files.map((a) => {
    const href = `/api/v1/jobs/${encodeURIComponent(jobId)}/artifacts/${a.path.split("/").map(encodeURIComponent).join("/")}`;
    return `<tr>
      <td class="cmd"><a class="mono" href="${escapeHtml(href)}" download title="SHA-256 ${escapeHtml(a.sha256)}">${escapeHtml(a.path)}</a></td>
      <td class="num" title="${a.size.toLocaleString()} bytes">${bytes(a.size)}</td>
      <td title="${escapeHtml(localTime(a.modified))}">${relTime(a.modified)}</td>
    </tr>`;
  }).join("");
}

// bytes is a size as people read it: 980 B, 12.4 MB.
function bytes(n) {
  if (n < 1000) return `${n} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let i = -1;
  do {
    n /= 1000;
    i++;
  } while (n >= 1000 && i < units.length - 1);
  return `${n.toFixed(1)} ${units[i]}`;
}

// rerunnable says whether the server would run the job again: a finished
// command that is not part of a scatter.
function rerunnable(j) {
  const p = j.params || {};
  return isFinal(j.state) && j.kind !== "external" && !p.scatter && ((p.argv && p.argv.length) || p.script);
}

function renderRerun() {
  $("#rerun").hidden = !rerunnable(job);
}

// Rerun makes the new job and opens its page.
$("#rerun").addEventListener("click", async () => {
  const btn = $("#rerun");
  btn.disabled = true;
  try {
    const fresh = await api(`/api/v1/jobs/${encodeURIComponent(jobId)}/rerun`, { method: "POST" });
    location.assign(`/jobs/${encodeURIComponent(fresh.job_id)}`);
  } catch (e) {
    showError(`Rerun failed: ${e.message}`);
    btn.disabled = false;
  }
});

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
  // A secret's value never reaches the page: the server sends its name.
  for (const name of p.secret_names || []) rows.push([`secret ${name}`, "***"]);
  if (p.working_dir) rows.push(["working dir", p.working_dir]);
  if (p.timeout_seconds) rows.push(["timeout", duration(p.timeout_seconds * 1000)]);
  if (p.repository_url) rows.push(["repository", p.repository_url + (p.ref ? ` @ ${p.ref}` : "")]);
  if (p.stdin) rows.push(["stdin", stdinPreview(p.stdin)]);
  if (p.artifacts && p.artifacts.length) rows.push(["artifacts", p.artifacts.join(" ")]);
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
  // A finished job's webhooks may still be owed: their tries show as they
  // are made.
  if (!isFinal(job.state) || job.notify_due) refreshTimer = setTimeout(refreshJob, REFRESH_MS);
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
  // Until the job finishes, the sections its newest lines are in run.
  view.live = !isFinal(page.state);
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
      else if (s === "refused") {
        status.set("failed", `stopped: ${d.reason}`);
        // Another key may still read the job: once the person signs in
        // again, the log goes on where it stopped.
        const refused = stream;
        signIn(d.reason).then(() => refused === stream && refused.resume());
      }
    },
  }).start();
}

function finished(j) {
  const exit = j.result ? j.result.exit_code : j.exit_code;
  status.set(j.state === "succeeded" ? "finished" : "failed", `finished: ${j.state}, exit ${exit}`);
  view.finish(j.state === "succeeded");
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
// the log there if it is not loaded. A search result asks to see the line
// in the middle of the view rather than only just in it.
let jumpBlock = "";
window.addEventListener("hashchange", () => {
  const n = hashLine();
  const block = jumpBlock || "nearest";
  jumpBlock = "";
  markHit(n);
  if (n) jumpTo(n, block);
});

// markHit highlights the search result of line n, and no other: a jump
// elsewhere (a link, a line number, the address) leaves no result looking
// like where the reader is.
function markHit(n) {
  for (const a of document.querySelectorAll("#search-hits .hit.active")) {
    if (Number(a.dataset.line) !== n) a.classList.remove("active");
  }
  document.querySelector(`#search-hits .hit[data-line="${n}"]`)?.classList.add("active");
}

function jumpTo(n, block) {
  if (!view.target(n, block)) openLog(n);
}

// goToLine shows line n as a link to it does, also when the address has
// that link already (then there is no hashchange).
function goToLine(n, block) {
  if (location.hash === `#L${n}`) {
    jumpTo(n, block);
    return;
  }
  jumpBlock = block;
  location.hash = `#L${n}`;
}

// toTail goes to the end of the log and follows it: in the view when the
// loaded lines reach the end, else by opening the log at its last lines
// (a view opened far up a long log would otherwise have everything in
// between streamed to it first).
function toTail() {
  history.replaceState(null, "", location.pathname + location.search);
  if (!job || view.last >= job.line_count) view.toEnd();
  else openLog(0);
}

// --- copying a link to a line -------------------------------------------

// The number's own link sets the hash (and highlights the line); the click
// also copies the line's address, and a cue on the line says so.
view.onLineNumber = (n, e) => {
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return; // opening the link elsewhere
  const url = new URL(location.href);
  url.hash = `L${n}`;
  copyText(url.href).then((ok) => cue(n, ok ? "Link copied" : "Copy failed: the link is in the address bar"));
};

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // No clipboard API: a page served over plain HTTP from another host
    // than this one is not a secure context. The older command still works.
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.className = "offscreen";
    document.body.append(ta);
    ta.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      // ok stays false
    }
    ta.remove();
    return ok;
  }
}

function cue(n, text) {
  const row = document.getElementById(`L${n}`);
  if (!row) return;
  row.querySelector(".copied")?.remove();
  const el = document.createElement("span");
  el.className = "copied";
  el.setAttribute("role", "status");
  el.textContent = text;
  row.append(el);
  setTimeout(() => el.remove(), 1500);
}

// --- timestamps ---------------------------------------------------------

function showTimes(on) {
  view.showTimes(on);
  const btn = $("#timestamps");
  btn.classList.toggle("on", on);
  btn.setAttribute("aria-pressed", String(on));
  try {
    localStorage.setItem(TIMES_KEY, on ? "1" : "");
  } catch {
    // storage off: the choice lasts for this page
  }
}

$("#timestamps").addEventListener("click", () => showTimes(!$("#timestamps").classList.contains("on")));

// --- search -------------------------------------------------------------

// The search the results are of: what, how, and where the next request
// goes on (after_line). seq tells a late answer of an older search.
const search = { q: "", caseSensitive: false, after: 0, count: 0, seq: 0 };

function searchURL() {
  const p = { q: search.q, after_line: search.after, limit: SEARCH_PAGE };
  if (search.caseSensitive) p.case = "sensitive";
  return `/api/v1/jobs/${encodeURIComponent(jobId)}/logs/search?` + new URLSearchParams(p);
}

// runSearch starts a search for what the box holds, or with more, goes on
// with the one shown.
async function runSearch(more) {
  if (!more) {
    search.q = $("#search").value;
    search.caseSensitive = $("#search-case").checked;
    search.after = 0;
    search.count = 0;
    $("#search-hits").replaceChildren();
    if (!search.q) {
      closeSearch();
      return;
    }
    $("#search-results").hidden = false;
  }
  const seq = ++search.seq;
  $("#search-summary").textContent = "Searching…";
  $("#search-more").disabled = true;
  let res;
  try {
    res = await api(searchURL());
  } catch (e) {
    if (seq === search.seq) $("#search-summary").textContent = `Search failed: ${e.message}`;
    return;
  }
  if (seq !== search.seq) return;
  $("#search-hits").insertAdjacentHTML("beforeend", res.matches.map(hitHtml).join(""));
  search.count += res.matches.length;
  search.after = res.next_after_line;
  const matches = `${search.count ? search.count.toLocaleString() : "No"} match${search.count === 1 ? "" : "es"}`;
  $("#search-summary").textContent = res.has_more
    ? `${matches} in lines 1–${res.next_after_line.toLocaleString()} of ${res.total_lines.toLocaleString()}`
    : `${matches} in ${res.total_lines.toLocaleString()} lines`;
  const btn = $("#search-more");
  btn.hidden = !res.has_more;
  btn.disabled = false;
  // A call that reached its scan limit found what there is up to its
  // line; going on searches the next part of the log.
  btn.textContent = res.scan_limit_reached ? "Search further" : "More matches";
}

function hitHtml(l) {
  const cls = "hit" + (l.stream === "stderr" ? " err" : "");
  return `<li><a class="${cls}" href="#L${l.line_number}" data-line="${l.line_number}"><span class="no">${l.line_number}</span>` +
    `<span class="tx">${highlight(plainText(l.text))}</span></a></li>`;
}

// highlight marks the query in a result's text, showing the part of a long
// line around the first match.
function highlight(text) {
  const fold = (s) => (search.caseSensitive ? s : s.toLowerCase());
  const hay = fold(text);
  const needle = fold(search.q);
  let i = hay.indexOf(needle);
  // Folding that changes lengths would put marks in the wrong places.
  if (hay.length !== text.length || i < 0) return escapeHtml(text.slice(0, 400));
  const start = i > 80 ? i - 60 : 0;
  const end = Math.min(text.length, start + 400);
  let out = start ? "…" : "";
  let pos = start;
  while (i >= 0 && i + needle.length <= end) {
    out += escapeHtml(text.slice(pos, i)) + `<mark>${escapeHtml(text.slice(i, i + needle.length))}</mark>`;
    pos = i + needle.length;
    i = hay.indexOf(needle, pos);
  }
  return out + escapeHtml(text.slice(pos, end)) + (end < text.length ? "…" : "");
}

function closeSearch() {
  search.seq++;
  $("#search-results").hidden = true;
  $("#search-hits").replaceChildren();
}

$("#search-form").addEventListener("submit", (e) => {
  e.preventDefault();
  runSearch(false);
});
$("#search").addEventListener("keydown", (e) => {
  if (e.key === "Escape") closeSearch();
});
$("#search-more").addEventListener("click", () => runSearch(true));
$("#search-close").addEventListener("click", closeSearch);
$("#search-hits").addEventListener("click", (e) => {
  const a = e.target.closest("a.hit");
  if (!a || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  const n = Number(a.dataset.line);
  markHit(n);
  goToLine(n, "center");
});

// --- keys ---------------------------------------------------------------

document.addEventListener("keydown", (e) => {
  if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.target.closest?.("input, textarea, select, [contenteditable]")) return; // typing
  if (e.key === "End") {
    e.preventDefault();
    toTail();
  } else if (e.key === "Home") {
    e.preventDefault();
    view.setFollow(false);
    view.el.scrollTop = 0;
  } else if (e.key === "/") {
    e.preventDefault();
    $("#search").focus();
  }
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
  $("#raw").href = `/api/v1/jobs/${encodeURIComponent(jobId)}/logs/raw`;
  let times = false;
  try {
    times = localStorage.getItem(TIMES_KEY) === "1";
  } catch {
    // storage off
  }
  showTimes(times);
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
  // A finished job's webhooks may still be owed: their tries show as they
  // are made.
  if (!isFinal(job.state) || job.notify_due) refreshTimer = setTimeout(refreshJob, REFRESH_MS);
  await openLog(hashLine());
}

main();
