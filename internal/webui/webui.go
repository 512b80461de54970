// Package webui is spool's web UI: a jobs page, a job page with the live
// log, a scatters page and a scatter page with its progress and batches, a
// queues page with their counts and pause buttons, a schedules page with
// their next and last runs and pause buttons,
// served from plain HTML, CSS and JavaScript files embedded in the binary
// (no build step). The job pages talk to the REST API and the WebSocket log
// stream of package httpapi; the scatter pages call the ScatterService over
// Connect JSON (package connectapi), since the REST API has no scatters.
// Either way every request goes through the service core, with the
// server's checks of session and origin in front.
package webui

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var files embed.FS

// securityHeaders go on every response. Scripts and styles come only from
// this server; style attributes are allowed because the log renderer colours
// text with them and the scatter pages size progress segments with them
// (both from numbers they compute, never from text they show).
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; " +
		"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
}

// asset is an embedded file ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the UI: / (jobs), /jobs/{job_id} (one job), /scatters,
// /scatters/{scatter_id} (one scatter), /queues, /schedules and
// /assets/... (the files they load). Anything else is 404.
func Handler() http.Handler {
	assets := load()
	mux := http.NewServeMux()
	page := func(name string) http.HandlerFunc {
		a := assets[name]
		return func(w http.ResponseWriter, r *http.Request) { serve(w, r, a) }
	}
	mux.HandleFunc("GET /{$}", page("index.html"))
	mux.HandleFunc("GET /jobs/{job_id}", page("job.html"))
	mux.HandleFunc("GET /scatters", page("scatters.html"))
	mux.HandleFunc("GET /scatters/{scatter_id}", page("scatter.html"))
	mux.HandleFunc("GET /queues", page("queues.html"))
	mux.HandleFunc("GET /schedules", page("schedules.html"))
	mux.HandleFunc("GET /assets/{file...}", func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets[r.PathValue("file")]
		if !ok {
			notFound(w)
			return
		}
		serve(w, r, a)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { notFound(w) })
	return mux
}

// load reads every embedded file once, with a content hash for its ETag:
// embedded files have no modification time, and the hash changes exactly
// when a new binary ships a changed file.
func load() map[string]asset {
	out := map[string]asset{}
	err := fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		out[strings.TrimPrefix(p, "assets/")] = asset{body: body, contentType: ct,
			etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("webui: reading embedded assets: " + err.Error()) // the binary is broken
	}
	return out
}

func serve(w http.ResponseWriter, r *http.Request, a asset) {
	h := w.Header()
	for k, v := range securityHeaders {
		h.Set(k, v)
	}
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag)
	// Revalidate every time: cheap with the ETag, and a new server
	// version is picked up at once.
	h.Set("Cache-Control", "no-cache")
	if match := r.Header.Get("If-None-Match"); match != "" && match == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(a.body)
}

func notFound(w http.ResponseWriter) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	http.Error(w, "404 page not found: the web UI has / (jobs), /jobs/JOB_ID, /scatters, /scatters/SCATTER_ID and /queues", http.StatusNotFound)
}
