// Sections of a log, from the markers CI systems have jobs print, so a log
// written for one of them folds here the same way:
//
//   GitHub Actions  ::group::Title … ::endgroup::  (collapsed)
//   Buildkite       --- Title (collapsed), ~~~ Title (collapsed, its
//                   title not bold), +++ Title (expanded); a section
//                   runs to the next header, and ^^^ +++ opens it
//   GitLab CI       section_start:TIME:name[collapsed=true]\r\e[0KTitle …
//                   section_end:TIME:name\r\e[0K  (expanded unless
//                   collapsed=true; sections nest)
//
// A section is a range of line numbers: its header line, then the lines up
// to its end (the end marker's line, or the line before the header that
// ends it), or up to the last line so far while it is open. Line numbers
// are dense, so whether a row is inside a section is arithmetic, and the
// structure is worked out from the marker lines alone. A section also
// keeps the times of its header and of the line that ends it (startAt,
// stopAt, in Unix milliseconds): how long it took.

// parseMarker says what marker a line is, or null. It runs on every line
// drawn, so lines that cannot be one are told by their first character.
export function parseMarker(text) {
  const c = text.charCodeAt(0);
  if (c === 0x3a /* : */) {
    let m = /^::group::(.*)$/s.exec(text);
    if (m) return { type: "start", kind: "gh", title: m[1], collapsed: true };
    if (text.startsWith("::endgroup::")) return { type: "end", kind: "gh", rest: text.slice(12) };
    return null;
  }
  if (c === 0x2d /* - */ || c === 0x2b /* + */ || c === 0x7e /* ~ */) {
    const m = /^(---|\+\+\+|~~~) (.*)$/s.exec(text);
    if (!m || NOT_BUILDKITE.test(text)) return null;
    return { type: "start", kind: "bk", title: m[2], collapsed: m[1] !== "+++", dim: m[1] === "~~~" };
  }
  // A job prints ^^^ +++ when a command of the section fails, so the
  // section is open for whoever looks.
  if (c === 0x5e /* ^ */) return /^\^\^\^ \+\+\+\s*$/.test(text) ? { type: "open", kind: "bk" } : null;
  if (c === 0x73 /* s */ || c === 0x1b) {
    const m = GITLAB.exec(text);
    if (!m) return null;
    if (m[1] === "end") return { type: "end", kind: "gl", name: m[2], rest: m[4] };
    const collapsed = /(^|,)\s*collapsed\s*=\s*true\s*(,|$)/.test(m[3] || "");
    return { type: "start", kind: "gl", name: m[2], title: m[4] || m[2], collapsed };
  }
  return null;
}

// Lines that look like Buildkite headers but are printed by tools for
// another reason, and that a log has many of: Go's test results and the
// file headers of unified diffs. Folding on them would cut a verbose test
// run or a diff into hundreds of sections.
const NOT_BUILDKITE = /^(--- (PASS|FAIL|SKIP|BENCH):|--- a\/|\+\+\+ b\/|--- \/dev\/null|\+\+\+ \/dev\/null)/;

// GitLab's markers, after any escape sequences that clear the line (the
// runner's own start with \e[0K): the name may carry options in brackets;
// what follows the \r (and the \e[0K that erases the marker) is the title.
const GITLAB = /^(?:\x1b\[[0-9;]*[A-Za-z])*section_(start|end):\d+:([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?(?:\r(?:\x1b\[0?K)?(.*))?$/s;

// reset is the marker of a line that starts a new attempt: a retry's
// output continues no section of the attempt before.
export const RESET = { type: "reset" };

// contains says whether line n is inside section s (after its header).
export function contains(s, n) {
  return s.head < n && (s.end === null || n <= s.end);
}

// step applies line n's marker m (null: none), written at time t, to the
// stack of open sections, outermost first, and returns whether row n is
// hidden: inside a collapsed section. sectionAt(n, m, t) gives the section
// a start marker opens (a new one, or the one already made for that line).
export function step(stack, n, m, sectionAt, t) {
  if (!m) return folded(stack);
  if (m.type === "reset") {
    close(stack, 0, n - 1, t);
    return false;
  }
  if (m.type === "start") {
    // GitHub groups do not nest and a Buildkite header ends the section
    // before it; GitLab sections nest.
    if (m.kind !== "gl") close(stack, lastIndex(stack, (s) => s.kind === m.kind), n - 1, t);
    const hidden = folded(stack);
    const s = sectionAt(n, m, t);
    s.parent = stack.at(-1) ?? null;
    s.end = null;
    s.stopAt = null;
    stack.push(s);
    return hidden;
  }
  if (m.type === "open") {
    const s = stack[lastIndex(stack, (x) => x.kind === m.kind)];
    if (s) {
      s.collapsed = false;
      s.pinned = true; // the log asked: nothing folds it but the reader
    }
    return folded(stack);
  }
  // An end marker belongs to the section it ends (and ends any inside it).
  const hidden = folded(stack);
  close(stack, lastIndex(stack, (s) => s.kind === m.kind && (m.kind !== "gl" || s.name === m.name)), n, t);
  return hidden;
}

function folded(stack) {
  for (const s of stack) if (s.collapsed) return true;
  return false;
}

function lastIndex(stack, f) {
  for (let i = stack.length - 1; i >= 0; i--) if (f(stack[i])) return i;
  return -1;
}

// close ends the sections from stack[i] on at line end, at time t.
function close(stack, i, end, t) {
  if (i < 0) return;
  for (let j = i; j < stack.length; j++) {
    stack[j].end = end;
    stack[j].stopAt = t;
  }
  stack.length = i;
}

// newSection is the section a start marker on line n, written at time t,
// opens.
export function newSection(n, m, t) {
  return { head: n, end: null, kind: m.kind, name: m.name, collapsed: m.collapsed, fold: m.collapsed, dim: !!m.dim, parent: null, startAt: t, stopAt: null };
}
