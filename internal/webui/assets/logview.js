// LogView renders a job's log: line numbers that link to #L<n>, stderr
// marked, ANSI colours. It copes with long logs by appending lines in
// chunks once per frame (never re-rendering what is shown) and letting the
// browser skip laying out chunks that are off screen (content-visibility).
import { ansiToHtml } from "./ansi.js";
import { escapeHtml } from "./util.js";

const CHUNK = 500; // lines per chunk element

export class LogView {
  constructor(scroller) {
    this.el = scroller;
    this.follow = true; // keep the newest line in view
    this.onFollow = () => {};
    this.el.addEventListener("scroll", () => this.setFollow(this.atBottom()), { passive: true });
    this.reset();
  }

  reset() {
    this.el.replaceChildren();
    this.first = 0; // first line shown or queued (0: none yet)
    this.last = 0; // last line shown or queued
    this.lastAttempt = 0;
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
      this.tail.insertAdjacentHTML("beforeend", this.render(part, true));
      this.tail.style.setProperty("--n", this.tail.childElementCount);
      i += part.length;
    }
    if (follow) this.scrollToEnd();
  }

  // prepend draws lines that come before those shown, keeping the view
  // where it was.
  prepend(lines) {
    if (!lines.length) return;
    const before = this.el.scrollHeight;
    const chunk = this.newChunk("afterbegin");
    chunk.insertAdjacentHTML("beforeend", this.render(lines, false));
    chunk.style.setProperty("--n", lines.length);
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

  render(lines, trackAttempt) {
    let html = "";
    for (const l of lines) {
      if (trackAttempt && this.lastAttempt && l.attempt !== this.lastAttempt) {
        html += `<div class="attempt-sep">attempt ${escapeHtml(l.attempt)}</div>`;
      }
      if (trackAttempt) this.lastAttempt = l.attempt;
      const n = l.line_number;
      const cls = "ln" + (l.stream === "stderr" ? " err" : "") + (n >= 1e6 ? " wide" : "");
      const title = l.stream === "stderr" ? ' title="stderr"' : "";
      html += `<div class="${cls}" id="L${n}"${title}><a class="no" href="#L${n}">${n}</a><span class="tx">${ansiToHtml(l.text)}</span></div>`;
    }
    return html;
  }

  // showEarlier offers to load the lines before the first one shown.
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
