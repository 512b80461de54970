package browsertest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// The tools of the job page's log: search, times, the raw download,
// sections, links to lines and keys.

// search types q into the search box and presses Enter, as a person would.
func (b *browser) search(t *testing.T, q string) {
	t.Helper()
	eval[bool](t, b, `(document.getElementById("search").value = "", true)`)
	b.do(t, "search for "+q, chromedp.SendKeys(chromedp.CSS("#search"), q+kb.Enter))
}

// hidden is whether line n's row is not displayed (folded away).
func hidden(n int) string {
	return fmt.Sprintf(`document.getElementById("L%d").getClientRects().length === 0`, n)
}

// A search runs on the server: it finds lines the page has not loaded,
// through colour codes, and a click on a result opens the log there. More
// results come on request; case-sensitive search finds only the case
// typed.
func TestJobPageSearch(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	lines := spooltest.Seq(1, 12_000)
	lines[1233] = spooltest.Line{Text: "\x1b[31mFATAL\x1b[0m: disk full on /var", Stderr: true}
	lines[10_999] = spooltest.Line{Text: "retrying after a fatal error"}
	job := spooltest.RunJob(t, srv, lines...)
	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
	b.waitFor(t, "the last line", `document.getElementById("L12000") !== null`)
	if b.has(t, "#L1234") {
		t.Fatal("line 1234 is loaded before the search: the test would not show that the search runs on the server")
	}

	b.search(t, "fatal")
	b.waitFor(t, "two results", `document.querySelectorAll("#search-hits .hit").length === 2`)
	if nos, txs := b.texts(t, "#search-hits .no"), b.texts(t, "#search-hits .tx"); strings.Join(nos, ",") != "1234,11000" ||
		strings.Join(txs, "|") != "FATAL: disk full on /var|retrying after a fatal error" {
		t.Errorf("results: lines %q, texts %q", nos, txs)
	}
	if got := b.texts(t, "#search-hits mark"); strings.Join(got, ",") != "FATAL,fatal" {
		t.Errorf("marked in the results: %q", got)
	}
	if got := b.text(t, "#search-summary"); got != "2 matches in 12,000 lines" {
		t.Errorf("summary %q", got)
	}
	if !b.has(t, "#search-more[hidden]") || !b.has(t, "#search-hits .hit.err") {
		t.Error("a More button for a complete search, or the stderr result is not marked")
	}

	b.do(t, "click the first result", chromedp.Click(chromedp.CSS(`#search-hits .hit[data-line="1234"]`)))
	b.waitFor(t, "line 1234 loaded and highlighted", `location.hash === "#L1234" && document.querySelector("#L1234.target") !== null`)
	b.waitFor(t, "line 1234 in view", lineInView(1234))
	if got := b.text(t, "#L1234 .tx"); got != "FATAL: disk full on /var" {
		t.Errorf("line 1234 reads %q", got)
	}
	b.do(t, "click the second result", chromedp.Click(chromedp.CSS(`#search-hits .hit[data-line="11000"]`)))
	b.waitFor(t, "line 11000 highlighted and in view", `location.hash === "#L11000" && document.querySelector("#L11000.target") !== null && `+lineInView(11000))
	if got := b.texts(t, "#search-hits .hit.active .no"); len(got) != 1 || got[0] != "11000" {
		t.Errorf("results highlighted: %q, want 11000's", got)
	}
	// A jump by the address (or a line number) to another line leaves no
	// result highlighted as if it were where the reader is.
	eval[bool](t, b, `(location.hash = "#L11500", true)`)
	b.waitFor(t, "line 11500 highlighted", `document.querySelector("#L11500.target") !== null && document.querySelector("#L11000.target") === null`)
	if got := b.texts(t, "#search-hits .hit.active .no"); len(got) != 0 {
		t.Errorf("after a jump to line 11500, results highlighted: %q", got)
	}

	b.do(t, "match case", chromedp.Click(chromedp.CSS("#search-case")))
	b.search(t, "fatal")
	b.waitFor(t, "one result", `document.getElementById("search-summary").textContent === "1 match in 12,000 lines"`)
	if got := b.texts(t, "#search-hits .no"); len(got) != 1 || got[0] != "11000" {
		t.Errorf("case-sensitive results: lines %q", got)
	}

	// "77" is in 318 of the lines: the first page has 100, More adds the
	// next 100.
	b.do(t, "any case", chromedp.Click(chromedp.CSS("#search-case")))
	b.search(t, "77")
	b.waitFor(t, "a page of results", `document.querySelectorAll("#search-hits .hit").length === 100 && !document.getElementById("search-more").hidden`)
	if got := b.text(t, "#search-summary"); !strings.HasPrefix(got, "100 matches in lines 1–") {
		t.Errorf("summary of a first page: %q", got)
	}
	b.do(t, "more results", chromedp.Click(chromedp.CSS("#search-more")))
	b.waitFor(t, "the next page", `document.querySelectorAll("#search-hits .hit").length === 200`)
	got := eval[[]int](t, b, `[...document.querySelectorAll("#search-hits .hit")].map(a => Number(a.dataset.line))`)
	var want []int
	for n := 1; n <= 12_000 && len(want) < 200; n++ {
		if strings.Contains(fmt.Sprint(n), "77") {
			want = append(want, n)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("results %v\nwant %v", got, want)
	}
	b.do(t, "close the results", chromedp.Click(chromedp.CSS("#search-close")))
	b.waitFor(t, "the results to close", `document.getElementById("search-results").hidden`)
}

// Times show each line's time of day, in the reader's time zone, to the
// millisecond, and the choice lasts.
func TestJobPageTimestamps(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	at := time.Date(2026, 3, 1, 4, 5, 6, 789_000_000, time.UTC)
	job := spooltest.RunJob(t, srv, spooltest.Line{Text: "first", At: at}, spooltest.Line{Text: "second", At: at.Add(1500 * time.Millisecond), Stderr: true})
	b := signedIn(t, srv)
	b.do(t, "read times as in Tokyo", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return err
	}))
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
	b.waitFor(t, "the lines", `document.getElementById("L2") !== null`)
	shown := func(n int) string {
		return eval[string](t, b, fmt.Sprintf(`getComputedStyle(document.getElementById("L%d"), "::before").content`, n))
	}
	if got := shown(1); got != "none" {
		t.Errorf("before the toggle, line 1 shows %s", got)
	}
	b.do(t, "show times", chromedp.Click(chromedp.CSS("#timestamps")))
	b.waitFor(t, "the toggle to be on", `document.querySelector("#timestamps.on[aria-pressed=true]") !== null`)
	if got, want := shown(1), `"13:05:06.789"`; got != want {
		t.Errorf("line 1 shows %s, want %s (04:05:06.789 UTC in Tokyo)", got, want)
	}
	if got, want := shown(2), `"13:05:08.289"`; got != want {
		t.Errorf("line 2 shows %s, want %s", got, want)
	}
	b.do(t, "reload", chromedp.Reload())
	b.waitFor(t, "the times after a reload", `document.getElementById("L1") !== null && getComputedStyle(document.getElementById("L1"), "::before").content === '"13:05:06.789"'`)
	b.do(t, "hide times", chromedp.Click(chromedp.CSS("#timestamps")))
	b.waitFor(t, "the times to go", `getComputedStyle(document.getElementById("L1"), "::before").content === "none"`)
}

