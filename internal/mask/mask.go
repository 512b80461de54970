// Package mask hides a job's secrets in its output: every occurrence of a
// secret's value, or of one of its base64 forms, becomes "***".
//
// Masking works on the output stream before it is cut into lines and
// pieces (Reader), so a secret is found however the command's writes, the
// pipe's reads and spool's splitting of long lines fall across it. What
// cannot be decided yet (the end of the stream might be the start of a
// secret) is held back until the next bytes decide it; since no form of a
// secret holds a newline, that is never more than the unfinished end of
// a line.
package mask

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// Replacement is what a secret becomes.
const Replacement = "***"

// MinLen is the shortest form masked: shorter ones would hide ordinary
// text (the submitter is told to use longer secrets).
const MinLen = 4

// Masker finds the forms of a set of secrets in text. It is safe for
// concurrent use.
type Masker struct {
	// byPrefix holds the forms by their first four bytes (every form has
	// at least MinLen).
	byPrefix map[uint32][]string
	// pairs has bit a<<8|b set when some form starts with the bytes a, b:
	// most positions of ordinary text are passed over on one test.
	pairs [1 << 16 / 64]uint64
	// firsts and triples are the one- and three-byte starts of the forms,
	// for the end of a stream that may be the start of a secret.
	firsts  [256]bool
	triples map[[3]byte]bool
	// maxLen is the longest form.
	maxLen int
}

// New returns the masker of the given secret values, or nil when none of
// them has a form to mask.
func New(values []string) *Masker {
	m := &Masker{byPrefix: map[uint32][]string{}, triples: map[[3]byte]bool{}}
	seen := map[string]bool{}
	for _, v := range values {
		for _, f := range Forms(v) {
			if seen[f] {
				continue
			}
			seen[f] = true
			k := prefix(f)
			m.byPrefix[k] = append(m.byPrefix[k], f)
			p := uint16(f[0])<<8 | uint16(f[1])
			m.pairs[p/64] |= 1 << (p % 64)
			m.firsts[f[0]] = true
			m.triples[[3]byte{f[0], f[1], f[2]}] = true
			m.maxLen = max(m.maxLen, len(f))
		}
	}
	if len(seen) == 0 {
		return nil
	}
	return m
}

func prefix(b string) uint32 { return binary.LittleEndian.Uint32([]byte(b[:4])) }

// Forms are the texts that stand for a secret value in output and are
// masked: each line of the value (without the "\r" of a "\r\n"), and the
// base64 forms of each line and, for a value of several lines, of the
// whole value. Lines shorter than MinLen are left out.
func Forms(value string) []string {
	var out []string
	lines := strings.Split(value, "\n")
	for _, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		if len(line) < MinLen {
			continue
		}
		out = append(out, line)
		out = append(out, base64Forms(line)...)
	}
	if len(lines) > 1 && len(value) >= MinLen {
		out = append(out, base64Forms(value)...)
	}
	return out
}

// base64Forms are the ways v shows in base64, in the standard and the
// URL-safe alphabet: its own encoding, padded and not, and the characters
// that encode it wherever it lies in a longer text that was encoded. Such
// a text encodes v from an offset of 0, 1 or 2 bytes past a multiple of
// three; at each, the characters that hold bits of v alone are the same
// whatever comes before and after it.
func base64Forms(v string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
		raw := enc.WithPadding(base64.NoPadding)
		for shift := range 3 {
			text := raw.EncodeToString(append(make([]byte, shift), v...))
			// Character i holds bits [6i, 6i+6); v's bits are
			// [8*shift, 8*(shift+len(v))).
			from, to := (8*shift+5)/6, 8*(shift+len(v))/6
			if to-from >= MinLen {
				out = append(out, text[from:to])
			}
		}
	}
	return out
}

// Mask returns text with every form of the secrets replaced: text is
// whole, nothing follows it.
func (m *Masker) Mask(text []byte) []byte {
	if m == nil {
		return text
	}
	out, _, _ := m.mask(nil, text, true, false)
	return out
}

// mask appends buf, masked, to out, and returns where it stopped: with
// final, at its end; otherwise before the first place where what follows
// could still complete a secret, or, when a secret found covers that
// place, before that secret (so the next call finds it again, and the
// secret's bytes never go out unmasked). Each run of text that secrets
// cover, overlapping or side by side, becomes one Replacement; inRun
// says that the output so far ended in one that buf may continue, and
// endsInRun says the same of the output of this call.
func (m *Masker) mask(out, buf []byte, final, inRun bool) (_ []byte, cut int, endsInRun bool) {
	cut = len(buf)
	// The runs of buf that secrets cover, merged, in order.
	var runs [][2]int
	for i := 0; i < len(buf); i++ {
		if !m.firsts[buf[i]] {
			continue // the common case, without a call
		}
		end, open := m.at(buf, i, final)
		if open {
			cut = i
			break
		}
		if end == 0 {
			continue
		}
		if n := len(runs); n > 0 && i <= runs[n-1][1] {
			runs[n-1][1] = max(runs[n-1][1], end)
		} else {
			runs = append(runs, [2]int{i, end})
		}
	}
	if n := len(runs); n > 0 && runs[n-1][1] > cut {
		// The last run covers the place where a secret may begin: hold it
		// back from the start of the first secret in it that reaches past
		// that place.
		cut = m.firstPast(buf, runs[n-1][0], cut)
		runs[n-1][1] = cut
	}
	at := 0
	for _, r := range runs {
		out = append(out, buf[at:r[0]]...)
		if !(inRun && r[0] == 0) {
			out = append(out, Replacement...)
		}
		at = r[1]
	}
	out = append(out, buf[at:cut]...)
	return out, cut, len(runs) > 0 && runs[len(runs)-1][1] == cut || inRun && cut == 0
}

// firstPast is the first position from `from` on where a secret found in
// buf reaches past cut.
func (m *Masker) firstPast(buf []byte, from, cut int) int {
	for i := from; i < cut; i++ {
		if end, _ := m.at(buf, i, true); end > cut {
			return i
		}
	}
	return cut
}

// at looks at position i of buf: end is the end of the longest form found
// whole there (0: none); open says that, unless final, the rest of buf is
// the start of a longer form, which the bytes to come may complete.
func (m *Masker) at(buf []byte, i int, final bool) (end int, open bool) {
	rest := buf[i:]
	switch {
	case !m.firsts[rest[0]]:
		return 0, false
	case len(rest) == 1:
		return 0, !final
	}
	p := uint16(rest[0])<<8 | uint16(rest[1])
	if m.pairs[p/64]&(1<<(p%64)) == 0 {
		return 0, false
	}
	if len(rest) < 4 {
		return 0, !final && (len(rest) == 2 || m.triples[[3]byte{rest[0], rest[1], rest[2]}])
	}
	for _, f := range m.byPrefix[binary.LittleEndian.Uint32(rest)] {
		switch {
		case len(f) <= len(rest):
			if len(f) > end-i && string(rest[:len(f)]) == f {
				end = i + len(f)
			}
		case !final && string(rest) == f[:len(rest)]:
			open = true
		}
	}
	return end, open
}
