package httpapi

import (
	"net/http"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/jobjson"
)

func (a *api) listQueues(w http.ResponseWriter, r *http.Request) {
	perMinute, err := boolParam(r, "ended_per_minute")
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	resp, err := a.Service.ListQueues(r.Context(), &spoolv1.ListQueuesRequest{EndedPerMinute: perMinute})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.QueueListView(convert.Queues(resp.GetQueues()), time.Duration(resp.GetWindowSeconds())*time.Second))
}

func (a *api) pauseQueue(w http.ResponseWriter, r *http.Request) {
	a.setPaused(w, r, true)
}

func (a *api) resumeQueue(w http.ResponseWriter, r *http.Request) {
	a.setPaused(w, r, false)
}

// setPaused pauses or resumes the queue the path names. Only the web UI's
// own pages may do it from a browser.
func (a *api) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	if err := sameSite(r, "pause or resume a queue from the spool web UI"); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	var (
		q   *spoolv1.Queue
		err error
	)
	name := r.PathValue("name")
	if paused {
		var resp *spoolv1.PauseQueueResponse
		resp, err = a.Service.PauseQueue(r.Context(), &spoolv1.PauseQueueRequest{Name: name})
		q = resp.GetQueue()
	} else {
		var resp *spoolv1.ResumeQueueResponse
		resp, err = a.Service.ResumeQueue(r.Context(), &spoolv1.ResumeQueueRequest{Name: name})
		q = resp.GetQueue()
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.QueueView(convert.Queue(q)))
}
