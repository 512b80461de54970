package mask_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/mask"
)

// FuzzStream: text holding a secret (plain and in base64), given to a
// Stream cut at every offset and at the offsets the fuzzer picks, masks
// exactly as the plain reference does: no occurrence of the secret is
// left, and every byte outside the secrets' forms is kept as it was.
func FuzzStream(f *testing.F) {
	f.Add("hunter22", "password: ", "\nnext line", uint16(3), uint16(9), uint16(12))
	f.Add("abcd", "abcabc", "dabcd", uint16(1), uint16(2), uint16(3))
	f.Add("long-secret-value", "", "", uint16(0), uint16(40), uint16(41))
	f.Add("zzzz", "zzz", "zzzzzzz", uint16(5), uint16(6), uint16(7))
	f.Fuzz(func(t *testing.T, secret, before, after string, c1, c2, c3 uint16) {
		if len(secret) < mask.MinLen || len(before)+len(after)+len(secret) > 300 ||
			strings.ContainsAny(secret, "*\r\n") {
			t.Skip()
		}
		m := mask.New([]string{secret})
		forms := mask.Forms(secret)
		text := []byte(before + secret + after + " " + base64.StdEncoding.EncodeToString([]byte(before+secret+after)) + " " + secret)
		want := reference(forms, text)
		if got := m.Mask(text); !bytes.Equal(got, want) {
			t.Fatalf("Mask(%q) = %q, want %q", text, got, want)
		}
		if bytes.Contains(want, []byte(secret)) {
			t.Fatalf("reference masking of %q left the secret %q: %q", text, secret, want)
		}
		for c := 0; c <= len(text); c++ {
			if got := streamed(m, text, c); !bytes.Equal(got, want) {
				t.Fatalf("%q cut at %d: %q, want %q", text, c, got, want)
			}
		}
		cuts := []int{int(c1) % (len(text) + 1), int(c2) % (len(text) + 1), int(c3) % (len(text) + 1)}
		if cuts[1] < cuts[0] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		if got := streamed(m, text, cuts...); !bytes.Equal(got, want) {
			t.Fatalf("%q cut at %v: %q, want %q", text, cuts, got, want)
		}
	})
}
