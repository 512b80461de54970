package browsertest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// The job page lists the files a job kept, with their sizes, each a link
// that downloads it.
func TestJobPageListsArtifacts(t *testing.T) {
	srv := spooltest.NewServer(t)
	j, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Script: "make dist", Artifacts: []string{"dist/**"}})
	if err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	jc := srv.Client(client.Config{APIKey: l.JobToken()})
	for path, body := range map[string]string{"dist/app v1.tar.gz": strings.Repeat("z", 2500), "dist/VERSION": "1.2.3\n"} {
		if _, err := jc.UploadArtifact(context.Background(), j.ID, path, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	l.End(0)

	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+j.ID))
	b.waitFor(t, "the artifacts", `document.querySelectorAll("#artifact-rows tr").length === 2`)
	rows := b.texts(t, "#artifact-rows tr")
	if !strings.Contains(rows[0], "dist/VERSION") || !strings.Contains(rows[0], "6 B") ||
		!strings.Contains(rows[1], "dist/app v1.tar.gz") || !strings.Contains(rows[1], "2.5 kB") {
		t.Fatalf("the artifact rows read %q", rows)
	}
	if got := b.text(t, "#artifacts-line"); !strings.Contains(got, "2 files") || !strings.Contains(got, "dist/**") {
		t.Errorf("the artifacts line reads %q", got)
	}
	// The link fetches the file, with the page's session.
	got := eval[string](t, b, `fetch(document.querySelector("#artifact-rows tr:nth-child(2) a").href).then((r) => r.text())`)
	if got != strings.Repeat("z", 2500) {
		t.Fatalf("the link fetched %d bytes: %.80q", len(got), got)
	}
}