// The Raw link downloads the whole log as the job wrote it.
func TestJobPageRawLink(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	lines := []spooltest.Line{{Text: "\x1b[1mstart\x1b[0m"}, {Text: "warning: slow", Stderr: true}, {Text: "Proceed? ", Partial: true}, {Text: "yes"}}
	lines = append(lines, spooltest.Seq(1, 6000)...) // more than the page loads
	job := spooltest.RunJob(t, srv, lines...)
	var want strings.Builder
	want.WriteString("\x1b[1mstart\x1b[0m\nwarning: slow\nProceed? yes\n")
	for n := 1; n <= 6000; n++ {
		fmt.Fprintf(&want, "%d\n", n)
	}
	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
	b.waitFor(t, "the log", `document.getElementById("L6004") !== null`)
	if !b.has(t, "#raw[download]") {
		t.Error("the Raw link is not a download")
	}
	type download struct {
		Href        string `json:"href"`
		Type        string `json:"type"`
		Disposition string `json:"disposition"`
		Body        string `json:"body"`
	}
	got := eval[download](t, b, `(async () => {
		const a = document.getElementById("raw");
		const r = await fetch(a.href);
		return {href: a.getAttribute("href"), type: r.headers.get("Content-Type"), disposition: r.headers.get("Content-Disposition"), body: await r.text()};
	})()`)
	if got.Href != "/api/v1/jobs/"+job.ID+"/logs/raw" || got.Type != "text/plain; charset=utf-8" ||
		got.Disposition != `attachment; filename="`+job.ID+`.log"` {
		t.Errorf("Raw link %q: Content-Type %q, Content-Disposition %q", got.Href, got.Type, got.Disposition)
	}
	if got.Body != want.String() {
		t.Errorf("the download is %d bytes (%.60q…), want the %d of the log", len(got.Body), got.Body, want.Len())
	}
}

