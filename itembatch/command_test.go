package itembatch

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sh returns a command running script with sh, which custom batchers are
// run with.
func sh(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatal("these tests run custom batchers with sh, which is not on PATH:", err)
	}
	return exec.Command("sh", "-c", script)
}

// pairs is a batcher that puts items two by two, the last one alone if the
// count is odd. It uses printf, as some sh's echo expands backslashes.
const pairs = `while read -r a; do
	if read -r b; then printf '[%s,%s]\n' "$a" "$b"; else printf '[%s]\n' "$a"; fi
done`

func TestFromCommandPairs(t *testing.T) {
	var stderr bytes.Buffer
	cmd := sh(t, pairs+"\necho 'pairs done' >&2")
	cmd.Stderr = &stderr
	items := mkItems(`1`, `{"a":"x y"}`, `"back\\slash"`, `[4]`, `5`)
	batches, warnings, err := FromCommand(context.Background(), cmd, items)
	if err != nil {
		t.Fatal(err)
	}
	wantLayout(t, layout(batches), `[1,{"a":"x y"}]`, `["back\\slash",[4]]`, `[5]`)
	if len(warnings) != 0 {
		t.Errorf("warnings %q", warnings)
	}
	if cmd.WaitDelay != batcherWaitDelay {
		t.Errorf("WaitDelay = %v, want the default %v", cmd.WaitDelay, batcherWaitDelay)
	}
	// The batcher's stderr goes where the caller said.
	if stderr.String() != "pairs done\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
}

// The batcher sees compact JSON Lines, even for items given with spaces
// and newlines, and may send back other items than it got.
func TestFromCommandTransforms(t *testing.T) {
	cmd := sh(t, `while read -r a; do printf '[ {"got" : %s}, "extra" ]\n' "$a"; done`)
	items := mkItems("{\n  \"a\": [1, 2]\n}", `"s"`)
	batches, _, err := FromCommand(context.Background(), cmd, items)
	if err != nil {
		t.Fatal(err)
	}
	wantLayout(t, layout(batches), `[{"got":{"a":[1,2]}},"extra"]`, `[{"got":"s"},"extra"]`)
}

func TestFromCommandOutputForms(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"no output", `cat >/dev/null`, nil},
		{"blank lines and CRLF", `printf '\n[1]\r\n  \n[2, 3]\n\n'`, []string{"[1]", "[2,3]"}},
		{"last line without newline", `printf '[1]\n[2]'`, []string{"[1]", "[2]"}},
		{"nested arrays", `echo '[[1,[2]],{"a":[]}]'`, []string{`[[1,[2]],{"a":[]}]`}},
		{"ignores its input", `echo '[1]'`, []string{"[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Plenty of input, so a batcher that does not read it all
			// closes the pipe on a writer: that is not an error.
			items := make([]Item, 20000)
			for i := range items {
				items[i] = Item(`"some item of some length"`)
			}
			batches, _, err := FromCommand(context.Background(), sh(t, tc.script), items)
			if err != nil {
				t.Fatal(err)
			}
			wantLayout(t, layout(batches), tc.want...)
		})
	}
}

func TestFromCommandEmptyBatch(t *testing.T) {
	cmd := sh(t, `echo '[]'; echo '[1, 2]'; echo '[ ]'`)
	batches, warnings, err := FromCommand(context.Background(), cmd, mkItems("1", "2"))
	if err != nil {
		t.Fatal(err)
	}
	wantLayout(t, layout(batches), "[1,2]")
	if len(warnings) != 2 || !strings.Contains(string(warnings[0]), "line 1 is an empty batch") ||
		!strings.Contains(string(warnings[1]), "line 3 is an empty batch") {
		t.Errorf("warnings %q, want lines 1 and 3 dropped", warnings)
	}
}

