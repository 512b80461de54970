package httpapi

import (
	"context"
	"net/http"
	"net/url"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// Page sizes of GET /api/v1/jobs/{job_id}/logs. A page also ends once it
// holds maxPageBytes of text, so 10,000 very long lines cannot make one
// response of gigabytes; has_more then says to go on.
const (
	defaultLogLimit = 1000
	maxLogLimit     = 10000
	maxPageBytes    = 8 << 20
)

// maxLine is the largest line number a request may name: far past any log,
// and small enough that line arithmetic cannot overflow.
const maxLine = 1 << 53

// LogPage is a page of a job's log (schema LogPage in openapi.yaml).
type LogPage struct {
	JobID      string     `json:"job_id"`
	State      string     `json:"state"`
	Events     []Line     `json:"events"`
	Pagination Pagination `json:"pagination"`
	// WebsocketURL streams the rest of the log live from the end of this
	// page; set while the job is not finished.
	WebsocketURL string `json:"websocket_url,omitempty"`
}

// Pagination says where a page sits in the log and how to get the next.
type Pagination struct {
	// TotalLines is the number of lines stored for the job so far.
	TotalLines int64 `json:"total_lines"`
	// ReturnedCount is len(events).
	ReturnedCount int `json:"returned_count"`
	// HasMore: lines after this page (and before before_line) are stored
	// already; fetch them with after_line=next_after_line.
	HasMore bool `json:"has_more"`
	// NextAfterLine is the last line returned, or after_line when none was.
	NextAfterLine int64 `json:"next_after_line"`
	// Limit is the page size used: the one asked for, capped at 10,000.
	Limit int `json:"limit"`
}

// logQuery is a validated request for a page of lines: those numbered
// after..before, both exclusive (before 0: no upper bound), at most limit.
type logQuery struct {
	after, before int64
	limit         int
}

// parseLogQuery reads limit, after_line and before_line. With before_line
// alone, the page is the limit lines just before it (line numbers are
// dense, so that window is known without reading backwards).
func parseLogQuery(q url.Values) (logQuery, error) {
	var lq logQuery
	var err error
	if lq.limit, err = limitParam(q, defaultLogLimit, maxLogLimit); err != nil {
		return lq, err
	}
	if lq.after, err = intParam(q, "after_line", -1, 0, maxLine, "a line number, 0 or more"); err != nil {
		return lq, err
	}
	if lq.before, err = intParam(q, "before_line", 0, 1, maxLine, "a line number, 1 or more"); err != nil {
		return lq, err
	}
	switch {
	case lq.after < 0 && lq.before > 0:
		lq.after = max(0, lq.before-1-int64(lq.limit))
	case lq.after < 0:
		lq.after = 0
	case lq.before > 0 && lq.before <= lq.after:
		return lq, badRequest("before_line=%d must be greater than after_line=%d (both bounds are exclusive: after_line=0&before_line=11 is lines 1 to 10)", lq.before, lq.after)
	}
	return lq, nil
}

func (a *api) getLogs(w http.ResponseWriter, r *http.Request) {
	lq, err := parseLogQuery(r.URL.Query())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	job, err := a.job(r)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	lines, hasMore, err := readLines(r.Context(), a.Store, job.GetJobId(), lq, a.pageBytes)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	page := LogPage{
		JobID:  job.GetJobId(),
		State:  store.StateName(job.GetState()),
		Events: lines,
		Pagination: Pagination{
			TotalLines:    job.GetLineCount(),
			ReturnedCount: len(lines),
			HasMore:       hasMore,
			NextAfterLine: lq.after,
			Limit:         lq.limit,
		},
	}
	if n := len(lines); n > 0 {
		page.Pagination.NextAfterLine = lines[n-1].LineNumber
		// The job was read before its lines: more may have been stored since.
		page.Pagination.TotalLines = max(page.Pagination.TotalLines, lines[n-1].LineNumber)
	}
	if !store.IsFinal(job.GetState()) {
		page.WebsocketURL = websocketURL(r, job.GetJobId(), page.Pagination.NextAfterLine)
	}
	writeJSON(w, http.StatusOK, page)
}

// outputOnly selects output events from a feed.
var outputOnly = []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}

// readLines reads the lines lq selects from the stored log, up to maxBytes
// of text (but at least one line), and whether more lines in its range are
// stored after them. It reads one line past the page to know, which costs
// at most one more stored batch.
func readLines(ctx context.Context, st store.JobStore, jobID string, lq logQuery, maxBytes int) (lines []Line, hasMore bool, err error) {
	feed := store.NewFeed(st, store.FeedRequest{JobID: jobID, FromLine: lq.after + 1, Types: outputOnly})
	lines = make([]Line, 0, min(lq.limit, 1024))
	size := 0
	for ev, err := range feed.Events(ctx) {
		if err != nil {
			return nil, false, err
		}
		for _, l := range linesOf(ev) {
			if lq.before > 0 && l.LineNumber >= lq.before {
				return lines, false, nil
			}
			size += len(l.Text) + len(l.TextBase64)
			if len(lines) == lq.limit || (len(lines) > 0 && size > maxBytes) {
				return lines, true, nil
			}
			lines = append(lines, l)
		}
	}
	return lines, false, nil
}