// sectionLog has a section of each kind: GitHub's group (collapsed),
// Buildkite's three headers, GitLab's sections, one nested and collapsed,
// a Go test result that only looks like a Buildkite header, and a
// Buildkite section that its job opens (^^^ +++) after a failure.
var sectionLog = []spooltest.Line{
	{Text: "prelude"},               // 1
	{Text: "::group::Install deps"}, // 2  GitHub, collapsed
	{Text: "npm install"},           // 3
	{Text: "added 10 packages"},     // 4
	{Text: "::endgroup::"},          // 5
	{Text: "after the group"},       // 6
	{Text: "--- :package: Build"},   // 7  Buildkite, collapsed
	{Text: "make"},                  // 8
	{Text: "make: done"},            // 9
	{Text: "~~~ :test_tube: Test"},  // 10 Buildkite, collapsed, not bold
	{Text: "go test ./..."},         // 11
	{Text: "+++ Deploy"},            // 12 Buildkite, expanded, to line 21
	{Text: "deploying"},             // 13
	{Text: "\x1b[0Ksection_start:1700000000:lint[collapsed=true]\r\x1b[0K\x1b[36mLinting\x1b[0m"}, // 14 GitLab, collapsed
	{Text: "golangci-lint run"},                              // 15
	{Text: "section_end:1700000000:lint\r\x1b[0K"},           // 16
	{Text: "section_start:1700000001:pkg\r\x1b[0KPackaging"}, // 17 GitLab, expanded
	{Text: "tar czf out.tgz"},                                // 18
	{Text: "section_end:1700000001:pkg\r\x1b[0K"},            // 19
	{Text: "--- PASS: TestDeploy (0.00s)"},                   // 20 not a header
	{Text: "the end"},                                        // 21
	{Text: "--- Lint"},                                       // 22 Buildkite, collapsed
	{Text: "lint: 3 problems"},                               // 23
	{Text: "^^^ +++"},                                        // 24 opens Lint
	{Text: "exit status 1"},                                  // 25
}

