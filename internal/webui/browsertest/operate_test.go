package browsertest_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/spooltest"
)

// The operator's pages: queues with their counts and pause buttons, and the
// job page's rerun button and elapsed time.

// queueRow is the text of the named queue's row on the queues page, cell
// by cell, joined with "|".
func queueRow(name string) string {
	return `([...document.querySelectorAll("#queues tr")].map(r => [...r.cells].map(c => c.textContent.trim()).join("|")).find(r => r.startsWith("` + name + `|")) || "")`
}

// endedChart describes the named queue's chart of jobs ended per minute:
// its bars (a group per minute), the minutes with jobs ended, and the
// title of the last of those.
func endedChart(name string) string {
	return `(() => {
		const row = [...document.querySelectorAll("#queues tr")].find(r => r.cells[0] && r.cells[0].textContent.trim() === "` + name + `");
		const svg = row && row.querySelector("svg.ended-chart");
		if (!svg) return "none";
		const minutes = [...svg.querySelectorAll("g.minute")];
		const ended = minutes.filter(g => Number(g.dataset.ended) > 0);
		const last = ended.length ? ended[ended.length - 1].querySelector("title").textContent : "";
		return minutes.length + "|" + ended.length + "|" + svg.querySelectorAll("g.minute rect.succeeded").length + "|" + last;
	})()`
}

// The queues page shows each queue's counts and pauses and resumes it: a
// paused queue gives its jobs to no worker.
func TestQueuesPagePausesAndResumes(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	for range 3 {
		if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "builds", Argv: []string{"make"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "quiet", Argv: []string{"make"}}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "builds")
	l.Begin()
	l.End(0)
	spooltest.LeaseJob(t, srv, "builds").Begin() // one runs

	b := signedIn(t, srv)
	b.do(t, "open the queues page", chromedp.Navigate(srv.URL+"/queues"))
	b.waitFor(t, "the builds row", queueRow("builds")+` !== ""`)
	cells := strings.Split(eval[string](t, b, queueRow("builds")), "|")
	// Queue, state, scheduled, queued, running, max running, succeeded,
	// failed, cancelled, the last hour's chart (its text: the titles),
	// oldest, workers, button.
	if len(cells) != 13 || cells[1] != "active" || cells[2] != "0" || cells[3] != "1" || cells[4] != "1" || cells[5] != "-" ||
		cells[6] != "1" || cells[7] != "0" || cells[12] != "Pause" {
		t.Fatalf("builds row: %q", cells)
	}
	if cells[10] == "" || cells[11] != "1" {
		t.Errorf("oldest waiting %q, workers %q; want an age and the worker that polled", cells[10], cells[11])
	}
	t.Logf("screenshot of the queues page: %s", artifact(t, "queues-page.png", b.screenshot(t)))
	// The one job that ended is a bar of the last hour's 60, titled with
	// its minute's figures.
	chart := strings.Split(eval[string](t, b, endedChart("builds")), "|")
	if len(chart) != 4 || chart[0] != "60" || chart[1] != "1" || chart[2] != "1" || !strings.HasSuffix(chart[3], ": 1 succeeded, 0 failed, 0 cancelled") {
		t.Errorf("builds' chart of the last hour: %q; want 60 minutes, one with a job succeeded", chart)
	}

	pause := `#queues button[data-queue="builds"]`
	if got := eval[string](t, b, endedChart("quiet")); got != "none" {
		t.Errorf("a queue with nothing ended has a chart: %q", got)
	}

	if got := b.confirm(t, pause); got != "Click again to pause" {
		t.Fatalf("after one click the button reads %q; a pause needs a second click", got)
	}
	b.waitFor(t, "the queue paused", queueRow("builds")+`.split("|")[1] === "paused"`)
	qs, _, err := c.Queues(ctx)
	if err != nil || !paused(qs, "builds") {
		t.Fatalf("the server does not have builds paused: %v", err)
	}
	if ls, _, err := c.JobsPage(ctx, client.ListParams{Queue: "builds", States: []spool.State{spool.Queued}}); err != nil || len(ls) != 1 {
		t.Fatalf("queued jobs of the paused queue: %d, %v", len(ls), err)
	}
	if ls := dequeueNow(t, srv, "builds"); len(ls) != 0 {
		t.Fatalf("a worker got %d jobs of a paused queue", len(ls))
	}

	b.do(t, "click Resume", chromedp.Click(chromedp.CSS(pause)))
	b.waitFor(t, "the queue active again", queueRow("builds")+`.split("|")[1] === "active"`)
	if ls := dequeueNow(t, srv, "builds"); len(ls) != 1 {
		t.Fatalf("after resuming a worker got %d jobs, want the waiting one", len(ls))
	}
}

func paused(qs []*spool.Queue, name string) bool {
	for _, q := range qs {
		if q.Name == name {
			return q.Paused
		}
	}
	return false
}

// dequeueNow asks for a queue's jobs as a worker does, without waiting.
func dequeueNow(t *testing.T, srv *spooltest.Server, queue string) []*spoolv1.JobLease {
	t.Helper()
	rpc, err := wire.Dial(srv.URL, wire.Options{APIKey: srv.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rpc.DequeueJobs(context.Background(), connect.NewRequest(&spoolv1.DequeueJobsRequest{Queue: queue, MaxJobs: 10, VisibilityTimeoutSeconds: 60}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.GetLeases()
}

// A running job shows how long it has been running; once finished, Rerun
// makes a new job and opens it, and each page links the other.
func TestJobPageRerun(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "ci", Argv: []string{"make", "test"}}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "ci")
	l.Begin()
	l.Write(spooltest.Seq(1, 3)...)

	b := signedIn(t, srv)
	b.do(t, "open the running job", chromedp.Navigate(srv.URL+"/jobs/"+l.JobID()))
	b.waitFor(t, "the elapsed time", `(document.getElementById("fact-elapsed") || {}).textContent !== undefined`)
	first := b.text(t, "#fact-elapsed")
	b.waitFor(t, "the elapsed time to count up", `document.getElementById("fact-elapsed").textContent !== "`+first+`"`)
	if !b.has(t, "#rerun[hidden]") {
		t.Error("a running job offers Rerun")
	}
	l.End(1)
	b.waitFor(t, "the Rerun button", `!document.getElementById("rerun").hidden`)
	b.do(t, "click Rerun", chromedp.Click(chromedp.CSS("#rerun")))
	b.waitFor(t, "the new job's page", `location.pathname !== "/jobs/`+l.JobID()+`" && document.getElementById("rerun-line").textContent.startsWith("Rerun of ")`)
	newID := strings.TrimPrefix(eval[string](t, b, `location.pathname`), "/jobs/")
	j, err := c.Job(ctx, newID)
	if err != nil {
		t.Fatal(err)
	}
	if j.RerunOf != l.JobID() || strings.Join(j.Params.Argv, " ") != "make test" || j.Queue != "ci" {
		t.Fatalf("the new job: rerun_of %q, argv %q, queue %q", j.RerunOf, j.Params.Argv, j.Queue)
	}
	if got := b.text(t, "#command"); got != "make test" {
		t.Errorf("the new job's page shows %q", got)
	}
	b.do(t, "follow the link to the old job", chromedp.Click(chromedp.CSS("#rerun-line a")))
	b.waitFor(t, "the old job's page with its rerun", `location.pathname === "/jobs/`+l.JobID()+`" && document.getElementById("rerun-line").textContent === "Rerun as `+newID+`."`)
}
