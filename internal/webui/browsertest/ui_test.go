package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// buildLog is the output of a make-like job: colours, a warning on
// stderr, a test summary.
func buildLog(from, to int) []spooltest.Line {
	var lines []spooltest.Line
	for n := from; n <= to; n++ {
		var l spooltest.Line
		switch {
		case n == 1:
			l.Text = "\x1b[1m==> go vet ./...\x1b[0m"
		case n == 2:
			l.Text = "\x1b[1m==> go test -race ./...\x1b[0m"
		case n%17 == 0:
			l = spooltest.Line{Text: fmt.Sprintf("\x1b[33mwarning:\x1b[0m internal/pkg%02d/cache.go:%d: result of fmt.Sprintf is unused", n%7, 40+n), Stderr: true}
		case n%11 == 0:
			l.Text = fmt.Sprintf("\x1b[32m--- PASS:\x1b[0m TestReplayFromLine/batch_%d \x1b[2m(0.%02ds)\x1b[0m", n, n%100)
		case n%5 == 0:
			l.Text = fmt.Sprintf("ok  \tgithub.com/spool-run/spool/internal/pkg%02d\t\x1b[36m%d.%03ds\x1b[0m", n%13, n%3, n*37%1000)
		default:
			l.Text = fmt.Sprintf("=== RUN   TestFeed/follow_%d", n)
		}
		lines = append(lines, l)
	}
	return lines
}

// The job page of a running job shows its log and its new lines as they
// are written, marks stderr, renders colours, and ends with the job's
// status. Its screenshot is kept.
func TestJobPageFollowsRunningJob(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	if _, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: []string{"make", "test"}, Queue: "ci"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "ci")
	l.Begin()
	l.Write(buildLog(1, 40)...)

	b := signedIn(t, srv)
	b.do(t, "open the job page", chromedp.Navigate(srv.URL+"/jobs/"+l.JobID()))
	b.waitFor(t, "the stored lines", `document.getElementById("L40") !== null`)
	b.waitFor(t, "the stream to go live", `document.getElementById("status-text").textContent === "live"`)
	eval[bool](t, b, `window.samePage = true`)

	l.Write(buildLog(41, 80)...)
	b.waitFor(t, "new lines to appear", `document.getElementById("L80") !== null`)
	if !eval[bool](t, b, `window.samePage === true`) {
		t.Fatal("the page reloaded instead of receiving the lines")
	}
	if n := eval[int](t, b, `document.querySelectorAll("#log .ln").length`); n != 80 {
		t.Errorf("%d lines shown, want 80", n)
	}
	if !b.has(t, `#L17.err`) || b.has(t, `#L16.err`) {
		t.Error("stderr line 17 is not marked, or stdout line 16 is")
	}
	if !b.has(t, `#L11 .tx span.f2`) || b.text(t, "#L11 .tx") != "--- PASS: TestReplayFromLine/batch_11 (0.11s)" {
		t.Errorf("line 11 is not rendered in colour without its escapes: %q", b.text(t, "#L11 .tx"))
	}
	if got := b.text(t, "#command"); got != "make test" {
		t.Errorf("command %q", got)
	}
	if !b.has(t, `#cancel:not([hidden])`) || !b.has(t, `.state.running`) {
		t.Error("a running job shows no running state or no cancel button")
	}
	b.waitFor(t, "the log to follow the tail", `(() => { const e = document.getElementById("log"); return e.scrollHeight - e.scrollTop - e.clientHeight < 24 })()`)

	t.Logf("screenshot of the job page: %s", artifact(t, "job-page.png", b.screenshot(t)))
	b.colorScheme(t, "dark")
	t.Logf("in dark mode: %s", artifact(t, "job-page-dark.png", b.screenshot(t)))
	b.colorScheme(t, "light")

	// A server restart closes the stream with 1012; the page reconnects
	// after the last line it has and continues without a gap.
	srv.Stop()
	b.waitFor(t, "the page to notice", `document.getElementById("status-text").textContent.startsWith("reconnecting")`)
	srv.Restart()
	b.waitFor(t, "the stream to resume", `document.getElementById("status-text").textContent === "live"`)
	l.Write(buildLog(81, 120)...)
	b.waitFor(t, "lines after the restart", `document.getElementById("L120") !== null`)
	shown := eval[[]int](t, b, `[...document.querySelectorAll("#log .ln")].map(e => Number(e.id.slice(1)))`)
	for i, n := range shown {
		if n != i+1 {
			t.Fatalf("after the restart, line %d of the log view is line %d", i+1, n)
		}
	}
	if len(shown) != 120 {
		t.Errorf("after the restart the log shows %d lines, want 120", len(shown))
	}

	l.End(0)
	b.waitFor(t, "the final status", `document.getElementById("status-text").textContent === "finished: succeeded, exit 0"`)
	b.waitFor(t, "the header to show the result", `document.querySelector(".state.succeeded") !== null && document.getElementById("cancel").hidden`)
}

