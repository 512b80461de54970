package browsertest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// The job page of a job with a secret names the secret, shows *** for its
// value, and nowhere holds the value, in its text or its markup; its log
// shows what the worker sent.
func TestJobPageHidesSecrets(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	const value = "browser-secret-value-71c2"
	j, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Script: "./deploy.sh", Queue: "deploys",
		Env: map[string]string{"STAGE": "prod"}, Secrets: map[string]string{"DEPLOY_TOKEN": value}})
	if err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "deploys")
	if l.Secrets()["DEPLOY_TOKEN"] != value {
		t.Fatal("the lease does not carry the secret")
	}
	l.Begin()
	l.Write(spooltest.Line{Text: "deploying with ***"})
	l.End(0)

	b := signedIn(t, srv)
	b.do(t, "open the job", chromedp.Navigate(srv.URL+"/jobs/"+j.ID))
	b.waitFor(t, "the parameters", `document.getElementById("params").textContent.includes("secret")`)
	b.waitFor(t, "the log", `document.getElementById("L1") !== null`)
	if got := b.text(t, "#params"); !strings.Contains(got, "secret DEPLOY_TOKEN***") || !strings.Contains(got, "env STAGEprod") {
		t.Errorf("the parameters read %q", got)
	}
	if html := eval[string](t, b, `document.documentElement.outerHTML`); strings.Contains(html, value) {
		t.Error("the page holds the secret's value")
	}
}