// Sections render folded or unfolded as their markers say, with their
// titles (emoji shortcodes as emoji) and line counts and without the
// markers' text, and fold and unfold on a click.
func TestJobPageSections(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, sectionLog...)
	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
	b.waitFor(t, "the log", `document.getElementById("L25") !== null && document.getElementById("status-text").textContent.startsWith("finished")`)

	type head struct {
		line         int
		folded       bool
		title, count string
	}
	for _, h := range []head{
		{2, true, "Install deps", "3 lines"},
		{7, true, "📦 Build", "2 lines"},
		{10, true, "🧪 Test", "1 line"},
		{12, false, "Deploy", "9 lines"},
		{14, true, "Linting", "2 lines"},
		{17, false, "Packaging", "2 lines"},
		{22, false, "Lint", "3 lines"},
	} {
		sel := fmt.Sprintf("#L%d", h.line)
		if !b.has(t, sel+".sec-head") || b.has(t, sel+".folded") != h.folded || b.text(t, sel+" .sec-title") != h.title || b.text(t, sel+" .sec-count") != h.count {
			t.Errorf("line %d: header %v, folded %v, title %q, count %q; want a header, folded %v, %q, %q", h.line, b.has(t, sel+".sec-head"),
				b.has(t, sel+".folded"), b.text(t, sel+" .sec-title"), b.text(t, sel+" .sec-count"), h.folded, h.title, h.count)
		}
	}
	if !b.has(t, "#L14 .sec-title span.f6") {
		t.Error("the GitLab title is not in its colour")
	}
	if w := eval[string](t, b, `getComputedStyle(document.querySelector("#L10 .sec-title")).fontWeight`) + "/" + eval[string](t, b, `getComputedStyle(document.querySelector("#L7 .sec-title")).fontWeight`); w != "400/650" {
		t.Errorf("the ~~~ and --- titles' weights: %s, want 400/650", w)
	}
	wantHidden := map[int]bool{3: true, 4: true, 5: true, 8: true, 9: true, 11: true, 15: true, 16: true}
	checkHidden := func(when string) {
		t.Helper()
		for n := 1; n <= 25; n++ {
			if got := eval[bool](t, b, hidden(n)); got != wantHidden[n] {
				t.Errorf("%s: line %d hidden %v, want %v", when, n, got, wantHidden[n])
			}
		}
	}
	checkHidden("as loaded")
	for _, n := range []int{16, 19, 24} {
		if got := b.text(t, fmt.Sprintf("#L%d .tx", n)); got != "" {
			t.Errorf("the end marker on line %d shows %q", n, got)
		}
	}
	if times := b.texts(t, ".sec-head .sec-time"); len(times) != 7 || slices.ContainsFunc(times, func(s string) bool { return !isDuration(s) }) {
		t.Errorf("the sections' times: %q; want how long each of the 7 took", times)
	}
	if b.has(t, "#L20.sec-head") || b.text(t, "#L20 .tx") != "--- PASS: TestDeploy (0.00s)" {
		t.Error("a Go test result was taken for a Buildkite header")
	}

	b.do(t, "unfold the GitHub group", chromedp.Click(chromedp.CSS("#L2 .sec-title")))
	wantHidden[3], wantHidden[4], wantHidden[5] = false, false, false
	b.waitFor(t, "the group's lines", `!document.getElementById("L2").classList.contains("folded") && !(`+hidden(3)+`)`)
	checkHidden("the group unfolded")
	b.do(t, "unfold the lint section", chromedp.Click(chromedp.CSS("#L14 .fold")))
	wantHidden[15], wantHidden[16] = false, false
	b.waitFor(t, "the lint section's lines", `!(`+hidden(15)+`)`)
	checkHidden("lint unfolded")
	b.do(t, "fold the lint section again", chromedp.Click(chromedp.CSS("#L14 .fold")))
	b.waitFor(t, "the lint section folded", hidden(15))
	b.do(t, "fold Deploy", chromedp.Click(chromedp.CSS("#L12 .sec-title")))
	for n := 13; n <= 21; n++ {
		wantHidden[n] = true
	}
	b.waitFor(t, "Deploy folded", hidden(21))
	checkHidden("Deploy folded")
	b.do(t, "unfold Deploy", chromedp.Click(chromedp.CSS("#L12 .sec-title")))
	for n := 13; n <= 21; n++ {
		wantHidden[n] = n == 15 || n == 16
	}
	b.waitFor(t, "Deploy unfolded", `!(`+hidden(21)+`)`)
	checkHidden("Deploy unfolded, lint folded inside it")

	// A link into a folded section opens it.
	b.do(t, "open line 8", chromedp.Navigate(srv.URL+"/jobs/"+job.ID+"#L8"))
	b.waitFor(t, "line 8 shown and highlighted", `document.querySelector("#L8.target") !== null && !(`+hidden(8)+`) && !document.getElementById("L7").classList.contains("folded")`)
	b.do(t, "the link to line 3", chromedp.Navigate(srv.URL+"/jobs/"+job.ID+"#L3"))
	b.waitFor(t, "line 3 shown", `document.querySelector("#L3.target") !== null && !(`+hidden(3)+`)`)
}