// /jobs/ID#L9000 of a 10,000-line job opens at line 9000: it is the first
// line loaded and the top of the view; the rest streams in after it, and
// earlier lines load on request.
func TestJobPagePermalink(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 10000)...)
	b := signedIn(t, srv)
	b.do(t, "open line 9000", chromedp.Navigate(srv.URL+"/jobs/"+job.ID+"#L9000"))
	b.waitFor(t, "line 9000", `document.getElementById("L9000") !== null`)
	if first := eval[string](t, b, `document.querySelector("#log .ln").id`); first != "L9000" {
		t.Errorf("first line shown is %s, want L9000", first)
	}
	offset := eval[float64](t, b, line9000Offset)
	if offset < -1 || offset > 60 {
		t.Errorf("line 9000 is %.0fpx from the top of the log view, want it at the top", offset)
	}
	if !b.has(t, `#L9000.target`) {
		t.Error("line 9000 is not highlighted")
	}
	b.waitFor(t, "the rest of the log", `document.getElementById("L10000") !== null`)
	b.waitFor(t, "the final status", `document.getElementById("status-text").textContent === "finished: succeeded, exit 0"`)
	if first := eval[string](t, b, `document.querySelector("#log .ln").id`); first != "L9000" {
		t.Errorf("after streaming, the first line shown is %s", first)
	}

	b.do(t, "load earlier lines", chromedp.Click(chromedp.CSS(".earlier button")))
	b.waitFor(t, "lines 8000-8999", `document.getElementById("L8000") !== null && document.getElementById("L8999") !== null`)
	if offset := eval[float64](t, b, line9000Offset); offset < -1 || offset > 60 {
		t.Errorf("loading earlier lines moved line 9000 to %.0fpx from the top", offset)
	}

	eval[bool](t, b, `(document.getElementById("L9500").scrollIntoView({block: "center"}), true)`)
	b.do(t, "click line number 9500", chromedp.Click(chromedp.CSS("#L9500 .no")))
	b.waitFor(t, "the hash and highlight to move", `location.hash === "#L9500" && document.querySelector("#L9500.target") !== null && document.querySelector("#L9000.target") === null`)
}

// A finished job's page without #L opens at the end of its log, however
// long: the last line is in view and the view is scrolled to the bottom.
func TestFinishedJobOpensAtTheEnd(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 10000)...)
	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
	b.waitFor(t, "the final status", `document.getElementById("status-text").textContent === "finished: succeeded, exit 0"`)
	b.waitFor(t, "the last line", `document.getElementById("L10000") !== null`)
	eval[bool](t, b, afterTwoFrames)
	if gap := eval[float64](t, b, `(() => { const e = document.getElementById("log"); return e.scrollHeight - e.scrollTop - e.clientHeight })()`); gap > 24 {
		t.Errorf("the log view is %.0fpx above its end", gap)
	}
	if shown := eval[bool](t, b, lineInView(10000)); !shown {
		first := eval[string](t, b, `[...document.querySelectorAll("#log .ln")].find(e => e.getBoundingClientRect().top >= document.getElementById("log").getBoundingClientRect().top)?.id ?? ""`)
		t.Errorf("line 10000 is not in view; the view starts at %s", first)
	}
	if !b.has(t, "#follow.on") {
		t.Error("the log does not follow its end")
	}
}

// A job recorded as rejected (a consumed message that was not a job spec)
// says it has no command, and shows its stdin (the message) and its error.
func TestRejectedJobPage(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	j, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Stdin: []byte("not a spec ✓"), RejectReason: "message jobs/0@9 cannot become a job"})
	if err != nil {
		t.Fatal(err)
	}
	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+j.ID))
	b.waitFor(t, "the parameters", `document.getElementById("params").textContent.includes("stdin")`)
	if got := b.text(t, "#command"); !strings.Contains(got, "recorded as rejected, never run") {
		t.Errorf("the command reads %q", got)
	}
	if got := b.text(t, "#params"); !strings.Contains(got, "14 bytes: not a spec ✓") {
		t.Errorf("the parameters read %q", got)
	}
	b.waitFor(t, "the error", `document.body.textContent.includes("message jobs/0@9 cannot become a job")`)
}

