package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// batchScript is what each batch of the tests runs: a short wait, so the
// page sees batches running, and a result.
const batchScript = `sleep 0.2; echo '{"ok":true}' > "$SPOOL_RESULT"`

// startScatter starts a scatter of batches of items ("[1,2]", ...) on srv.
func startScatter(t *testing.T, srv *spooltest.Server, ns client.ScatterParams, batches ...string) *spool.Scatter {
	t.Helper()
	for _, b := range batches {
		ns.Batches = append(ns.Batches, json.RawMessage(b))
	}
	sc, err := srv.Client().StartScatter(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// progressNow is the progress bar's value and its words.
const progressNow = `(() => { const p = document.querySelector("#progress [role=progressbar]"); return p ? p.getAttribute("aria-valuenow") + "/" + p.getAttribute("aria-valuemax") : "" })()`

// A running scatter's page shows its progress, its batches (those over the
// concurrency limit as waiting) and its spec, follows it to the end without
// a reload, then shows the gather and stops refreshing. The jobs page and
// a batch's job page lead back to it. Screenshots are kept.
func TestScatterPageFollowsProgress(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	tolerated := 1
	sc := startScatter(t, srv, client.ScatterParams{
		Job:                   client.SubmitParams{Script: batchScript, Queue: "images"},
		BatchInput:            json.RawMessage(`{"width": 800}`),
		MaxConcurrency:        2,
		ToleratedFailureCount: &tolerated,
		Gather:                `cat > /dev/null`,
	}, `[1,2]`, `[3,4]`, `[5]`)
	id := sc.ID

	// No worker yet: the scatter stays running with two batches queued and
	// the third waiting for its turn.
	b := signedIn(t, srv)
	b.do(t, "open the scatter page", chromedp.Navigate(srv.URL+"/scatters/"+id))
	b.waitFor(t, "two batches queued, one waiting", `document.querySelectorAll("#batches .state.queued").length === 2 && document.querySelectorAll("#batches .state.waiting").length === 1`)
	if !b.has(t, "#state .state.running") || !b.has(t, "#cancel:not([hidden])") {
		t.Error("a running scatter shows no running state or no cancel button")
	}
	if got := b.text(t, "#command"); got != batchScript {
		t.Errorf("command %q", got)
	}
	if got := eval[string](t, b, progressNow); got != "0/3" {
		t.Errorf("progress bar %q, want 0/3", got)
	}
	if got := b.text(t, "#progress-count"); got != "0 / 3 batches · 0 of 5 items done" {
		t.Errorf("progress numbers %q", got)
	}
	facts := strings.Join(eval[[]string](t, b, `[...document.querySelectorAll("#facts > div")].map(d => [...d.children].map(c => c.textContent).join(" "))`), " | ")
	for _, want := range []string{"queue images", "batches 3", "items 5", "concurrency at most 2 at once", "tolerated failures 1 batch", "gather runs once every batch has ended"} {
		if !strings.Contains(facts, want) {
			t.Errorf("facts %q lack %q", facts, want)
		}
	}
	if got := b.text(t, "#params"); !strings.Contains(got, `"width": 800`) {
		t.Errorf("parameters %q lack the batch input", got)
	}
	rows := b.texts(t, "#batches tr")
	if len(rows) != 3 || !strings.HasPrefix(rows[0], "0 "+id+".0 queued 2 ") || !strings.HasPrefix(rows[2], "2 "+id+".2 waiting") {
		t.Errorf("batch rows %q", rows)
	}
	links := eval[[]string](t, b, `[...document.querySelectorAll("#batches a.id")].map(a => a.getAttribute("href"))`)
	if strings.Join(links, " ") != "/jobs/"+id+".0 /jobs/"+id+".1" {
		t.Errorf("batch job links %q; the waiting batch has no job to link to yet", links)
	}
	t.Logf("screenshot of a waiting scatter: %s", artifact(t, "scatter-page-waiting.png", b.screenshot(t)))

	eval[bool](t, b, `window.samePage = true`)
	spooltest.NewWorker(t, srv, worker.Config{Queue: "images", Concurrency: 2})
	b.waitFor(t, "the scatter to succeed", `document.querySelector("#state .state.succeeded") !== null`)
	if !eval[bool](t, b, `window.samePage === true`) {
		t.Fatal("the page reloaded instead of refreshing its progress")
	}
	if got := eval[string](t, b, progressNow); got != "3/3" {
		t.Errorf("progress bar %q, want 3/3", got)
	}
	if got := b.text(t, "#progress-count"); got != "3 / 3 batches · 5 of 5 items done" {
		t.Errorf("progress numbers %q", got)
	}
	if got := b.text(t, "#count-succeeded"); got != "3" {
		t.Errorf("the legend counts %q succeeded", got)
	}
	if words := eval[string](t, b, `document.querySelector("#progress [role=progressbar]").getAttribute("aria-valuetext")`); !strings.HasPrefix(words, "3 of 3 batches ended: 3 succeeded, 0 failed") {
		t.Errorf("the progress bar's words %q", words)
	}
	b.waitFor(t, "every batch succeeded", `document.querySelectorAll("#batches .state.succeeded").length === 3`)
	if !b.has(t, "#cancel[hidden]") {
		t.Error("a finished scatter still offers to cancel")
	}
	if href := eval[string](t, b, `document.getElementById("gather-link")?.getAttribute("href") ?? ""`); href != "/jobs/"+id+".gather" {
		t.Errorf("gather link %q", href)
	}
	b.waitFor(t, "the gather's state", `document.querySelector("#facts .state.succeeded") !== null`)
	if got := b.texts(t, "#batches tr")[1]; !strings.HasPrefix(got, "1 "+id+".1 succeeded 2 1/") {
		t.Errorf("batch 1's row %q", got)
	}
	t.Logf("screenshot of a finished scatter: %s", artifact(t, "scatter-page.png", b.screenshot(t)))
	b.colorScheme(t, "dark")
	t.Logf("in dark mode: %s", artifact(t, "scatter-page-dark.png", b.screenshot(t)))
	b.colorScheme(t, "light")

	// Once final, the page stops asking: nothing more can change.
	updated := b.text(t, "#updated")
	eval[bool](t, b, `new Promise(r => setTimeout(() => r(true), 2500))`)
	if again := b.text(t, "#updated"); again != updated {
		t.Errorf("the page of a finished scatter still refreshes (%q, then %q)", updated, again)
	}

	// The jobs page marks the scatter's jobs, and a batch's page names its
	// scatter; both link to it.
	b.do(t, "open the jobs page", chromedp.Navigate(srv.URL+"/"))
	b.waitFor(t, "the scatter's jobs", `document.querySelectorAll("#jobs a.tag").length === 4`)
	tags := eval[[]string](t, b, `[...document.querySelectorAll("#jobs a.tag")].map(a => a.textContent + " " + a.getAttribute("href"))`)
	for _, want := range []string{"gather", "batch 0/3", "batch 1/3", "batch 2/3"} {
		if !strings.Contains(strings.Join(tags, "|"), want+" /scatters/"+id) {
			t.Errorf("the jobs page's scatter tags %q lack %q", tags, want)
		}
	}
	// A scatter job's short id keeps its suffix whole: the end of the
	// scatter's id, then .gather.
	if got, want := eval[string](t, b, shownID("#jobs a.id[title$='.gather']")), id[len(id)-8:]+".gather"; got != want {
		t.Errorf("the gather's short id shows %q, want %q", got, want)
	}
	t.Logf("screenshot of the jobs page with the scatter's jobs: %s", artifact(t, "jobs-page-scatter.png", b.screenshot(t)))
	b.do(t, "open batch 1's job page", chromedp.Navigate(srv.URL+"/jobs/"+id+".1"))
	b.waitFor(t, "the scatter line", `!document.getElementById("scatter-line").hidden`)
	if got := b.text(t, "#scatter-line"); got != "Part of scatter "+id+" (batch 1 of 3)" {
		t.Errorf("the job page says %q", got)
	}
	b.do(t, "follow it to the scatter", chromedp.Click(chromedp.CSS("#scatter-line a")))
	b.waitFor(t, "the scatter page", fmt.Sprintf(`location.pathname === "/scatters/%s" && document.querySelector("#state .state.succeeded") !== null`, id))
}

// A scatter that does not exist gets a page that says so, with the way
// back, whether its id could be one or not.
func TestScatterNotFound(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	b := signedIn(t, srv)
	for _, id := range []string{"NOPE", "0198c3a4-0000-7000-8000-000000000000"} {
		b.do(t, "open a scatter that does not exist", chromedp.Navigate(srv.URL+"/scatters/"+id))
		b.waitFor(t, "the page to say so", `!document.getElementById("not-found").hidden`)
		if got := b.text(t, "#not-found p"); !strings.Contains(got, "Scatter "+id+" does not exist on this server") {
			t.Errorf("the page says %q", got)
		}
		if !b.has(t, `#not-found a[href="/scatters"]`) {
			t.Error("no link back to the scatters page")
		}
		for _, panel := range []string{"#scatter-head", "#batches-panel"} {
			if eval[bool](t, b, fmt.Sprintf(`document.querySelector(%q).getClientRects().length > 0`, panel)) {
				t.Errorf("%s is still shown", panel)
			}
		}
		if got := b.text(t, "#error"); got != "" {
			t.Errorf("an error is shown besides: %q", got)
		}
	}
}

// The scatters page lists scatters newest first; a scatter of 150 batches
// shows them 100 a page, with links between the pages; the cancel button
// cancels it, and then the batches never handed out say they will not run.
func TestScattersPagesAndCancel(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	first := startScatter(t, srv, client.ScatterParams{Job: client.SubmitParams{Script: "true"}}, `["a"]`)
	var batches []string
	for i := range 150 {
		batches = append(batches, fmt.Sprintf(`[%d]`, i))
	}
	big := startScatter(t, srv, client.ScatterParams{Job: client.SubmitParams{Argv: []string{"./resize", "--width", "800"}}, MaxConcurrency: 120}, batches...)
	id := big.ID

	b := signedIn(t, srv)
	b.do(t, "open the scatters page", chromedp.Navigate(srv.URL+"/scatters"))
	b.waitFor(t, "both scatters", `document.querySelectorAll("#scatters tr").length === 2 && document.querySelector("#scatters a.id") !== null`)
	ids := eval[[]string](t, b, `[...document.querySelectorAll("#scatters a.id")].map(a => a.textContent)`)
	if len(ids) != 2 || ids[0] != id || ids[1] != first.ID {
		t.Errorf("the scatters page lists %q, want newest first", ids)
	}
	if row := b.texts(t, "#scatters tr")[0]; !strings.Contains(row, "running") || !strings.Contains(row, "0/150") || !strings.Contains(row, "./resize --width 800") {
		t.Errorf("the big scatter's row: %q", row)
	}
	if !b.has(t, `#scatters tr [role=progressbar][aria-valuemax="150"]`) {
		t.Error("the scatters page shows no progress bar")
	}
	if !b.has(t, `.topbar nav a.active[href="/scatters"]`) {
		t.Error("the top bar does not mark the scatters page")
	}
	t.Logf("screenshot of the scatters page: %s", artifact(t, "scatters-page.png", b.screenshot(t)))

	b.do(t, "open the big scatter", chromedp.Click(chromedp.CSS(`#scatters a.id`)))
	b.waitFor(t, "the first page of batches", `document.querySelectorAll("#batches tr").length === 100 && document.querySelector("#batches .state") !== null`)
	if got := b.text(t, "#batch-range"); got != "0–99 of 150" {
		t.Errorf("batch range %q", got)
	}
	if !b.has(t, `#prev[aria-disabled="true"]:not([href])`) || !b.has(t, `#next[href="?from=100"]`) {
		t.Error("the first page's pager links are wrong")
	}
	b.do(t, "go to the next page", chromedp.Click(chromedp.CSS("#next")))
	b.waitFor(t, "the second page", `location.search === "?from=100" && document.querySelectorAll("#batches tr").length === 50 && document.querySelector("#batches .state") !== null`)
	if got := b.text(t, "#batch-range"); got != "100–149 of 150" {
		t.Errorf("batch range %q", got)
	}
	b.waitFor(t, "batches over the limit to wait", `document.querySelectorAll("#batches .state.waiting").length === 30`)
	if !b.has(t, `#next[aria-disabled="true"]`) || !b.has(t, `#prev[href="/scatters/`+id+`"]`) {
		t.Error("the last page's pager links are wrong")
	}

	if got := b.confirm(t, "#cancel"); got != "Click again to cancel" {
		t.Fatalf("after one click the cancel button reads %q; want it to ask for a second", got)
	}
	b.waitFor(t, "the scatter to be cancelled", `document.querySelector("#state .state.cancelled") !== null && document.getElementById("cancel").hidden`)
	b.waitFor(t, "its batches to say so", `document.querySelectorAll("#batches .state.cancelled").length === 20 && document.querySelectorAll("#batches .state.not-run").length === 30`)
	if got := b.text(t, "#scatter-error"); !strings.Contains(got, "cancelled from the web UI") {
		t.Errorf("the scatter's error %q does not say why", got)
	}
	// The batch jobs are cancelled a moment after the scatter, and counted
	// at its driver's next round: the page refreshes until then.
	b.waitFor(t, "every batch to be counted as ended", progressNow+` === "150/150"`)
	got, err := srv.Client().Scatter(context.Background(), id)
	if err != nil || got.State != spool.ScatterCancelled {
		t.Fatalf("scatter after cancel: %v %v", got.State, err)
	}
}

// A read key may look at scatters but not cancel one: the page says the
// server's reason rather than pretend.
func TestScatterCancelNeedsSubmit(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	sc := startScatter(t, srv, client.ScatterParams{Job: client.SubmitParams{Script: "true"}}, `[1]`)
	b := newBrowser(t)
	b.do(t, "open the scatter page", chromedp.Navigate(srv.URL+"/scatters/"+sc.ID))
	b.signIn(t, srv.Key(t, spool.RoleRead))
	b.waitFor(t, "the cancel button", `!document.getElementById("cancel").hidden`)
	if got := b.confirm(t, "#cancel"); got != "Click again to cancel" {
		t.Fatalf("after one click the cancel button reads %q; want it to ask for a second", got)
	}
	b.waitFor(t, "the refusal", `document.getElementById("error").textContent.startsWith("Cancel failed:")`)
	if !b.has(t, "#state .state.running") {
		t.Error("the scatter does not show as running after a refused cancel")
	}
}

// A failed scatter's page links the jobs of its failed batches, where the
// reason is.
func TestScatterPageNamesFailedJobs(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{Concurrency: 1})
	sc := startScatter(t, srv, client.ScatterParams{Job: client.SubmitParams{Script: "exit 1"}}, `[1]`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := srv.Client().FollowScatter(ctx, sc.ID, 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	b := signedIn(t, srv)
	b.do(t, "open the failed scatter's page", chromedp.Navigate(srv.URL+"/scatters/"+sc.ID))
	link := fmt.Sprintf(`#facts a[href="/jobs/%s.0"]`, sc.ID)
	b.waitFor(t, "the failed job's link", fmt.Sprintf(`document.querySelector(%q) !== null`, link))
}