// New lines fall into the section open at the tail, which is open while
// the job runs though its marker folds it, unless the reader folds it; a
// line after its end shows; a running section the reader left alone folds
// as marked when it ends.
func TestJobPageSectionsLive(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Script: "ci"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(spooltest.Line{Text: "start"}, spooltest.Line{Text: "::group::Live"}, spooltest.Line{Text: "inside 1"})
	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+l.JobID()))
	b.waitFor(t, "the stream to go live", `document.getElementById("status-text").textContent === "live" && document.getElementById("L3") !== null`)
	if eval[bool](t, b, hidden(3)) || b.has(t, "#L2.folded") {
		t.Error("the running group is folded")
	}
	l.Write(spooltest.Line{Text: "inside 2"}, spooltest.Line{Text: "inside 3"})
	b.waitFor(t, "the count to grow", `document.querySelector("#L2 .sec-count").textContent === "3 lines"`)
	if eval[bool](t, b, hidden(5)) || !eval[bool](t, b, lineInView(5)) {
		t.Error("a new line of the running group is hidden or out of view")
	}
	b.do(t, "fold it", chromedp.Click(chromedp.CSS("#L2 .fold")))
	b.waitFor(t, "the section to fold", hidden(5))
	l.Write(spooltest.Line{Text: "inside 4"})
	b.waitFor(t, "the count to grow", `document.querySelector("#L2 .sec-count").textContent === "4 lines"`)
	if !eval[bool](t, b, hidden(6)) {
		t.Error("a new line of a group the reader folded is shown")
	}
	b.do(t, "unfold it", chromedp.Click(chromedp.CSS("#L2 .fold")))
	l.Write(spooltest.Line{Text: "::endgroup::"}, spooltest.Line{Text: "outside"})
	b.waitFor(t, "the lines after", `document.getElementById("L8") !== null`)
	for n := 3; n <= 8; n++ {
		if eval[bool](t, b, hidden(n)) {
			t.Errorf("line %d is hidden", n)
		}
	}
	if b.has(t, "#L2.folded") {
		t.Error("the group the reader opened folded when it ended")
	}
	b.do(t, "fold it", chromedp.Click(chromedp.CSS("#L2 .fold")))
	b.waitFor(t, "the section to fold", hidden(7))
	if eval[bool](t, b, hidden(8)) || b.text(t, "#L2 .sec-count") != "5 lines" {
		t.Errorf("after the end marker: line 8 hidden %v, count %q", eval[bool](t, b, hidden(8)), b.text(t, "#L2 .sec-count"))
	}

	l.Write(spooltest.Line{Text: "::group::Second"}, spooltest.Line{Text: "second 1"})
	b.waitFor(t, "the second group, open", `document.getElementById("L10") !== null && !document.getElementById("L9").classList.contains("folded") && !(`+hidden(10)+`)`)
	l.Write(spooltest.Line{Text: "::endgroup::"}, spooltest.Line{Text: "done"})
	b.waitFor(t, "the second group to fold as it ended", `document.getElementById("L12") !== null && document.getElementById("L9").classList.contains("folded") && `+hidden(10))
	l.End(0)
	b.waitFor(t, "the final status", `document.getElementById("status-text").textContent === "finished: succeeded, exit 0"`)
}