// A job that does not exist gets a page that says so, with the way back,
// instead of empty panels.
func TestJobNotFound(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	b := signedIn(t, srv)
	b.do(t, "open a job that does not exist", chromedp.Navigate(srv.URL+"/jobs/NOPE"))
	b.waitFor(t, "the page to say so", `!document.getElementById("not-found").hidden`)
	if got := b.text(t, "#not-found p"); !strings.Contains(got, "Job NOPE does not exist on this server") {
		t.Errorf("the page says %q", got)
	}
	if !b.has(t, `#not-found a[href="/"]`) {
		t.Error("no link back to the jobs page")
	}
	for _, panel := range []string{"#job-head", "#log-panel"} {
		if eval[bool](t, b, fmt.Sprintf(`document.querySelector(%q).getClientRects().length > 0`, panel)) {
			t.Errorf("%s is still shown", panel)
		}
	}
}

// A line longer than a stored batch may hold is stored in pieces, each a
// line of its own, all but the last partial: each row after the first
// piece is marked as continuing the one before, on its own stream, also
// when the rows come from "Load earlier lines".
func TestPartialLinesAreMarked(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Script: "make"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	var lines []spooltest.Line
	for n := 1; n <= 2000; n++ {
		lines = append(lines, spooltest.Line{Text: fmt.Sprintf("line %d", n)})
	}
	// Line 3 goes on in lines 5 and 6 (a stderr line comes between the
	// pieces), line 995 in line 996, which is loaded before it, and line
	// 1500 in line 1501, both streamed after the first page.
	lines[2] = spooltest.Line{Text: "aaaa", Partial: true}
	lines[3] = spooltest.Line{Text: "warning", Stderr: true}
	lines[4] = spooltest.Line{Text: "bbbb", Partial: true}
	lines[5] = spooltest.Line{Text: "cccc"}
	lines[994] = spooltest.Line{Text: "dddd", Partial: true}
	lines[995] = spooltest.Line{Text: "eeee"}
	lines[1499] = spooltest.Line{Text: "ffff", Partial: true}
	l.Write(lines...)
	l.End(0)

	b := signedIn(t, srv)
	b.do(t, "open line 996", chromedp.Navigate(srv.URL+"/jobs/"+l.JobID()+"#L996"))
	b.waitFor(t, "line 996", `document.getElementById("L996") !== null`)
	b.do(t, "load earlier lines", chromedp.Click(chromedp.CSS(".earlier button")))
	b.waitFor(t, "line 1", `document.getElementById("L1") !== null`)
	b.waitFor(t, "the rest of the log", `document.getElementById("L2000") !== null`)
	marked := eval[[]string](t, b, `[...document.querySelectorAll("#log .ln.cont")].map(e => e.id)`)
	if strings.Join(marked, " ") != "L5 L6 L996 L1501" {
		t.Errorf("rows marked as continuing the one before: %v, want L5 L6 L996 L1501", marked)
	}
	if marker := eval[string](t, b, `getComputedStyle(document.querySelector("#L6 .tx"), "::before").content`); !strings.Contains(marker, "↪") {
		t.Errorf("row 6 shows no continuation marker (::before content %s)", marker)
	}
	if title := eval[string](t, b, `document.getElementById("L5").title`); !strings.Contains(title, "continues line 3") {
		t.Errorf("row 5's title %q does not say which line it continues", title)
	}
	if got := b.text(t, "#L6 .tx"); got != "cccc" {
		t.Errorf("row 6's text is %q: the marker must not be part of it", got)
	}
}