func TestFromCommandBadOutput(t *testing.T) {
	long := strings.Repeat("x", 79) + "é" + strings.Repeat("y", 200)
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"garbage", `echo '[1]'; echo 'hello world'; echo '[2]'`,
			[]string{`output line 2 is not a JSON array: "hello world"`}},
		{"an object", `echo '{"a":1}'`,
			[]string{`output line 1 is not a JSON array: "{\"a\":1}"`}},
		{"a truncated line", `echo '[1]'; printf '[1,2'`,
			[]string{`output line 2 is not valid JSON (unexpected end of JSON input): "[1,2"`}},
		{"invalid JSON", `echo '[1,]'`, []string{`output line 1 is not valid JSON`}},
		{"two arrays on a line", `echo '[1] [2]'`, []string{`output line 1 is not valid JSON`}},
		{"invalid UTF-8", `printf '["\377"]\n'`, []string{`output line 1 is not valid UTF-8`}},
		// At most 80 bytes are shown, cut between characters.
		{"a long line", `echo '` + long + `'`,
			[]string{`output line 1 is not a JSON array: "` + strings.Repeat("x", 79) + `"...`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batches, _, err := FromCommand(context.Background(), sh(t, tc.script), mkItems("1"))
			if !errors.Is(err, ErrBadBatcherOutput) {
				t.Fatalf("FromCommand = %q, %v; want ErrBadBatcherOutput", layout(batches), err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if batches != nil {
				t.Errorf("batches %q returned with the error", layout(batches))
			}
		})
	}
}

func TestFromCommandExitStatus(t *testing.T) {
	cmd := sh(t, `cat >/dev/null; echo '[1]'; exit 3`)
	_, _, err := FromCommand(context.Background(), cmd, mkItems("1"))
	if !errors.Is(err, ErrBadBatcherOutput) {
		t.Fatalf("error %v, want ErrBadBatcherOutput", err)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("error %v does not carry exit status 3", err)
	}
}

// Bad output stops the batcher at once, rather than after its work.
func TestFromCommandKilledOnBadOutput(t *testing.T) {
	start := time.Now()
	_, _, err := FromCommand(context.Background(), sh(t, `echo nope; exec sleep 20`), nil)
	if !errors.Is(err, ErrBadBatcherOutput) {
		t.Fatalf("error %v, want ErrBadBatcherOutput", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v: the batcher was not killed", d)
	}
}

// Endless output stops at the limit, lowered here from 1 GiB.
func TestFromCommandOutputLimit(t *testing.T) {
	_, _, err := fromCommand(context.Background(), sh(t, `yes '[1]'`), nil, 1000)
	if !errors.Is(err, ErrBadBatcherOutput) || !strings.Contains(err.Error(), "more than 1000 bytes of output") {
		t.Fatalf("error %v, want the output limit", err)
	}
	// Exactly at the limit is fine: 250 lines of 4 bytes.
	batches, _, err := fromCommand(context.Background(), sh(t, `yes '[1]' | head -n 250`), nil, 1000)
	if err != nil || len(batches) != 250 {
		t.Fatalf("%d batches, %v; want 250", len(batches), err)
	}
}

func TestFromCommandContext(t *testing.T) {
	t.Run("ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, err := FromCommand(ctx, sh(t, `echo '[1]'; exec sleep 20`), mkItems("1"))
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrBadBatcherOutput) {
			t.Fatalf("error %v, want the context's", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v: the batcher was not killed", d)
		}
	})

	// sh waits on a sleep that holds the output open after sh is killed;
	// WaitDelay bounds the wait for it.
	t.Run("ends with a child holding the output", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		cmd := sh(t, `sleep 3; echo '[1]'`)
		cmd.WaitDelay = 100 * time.Millisecond
		start := time.Now()
		_, _, err := FromCommand(ctx, cmd, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want the context's", err)
		}
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Errorf("took %v: waited for the child", d)
		}
	})

	t.Run("already ended", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "ran")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := FromCommand(ctx, sh(t, `touch '`+marker+`'; echo '[1]'`), nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the batcher ran")
		}
	})
}

func TestFromCommandCallerMistakes(t *testing.T) {
	cmd := sh(t, `echo '[1]'`)
	cmd.Stdout = &bytes.Buffer{}
	if _, _, err := FromCommand(context.Background(), cmd, nil); err == nil || !strings.Contains(err.Error(), "cmd.Stdout") {
		t.Errorf("with Stdout set: %v", err)
	}

	cmd = exec.Command(filepath.Join(t.TempDir(), "no-such-batcher"))
	_, _, err := FromCommand(context.Background(), cmd, nil)
	if err == nil || errors.Is(err, ErrBadBatcherOutput) {
		t.Errorf("missing command: %v, want an error that is not ErrBadBatcherOutput", err)
	}

	_, _, err = FromCommand(context.Background(), sh(t, `cat`), mkItems("1", "{bad"))
	if err == nil || !strings.Contains(err.Error(), "item 1 is not valid JSON") {
		t.Errorf("invalid item: %v", err)
	}
}