// As on Buildkite, a finished log whose --- headers are all folded has its
// last --- section open (a ~~~ one stays folded); one with a +++ header
// keeps them as marked.
func TestJobPageLastBuildkiteSectionOpens(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	b := signedIn(t, srv)
	for _, c := range []struct {
		lines []string
		open  []int // of the headers on lines 1, 3 and 5
	}{
		{[]string{"--- Setup", "a", "--- Build", "b", "~~~ Upload", "c"}, []int{3}},
		{[]string{"--- Setup", "a", "+++ Build", "b", "--- Upload", "c"}, []int{3}},
		{[]string{"--- Setup", "a", "--- Build", "b", "--- Upload", "c"}, []int{5}},
	} {
		var lines []spooltest.Line
		for _, text := range c.lines {
			lines = append(lines, spooltest.Line{Text: text})
		}
		job := spooltest.RunJob(t, srv, lines...)
		b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
		b.waitFor(t, "the finished log", `document.getElementById("L6") !== null && document.getElementById("status-text").textContent.startsWith("finished")`)
		var open []int
		for _, n := range []int{1, 3, 5} {
			if !b.has(t, fmt.Sprintf("#L%d.folded", n)) && !eval[bool](t, b, hidden(n+1)) {
				open = append(open, n)
			}
		}
		if fmt.Sprint(open) != fmt.Sprint(c.open) {
			t.Errorf("%q: the sections open are those of lines %v, want %v", c.lines, open, c.open)
		}
	}
}

// A section whose header is loaded after its lines (Load earlier lines)
// takes in the rows shown, unfolded, since they were being read.
func TestJobPageSectionLoadedEarlier(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	lines := spooltest.Seq(1, 2500)
	lines[9].Text = "--- Long step" // a Buildkite header, folded by default
	job := spooltest.RunJob(t, srv, lines...)
	b := signedIn(t, srv)
	b.do(t, "open line 1500", chromedp.Navigate(srv.URL+"/jobs/"+job.ID+"#L1500"))
	b.waitFor(t, "the log from line 1500", `document.getElementById("L2500") !== null && document.getElementById("status-text").textContent.startsWith("finished")`)
	for _, first := range []int{500, 1} {
		b.do(t, "load earlier lines", chromedp.Click(chromedp.CSS(".earlier button")))
		b.waitFor(t, fmt.Sprintf("lines from %d", first), fmt.Sprintf(`document.querySelector("#log .ln").id === "L%d"`, first))
	}
	if b.has(t, "#L10.folded") || eval[bool](t, b, hidden(1500)) || b.text(t, "#L10 .sec-count") != "2,490 lines" {
		t.Errorf("the header loaded last: folded %v, line 1500 hidden %v, count %q; want unfolded, 2,490 lines", b.has(t, "#L10.folded"), eval[bool](t, b, hidden(1500)), b.text(t, "#L10 .sec-count"))
	}
	b.do(t, "fold it", chromedp.Click(chromedp.CSS("#L10 .fold")))
	b.waitFor(t, "every line after it hidden", hidden(11)+` && `+hidden(1500)+` && `+hidden(2500)+` && !(`+hidden(9)+`)`)
	// Ten lines are left: the view has nothing to scroll, no room kept
	// for the folded ones.
	eval[bool](t, b, afterTwoFrames)
	if h := eval[[]float64](t, b, `(() => { const e = document.getElementById("log"); return [e.scrollHeight, e.clientHeight] })()`); h[0] > h[1] {
		t.Errorf("the log view scrolls %.0fpx for %.0fpx of ten lines and a button", h[0], h[1])
	}
}