// The jobs page lists jobs with their state; a queued job is cancelled
// from its page.
func TestJobsPageAndCancel(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	done := spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	queued, _, err := c.Submit(context.Background(), client.SubmitParams{Queue: "nightly", Script: "./backup.sh --all"})
	if err != nil {
		t.Fatal(err)
	}
	b := signedIn(t, srv)
	b.do(t, "open the jobs page", chromedp.Navigate(srv.URL+"/"))
	b.waitFor(t, "both jobs", `document.querySelectorAll("#jobs tr").length === 2 && document.querySelector("#jobs td.cmd") !== null`)
	rows := b.texts(t, "#jobs tr")
	if !strings.Contains(rows[0], "nightly") || !strings.Contains(rows[0], "queued") || !strings.Contains(rows[0], "./backup.sh --all") ||
		!strings.Contains(rows[1], "succeeded") || !strings.Contains(rows[1], "spooltest") {
		t.Errorf("jobs table rows: %q", rows)
	}
	t.Logf("screenshot of the jobs page: %s", artifact(t, "jobs-page.png", b.screenshot(t)))
	b.do(t, "filter by state", chromedp.SetValue(chromedp.CSS("#state"), "succeeded"))
	eval[bool](t, b, `document.getElementById("state").dispatchEvent(new Event("change"))`)
	b.waitFor(t, "the filtered list", `document.querySelectorAll("#jobs tr").length === 1 && location.search === "?state=succeeded"`)
	if rows := b.texts(t, "#jobs tr"); !strings.Contains(rows[0], done.ID) {
		t.Errorf("filtered rows: %q", rows)
	}
	// The link holds the whole id, which the command line accepts (the
	// page shows its end: TestJobsListWidths).
	if id := b.text(t, "#jobs a.id"); id != done.ID {
		t.Errorf("the jobs page's id link holds %q, want %q", id, done.ID)
	}

	b.do(t, "open the queued job", chromedp.Navigate(srv.URL+"/jobs/"+queued.ID))
	b.waitFor(t, "the cancel button", `!document.getElementById("cancel").hidden`)
	if got := b.confirm(t, "#cancel"); got != "Click again to cancel" {
		t.Fatalf("after one click the cancel button reads %q; want it to ask for a second", got)
	}
	b.waitFor(t, "the job to be cancelled", `document.querySelector(".state.cancelled") !== null && document.getElementById("cancel").hidden`)
	b.waitFor(t, "the final status", `document.getElementById("status-text").textContent.startsWith("finished: cancelled")`)
	got, err := c.Job(context.Background(), queued.ID)
	if err != nil || got.Result.Error == "" {
		t.Fatalf("job after cancel: %v %v", got, err)
	}
}

// The ANSI renderer keeps colours and styles, drops every other escape
// sequence, and escapes all text.
func TestANSIRenderer(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	b := signedIn(t, srv)
	b.do(t, "open a page", chromedp.Navigate(srv.URL+"/"))
	cases := []struct{ in, want string }{
		{"plain <b>&\"'", "plain &lt;b&gt;&amp;&quot;&#39;"},
		{"\x1b[31mred\x1b[0m ok", `<span class="f1">red</span> ok`},
		{"\x1b[1;92mbold\x1b[22m x\x1b[39m y", `<span class="f10 b">bold</span><span class="f10"> x</span> y`},
		{"\x1b[38;5;196mx\x1b[38;5;244my\x1b[38;5;3mz", `<span style="color:rgb(255,0,0)">x</span><span style="color:rgb(128,128,128)">y</span><span class="f3">z</span>`},
		{"\x1b[38;2;1;2;3;48;5;4mx", `<span class="g4" style="color:rgb(1,2,3)">x</span>`},
		{"\x1b[38:2::10:20:30mx", `<span style="color:rgb(10,20,30)">x</span>`},
		{"\x1b[38;2;999;0;0mx", `<span style="color:rgb(255,0,0)">x</span>`},
		{"\x1b[3;4;9mx\x1b[0m", `<span class="i u s">x</span>`},
		{"\x1b[7mrev", `<span class="fi gi">rev</span>`},
		{"\x1b[2K\x1b[1Gcleared\x1b[?25l", "cleared"},
		{"\x1b]0;window title\x07text", "text"},
		{"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b(Bcharset", "charset"},
		{"10%\r20%\r30%", "30%"},
		{"crlf\r", "crlf"},
		{"a\x00b\x07c\x7fd\te", "abcd\te"},
		{"\x1b[31m<img src=x onerror=alert(1)>", `<span class="f1">&lt;img src=x onerror=alert(1)&gt;</span>`},
		{"cut off \x1b[3", "cut off "},
	}
	var in []string
	for _, c := range cases {
		in = append(in, c.in)
	}
	arg, _ := json.Marshal(in)
	got := eval[[]string](t, b, fmt.Sprintf(`import("/assets/ansi.js").then(m => %s.map(m.ansiToHtml))`, arg))
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("ansiToHtml(%q)\n got %s\nwant %s", c.in, got[i], c.want)
		}
	}
}

// afterTwoFrames resolves once the page has drawn twice more: long enough
// for anything the page does on the next frame.
const afterTwoFrames = `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`

// lineInView is whether line n is within the log view.
func lineInView(n int) string {
	return fmt.Sprintf(`(() => { const l = document.getElementById("L%d").getBoundingClientRect(), v = document.getElementById("log").getBoundingClientRect(); return l.top >= v.top - 1 && l.bottom <= v.bottom + 1 })()`, n)
}

// line9000Offset is how far line 9000 is from the top of the log view.
const line9000Offset = `document.getElementById("L9000").getBoundingClientRect().top - document.getElementById("log").getBoundingClientRect().top`
