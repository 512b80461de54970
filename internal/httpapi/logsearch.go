package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/logsearch"
	"github.com/spool-run/spool/internal/service"
)

// LogSearch is one call's answer to a search of a job's log (schema
// LogSearch in openapi.yaml).
type LogSearch struct {
	JobID         string `json:"job_id"`
	State         string `json:"state"`
	Query         string `json:"query"`
	CaseSensitive bool   `json:"case_sensitive"`
	Matches       []Line `json:"matches"`
	// HasMore: a search from next_after_line may find more.
	HasMore bool `json:"has_more"`
	// NextAfterLine is where to go on: every match up to it is in matches.
	NextAfterLine int64 `json:"next_after_line"`
	// ScanLimitReached: the call stopped after the lines it may look at,
	// at next_after_line.
	ScanLimitReached bool  `json:"scan_limit_reached"`
	TotalLines       int64 `json:"total_lines"`
	Limit            int   `json:"limit"`
}

// parseSearchQuery reads q, case, after_line and limit. What q may be is
// the core's to say; here it is only taken once.
func parseSearchQuery(q url.Values) (logsearch.Request, error) {
	var sr logsearch.Request
	var err error
	if sr.Query, err = stringParam(q, "q"); err != nil {
		return sr, err
	}
	switch c, err := stringParam(q, "case"); {
	case err != nil:
		return sr, err
	case c == "sensitive":
		sr.CaseSensitive = true
	case c != "" && c != "insensitive":
		return sr, badRequest("case=%q: want sensitive, or insensitive (the default)", truncate(c, 40))
	}
	if sr.After, err = intParam(q, "after_line", 0, 0, service.MaxLine, "a line number, 0 or more"); err != nil {
		return sr, err
	}
	sr.Limit, err = limitParam(q, logsearch.DefaultMatches, logsearch.MaxMatches)
	return sr, err
}

// stringParam is the optional query parameter name ("" when absent), given
// at most once.
func stringParam(q url.Values, name string) (string, error) {
	switch s := q[name]; len(s) {
	case 0:
		return "", nil
	case 1:
		return s[0], nil
	default:
		return "", badRequest("%s is given %d times; give it once", name, len(s))
	}
}

func (a *api) searchLogs(w http.ResponseWriter, r *http.Request) {
	sr, err := parseSearchQuery(r.URL.Query())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	sr.JobID, sr.ScanLines = r.PathValue("job_id"), a.searchScanLines
	res, err := a.Service.SearchLog(r.Context(), sr)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	job := res.Job
	out := LogSearch{
		JobID:            job.GetJobId(),
		State:            convert.State(job.GetState()).String(),
		Query:            sr.Query,
		CaseSensitive:    sr.CaseSensitive,
		Matches:          make([]Line, len(res.Matches)),
		HasMore:          res.HasMore,
		NextAfterLine:    res.NextAfter,
		ScanLimitReached: res.ScanStopped,
		// The job was read before its lines: more may have been stored since.
		TotalLines: max(job.GetLineCount(), res.NextAfter),
		Limit:      res.Limit,
	}
	for i, ev := range res.Matches {
		out.Matches[i] = lineOf(ev.GetOutputData(), ev.GetTimestamp().AsTime().UnixMilli(), ev.GetAttempt())
	}
	writeJSON(w, http.StatusOK, out)
}

// rawLog sends a job's whole log as text, as the job wrote it, streamed as
// it is read: a log of any length costs a stored page and a write buffer.
func (a *api) rawLog(w http.ResponseWriter, r *http.Request) {
	raw, err := a.Service.OpenRawLog(r.Context(), r.PathValue("job_id"))
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	defer raw.Close()
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.log"`, fileName(raw.Job().GetJobId())))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return // the headers say what a GET gets; reading the log would be for nothing
	}
	sent := &sentWriter{w: w}
	buf := bufio.NewWriterSize(sent, 64<<10)
	_, err = raw.Copy(r.Context(), buf)
	if err == nil {
		err = buf.Flush()
	}
	if err == nil {
		return
	}
	if !sent.any {
		// Nothing went out yet: the client can still be told what failed.
		h.Del("Content-Disposition")
		writeError(w, r, a.Log, err)
		return
	}
	// Part of the log is out under a 200. Ending the response normally
	// would leave a short file that looks whole; breaking the connection
	// makes every client report the download as failed.
	if r.Context().Err() == nil {
		status, msg := statusOf(r, a.Log, err)
		a.Log.WarnContext(r.Context(), "raw log download broken off", "job_id", raw.Job().GetJobId(), "status", status, "error", msg)
	}
	panic(http.ErrAbortHandler)
}

// sentWriter notes whether anything was written through it.
type sentWriter struct {
	w   io.Writer
	any bool
}

func (s *sentWriter) Write(p []byte) (int, error) {
	s.any = true
	return s.w.Write(p)
}

// fileName makes a job id safe to name a downloaded file with: the ids
// spool makes (UUIDs, "<scatter>.<batch>") stay as they are; any other
// character a job id may have becomes "_", so the header needs no
// escaping and no file system refuses the name.
func fileName(id string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '-' || r == '.' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, id)
}
