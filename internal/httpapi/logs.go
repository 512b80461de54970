package httpapi

import (
	"net/http"
	"net/url"

	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/service"
)

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

// parseLogQuery reads limit, after_line, before_line, since, until and
// wait.
// With before_line alone, the page is the limit lines just before it (line
// numbers are dense, so that window is known without reading backwards).
func parseLogQuery(q url.Values) (service.LinesRequest, error) {
	var lr service.LinesRequest
	var err error
	if lr.Limit, err = limitParam(q, service.DefaultPageLines, service.MaxPageLines); err != nil {
		return lr, err
	}
	if lr.Since, err = timeParam(q, "since"); err != nil {
		return lr, err
	}
	if lr.Until, err = timeParam(q, "until"); err != nil {
		return lr, err
	}
	if !lr.Since.IsZero() && !lr.Until.IsZero() && lr.Until.Before(lr.Since) {
		return lr, badRequest("until=%s is before since=%s: no line is written in between; give an end after the start",
			q.Get("until"), q.Get("since"))
	}
	if lr.After, err = intParam(q, "after_line", -1, 0, service.MaxLine, "a line number, 0 or more"); err != nil {
		return lr, err
	}
	if lr.Before, err = intParam(q, "before_line", 0, 1, service.MaxLine, "a line number, 1 or more"); err != nil {
		return lr, err
	}
	if lr.Wait, err = waitParam(q, "wait", service.MaxLinesWait); err != nil {
		return lr, err
	}
	switch {
	case lr.After < 0 && lr.Before > 0:
		lr.After = max(0, lr.Before-1-int64(lr.Limit))
	case lr.After < 0:
		lr.After = 0
	}
	return lr, nil
}

func (a *api) getLogs(w http.ResponseWriter, r *http.Request) {
	lr, err := parseLogQuery(r.URL.Query())
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	lr.JobID, lr.MaxBytes = r.PathValue("job_id"), a.pageBytes
	p, err := a.Service.ReadLines(r.Context(), lr)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	job := p.Job
	page := LogPage{
		JobID:  job.GetJobId(),
		State:  convert.State(job.GetState()).String(),
		Events: make([]Line, len(p.Lines)),
		Pagination: Pagination{
			TotalLines:    job.GetLineCount(),
			ReturnedCount: len(p.Lines),
			HasMore:       p.HasMore,
			NextAfterLine: lr.After,
			Limit:         p.Limit,
		},
	}
	for i, ev := range p.Lines {
		page.Events[i] = lineOf(ev.GetOutputData(), ev.GetTimestamp().AsTime().UnixMilli(), ev.GetAttempt())
	}
	if n := len(page.Events); n > 0 {
		page.Pagination.NextAfterLine = page.Events[n-1].LineNumber
		// The job was read before its lines: more may have been stored since.
		page.Pagination.TotalLines = max(page.Pagination.TotalLines, page.Events[n-1].LineNumber)
	}
	if !convert.State(job.GetState()).IsFinal() {
		page.WebsocketURL = websocketURL(r, job.GetJobId(), page.Pagination.NextAfterLine)
	}
	writeJSON(w, http.StatusOK, page)
}
