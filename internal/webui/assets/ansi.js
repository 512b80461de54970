// ansiToHtml renders one line of terminal output as HTML. SGR sequences
// (colours, bold, italic, underline, inverse, strike-through) become spans;
// every other escape sequence and control character is dropped; all text is
// escaped. Style state starts fresh on each line, so a page can render any
// range of a log on its own.
import { escapeHtml } from "./util.js";

// One escape sequence or control character (tab is kept): CSI (ESC [ ...
// final), OSC (ESC ] ... BEL or ST), DCS/SOS/PM/APC (ESC P|X|^|_ ... ST),
// other ESC sequences, C0 controls and DEL. Sequences cut off at the end of
// the line are matched too, so nothing of them shows.
const SEQ = /\x1b\[([0-?]*)[ -\/]*([@-~])?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -\/]*[0-~]?|[\x00-\x08\x0a-\x1f\x7f]/g;
const NEEDS_PARSE = /[\x00-\x08\x0a-\x1f\x7f]/;

export function ansiToHtml(line) {
  line = afterCarriageReturn(String(line));
  if (!NEEDS_PARSE.test(line)) return escapeHtml(line);
  const st = newState();
  let out = "";
  let last = 0;
  for (const m of line.matchAll(SEQ)) {
    out += styled(st, line.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] === "m" && m[0][1] === "[" && !/[<=>?]/.test(m[1])) sgr(st, m[1]);
  }
  return out + styled(st, line.slice(last));
}

// plainText is a line without its escape sequences and control characters
// (a carriage return becomes a space): the text a search of the log
// matches against, as the server looks for it.
export function plainText(line) {
  return String(line).replace(SEQ, (m) => (m === "\r" ? " " : ""));
}

// afterCarriageReturn keeps what a terminal would show of a line that
// redraws itself ("10%\r20%\r30%" shows "30%"); a trailing \r (CRLF output)
// is ignored.
function afterCarriageReturn(s) {
  if (!s.includes("\r")) return s;
  const parts = s.split("\r").filter((p) => p !== "");
  return parts.length ? parts[parts.length - 1] : "";
}

function newState() {
  return { fg: null, bg: null, b: false, d: false, i: false, u: false, s: false, inv: false };
}

const num = (s) => {
  const n = parseInt(s, 10);
  return Number.isNaN(n) ? 0 : n;
};

// sgr applies "Select Graphic Rendition" parameters to st.
function sgr(st, params) {
  const groups = params === "" ? ["0"] : params.split(";");
  for (let i = 0; i < groups.length; i++) {
    if (groups[i].includes(":")) {
      colonGroup(st, groups[i].split(":").map(num));
      continue;
    }
    const n = num(groups[i]);
    if (n === 38 || n === 48) {
      // 38;5;N or 38;2;R;G;B (and 48 for the background).
      const mode = num(groups[i + 1]);
      let c = null;
      if (mode === 5) {
        c = color256(num(groups[i + 2]));
        i += 2;
      } else if (mode === 2) {
        c = rgb(num(groups[i + 2]), num(groups[i + 3]), num(groups[i + 4]));
        i += 4;
      } else {
        i += 1;
      }
      if (n === 38) st.fg = c;
      else st.bg = c;
      continue;
    }
    simple(st, n);
  }
}

// colonGroup handles ITU-style sub-parameters: 38:5:N, 38:2::R:G:B,
// 38:2:R:G:B, and 4:N underline styles.
function colonGroup(st, sub) {
  const [code, mode] = sub;
  if (code === 38 || code === 48) {
    let c = null;
    if (mode === 5) c = color256(sub[2]);
    else if (mode === 2) c = sub.length >= 6 ? rgb(sub[3], sub[4], sub[5]) : rgb(sub[2], sub[3], sub[4]);
    if (code === 38) st.fg = c;
    else st.bg = c;
  } else if (code === 4) {
    st.u = mode !== 0;
  }
}

function simple(st, n) {
  if (n === 0) Object.assign(st, newState());
  else if (n === 1) st.b = true;
  else if (n === 2) st.d = true;
  else if (n === 3) st.i = true;
  else if (n === 4 || n === 21) st.u = true;
  else if (n === 7) st.inv = true;
  else if (n === 9) st.s = true;
  else if (n === 22) st.b = st.d = false;
  else if (n === 23) st.i = false;
  else if (n === 24) st.u = false;
  else if (n === 27) st.inv = false;
  else if (n === 29) st.s = false;
  else if (n >= 30 && n <= 37) st.fg = { idx: n - 30 };
  else if (n === 39) st.fg = null;
  else if (n >= 40 && n <= 47) st.bg = { idx: n - 40 };
  else if (n === 49) st.bg = null;
  else if (n >= 90 && n <= 97) st.fg = { idx: n - 90 + 8 };
  else if (n >= 100 && n <= 107) st.bg = { idx: n - 100 + 8 };
}

// color256 maps the xterm 256-colour palette: 0-15 use the theme's
// colours, 16-231 are a 6x6x6 cube, 232-255 a grey ramp.
function color256(n) {
  if (!(n >= 0 && n <= 255)) return null;
  if (n < 16) return { idx: n };
  if (n >= 232) {
    const g = 8 + 10 * (n - 232);
    return rgb(g, g, g);
  }
  const levels = [0, 95, 135, 175, 215, 255];
  const k = n - 16;
  return rgb(levels[Math.floor(k / 36)], levels[Math.floor(k / 6) % 6], levels[k % 6]);
}

// rgb builds a colour from numbers only, clamped: nothing from the log
// text reaches the style attribute.
function rgb(r, g, b) {
  const c = (v) => Math.min(255, Math.max(0, v | 0));
  return { css: `rgb(${c(r)},${c(g)},${c(b)})` };
}

// styled wraps text in a span carrying st, or returns it escaped when st is
// the default style.
function styled(st, text) {
  if (text === "") return "";
  let fg = st.fg;
  let bg = st.bg;
  const cls = [];
  const style = [];
  if (st.inv) {
    [fg, bg] = [bg, fg];
    if (!fg) cls.push("fi");
    if (!bg) cls.push("gi");
  }
  if (fg) fg.css ? style.push(`color:${fg.css}`) : cls.push(`f${fg.idx}`);
  if (bg) bg.css ? style.push(`background-color:${bg.css}`) : cls.push(`g${bg.idx}`);
  for (const k of ["b", "d", "i", "u", "s"]) if (st[k]) cls.push(k);
  if (!cls.length && !style.length) return escapeHtml(text);
  const c = cls.length ? ` class="${cls.join(" ")}"` : "";
  const s = style.length ? ` style="${style.join(";")}"` : "";
  return `<span${c}${s}>${escapeHtml(text)}</span>`;
}
