// LogView renders a job's log: line numbers that link to #L<n>, stderr
// marked, ANSI colours, and a marker on each row that continues the row
// before it (a line longer than a stored batch may hold is stored as
// pieces, each a line of its own, all but the last marked partial). It
// copes with long logs by appending lines in chunks once per frame (never
// re-rendering what is shown) and letting the browser skip laying out
// chunks that are off screen (content-visibility).
import { ansiToHtml } from "./ansi.js";
import { escapeHtml } from "./util.js";

const CHUNK = 500; // lines per chunk element

const PARTIAL_TITLE = "no line break here: the line goes on in the next row of its stream (or the output ended)";
const continuesTitle = (n) => `continues line ${n}: one line, stored in pieces`;

export class LogView {
  constructor(scroller) {
    this.el = scroller;
    this.follow = true; // keep the newest line in view
    this.onFollow = () => {};
    // Following stops when the reader scrolls up, and starts again when
    // they scroll back to the bottom. Only a move up counts: lines drawn
    // or a button added above the log change the distance to the bottom
    // without the reader doing anything.
    this.lastTop = 0;
    this.el.addEventListener("scroll", () => this.scrolled(), { passive: true });
    this.reset();
  }

  scrolled() {
    const top = this.el.scrollTop;
    if (top < this.lastTop - 1) this.setFollow(false);
    if (this.atBottom()) this.setFollow(true);
    this.lastTop = top;
  }

  reset() {
    this.el.replaceChildren();
    this.lastTop = this.el.scrollTop;
    this.first = 0; // first line shown or queued (0: none yet)
    this.last = 0; // last line shown or queued
    // What the rows appended last leave open: the attempt, and per stream
    // the number of a partial line the stream's next line continues.
    this.tailState = { attempt: 0, open: {} };
    this.pending = [];
    this.scheduled = false;
    this.tail = null; // the chunk being filled
    this.earlier = null;
  }

  atBottom() {
    return this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 24;
  }

  setFollow(on) {
    if (on === this.follow) return;
    this.follow = on;
    this.onFollow(on);
  }

  scrollToEnd() {
    this.el.scrollTop = this.el.scrollHeight;
  }

  // append queues lines that come after those shown; they are drawn at the
  // next frame, together with any that arrive before it.
  append(lines) {
    if (!lines.length) return;
    if (!this.first) this.first = lines[0].line_number;
    this.last = lines[lines.length - 1].line_number;
    this.pending.push(...lines);
    if (this.scheduled) return;
    this.scheduled = true;
    // Hidden tabs get no animation frames: fall back to a timer so lines
    // do not pile up unrendered.
    const run = () => this.flush();
    if (document.hidden) setTimeout(run, 250);
    else requestAnimationFrame(run);
  }

  // flush draws the queued lines now.
  flush() {
    this.scheduled = false;
    const lines = this.pending;
    this.pending = [];
    if (!lines.length) return;
    this.el.querySelector(".log-empty")?.remove();
    const follow = this.follow;
    let i = 0;
    while (i < lines.length) {
      if (!this.tail || this.tail.childElementCount >= CHUNK) this.tail = this.newChunk("beforeend");
      const room = CHUNK - this.tail.childElementCount;
      const part = lines.slice(i, i + room);
      this.tail.insertAdjacentHTML("beforeend", this.render(part, this.tailState, true));
      this.tail.style.setProperty("--n", this.tail.childElementCount);
      i += part.length;
    }
    if (follow) {
      this.scrollToEnd();
      // Rows laid out for the first time may turn out taller than the
      // chunk's estimate (wrapped lines): look again once they are.
      requestAnimationFrame(() => this.follow && this.scrollToEnd());
    }
  }

