// LogView renders a job's log: line numbers that link to #L<n>, stderr
// marked, ANSI colours, and a marker on each row that continues the row
// before it (a line longer than a stored batch may hold is stored as
// pieces, each a line of its own, all but the last marked partial). It
// folds the sections CI systems mark (sections.js), with how long each
// took, and shows each line's time on request. While the job runs, the
// sections the newest line is in stay open, so the tail is in view
// whatever their markers say; when they end they fold as marked, and when
// the job fails in them they stay open. It copes with long logs by
// appending lines in chunks once per frame (never re-rendering what is
// shown) and letting the browser skip laying out chunks that are off
// screen (content-visibility); folding a section only hides and shows the
// rows it has.
import { ansiToHtml } from "./ansi.js";
import { emojify } from "./emoji.js";
import { contains, newSection, parseMarker, RESET, step } from "./sections.js";
import { duration, escapeHtml } from "./util.js";

const CHUNK = 500; // lines per chunk element

const PARTIAL_TITLE = "no line break here: the line goes on in the next row of its stream (or the output ended)";
const continuesTitle = (n) => `continues line ${n}: one line, stored in pieces`;

const pad = (v, w = 2) => String(v).padStart(w, "0");

// clock is a line's time of day in the reader's time zone, to the
// millisecond: lines come many a second.
function clock(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export class LogView {
  constructor(scroller) {
    this.el = scroller;
    this.follow = true; // keep the newest line in view
    this.onFollow = () => {};
    // onLineNumber(n, event) is told of a click on a line's number (which
    // also goes to its #L link).
    this.onLineNumber = () => {};
    this.el.addEventListener("click", (e) => this.clicked(e));
    // Following stops when the reader scrolls up, and starts again when
    // they scroll back to the bottom. Only a move up counts: lines drawn
    // or a button added above the log change the distance to the bottom
    // without the reader doing anything.
    this.lastTop = 0;
    this.el.addEventListener("scroll", () => this.scrolled(), { passive: true });
    // A view that follows keeps the end in view when it changes size: the
    // window narrows and lines wrap, or the search results open above it.
    new ResizeObserver(() => this.follow && this.scrollToEnd()).observe(this.el);
    this.reset();
    // The running sections' times count up between lines.
    setInterval(() => this.live && this.showDurations(this.tailState.stack), 1000);
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
    // What the rows appended last leave open: the attempt, per stream the
    // number of a partial line the stream's next line continues, and the
    // sections new lines fall into (outermost first).
    this.tailState = { attempt: 0, open: {}, stack: [] };
    this.firstAttempt = 0; // the attempt of the first line shown
    // The sections of the lines shown, by header line, and every marker
    // line in line order ({n, m}): enough to work the sections out again
    // when earlier lines come.
    this.sections = new Map();
    this.markers = [];
    this.touched = new Set(); // sections whose line count to redraw
    // live: the job is not finished, so the sections open at the tail are
    // running. running: the sections opened for that, to fold as marked
    // once they end. changed: the range of rows whose folding to redraw.
    this.live = false;
    this.running = new Set();
    this.changed = null;
    this.headers = new Set();
    this.lastAt = 0; // the time of the last line
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

  // toEnd goes to the last line and follows new ones.
  toEnd() {
    this.flush();
    this.el.querySelector(".ln.target")?.classList.remove("target");
    this.setFollow(true);
    this.scrollToEnd();
    requestAnimationFrame(() => this.follow && this.scrollToEnd());
  }

  // append queues lines that come after those shown; they are drawn at the
  // next frame, together with any that arrive before it.
  append(lines) {
    if (!lines.length) return;
    if (!this.first) {
      this.first = lines[0].line_number;
      this.firstAttempt = lines[0].attempt;
    }
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
    // Sections open before these lines grow with them, or end among them.
    for (const s of this.tailState.stack) this.touched.add(s);
    let i = 0;
    while (i < lines.length) {
      if (!this.tail || this.tail.childElementCount >= CHUNK) this.tail = this.newChunk("beforeend");
      const room = CHUNK - this.tail.childElementCount;
      const part = lines.slice(i, i + room);
      this.tail.insertAdjacentHTML("beforeend", this.render(part, this.tailState, true, this.markers));
      this.sizeChunk(this.tail);
      i += part.length;
    }
    this.lastAt = lines[lines.length - 1].timestamp;
    for (const s of this.running) {
      if (s.end !== null) this.settle(s, true);
    }
    this.applyChanged();
    this.showCounts();
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
    const state = { attempt: 0, open: {}, stack: [] };
    const markers = [];
    chunk.insertAdjacentHTML("beforeend", this.render(lines, state, false, markers));
    this.sizeChunk(chunk);
    this.applyChanged();
    this.continueAfter(lines[lines.length - 1].line_number, state.open);
    // The rows shown so far start at junction; a new attempt there starts
    // afresh (see render).
    const junction = this.first;
    const newAttempt = junction && state.attempt !== this.firstAttempt;
    if (newAttempt) markers.push({ n: junction, m: RESET });
    this.markers = markers.concat(this.markers);
    this.first = lines[0].line_number;
    this.firstAttempt = lines[0].attempt;
    if (state.stack.length && junction) this.adopt(state.stack, newAttempt ? junction : 0);
    this.showCounts();
    if (this.earlier) this.el.prepend(this.earlier);
    this.el.scrollTop += this.el.scrollHeight - before;
  }

  // adopt lets the sections still open at the end of lines loaded earlier
  // go on into the rows shown already, which were drawn without knowing
  // them (or, at a new attempt, ends them there). They start expanded:
  // they hold rows the reader has been looking at.
  adopt(open, reset) {
    if (reset) {
      for (const s of open) s.end = reset - 1;
      return;
    }
    for (const s of open) s.collapsed = false;
    const stack = [];
    for (const { n, m, t } of this.markers) step(stack, n, m, (h, mk, at) => this.sectionAt(h, mk, at, false), t);
    this.tailState.stack = stack;
    for (const s of this.sections.values()) {
      this.touched.add(s);
      this.drawHeader(s);
    }
    this.refreshRows(this.first, this.last);
  }

  // sizeChunk tells the browser how tall to guess a chunk it has not laid
  // out is (its rows not folded away), and takes a chunk with none out of
  // the layout: a folded section of thousands of lines would otherwise
  // leave room for them.
  sizeChunk(chunk) {
    const n = chunk.querySelectorAll(":scope > :not([hidden])").length;
    chunk.style.setProperty("--n", n);
    chunk.hidden = n === 0;
  }

  newChunk(where) {
    const c = document.createElement("div");
    c.className = "chunk";
    if (where === "afterbegin") this.el.prepend(c);
    else this.el.append(c);
    return c;
  }

  // render returns the rows of lines, carrying state from the row before
  // them (see tailState) and adding their section markers to markers. The
  // tail is the end of the log so far: there come separators between
  // attempts, and while the job runs, its sections open.
  render(lines, state, tail, markers) {
    let html = "";
    for (const l of lines) {
      const n = l.line_number;
      const t = l.timestamp;
      if (state.attempt && l.attempt !== state.attempt) {
        if (tail) html += `<div class="attempt-sep">attempt ${escapeHtml(l.attempt)}</div>`;
        state.open = {}; // a new attempt continues nothing of the last one
        markers.push({ n, m: RESET, t });
        step(state.stack, n, RESET, null, t);
      }
      state.attempt = l.attempt;
      const continues = state.open[l.stream] || 0;
      state.open[l.stream] = l.partial ? n : 0;
      const m = parseMarker(l.text);
      if (m) markers.push({ n, m, t });
      const hidden = step(state.stack, n, m, (h, mk, at) => this.sectionAt(h, mk, at, tail && this.live), t);
      let cls = "ln" + (l.stream === "stderr" ? " err" : "") + (n >= 1e6 ? " wide" : "") + (continues ? " cont" : "") + (l.partial ? " partial" : "");
      let text;
      if (m?.type === "start") {
        const s = this.sections.get(n);
        cls += " sec-head" + (s.collapsed ? " folded" : "") + (m.dim ? " dim" : "");
        text = `<button class="fold" type="button" aria-expanded="${!s.collapsed}" title="show or hide the section"></button>` +
          `<span class="sec-title">${ansiToHtml(emojify(m.title))}</span><span class="sec-count"></span><span class="sec-time"></span>`;
      } else if (m?.type === "open") {
        // The rows the section hid so far show now.
        const s = state.stack.findLast((x) => x.kind === m.kind);
        if (s) this.change(s.head + 1, n - 1, s);
        cls += " sec-end";
        text = "";
      } else if (m?.type === "end") {
        cls += " sec-end"; // the marker itself is not shown
        text = ansiToHtml(m.rest);
      } else {
        text = ansiToHtml(l.text);
      }
      const title = [l.stream === "stderr" ? "stderr" : "", continues ? continuesTitle(continues) : "", l.partial ? PARTIAL_TITLE : ""].filter(Boolean).join("; ");
      html += `<div class="${cls}" id="L${n}" data-t="${clock(l.timestamp)}"${title ? ` title="${escapeHtml(title)}"` : ""}${hidden ? " hidden" : ""}>` +
        `<a class="no" href="#L${n}">${n}</a><span class="tx">${text}</span></div>`;
    }
    return html;
  }

  // sectionAt is the section whose header is line n (marker m, time t),
  // made when the line is first seen; a running one starts open.
  sectionAt(n, m, t, running) {
    let s = this.sections.get(n);
    if (!s) {
      s = newSection(n, m, t);
      this.sections.set(n, s);
      this.touched.add(s);
      if (running) {
        s.collapsed = false;
        this.running.add(s);
      }
    }
    return s;
  }

  // settle ends the running of section s: it folds as its marker says
  // unless the reader or the log opened or closed it meanwhile, or (when
  // ok is false) the job failed in it, which leaves it open.
  settle(s, ok) {
    this.running.delete(s);
    if (!ok || s.user || s.pinned || !s.fold || s.collapsed) return;
    s.collapsed = true;
    this.drawHeader(s);
    this.change(s.head + 1, s.end ?? this.last);
  }

  // finish says the log is complete: its sections stop running, and when
  // the job did not succeed, the sections its last line is in open. As on
  // Buildkite, a log whose --- headers are all folded (no +++ among them)
  // has its last --- section open: where a job's output usually ends.
  finish(ok) {
    this.flush();
    this.live = false;
    for (const s of this.running) this.settle(s, ok);
    const open = ok ? [] : [...this.tailState.stack];
    const bk = [...this.sections.values()].filter((s) => s.kind === "bk");
    if (!bk.some((s) => !s.fold)) {
      const last = bk.reduce((l, s) => (!s.dim && (!l || s.head > l.head) ? s : l), null);
      if (last) open.push(last);
    }
    for (const s of open) {
      if (!s.collapsed || s.user) continue;
      s.collapsed = false;
      this.drawHeader(s);
      this.change(s.head + 1, s.end ?? this.last);
    }
    this.applyChanged();
    this.showDurations(this.tailState.stack);
    if (this.follow) this.scrollToEnd();
  }

  // change notes that rows lo to hi may fold or unfold, and the header of
  // section s (if given) with them; applyChanged redraws them, once for a
  // batch of lines (whose rows may not be in the page yet).
  change(lo, hi, s) {
    if (s) this.headers.add(s);
    if (hi < lo) return;
    this.changed = this.changed ? [Math.min(lo, this.changed[0]), Math.max(hi, this.changed[1])] : [lo, hi];
  }

  applyChanged() {
    for (const s of this.headers) this.drawHeader(s);
    this.headers.clear();
    if (!this.changed) return;
    const [lo, hi] = this.changed;
    this.changed = null;
    this.refreshRows(lo, hi);
  }

  // showCounts redraws the line counts and times of the sections that
  // changed.
  showCounts() {
    for (const s of this.touched) {
      const el = document.getElementById(`L${s.head}`)?.querySelector(".sec-count");
      const k = (s.end ?? this.last) - s.head;
      if (el) el.textContent = k > 0 ? `${k.toLocaleString()} line${k === 1 ? "" : "s"}` : "";
    }
    this.showDurations(this.touched);
    this.touched.clear();
  }

  // showDurations redraws how long sections took: from their header's
  // time to that of the line that ended them, or while they run, to now
  // (never less than to the last line: the clocks of the worker and the
  // reader may differ); a section the log ended in took until its last
  // line.
  showDurations(sections) {
    for (const s of sections) {
      const el = document.getElementById(`L${s.head}`)?.querySelector(".sec-time");
      if (!el || !s.startAt) continue;
      let stop = s.stopAt ?? this.lastAt;
      if (s.end === null && this.live) stop = Math.max(stop, Date.now());
      el.textContent = duration(Math.max(0, stop - s.startAt));
      el.classList.toggle("running", s.end === null && this.live);
    }
  }

  // drawHeader shows whether section s is folded.
  drawHeader(s) {
    const row = document.getElementById(`L${s.head}`);
    if (!row) return;
    row.classList.toggle("folded", s.collapsed);
    row.querySelector(".fold")?.setAttribute("aria-expanded", String(!s.collapsed));
  }

  // refreshRows hides the rows from lo to hi that are in a folded section
  // and shows the others. The sections are nested ranges: walking the rows
  // in order with the stack of those around the row tells each one.
  refreshRows(lo, hi) {
    const sections = [...this.sections.values()].sort((a, b) => a.head - b.head);
    const stack = [];
    const enter = (s) => {
      while (stack.length && !contains(stack.at(-1), s.head)) stack.pop();
      stack.push(s);
    };
    const chunks = new Set();
    let i = 0;
    for (; i < sections.length && sections[i].head < lo; i++) enter(sections[i]);
    for (let n = lo; n <= hi; n++) {
      while (stack.length && !contains(stack.at(-1), n)) stack.pop();
      const row = document.getElementById(`L${n}`);
      const hidden = stack.some((s) => s.collapsed);
      if (row && row.hidden !== hidden) {
        row.hidden = hidden;
        chunks.add(row.parentElement);
      }
      if (i < sections.length && sections[i].head === n) enter(sections[i++]);
    }
    for (const c of chunks) this.sizeChunk(c);
  }

  // toggle folds section s, or unfolds it.
  toggle(s) {
    s.collapsed = !s.collapsed;
    s.user = true;
    this.drawHeader(s);
    this.refreshRows(s.head + 1, s.end ?? this.last);
    if (this.follow) this.scrollToEnd();
  }

  // expandTo unfolds every section that hides line n.
  expandTo(n) {
    let lo = Infinity;
    let hi = 0;
    for (const s of this.sections.values()) {
      if (!s.collapsed || !contains(s, n)) continue;
      s.collapsed = false;
      s.user = true;
      this.drawHeader(s);
      lo = Math.min(lo, s.head + 1);
      hi = Math.max(hi, s.end ?? this.last);
    }
    if (hi) this.refreshRows(lo, hi);
  }

  clicked(e) {
    const no = e.target.closest(".ln .no");
    if (no) {
      this.onLineNumber(Number(no.parentElement.id.slice(1)), e);
      return;
    }
    const head = e.target.closest(".sec-head");
    // A click that ends a selection of the title is not meant to fold.
    if (!head || (e.target.closest(".fold") === null && String(window.getSelection() || "") !== "")) return;
    const s = this.sections.get(Number(head.id.slice(1)));
    if (s) this.toggle(s);
  }

  // showTimes shows each line's time, or hides them.
  showTimes(on) {
    this.el.classList.toggle("show-ts", on);
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
  // block "start"; only if needed with "nearest"), unfolding the sections
  // that hide it; false if it is not loaded.
  target(n, block = "start") {
    this.flush();
    this.el.querySelector(".ln.target")?.classList.remove("target");
    const line = document.getElementById(`L${n}`);
    if (!line) return false;
    if (line.hidden) this.expandTo(n);
    line.classList.add("target");
    this.setFollow(false);
    line.scrollIntoView({ block });
    return true;
  }
}
