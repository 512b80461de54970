package browsertest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// signedIn is a browser signed in to srv with its admin key, through the
// sign-in form.
func signedIn(t *testing.T, srv *spooltest.Server) *browser {
	t.Helper()
	b := newBrowser(t)
	b.do(t, "open the jobs page", chromedp.Navigate(srv.URL+"/"))
	b.signIn(t, srv.AdminKey)
	return b
}

// signIn fills the sign-in form with key and waits until it is accepted.
func (b *browser) signIn(t *testing.T, key string) {
	t.Helper()
	b.waitFor(t, "the sign-in form", `document.getElementById("login-key") !== null`)
	b.submitKey(t, key)
	b.waitFor(t, "to be signed in", `document.getElementById("logout") !== null && document.getElementById("login-key") === null`)
}

// submitKey types key into the sign-in form and sends it, as a person
// would.
func (b *browser) submitKey(t *testing.T, key string) {
	t.Helper()
	eval[bool](t, b, fmt.Sprintf(`(() => {
		document.getElementById("login-key").value = %q;
		document.getElementById("login-form").requestSubmit();
		return true;
	})()`, key))
}

// A person opens the UI, is asked for a key, signs in with a read key,
// follows a running job's log, and logs out. The key is never kept where a
// script or a URL could show it: the session is an HttpOnly cookie.
func TestSignInFollowJobAndLogOut(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	_, readKey, err := srv.Client().CreateKey(context.Background(), client.KeyParams{Name: "alice", Role: spool.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Argv: []string{"make"}, Queue: "ci"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "ci")
	l.Begin()
	l.Write(spooltest.Seq(1, 20)...)

	b := newBrowser(t)
	b.do(t, "open the job page", chromedp.Navigate(srv.URL+"/jobs/"+l.JobID()))
	b.waitFor(t, "the sign-in form", `document.getElementById("login-key") !== null`)
	if b.has(t, "#L1") {
		t.Fatal("the log is shown before signing in")
	}

	// A wrong key is refused with the server's reason; the form stays.
	b.submitKey(t, "spool_not-a-key")
	b.waitFor(t, "the refusal", `document.getElementById("login-error").textContent.includes("not known")`)
	t.Logf("screenshot of the sign-in form: %s", artifact(t, "sign-in.png", b.screenshot(t)))

	b.signIn(t, readKey)
	if got := b.text(t, "#account .muted"); got != "alice · read" {
		t.Errorf("the top bar shows %q", got)
	}
	b.waitFor(t, "the stored lines", `document.getElementById("L20") !== null`)
	b.waitFor(t, "the stream to go live", `document.getElementById("status-text").textContent === "live"`)
	l.Write(spooltest.Seq(21, 40)...)
	b.waitFor(t, "live lines", `document.getElementById("L40") !== null`)
	if c := eval[string](t, b, `document.cookie`); c != "" {
		t.Errorf("scripts can read cookies %q: the session cookie must be HttpOnly", c)
	}
	if s := eval[string](t, b, `location.href + JSON.stringify(localStorage) + JSON.stringify(sessionStorage)`); strings.Contains(s, readKey) {
		t.Error("the key is kept in the URL or the page's storage")
	}
	// A read key cannot cancel: the page says so rather than pretend.
	if eval[int](t, b, `fetch("/api/v1/jobs/`+l.JobID()+`/cancel", {method: "POST"}).then(r => r.status)`) != 403 {
		t.Error("a read key's session could cancel a job")
	}

	eval[bool](t, b, `document.getElementById("logout").click(), true`)
	b.waitFor(t, "the sign-in form again", `document.getElementById("login-key") !== null`)
	if got := eval[int](t, b, `fetch("/api/v1/jobs").then(r => r.status)`); got != 401 {
		t.Errorf("after logging out the API answers %d, want 401", got)
	}
	l.End(0)
}

// A person follows a running job's log with a read key that an admin then
// revokes. Though the job prints nothing meanwhile, the page stops within
// seconds, says the key was revoked, and does not try again with it; once
// the person signs in with another key, the log goes on where it stopped.
func TestRevokedKeyStopsTheLog(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	_, bobKey, err := srv.Client().CreateKey(context.Background(), client.KeyParams{Name: "bob", Role: spool.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Argv: []string{"make"}}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(spooltest.Seq(1, 20)...)

	b := newBrowser(t)
	b.do(t, "open the job page", chromedp.Navigate(srv.URL+"/jobs/"+l.JobID()))
	b.signIn(t, bobKey)
	b.waitFor(t, "the stream to go live", `document.getElementById("status-text").textContent === "live"`)
	// Count the WebSockets the page opens from now on, and every status
	// it shows.
	eval[bool](t, b, `(() => {
		window.opened = 0;
		const WS = window.WebSocket;
		window.WebSocket = class extends WS { constructor(...a) { super(...a); window.opened++; } };
		window.statuses = [];
		const el = document.getElementById("status-text");
		new MutationObserver(() => window.statuses.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
		return true;
	})()`)

	if _, err := srv.Client().RevokeKey(context.Background(), "bob"); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the page to say the key was revoked", `document.getElementById("status-text").textContent.startsWith('stopped: API key "bob" was revoked')`)
	b.waitFor(t, "the sign-in form, with the reason", `document.getElementById("login-why")?.textContent.includes('API key "bob" was revoked')`)
	b.signIn(t, srv.AdminKey)
	b.waitFor(t, "the stream to go live again", `document.getElementById("status-text").textContent === "live"`)
	l.Write(spooltest.Seq(21, 30)...)
	b.waitFor(t, "the lines written after", `document.getElementById("L30") !== null`)
	if n := eval[int](t, b, `window.opened`); n != 1 {
		t.Errorf("the page opened %d WebSockets after the revocation, want 1 (after signing in again)", n)
	}
	if got := eval[[]string](t, b, `window.statuses`); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "reconnecting") }) {
		t.Errorf("the page tried to reconnect with the revoked key: statuses %q", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll(".ln").length`); n < 30 || !b.has(t, "#L21") {
		t.Errorf("after signing in again the log has %d lines, want every line from 1 to 30", n)
	}
	l.End(0)
}
