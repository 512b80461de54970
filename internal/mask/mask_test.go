package mask_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/spool-run/spool/internal/mask"
)

// reference masks text the plain way: every byte inside an occurrence of a
// form is covered, and each run of covered bytes becomes one Replacement.
func reference(forms []string, text []byte) []byte {
	covered := make([]bool, len(text))
	for _, f := range forms {
		for i := 0; i+len(f) <= len(text); i++ {
			if string(text[i:i+len(f)]) == f {
				for k := i; k < i+len(f); k++ {
					covered[k] = true
				}
			}
		}
	}
	var out []byte
	for i := 0; i < len(text); i++ {
		if !covered[i] {
			out = append(out, text[i])
			continue
		}
		out = append(out, mask.Replacement...)
		for i+1 < len(text) && covered[i+1] {
			i++
		}
	}
	return out
}

func allForms(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, mask.Forms(v)...)
	}
	return out
}

// streamed masks text given to a Stream in the pieces cut at the given
// offsets.
func streamed(m *mask.Masker, text []byte, cuts ...int) []byte {
	s := m.Stream()
	var out []byte
	at := 0
	for _, c := range cuts {
		c = max(at, min(c, len(text)))
		out = s.Write(out, text[at:c])
		at = c
	}
	out = s.Write(out, text[at:])
	return s.Flush(out)
}

// TestMaskForms: the value, and its base64 encodings (standard and
// URL-safe, padded or not, and inside a longer encoded text at each of the
// three alignments) become "***"; the text around them stays as it was.
func TestMaskForms(t *testing.T) {
	const secret = "s3cr3t/v4lue?>"
	m := mask.New([]string{secret})
	embed := func(prefix string) string {
		return base64.StdEncoding.EncodeToString([]byte(prefix + secret + "tail of the text"))
	}
	for name, text := range map[string]string{
		"plain":             "token=" + secret + " done",
		"twice":             secret + secret,
		"std":               "b64 " + base64.StdEncoding.EncodeToString([]byte(secret)),
		"std unpadded":      "b64 " + base64.RawStdEncoding.EncodeToString([]byte(secret)) + ".",
		"url":               "b64 " + base64.URLEncoding.EncodeToString([]byte(secret)),
		"url unpadded":      "b64 " + base64.RawURLEncoding.EncodeToString([]byte(secret)) + ".",
		"inside, aligned":   embed("abc"),
		"inside, +1":        embed("abcd"),
		"inside, +2":        embed("abcde"),
		"inside url, +1":    base64.URLEncoding.EncodeToString([]byte("x" + secret + "y")),
		"inside, +2, short": base64.StdEncoding.EncodeToString([]byte("xy" + secret)),
	} {
		got := string(m.Mask([]byte(text)))
		if !strings.Contains(got, mask.Replacement) {
			t.Errorf("%s: %q masked to %q: nothing masked", name, text, got)
		}
		for _, f := range []string{secret, base64.RawStdEncoding.EncodeToString([]byte(secret))[:12]} {
			if strings.Contains(got, f) {
				t.Errorf("%s: %q masked to %q, which still holds %q", name, text, got, f)
			}
		}
		if want := string(reference(mask.Forms(secret), []byte(text))); got != want {
			t.Errorf("%s: %q masked to %q, want %q", name, text, got, want)
		}
	}
	if got := string(m.Mask([]byte("token=" + secret + " done"))); got != "token=*** done" {
		t.Errorf("plain: got %q", got)
	}
	if got := string(m.Mask([]byte("nothing here, not even s3cr3t"))); got != "nothing here, not even s3cr3t" {
		t.Errorf("text without the secret changed: %q", got)
	}
}

// TestMultilineSecret: each line of a value of several lines is masked on
// its own (a "\r\n" value's lines too), and so is the whole value's base64.
func TestMultilineSecret(t *testing.T) {
	const pem = "-----BEGIN KEY-----\r\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\r\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==\r\n-----END KEY-----\r\n"
	m := mask.New([]string{pem})
	text := "key:\n" + strings.ReplaceAll(pem, "\r\n", "\n") + "as one: " + base64.StdEncoding.EncodeToString([]byte(pem)) + "\n"
	got := string(m.Mask([]byte(text)))
	want := "key:\n***\n***\n***\n***\nas one: ***\n"
	if got != want {
		t.Fatalf("masked to\n%q\nwant\n%q", got, want)
	}
}

