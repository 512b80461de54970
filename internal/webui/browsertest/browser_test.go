package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser: $SPOOL_CHROMIUM, or Chromium or Chrome on
// the PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("SPOOL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("install Chromium: apt-get install -y chromium (make test does this)")
	return ""
}

// browser is a tab of a headless Chromium in a browser context of its own,
// and the JavaScript errors its pages raised.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// TestMain ends the shared browser once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if chromium.stop != nil {
		chromium.stop()
	}
	os.Exit(code)
}

// chromium is the one headless Chromium of the package's tests, started
// by the first test that needs it. Starting one costs about a second of
// both CPUs; each test gets a browser context of its own instead (cookies,
// storage and permissions of its own, as a fresh profile has).
var chromium struct {
	mu   sync.Mutex
	ctx  context.Context
	err  error
	stop func()
}

// sharedChromium returns the context of the shared browser, starting it if
// no test has.
func sharedChromium(t *testing.T) context.Context {
	t.Helper()
	chromium.mu.Lock()
	defer chromium.mu.Unlock()
	if chromium.ctx == nil && chromium.err == nil {
		chromium.ctx, chromium.stop, chromium.err = startChromium(chromiumPath(t))
	}
	if chromium.err != nil {
		t.Fatalf("starting Chromium: %v", chromium.err)
	}
	return chromium.ctx
}

func startChromium(path string) (context.Context, func(), error) {
	profile, err := os.MkdirTemp("", "spool-browsertest-")
	if err != nil {
		return nil, nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers have a small /dev/shm
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 820),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	stop := func() {
		cancelCtx()
		cancelAlloc()
		_ = os.RemoveAll(profile)
	}
	// The first action starts the browser; it must not have a timeout,
	// which would end the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	return ctx, stop, nil
}

// newBrowser opens a tab of the shared browser in a new browser context,
// closed when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(sharedChromium(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	b := &browser{ctx: ctx}
	b.do(t, "set the viewport", chromedp.EmulateViewport(1280, 800))
	watching := make(chan struct{})
	go func() {
		console := chromedp.Console(ctx)
		close(watching)
		for m, err := range console {
			if err != nil {
				return
			}
			// Failed connections are logged by the browser itself, and tests
			// that stop the server expect them.
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network" && !strings.Contains(m.Text, "WebSocket connection to")) {
				b.record(m.String())
			}
		}
	}()
	<-watching
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			t.Errorf("JavaScript error: %s", e)
		}
	})
	return b
}

func (b *browser) record(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, msg)
}

// do runs steps, failing the test if they fail or take over a minute.
func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression, awaiting it if it is a promise.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor waits until the expression is true.
func (b *browser) waitFor(t *testing.T, what, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	var err error
	for {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)))
		// A page that reloads (logging out does) ends the poll: poll the
		// new page.
		if err == nil || !(strings.Contains(err.Error(), "navigated or closed") || strings.Contains(err.Error(), "Cannot find context")) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

func (b *browser) text(t *testing.T, selector string) string {
	t.Helper()
	return eval[string](t, b, fmt.Sprintf("document.querySelector(%q)?.textContent ?? ''", selector))
}

// confirm clicks a button that asks for a second click (confirmButton in
// util.js), and returns what it said between the two. Both clicks and the
// reading are one evaluation: the button disarms after 4 s, which round
// trips to a browser busy with other tests' pages could outlast.
func (b *browser) confirm(t *testing.T, selector string) string {
	t.Helper()
	return eval[string](t, b, fmt.Sprintf(`(() => {
		const btn = document.querySelector(%q);
		if (!btn) return "no button";
		btn.click();
		const asked = btn.textContent;
		btn.click();
		return asked;
	})()`, selector))
}

func (b *browser) has(t *testing.T, selector string) bool {
	t.Helper()
	return eval[bool](t, b, fmt.Sprintf("document.querySelector(%q) !== null", selector))
}

func (b *browser) texts(t *testing.T, selector string) []string {
	t.Helper()
	return eval[[]string](t, b, fmt.Sprintf("[...document.querySelectorAll(%q)].map(e => e.textContent.replace(/\\s+/g, ' ').trim())", selector))
}

// colorScheme makes pages render as for a system in light or dark mode.
func (b *browser) colorScheme(t *testing.T, scheme string) {
	t.Helper()
	b.do(t, "emulate prefers-color-scheme: "+scheme, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	}))
}

func (b *browser) screenshot(t *testing.T) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return png
}

// artifact saves data as name in the artifacts directory and returns its
// path.
func artifact(t *testing.T, name string, data []byte) string {
	t.Helper()
	dir := os.Getenv("SPOOL_ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "testdata", "artifacts")
	}
	dir = filepath.Join(dir, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("finding the repository root: go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
