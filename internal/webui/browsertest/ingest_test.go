package browsertest_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
	"github.com/spool-run/spool/spooltest"
)

// sendLines posts log events of source as a shipper does.
func sendLines(t *testing.T, srv *spooltest.Server, key, source string, from, to int) {
	t.Helper()
	var lines []ingesttest.Line
	for i := from; i <= to; i++ {
		lines = append(lines, ingesttest.Line{Source: source, ID: strconv.Itoa(i), Timestamp: 1_764_000_000_000 + int64(i), Message: "request " + strconv.Itoa(i) + " served"})
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/ingest/lines", bytes.NewReader(ingesttest.Lines(lines...)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sending lines: %s", resp.Status)
	}
}

// An external job (the log of a program spool did not start) has a page
// like any job's: it says where the log comes from, shows the lines as
// they are sent, and ends when the source is completed. The jobs list
// marks it external.
func TestExternalJobPage(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	key := srv.Key(t, spool.RoleIngest)
	const source = "/ecs/api:ecs/api/7f3e"
	sendLines(t, srv, key, source, 1, 30)
	jobs, _, err := srv.Client().JobsPage(context.Background(), client.ListParams{Source: source})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("the source's jobs: %v, %v", jobs, err)
	}
	id := jobs[0].ID

	b := signedIn(t, srv)
	b.do(t, "open the external job's page", chromedp.Navigate(srv.URL+"/jobs/"+id))
	b.waitFor(t, "the stored lines", `document.getElementById("L30") !== null`)
	b.waitFor(t, "the stream to go live", `document.getElementById("status-text").textContent === "live"`)
	if got := b.text(t, "#command"); got != "log of "+source {
		t.Errorf("the page's title line says %q", got)
	}
	sendLines(t, srv, key, source, 31, 60)
	b.waitFor(t, "lines sent now", `document.getElementById("L60") !== null`)
	if got := b.text(t, "#L45 .tx"); got != "request 45 served" {
		t.Errorf("line 45 reads %q", got)
	}
	if _, err := srv.Client().CompleteSource(context.Background(), source); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the end of the log", `document.getElementById("status-text").textContent.startsWith("finished: succeeded")`)

	b.do(t, "open the jobs list", chromedp.Navigate(srv.URL+"/"))
	b.waitFor(t, "the external job listed", `[...document.querySelectorAll("#jobs td.cmd")].some(td => td.textContent === "log of `+source+`")`)
}