// TestStreamSplitAnywhere: a stream cut into two pieces at every offset,
// or into single bytes, masks as the whole text does, including secrets
// that overlap or stand side by side, a secret that is the start of
// another, and one that ends the stream.
func TestStreamSplitAnywhere(t *testing.T) {
	values := []string{"abcdef", "defghi", "abcd", "xyzw"}
	m := mask.New(values)
	forms := allForms(values)
	for _, text := range []string{
		"--abcdefghi--abcd--abcdeX--xyzwxyzw--abc",
		"abcdefabcdef",
		"xyzwabcdxyz",
		"ab",
		"ends in abcde",
		"ends in abcdef",
	} {
		want := reference(forms, []byte(text))
		if got := m.Mask([]byte(text)); !bytes.Equal(got, want) {
			t.Fatalf("Mask(%q) = %q, want %q", text, got, want)
		}
		for c := 0; c <= len(text); c++ {
			if got := streamed(m, []byte(text), c); !bytes.Equal(got, want) {
				t.Fatalf("%q cut at %d: %q, want %q", text, c, got, want)
			}
		}
		cuts := make([]int, len(text))
		for i := range cuts {
			cuts[i] = i
		}
		if got := streamed(m, []byte(text), cuts...); !bytes.Equal(got, want) {
			t.Fatalf("%q a byte at a time: %q, want %q", text, got, want)
		}
	}
}

// TestStreamHoldsOnlyWhatMayBeASecret: a line goes out as soon as it is
// read; only an end that may begin a secret waits for the next bytes.
func TestStreamHoldsOnlyWhatMayBeASecret(t *testing.T) {
	m := mask.New([]string{"password"})
	s := m.Stream()
	if got := string(s.Write(nil, []byte("line one\nprompt: pass"))); got != "line one\nprompt: " {
		t.Fatalf("Write gave %q; want all but the possible start of the secret", got)
	}
	if got := string(s.Write(nil, []byte("port\n"))); got != "passport\n" {
		t.Fatalf("Write gave %q once the secret did not come", got)
	}
	if got := string(s.Write(nil, []byte("passwo"))); got != "" {
		t.Fatalf("Write gave %q", got)
	}
	if got := string(s.Write(nil, []byte("rd!\n"))); got != "***!\n" {
		t.Fatalf("Write gave %q", got)
	}
	if got := string(s.Flush(s.Write(nil, []byte("pass")))); got != "pass" {
		t.Fatalf("the end of the stream gave %q", got)
	}
}

// TestReader: Reader masks what it reads, however the reads fall, and
// passes on the end and errors after what it held.
func TestReader(t *testing.T) {
	m := mask.New([]string{"hunter22"})
	text := strings.Repeat("x", 40000) + "hunter22\nend hunt"
	got, err := io.ReadAll(mask.Reader(iotest.OneByteReader(strings.NewReader(text)), m))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("x", 40000) + "***\nend hunt"; string(got) != want {
		t.Fatalf("read %d bytes ending %q", len(got), got[max(0, len(got)-20):])
	}
	r := mask.Reader(iotest.TimeoutReader(strings.NewReader("hunt")), m)
	b := make([]byte, 10)
	if n, err := r.Read(b); n != 4 || err != nil || string(b[:n]) != "hunt" {
		t.Fatalf("Read after the held end = %d, %v, %q; want the held bytes first", n, err, b[:n])
	}
	if _, err := r.Read(b); err != iotest.ErrTimeout {
		t.Fatalf("second Read: %v, want the reader's error", err)
	}
	if r := mask.Reader(strings.NewReader("a"), nil); r == nil {
		t.Fatal("Reader with no masker is nil")
	}
	if mask.New([]string{"abc", "\n\n"}) != nil {
		t.Fatal("a masker of values with no form to mask")
	}
}
