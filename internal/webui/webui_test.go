package webui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPages(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		path, contentType, contains string
		status                      int
	}{
		{"/", "text/html", "<title>Jobs · spool</title>", 200},
		{"/jobs/0195-abc", "text/html", `src="/assets/job.js"`, 200},
		{"/scatters", "text/html", "<title>Scatters · spool</title>", 200},
		{"/scatters/0195-abc", "text/html", `src="/assets/scatter.js"`, 200},
		{"/queues", "text/html", "<title>Queues · spool</title>", 200},
		{"/queues/", "text/plain", "404", 404},
		{"/assets/scatterview.js", "text/javascript", "export function progressBar", 200},
		{"/assets/app.css", "text/css", "prefers-color-scheme: dark", 200},
		{"/assets/ansi.js", "text/javascript", "export function ansiToHtml", 200},
		{"/assets/emoji.js", "text/javascript", "export function emojify", 200},
		{"/assets/favicon.svg", "image/svg+xml", "<svg", 200},
		{"/assets/nothing.js", "text/plain", "404", 404},
		{"/assets/", "text/plain", "404", 404},
		{"/jobs/", "text/plain", "404", 404},
		{"/scatters/", "text/plain", "404", 404},
		{"/scatters/a/b", "text/plain", "404", 404},
		{"/elsewhere", "text/plain", "/scatters/SCATTER_ID", 404},
	} {
		resp := get(t, h, tc.path)
		b := body(t, resp)
		if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.contentType) || !strings.Contains(b, tc.contains) {
			t.Errorf("GET %s: %s %q %.80q; want %d %s containing %q", tc.path, resp.Status, resp.Header.Get("Content-Type"), b, tc.status, tc.contentType, tc.contains)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
	}
}

// Files are revalidated with their content hash, so a browser refetches
// exactly when a new server ships a changed file.
func TestETag(t *testing.T) {
	h := Handler()
	resp := get(t, h, "/assets/job.js")
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, resp.Header.Get("Cache-Control"))
	}
	if resp := get(t, h, "/assets/job.js", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %s", resp.Status)
	}
	if resp := get(t, h, "/assets/job.js", "If-None-Match", `"stale"`); resp.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match with an old ETag: %s", resp.Status)
	}
	if other := get(t, h, "/assets/jobs.js").Header.Get("ETag"); other == etag {
		t.Error("two files share an ETag")
	}
}

// Every file a page or module refers to is embedded: a typo would
// otherwise only show in a browser.
func TestReferencedAssetsExist(t *testing.T) {
	h := Handler()
	refs := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"|from "\./([^"]+)"`)
	for _, page := range []string{"/", "/jobs/x", "/scatters", "/scatters/x", "/assets/job.js", "/assets/jobs.js", "/assets/logview.js", "/assets/ansi.js",
		"/assets/stream.js", "/assets/scatter.js", "/assets/scatters.js", "/assets/scatterview.js", "/assets/util.js"} {
		for _, m := range refs.FindAllStringSubmatch(body(t, get(t, h, page)), -1) {
			ref := m[1]
			if ref == "" {
				ref = "/assets/" + m[2]
			}
			if resp := get(t, h, ref); resp.StatusCode != http.StatusOK {
				t.Errorf("%s refers to %s: %s", page, ref, resp.Status)
			}
		}
	}
}

// Every page links to both lists from its top bar, and marks the one it
// belongs to for screen readers as well as by its look.
func TestNavigation(t *testing.T) {
	h := Handler()
	nav := regexp.MustCompile(`(?s)<nav>(.*?)</nav>`)
	for _, tc := range []struct{ page, current string }{
		{"/", `href="/"`},
		{"/jobs/x", ""},
		{"/scatters", `href="/scatters"`},
		{"/scatters/x", ""},
	} {
		m := nav.FindStringSubmatch(body(t, get(t, h, tc.page)))
		if m == nil {
			t.Errorf("%s has no <nav>", tc.page)
			continue
		}
		for _, link := range []string{`href="/"`, `href="/scatters"`} {
			if !strings.Contains(m[1], link) {
				t.Errorf("%s: the top bar has no link %s: %s", tc.page, link, m[1])
			}
		}
		if tc.current != "" && !strings.Contains(m[1], tc.current+` aria-current="page"`) {
			t.Errorf("%s: the top bar does not mark %s as the current page: %s", tc.page, tc.current, m[1])
		}
	}
}

// The scatter page's markup gives its parts names and roles without
// waiting for its script: the progress bar the script draws goes into a
// labelled region, the batches table has headers, and the pager is links.
func TestScatterPageMarkup(t *testing.T) {
	b := body(t, get(t, Handler(), "/scatters/0195-abc"))
	for _, want := range []string{
		`<section class="not-found" id="not-found" hidden>`,
		`<button class="btn danger" id="cancel" type="button" hidden>Cancel scatter</button>`,
		`<ul class="legend" id="legend" aria-label="Batches by state">`,
		`<th class="num">Batch</th><th>Job</th><th>State</th><th class="num">Items</th><th class="num">Attempt</th><th class="num">Duration</th>`,
		`<nav class="pager" aria-label="Pages of batches">`,
		`<a class="btn small" id="prev" aria-disabled="true">`,
		`<a href="/scatters">Scatters</a> / <span class="mono" id="crumb-id">`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the scatter page lacks %s", want)
		}
	}
}
