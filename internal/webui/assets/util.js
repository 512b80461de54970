// Helpers shared by the pages: escaping, API calls, and the way times,
// durations, commands and states are shown.
import { showAccount, signIn } from "./auth.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

// escapeHtml makes text safe to put in HTML, as content or attribute.
export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// api calls the REST API and returns the JSON body. Failures throw an Error
// with the server's message ({"error": "..."}), or say that it is away. A
// call the server refuses for want of a session waits for the person to
// sign in, then is made again.
export async function api(path, options = {}) {
  let resp;
  try {
    resp = await fetch(path, { headers: { Accept: "application/json" }, ...options });
  } catch (e) {
    throw new Error("cannot reach the spool server: " + e.message);
  }
  let body = null;
  try {
    body = await resp.json();
  } catch {
    // not JSON: reported below with the status
  }
  // The REST API says what went wrong in "error", the Connect API in
  // "message".
  const why = body && (body.error || body.message);
  if (resp.status === 401) {
    await signIn(why);
    return api(path, options);
  }
  if (!resp.ok) {
    const err = new Error(why || `${resp.status} ${resp.statusText}`);
    err.status = resp.status;
    throw err;
  }
  return body;
}

// rpc calls a method of spool's Connect API with JSON, for what the REST
// API does not serve (scatters): rpc("ScatterService/GetScatter", {...}).
// The answer is the response message in protobuf's JSON form (lowerCamel
// names, enum names, 64-bit numbers as strings, zero values left out).
// It fails and signs in as api() does.
export function rpc(method, request) {
  return api(`/spool.v1.${method}`, {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/json" },
    body: JSON.stringify(request),
  });
}

// whoami shows who is signed in (asking to sign in first if nobody is).
export async function whoami() {
  showAccount(await api("/api/v1/session"));
}

// relTime says how long ago an RFC 3339 time was ("12s ago").
export function relTime(iso, now = Date.now()) {
  if (!iso) return "";
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

// whenTime says when an RFC 3339 time is, from now: "in 5m" ahead, "12s
// ago" past (a scheduled job's time, a schedule's next run).
export function whenTime(iso, now = Date.now()) {
  if (!iso) return "";
  const ahead = Date.parse(iso) - now;
  if (ahead < 1000) return relTime(iso, now);
  const s = Math.round(ahead / 1000);
  if (s < 60) return `in ${s}s`;
  if (s < 3600) return `in ${Math.floor(s / 60)}m`;
  if (s < 48 * 3600) return `in ${Math.floor(s / 3600)}h ${Math.floor(s / 60) % 60}m`;
  return `in ${Math.floor(s / 86400)}d`;
}

// duration formats milliseconds as "850ms", "42s", "3m 07s", "2h 05m".
export function duration(ms) {
  if (!(ms >= 0)) return "";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const pad = (n) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${pad(Math.floor(s / 60) % 60)}m`;
}

// lineCount shows a number of lines in a narrow column: whole up to
// 99,999, then rounded (1.2M); a title can give it whole.
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
export function lineCount(n) {
  return n < 100_000 ? n.toLocaleString() : compact.format(n);
}

// localTime is an RFC 3339 time in the reader's time zone, for tooltips.
export function localTime(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

// jobTitle says what a job is: the command it runs, or for an external
// job (the log of a program spool did not start), where its log comes from.
export function jobTitle(j) {
  if (j.kind === "external") return `log of ${j.source}`;
  return commandLine(j.params);
}

// commandLine is what a job runs, as a person would type it.
export function commandLine(params) {
  if (!params) return "";
  if (params.script) return params.script;
  return (params.argv || []).map(shellQuote).join(" ");
}

function shellQuote(a) {
  return /^[A-Za-z0-9_\-.,:\/=@%+]+$/.test(a) ? a : "'" + a.replace(/'/g, "'\\''") + "'";
}

// stateBadge is a job state as a coloured pill.
export function stateBadge(state) {
  const s = escapeHtml(state);
  return `<span class="state ${s}">${s}</span>`;
}

export const isFinal = (state) => state === "succeeded" || state === "failed" || state === "cancelled";

// ended is when a job finished, if it has.
export function ended(job) {
  return job.result && job.result.finished_at;
}

// confirmButton makes btn ask for a second click instead of a dialog: quick
// to confirm, hard to hit by accident. The first click shows ask; the
// second within 4 s runs action (the button is disabled meanwhile);
// onError gets its failure. It returns disarm, which puts the button back
// to label.
export function confirmButton(btn, label, action, onError, ask = "Click again to cancel") {
  let timer = null;
  const disarm = () => {
    clearTimeout(timer);
    btn.classList.remove("armed");
    btn.textContent = label;
  };
  btn.addEventListener("click", async () => {
    if (!btn.classList.contains("armed")) {
      btn.classList.add("armed");
      btn.textContent = ask;
      timer = setTimeout(disarm, 4000);
      return;
    }
    disarm();
    btn.disabled = true;
    try {
      await action();
    } catch (e) {
      onError(e);
    } finally {
      btn.disabled = false;
    }
  });
  return disarm;
}

// pauseButton makes btn (data-action "pause" or "resume") POST to
// base + "/" + its action, then call refresh(); pausing stops work, so it
// asks for a second click (confirmButton). A failure shows in #error.
export function pauseButton(btn, base, refresh) {
  const act = async () => {
    await api(`${base}/${btn.dataset.action}`, { method: "POST" });
    await refresh();
  };
  const failed = (e) => {
    document.querySelector("#error").textContent = `${btn.textContent} failed: ${e.message}`;
  };
  if (btn.dataset.action === "pause") {
    confirmButton(btn, "Pause", act, failed, "Click again to pause");
    return;
  }
  btn.addEventListener("click", () => act().catch(failed));
}

// autoRefresh runs load() now and again every 2 s (every 10 s while the tab
// is hidden) as long as live() says so, showing its failure in #error and
// the time of the last success in #updated. It returns refresh, which
// loads at once (and restarts the timer).
export function autoRefresh(load, live = () => true) {
  const REFRESH_MS = 2000;
  const $ = (sel) => document.querySelector(sel);
  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    try {
      await load();
      $("#error").textContent = "";
      $("#updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      $("#error").textContent = e.message;
    }
    if (live()) timer = setTimeout(refresh, document.hidden ? REFRESH_MS * 5 : REFRESH_MS);
  }
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && live()) refresh();
  });
  whoami()
    .catch(() => {})
    .then(refresh);
  return refresh;
}

// livePages runs a list shown a page at a time, newest first: fetchPage(cursor)
// gives {items, next}, render(items) draws them. The first page is the live
// one, refreshed as autoRefresh does; Older and Newer walk back and forth,
// keeping the cursors of the pages before the one shown. It returns first(),
// which goes back to the live page (after a filter changed).
export function livePages(fetchPage, render) {
  const $ = (sel) => document.querySelector(sel);
  let back = [];
  let cursor = "";
  let next = "";
  const refresh = autoRefresh(async () => {
    const page = await fetchPage(cursor);
    next = page.next || "";
    $("#older").disabled = !next;
    $("#newer").disabled = !cursor;
    render(page.items);
  }, () => !cursor);
  $("#older").addEventListener("click", () => {
    back.push(cursor);
    cursor = next;
    refresh();
  });
  $("#newer").addEventListener("click", () => {
    cursor = back.pop() || "";
    refresh();
  });
  return {
    first() {
      back = [];
      cursor = "";
      refresh();
    },
  };
}