  // prepend draws lines that come before those shown, keeping the view
  // where it was.
  prepend(lines) {
    if (!lines.length) return;
    const before = this.el.scrollHeight;
    const chunk = this.newChunk("afterbegin");
    const state = { attempt: 0, open: {} };
    chunk.insertAdjacentHTML("beforeend", this.render(lines, state, false));
    chunk.style.setProperty("--n", lines.length);
    this.continueAfter(lines[lines.length - 1].line_number, state.open);
    this.first = lines[0].line_number;
    if (this.earlier) this.el.prepend(this.earlier);
    this.el.scrollTop += this.el.scrollHeight - before;
  }

  newChunk(where) {
    const c = document.createElement("div");
    c.className = "chunk";
    if (where === "afterbegin") this.el.prepend(c);
    else this.el.append(c);
    return c;
  }

  // render returns the rows of lines, carrying state from the row before
  // them (see tailState); separators between attempts only when
  // separateAttempts.
  render(lines, state, separateAttempts) {
    let html = "";
    for (const l of lines) {
      if (state.attempt && l.attempt !== state.attempt) {
        if (separateAttempts) html += `<div class="attempt-sep">attempt ${escapeHtml(l.attempt)}</div>`;
        state.open = {}; // a new attempt continues nothing of the last one
      }
      state.attempt = l.attempt;
      const n = l.line_number;
      const continues = state.open[l.stream] || 0;
      state.open[l.stream] = l.partial ? n : 0;
      const cls = "ln" + (l.stream === "stderr" ? " err" : "") + (n >= 1e6 ? " wide" : "") + (continues ? " cont" : "") + (l.partial ? " partial" : "");
      const title = [l.stream === "stderr" ? "stderr" : "", continues ? continuesTitle(continues) : "", l.partial ? PARTIAL_TITLE : ""].filter(Boolean).join("; ");
      html += `<div class="${cls}" id="L${n}"${title ? ` title="${escapeHtml(title)}"` : ""}><a class="no" href="#L${n}">${n}</a><span class="tx">${ansiToHtml(l.text)}</span></div>`;
    }
    return html;
  }

  // continueAfter marks, for each stream whose line open (see tailState)
  // is partial, the next row of that stream after line `last`: rows loaded
  // earlier did not know the line before them.
  continueAfter(last, open) {
    const streams = Object.keys(open).filter((s) => open[s]);
    for (let n = last + 1; streams.length && n <= this.last; n++) {
      const row = document.getElementById(`L${n}`);
      if (!row) break;
      const i = streams.indexOf(row.classList.contains("err") ? "stderr" : "stdout");
      if (i < 0) continue;
      if (!row.classList.contains("cont")) {
        row.classList.add("cont");
        row.title = [row.title, continuesTitle(open[streams[i]])].filter(Boolean).join("; ");
      }
      streams.splice(i, 1);
    }
  }

  // showEarlier offers to load the lines before the first one shown. The
  // button goes above the log; a view that follows the end stays there.
  showEarlier(load) {
    this.earlier?.remove();
    this.earlier = null;
    if (this.first <= 1) return;
    const div = document.createElement("div");
    div.className = "earlier";
    div.innerHTML = `<button class="btn small" type="button">Load earlier lines (1–${this.first - 1} not shown)</button>`;
    div.querySelector("button").addEventListener("click", load);
    this.earlier = div;
    this.el.prepend(div);
    if (this.follow) this.scrollToEnd();
  }

  showEmpty(text) {
    if (this.first) return;
    this.el.querySelector(".log-empty")?.remove();
    const div = document.createElement("div");
    div.className = "log-empty";
    div.textContent = text;
    this.el.append(div);
  }

  // target highlights line n and scrolls it into view (to the top with
  // block "start"; only if needed with "nearest"); false if it is not shown.
  target(n, block = "start") {
    this.flush();
    this.el.querySelector(".ln.target")?.classList.remove("target");
    const line = document.getElementById(`L${n}`);
    if (!line) return false;
    line.classList.add("target");
    this.setFollow(false);
    line.scrollIntoView({ block });
    return true;
  }
}
