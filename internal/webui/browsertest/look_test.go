package browsertest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// How the pages read at the widths people use: a laptop's window and half
// of a wide screen's. Each check keeps a screenshot of what it saw.

var widths = []int{1400, 900}

// setWidth makes the window w pixels wide and waits for the page to be
// drawn at that width.
func (b *browser) setWidth(t *testing.T, w int) {
	t.Helper()
	b.do(t, fmt.Sprintf("a %dpx window", w), chromedp.EmulateViewport(int64(w), 800))
	b.waitFor(t, "the new width", fmt.Sprintf("innerWidth === %d", w))
	eval[bool](t, b, afterTwoFrames)
}

// overflow lists what does not fit the page across: the page scrolling
// sideways, and within the elements selectors name, what sticks out of
// them or is cut (except elements cut on purpose, with an ellipsis).
func overflow(t *testing.T, b *browser, selectors ...string) []string {
	t.Helper()
	return eval[[]string](t, b, fmt.Sprintf(`(() => {
		const out = [];
		const de = document.documentElement;
		if (de.scrollWidth > innerWidth) out.push("the page is " + de.scrollWidth + "px wide in a " + innerWidth + "px window");
		for (const sel of %s) {
			for (const e of document.querySelectorAll(sel)) {
				const what = sel + " " + JSON.stringify(e.textContent.trim().slice(0, 40));
				if (e.getClientRects().length === 0) { out.push(what + " is not shown"); continue; }
				const r = e.getBoundingClientRect();
				if (r.left < -0.5 || r.right > innerWidth + 0.5) out.push(what + " is outside the window (" + Math.round(r.left) + "-" + Math.round(r.right) + "px)");
				const clip = e.parentElement.closest(".table-wrap, .log");
				if (clip) {
					const c = clip.getBoundingClientRect();
					if (r.left < c.left - 0.5 || r.right > c.right + 0.5) out.push(what + " sticks out of its panel");
				}
				if (getComputedStyle(e).textOverflow !== "ellipsis" && e.scrollWidth > e.clientWidth + 1) out.push(what + " is cut (" + e.scrollWidth + "px in " + e.clientWidth + "px)");
			}
		}
		return out;
	})()`, jsStrings(selectors)))
}

func jsStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// The jobs list fits a 1400px and a 900px window: no sideways scrolling,
// every column's header and cells shown whole (the command cut short with
// an ellipsis), short job ids that link to and hover as the whole id,
// how long each job ran, and why a rejected message is not a job.
func TestJobsListWidths(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	done := spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	long := []string{"go", "test", "-race", "-count=1", "-timeout=30m", "-run", "TestReplayFromLine|TestFeed|TestScatterGather", "./internal/...", "./client/...", "./worker/..."}
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "ci", Argv: long}); err != nil {
		t.Fatal(err)
	}
	running := spooltest.LeaseJob(t, srv, "ci")
	running.Begin()
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "release", Script: "exit 3"}); err != nil {
		t.Fatal(err)
	}
	failed := spooltest.LeaseJob(t, srv, "release")
	failed.Begin()
	failed.End(3)
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "nightly-backups-eu-west-1", Script: "./backup.sh --all --verify"}); err != nil {
		t.Fatal(err)
	}
	const why = "message jobs/0@9 cannot become a job: params: give argv or script"
	rejected, _, err := c.Submit(ctx, client.SubmitParams{Queue: "kafka", Stdin: []byte(`{"argv": 3}`), RejectReason: why})
	if err != nil {
		t.Fatal(err)
	}

	b := signedIn(t, srv)
	for _, w := range widths {
		b.setWidth(t, w)
		b.do(t, "open the jobs page", chromedp.Navigate(srv.URL+"/"))
		b.waitFor(t, "the five jobs", `document.querySelectorAll("#jobs tr").length === 5 && document.querySelector("#jobs td.cmd") !== null`)
		for _, o := range overflow(t, b, "table.joblist th", "#jobs td") {
			t.Errorf("%dpx: %s", w, o)
		}
		if cmd := eval[float64](t, b, `document.querySelector("#jobs td.cmd").getBoundingClientRect().width`); cmd < 200 {
			t.Errorf("%dpx: the command column is %.0fpx wide", w, cmd)
		}
		if h := eval[float64](t, b, `Math.max(...[...document.querySelectorAll("#jobs tr")].map(r => r.getBoundingClientRect().height))`); h > 45 {
			t.Errorf("%dpx: a row is %.0fpx high: its cells wrap", w, h)
		}
		t.Logf("the jobs page at %dpx: %s", w, artifact(t, fmt.Sprintf("jobs-%d.png", w), b.screenshot(t)))
	}

	type idLink struct {
		Text, Title, Href string
		Width             float64
	}
	sel := fmt.Sprintf("#jobs a.id[title=%q]", done.ID)
	id := eval[idLink](t, b, fmt.Sprintf(`(() => { const a = document.querySelector(%q); return a && {text: a.textContent, title: a.title, href: a.getAttribute("href"), width: a.getBoundingClientRect().width} })()`, sel))
	// The link holds the whole id, so copying it copies what the command
	// line takes, but shows its last 8 characters.
	if id.Text != done.ID || id.Title != done.ID || id.Href != "/jobs/"+done.ID || id.Width > 90 {
		t.Errorf("the id link of job %s: %+v; want the whole id as text, title and link, %.0fpx at most wide", done.ID, id, 90.0)
	}
	if got, want := eval[string](t, b, shownID(sel)), done.ID[len(done.ID)-8:]; got != want {
		t.Errorf("the id link shows %q, want %q", got, want)
	}
	row := func(jobID string) []string {
		return eval[[]string](t, b, fmt.Sprintf(`[...document.querySelector('#jobs a.id[title=%q]').closest("tr").cells].map(c => c.textContent.trim())`, jobID))
	}
	// Job | Queue | State | Attempt | Command | Created | Duration | Ended | Lines
	if r := row(done.ID); r[2] != "succeeded" || !isDuration(r[6]) || !strings.HasSuffix(r[7], "ago") || r[8] != "3" {
		t.Errorf("the finished job's row: %q; want its duration, when it ended and its 3 lines", r)
	}
	if r := row(running.JobID()); r[2] != "running" || !isDuration(r[6]) || r[7] != "" || !strings.HasPrefix(r[4], "go test -race -count=1") {
		t.Errorf("the running job's row: %q", r)
	}
	if r := row(rejected.ID); r[4] != "rejected: "+why {
		t.Errorf("the rejected message's command cell reads %q, want the reason", r[4])
	}
}

