// LogStream follows a job's log over the WebSocket
// /api/v1/jobs/{id}/logs/ws, resuming after the last line it has whenever
// the connection drops, until the server says the log is complete (an
// "end" message, then a normal close). The WebSocket goes in on the page's
// session cookie; when it is refused before it opens, the session may have
// ended, so the page asks (and signs in again) before trying once more.
// When the server ends an open stream because the key was revoked or the
// login ended (4401) or the key may no longer read the job (4403), trying
// again would be refused the same way: the stream stops and says why, and
// goes on only once the person has signed in again (resume).
import { api } from "./util.js";

const MIN_RETRY_MS = 500;
const MAX_RETRY_MS = 8000;
const REFUSED = new Set([4401, 4403]);

export class LogStream {
  // handlers: onLines(lines), onEnd(msg), onStatus(status, detail) with
  // status "connecting", "live", "reconnecting", "refused" (detail.reason
  // says why) or "finished".
  constructor(jobId, lastLine, handlers) {
    this.jobId = jobId;
    this.last = lastLine;
    this.h = handlers;
    this.ws = null;
    this.ended = false;
    this.stopped = false;
    this.retries = 0;
    this.timer = null;
  }

  start() {
    this.connect();
    return this;
  }

  // resume goes on after a refusal, from the last line shown, once the
  // page has credentials that may read the job again.
  resume() {
    if (this.stopped) return;
    this.retries = 0;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, "page closed the stream");
  }

  connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const url = `${scheme}://${location.host}/api/v1/jobs/${encodeURIComponent(this.jobId)}/logs/ws?last_line=${this.last}`;
    this.h.onStatus(this.retries ? "reconnecting" : "connecting", { attempt: this.retries });
    const ws = new WebSocket(url);
    this.ws = ws;
    this.opened = false;
    ws.onopen = () => {
      this.opened = true;
      this.retries = 0;
      this.h.onStatus("live");
    };
    ws.onmessage = (e) => this.message(ws, e.data);
    ws.onclose = (e) => this.closed(ws, e);
  }

  message(ws, data) {
    if (ws !== this.ws) return;
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
    if (msg.type === "lines") {
      const lines = msg.lines.filter((l) => l.line_number > this.last);
      if (lines.length && lines[0].line_number !== this.last + 1) {
        // The server never skips lines; if it ever did, start again from
        // what we have rather than show a log with a hole in it.
        console.error(`log stream: expected line ${this.last + 1}, got ${lines[0].line_number}; reconnecting`);
        ws.close(4000, "gap");
        return;
      }
      if (!lines.length) return;
      this.last = lines[lines.length - 1].line_number;
      this.h.onLines(lines);
    } else if (msg.type === "end") {
      this.ended = true;
      this.h.onEnd(msg);
    }
  }

  closed(ws, e) {
    if (ws !== this.ws || this.stopped) return;
    if (this.ended && e.code === 1000) {
      this.h.onStatus("finished");
      return;
    }
    if (REFUSED.has(e.code)) {
      this.h.onStatus("refused", { code: e.code, reason: e.reason || "the server no longer lets this page read the log" });
      return;
    }
    // Anything else (1012 server restart, 1006 network, ...) means the log
    // is not complete yet: come back for the rest.
    this.retries++;
    const wait = Math.min(MAX_RETRY_MS, MIN_RETRY_MS * 2 ** Math.min(this.retries - 1, 5));
    this.h.onStatus("reconnecting", { attempt: this.retries, code: e.code, wait });
    const again = () => {
      if (!this.stopped) this.timer = setTimeout(() => this.connect(), wait * (0.75 + Math.random() / 2));
    };
    if (this.opened) again();
    else api("/api/v1/session").then(again, again);
  }
}
