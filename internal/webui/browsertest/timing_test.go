package browsertest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// scheduleRow is the text of the named schedule's row on the schedules
// page, cell by cell, joined with "|".
func scheduleRow(name string) string {
	return `([...document.querySelectorAll("#schedules tr")].map(r => [...r.cells].map(c => c.textContent.trim()).join("|")).find(r => r.startsWith("` + name + `|")) || "")`
}

// The schedules page lists each schedule with its expression, zone, queue,
// next and last runs and the job its last tick made, which it links to
// (and which links back); it pauses and resumes a schedule.
func TestSchedulesPage(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	if _, err := c.CreateSchedule(ctx, client.ScheduleParams{Name: "nightly", Cron: "0 3 * * *", Timezone: "Europe/Paris",
		Job: client.SubmitParams{Queue: "builds", Argv: []string{"make", "nightly"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSchedule(ctx, client.ScheduleParams{Name: "often", Cron: "@every 1s", Job: client.SubmitParams{Script: "date"}}); err != nil {
		t.Fatal(err)
	}

	b := signedIn(t, srv)
	b.do(t, "follow the nav to the schedules page", chromedp.Click(chromedp.CSS(`nav a[href="/schedules"]`)))
	b.waitFor(t, "the nightly row", scheduleRow("nightly")+` !== ""`)
	// Schedule, cron, zone, queue, state, next run, last run, last job,
	// command, button.
	cells := strings.Split(eval[string](t, b, scheduleRow("nightly")), "|")
	if len(cells) != 10 || cells[1] != "0 3 * * *" || cells[2] != "Europe/Paris" || cells[3] != "builds" || cells[4] != "active" ||
		!strings.HasPrefix(cells[5], "in ") || cells[6] != "" || cells[7] != "" || cells[8] != "make nightly" || cells[9] != "Pause" {
		t.Fatalf("nightly row: %q", cells)
	}
	if got := b.text(t, `nav a[aria-current="page"]`); got != "Schedules" {
		t.Errorf("the nav marks %q as the page", got)
	}

	// The ticker runs "often" within a second or two: its last job shows,
	// linked, and the job's page links back to the schedule.
	b.waitFor(t, "often's last job", `document.querySelector('#schedules tr[id="often"] td.last-job a') !== null`)
	cells = strings.Split(eval[string](t, b, scheduleRow("often")), "|")
	if cells[2] != "UTC" || cells[3] != "default" || cells[6] == "" {
		t.Errorf("often row: %q", cells)
	}
	b.do(t, "open often's last job", chromedp.Click(chromedp.CSS(`#schedules tr[id="often"] td.last-job a`)))
	b.waitFor(t, "the job's schedule", `document.querySelector("#fact-schedule")?.textContent === "often"`)
	b.do(t, "back to the schedule", chromedp.Click(chromedp.CSS(`#fact-schedule`)))
	b.waitFor(t, "often's row marked", `document.querySelector('#schedules tr.marked')?.id === "often"`)

	pause := `#schedules button[data-schedule="nightly"]`
	if got := b.confirm(t, pause); got != "Click again to pause" {
		t.Fatalf("after one click the button reads %q; a pause needs a second click", got)
	}
	b.waitFor(t, "nightly paused", scheduleRow("nightly")+`.split("|")[4] === "paused"`)
	if s, err := c.Schedule(ctx, "nightly"); err != nil || !s.Paused {
		t.Fatalf("the server does not have nightly paused: %+v, %v", s, err)
	}
	if cells := strings.Split(eval[string](t, b, scheduleRow("nightly")), "|"); cells[5] != "none while paused" || cells[9] != "Resume" {
		t.Errorf("paused row: %q", cells)
	}
	b.do(t, "click Resume", chromedp.Click(chromedp.CSS(pause)))
	b.waitFor(t, "nightly active again", scheduleRow("nightly")+`.split("|")[4] === "active"`)
	if s, err := c.Schedule(ctx, "nightly"); err != nil || s.Paused {
		t.Fatalf("the server still has nightly paused: %+v, %v", s, err)
	}
	t.Logf("screenshot of the schedules page: %s", artifact(t, "schedules-page.png", b.screenshot(t)))
}

// A scheduled job's page says when it is queued and which job it waits
// for, linked; that job's page links the jobs that follow it; the jobs
// list shows both scheduled, with what each waits for.
func TestScheduledJobPage(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	first, _, err := c.Submit(ctx, client.SubmitParams{Queue: "builds", Argv: []string{"make"}, RunIn: time.Hour, Priority: 1})
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := c.Submit(ctx, client.SubmitParams{Queue: "builds", Argv: []string{"./deploy.sh"}, After: []string{first.ID},
		Notify: []string{"https://example.com/hooks/spool"}})
	if err != nil {
		t.Fatal(err)
	}

	b := signedIn(t, srv)
	b.do(t, "list the scheduled jobs", chromedp.Navigate(srv.URL+"/?state=scheduled"))
	b.waitFor(t, "both jobs", `document.querySelectorAll("#jobs tr .state.scheduled").length === 2`)
	waits := b.texts(t, "#jobs .waits")
	if len(waits) != 2 || waits[0] != "after 1 job" || !strings.HasPrefix(waits[1], "in ") {
		t.Errorf("what the listed jobs wait for: %q", waits)
	}

	b.do(t, "open the job that waits", chromedp.Navigate(srv.URL+"/jobs/"+next.ID))
	b.waitFor(t, "its state", `document.querySelector("#state .state")?.textContent === "scheduled"`)
	if got := b.text(t, "#after-line"); got != "Waits for "+first.ID+" to succeed." {
		t.Errorf("after line: %q", got)
	}
	if got := b.text(t, "#fact-priority"); got != "2" {
		t.Errorf("priority of a job that asked for none: %q", got)
	}
	if got := b.text(t, "#notify-line"); got != "Told of its end: https://example.com/hooks/spool. Nothing is sent before it ends." {
		t.Errorf("notify line: %q", got)
	}
	if b.has(t, "#delivery-rows tr") {
		t.Error("a job not ended shows deliveries")
	}
	t.Logf("screenshot of a scheduled job: %s", artifact(t, "scheduled-job.png", b.screenshot(t)))

	b.do(t, "follow the link to the job it waits for", chromedp.Click(chromedp.CSS(`#after-line a`)))
	b.waitFor(t, "the first job's page", `document.querySelector("#crumb-id")?.textContent === "`+first.ID+`"`)
	if got := b.text(t, "#followers-line"); got != "Followed by "+next.ID+"." {
		t.Errorf("followers line: %q", got)
	}
	if got := b.text(t, "#fact-priority"); got != "1" {
		t.Errorf("priority: %q", got)
	}
	if !b.has(t, "#fact-run-after") || b.has(t, "#after-line:not([hidden])") {
		t.Error("the delayed job does not say when it is queued, or says it waits for jobs")
	}

	// Cancelled from its page, the first job takes the one after it along.
	if got := b.confirm(t, "#cancel"); got != "Click again to cancel" {
		t.Fatalf("after one click the cancel button reads %q; want it to ask for a second", got)
	}
	b.waitFor(t, "the first job cancelled", `document.querySelector("#state .state")?.textContent === "cancelled"`)
	// The server's promoter cancels the follower in its next round, which
	// the cancel rings for at once.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		j, err := c.Job(ctx, next.ID)
		if err == nil && j.State == spool.Cancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job after a cancelled one, 10 s later: %+v, %v", j, err)
		}
	}
	b.do(t, "back to the job after it", chromedp.Click(chromedp.CSS(`#followers-line a`)))
	b.waitFor(t, "it cancelled, and ran after", `document.querySelector("#after-line")?.textContent === "Ran after `+first.ID+`."`)
}

// A job's page lists its webhooks' tries as the server makes them: one URL
// answered 200, the other 500 (tried again later).
func TestJobPageDeliveries(t *testing.T) {
	t.Parallel()
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
		}
	}))
	defer hooks.Close()
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) { c.Notify.AllowPrivateAddresses = true }})
	c := srv.Client()
	ctx := context.Background()
	job, _, err := c.Submit(ctx, client.SubmitParams{Queue: "hooked", Argv: []string{"make"}, Notify: []string{hooks.URL + "/ok", hooks.URL + "/broken"}})
	if err != nil {
		t.Fatal(err)
	}
	b := signedIn(t, srv)
	b.do(t, "open the job's page", chromedp.Navigate(srv.URL+"/jobs/"+job.ID))
	b.waitFor(t, "its notify URLs", `document.querySelector("#notify-line")?.textContent.startsWith("Told of its end: ")`)
	l := spooltest.LeaseJob(t, srv, "hooked")
	l.Begin()
	l.End(0)
	// The page refreshes while a try is owed: both first tries show.
	b.waitFor(t, "two tries", `document.querySelectorAll("#delivery-rows tr").length >= 2`)
	rows := b.texts(t, "#delivery-rows tr")
	var ok, failed string
	for _, r := range rows {
		switch {
		case strings.Contains(r, "/ok"):
			ok = r
		case strings.Contains(r, "/broken"):
			failed = r
		}
	}
	if !strings.Contains(ok, " 1 200 ") || !strings.HasSuffix(ok, "delivered") {
		t.Errorf("the delivered try: %q", ok)
	}
	if !strings.Contains(failed, " 1 500 ") || !strings.Contains(failed, "failed: ") {
		t.Errorf("the failed try: %q", failed)
	}
	if got := b.text(t, "#notify-line"); !strings.Contains(got, "Next try in ") {
		t.Errorf("the notify line does not say when the failed URL is tried again: %q", got)
	}
	t.Logf("screenshot of a job's webhooks: %s", artifact(t, "job-webhooks.png", b.screenshot(t)))
}