// shownID is the part of the job id in the link sel that takes room on
// the page ("" if the rest takes some too).
func shownID(sel string) string {
	return fmt.Sprintf(`(() => {
		const a = document.querySelector(%q), head = a.querySelector(".id-head");
		if (head && head.getBoundingClientRect().width > 0) return "";
		return [...a.childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join("");
	})()`, sel)
}

// Line counts stay narrow: whole up to 99,999, then rounded.
func TestLineCount(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	b := signedIn(t, srv)
	b.do(t, "open a page", chromedp.Navigate(srv.URL+"/"))
	got := eval[[]string](t, b, `import("/assets/util.js").then(m => [0, 7, 99999, 100000, 1234567, 2000000000].map(n => m.lineCount(n)))`)
	if want := "[0 7 99,999 100K 1.2M 2B]"; fmt.Sprint(got) != want {
		t.Errorf("lineCount: %v, want %s", got, want)
	}
}

// isDuration is whether s reads as a duration of util.js: 850ms, 42s, 3m 07s.
func isDuration(s string) bool {
	var n int
	_, err := fmt.Sscanf(s, "%d", &n)
	return err == nil && (strings.HasSuffix(s, "ms") || strings.HasSuffix(s, "s") || strings.HasSuffix(s, "m"))
}

// A job whose output is in Buildkite's sections, watched as it runs at
// both widths: the section still running is open and its newest line in
// view; the sections before it are folded as marked, each with how long it
// took; emoji shortcodes show as emoji. When the job fails, the section it
// failed in stays open, also on a page opened afterwards.
func TestJobPageLiveSectionsAtWidths(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Argv: []string{"./ci/pipeline.sh"}, Queue: "ci"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "ci")
	l.Begin()
	t0 := time.Now().Add(-70 * time.Second).Truncate(time.Second)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	lines := []spooltest.Line{{Text: "--- :hammer: Build", At: at(0)}} // 1
	for n := 2; n <= 31; n++ {
		lines = append(lines, spooltest.Line{Text: fmt.Sprintf("go build ./internal/pkg%02d", n), At: at(float64(n))})
	}
	lines = append(lines, spooltest.Line{Text: "--- :rocket: Deploy \x1b[33mstaging\x1b[0m", At: at(65)}) // 32
	// The last line of each batch is long enough to wrap in a narrow
	// window, as real output often is.
	deploy := func(from, to int) []spooltest.Line {
		var ls []spooltest.Line
		for n := from; n <= to; n++ {
			text := fmt.Sprintf("\x1b[32m✓\x1b[0m rolled out replica %d of 90", n-32)
			if n == to {
				text = fmt.Sprintf("waiting for replica %d of 90: readiness probe GET http://10.0.%d.7:8080/readyz answered 503 Service Unavailable (starting); trying again in 2s", n-31, n)
			}
			ls = append(ls, spooltest.Line{Text: text, At: at(65 + float64(n-32)/10)})
		}
		return ls
	}
	l.Write(append(lines, deploy(33, 40)...)...)

	b := signedIn(t, srv)
	b.setWidth(t, widths[0])
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+l.JobID()))
	b.waitFor(t, "the stream to go live", `document.getElementById("status-text").textContent === "live" && document.getElementById("L40") !== null`)
	open := func(n int) bool {
		return eval[bool](t, b, fmt.Sprintf(`!document.getElementById("L%d").classList.contains("folded")`, n))
	}
	b.waitFor(t, "the newest line in view", lineInView(40))
	if open(1) || !open(32) || eval[bool](t, b, hidden(33)) || !eval[bool](t, b, hidden(2)) {
		t.Errorf("Build open %v, Deploy open %v, line 33 hidden %v, line 2 hidden %v; want Build folded and the running Deploy open",
			open(1), open(32), eval[bool](t, b, hidden(33)), eval[bool](t, b, hidden(2)))
	}
	if got := b.text(t, "#L1 .sec-title"); got != "🔨 Build" {
		t.Errorf("the Build header reads %q", got)
	}
	if got := b.text(t, "#L32 .sec-title"); got != "🚀 Deploy staging" || !b.has(t, "#L32 .sec-title span.f3") {
		t.Errorf("the Deploy header reads %q (its colour kept: %v)", got, b.has(t, "#L32 .sec-title span.f3"))
	}
	if got := b.text(t, "#L1 .sec-time"); got != "1m 05s" {
		t.Errorf("Build took %q, want 1m 05s (from its header to the next)", got)
	}
	// The running section counts from its header to now (5s ago when the
	// test began), second by second.
	running := b.text(t, "#L32 .sec-time.running")
	if !isDuration(running) {
		t.Errorf("the running section's time reads %q", running)
	}
	b.waitFor(t, "the running section's time to count", fmt.Sprintf(`document.querySelector("#L32 .sec-time.running").textContent !== %q`, running))

	for i, w := range widths {
		if i > 0 {
			b.setWidth(t, w)
		}
		last := 40 + 5*(i+1)
		l.Write(deploy(last-4, last)...)
		b.waitFor(t, fmt.Sprintf("line %d in view at %dpx", last, w), fmt.Sprintf(`document.getElementById("L%d") !== null && %s`, last, lineInView(last)))
		eval[bool](t, b, afterTwoFrames)
		if !eval[bool](t, b, lineInView(last)) || !open(32) {
			t.Errorf("%dpx: line %d in view %v, Deploy open %v", w, last, eval[bool](t, b, lineInView(last)), open(32))
		}
		for _, o := range overflow(t, b, "#log", ".log-bar", "#L1 .sec-time", "#L32 .sec-time") {
			t.Errorf("%dpx: %s", w, o)
		}
		t.Logf("a running job's sections at %dpx: %s", w, artifact(t, fmt.Sprintf("job-live-sections-%d.png", w), b.screenshot(t)))
	}

	// The next header ends Deploy, which folds as marked; the new section
	// runs.
	l.Write(spooltest.Line{Text: "--- :package: Package", At: at(100)}, spooltest.Line{Text: "tar czf out.tgz", At: at(101)}, spooltest.Line{Text: "tar: out of space", At: at(102), Stderr: true}) // 51-53
	b.waitFor(t, "Deploy to fold", `document.getElementById("L53") !== null && document.getElementById("L32").classList.contains("folded")`)
	if !open(51) || eval[bool](t, b, hidden(53)) || !eval[bool](t, b, hidden(50)) {
		t.Errorf("Package open %v, line 53 hidden %v, line 50 hidden %v", open(51), eval[bool](t, b, hidden(53)), eval[bool](t, b, hidden(50)))
	}
	if got := b.text(t, "#L32 .sec-time"); got != "35s" || b.has(t, "#L32 .sec-time.running") {
		t.Errorf("Deploy took %q (running %v), want 35s", got, b.has(t, "#L32 .sec-time.running"))
	}

	l.End(1)
	b.waitFor(t, "the failure", `document.getElementById("status-text").textContent === "finished: failed, exit 1"`)
	if !open(51) || eval[bool](t, b, hidden(53)) || !eval[bool](t, b, lineInView(53)) {
		t.Errorf("after the failure: Package open %v, line 53 hidden %v, in view %v", open(51), eval[bool](t, b, hidden(53)), eval[bool](t, b, lineInView(53)))
	}
	if got := b.text(t, "#L51 .sec-time"); got != "2s" {
		t.Errorf("Package took %q, want 2s (to its last line)", got)
	}

	b.do(t, "open the finished job again", chromedp.Reload())
	b.waitFor(t, "the log", `document.getElementById("status-text").textContent === "finished: failed, exit 1" && document.getElementById("L53") !== null`)
	eval[bool](t, b, afterTwoFrames)
	if open(1) || open(32) || !open(51) || eval[bool](t, b, hidden(53)) || !eval[bool](t, b, lineInView(53)) {
		t.Errorf("the failed job reopened: Build open %v, Deploy open %v, Package open %v, line 53 hidden %v, in view %v; want only Package open",
			open(1), open(32), open(51), eval[bool](t, b, hidden(53)), eval[bool](t, b, lineInView(53)))
	}
	t.Logf("the failed job at %dpx: %s", widths[len(widths)-1], artifact(t, fmt.Sprintf("job-failed-sections-%d.png", widths[len(widths)-1]), b.screenshot(t)))
}