// A click on a line number copies a link to the line, says so, and puts
// the line in the address.
func TestJobPageCopyLineLink(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 100)...)
	b := signedIn(t, srv)
	b.do(t, "let the page use the clipboard", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := cdp.Call(ctx, chromedp.FromContext(b.ctx).Browser, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: srv.URL,
				BrowserContextID: chromedp.FromContext(b.ctx).BrowserContextID}); err != nil {
				return err
			}
		}
		// The clipboard takes writes only from a focused page, which a
		// headless browser's page may not be.
		_, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	}))
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
	b.waitFor(t, "line 50", `document.getElementById("L50") !== null`)
	eval[bool](t, b, `(document.getElementById("L50").scrollIntoView({block: "center"}), true)`)
	b.do(t, "click line number 50", chromedp.Click(chromedp.CSS("#L50 .no")))
	b.waitFor(t, "the cue", `document.querySelector("#L50 .copied") !== null`)
	if got := b.text(t, "#L50 .copied"); got != "Link copied" {
		t.Errorf("the cue says %q", got)
	}
	if hash := eval[string](t, b, `location.hash`); hash != "#L50" || !b.has(t, "#L50.target") {
		t.Errorf("after the click: hash %q, highlighted %v", hash, b.has(t, "#L50.target"))
	}
	if got, want := eval[string](t, b, `navigator.clipboard.readText()`), srv.URL+"/jobs/"+job.ID+"#L50"; got != want {
		t.Errorf("the clipboard holds %q, want %q", got, want)
	}
	b.waitFor(t, "the cue to go", `document.querySelector("#L50 .copied") === null`)
}

// End goes to the last line and follows the log again; Home to the top.
func TestJobPageEndKey(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 3000)...)
	b := signedIn(t, srv)
	b.do(t, "open line 100", chromedp.Navigate(srv.URL+"/jobs/"+job.ID+"#L100"))
	b.waitFor(t, "the rest of the log", `document.getElementById("L3000") !== null && document.getElementById("status-text").textContent.startsWith("finished")`)
	if b.has(t, "#follow.on") || eval[bool](t, b, lineInView(3000)) {
		t.Fatal("the view follows the end before End is pressed")
	}
	b.do(t, "press End", chromedp.KeyEvent(kb.End))
	b.waitFor(t, "the last line in view, followed", lineInView(3000)+` && document.querySelector("#follow.on") !== null && location.hash === ""`)
	b.do(t, "press Home", chromedp.KeyEvent(kb.Home))
	b.waitFor(t, "the top", lineInView(100)+` && document.getElementById("log").scrollTop === 0 && document.querySelector("#follow.on") === null`)
}

// A folded section of thousands of lines takes no room in the view, also
// where the browser has not laid it out: the scroll height is that of the
// lines shown.
func TestJobPageFoldedSectionTakesNoRoom(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	lines := spooltest.Seq(1, 4000)
	lines[0].Text = "::group::Big"
	lines[3000].Text = "::endgroup::"
	job := spooltest.RunJob(t, srv, lines...)
	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
	b.waitFor(t, "the end of the log", `document.getElementById("L4000") !== null && document.getElementById("status-text").textContent.startsWith("finished")`)
	eval[bool](t, b, afterTwoFrames)
	// Shown: the header and lines 3002-4000, 20px each, and the view's
	// padding.
	height := eval[float64](t, b, `document.getElementById("log").scrollHeight`)
	if want := float64(1000 * 20); height < want || height > want+40 {
		t.Errorf("the log view is %.0fpx high for 1000 lines shown (%.0fpx)", height, want)
	}
	if !b.has(t, "#L1.folded") || !eval[bool](t, b, hidden(2000)) || !eval[bool](t, b, lineInView(4000)) {
		t.Error("the group is not folded, or the view is not at the end")
	}
}
