package httpapi

import (
	"net/http"
	"net/url"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/service"
)

// scheduleBody is the body of POST /api/v1/schedules (schema
// CreateScheduleRequest of openapi.yaml).
type scheduleBody struct {
	Name     string     `json:"name"`
	Cron     string     `json:"cron"`
	Timezone string     `json:"timezone,omitempty"`
	Job      enqueueJob `json:"job"`
	// Overlap is allow (the default) or skip; Missed run_once or skip
	// (the default: the server's schedules.missed).
	Overlap string `json:"overlap,omitempty"`
	Missed  string `json:"missed,omitempty"`
}

// scheduleList is the answer to GET /api/v1/schedules (schema
// ScheduleList).
type scheduleList struct {
	Schedules []scheduleView `json:"schedules"`
}

// scheduleView is a schedule as the API shows it (schema Schedule).
type scheduleView struct {
	Name       string     `json:"name"`
	Cron       string     `json:"cron"`
	Timezone   string     `json:"timezone,omitempty"`
	Job        enqueueJob `json:"job"`
	Overlap    string     `json:"overlap"`
	Missed     string     `json:"missed"`
	Paused     bool       `json:"paused"`
	CreatedAt  *time.Time `json:"created_at,omitempty"`
	UpdatedAt  *time.Time `json:"updated_at,omitempty"`
	LastTickAt *time.Time `json:"last_tick_at,omitempty"`
	LastJobID  string     `json:"last_job_id,omitempty"`
	NextTickAt *time.Time `json:"next_tick_at,omitempty"`
	Revision   int64      `json:"revision"`
}

// The policies by their names in the API.
var (
	overlaps = map[string]spoolv1.Overlap{"": spoolv1.Overlap_OVERLAP_UNSPECIFIED, "allow": spoolv1.Overlap_OVERLAP_ALLOW, "skip": spoolv1.Overlap_OVERLAP_SKIP}
	misseds  = map[string]spoolv1.Missed{"": spoolv1.Missed_MISSED_UNSPECIFIED, "run_once": spoolv1.Missed_MISSED_RUN_ONCE, "skip": spoolv1.Missed_MISSED_SKIP}
)

// nameOf is the API's name of a policy.
func nameOf[E comparable](names map[string]E, v E) string {
	for k, e := range names {
		if e == v && k != "" {
			return k
		}
	}
	return ""
}

// request is the body as the core takes it.
func (b *scheduleBody) request() (*spoolv1.CreateScheduleRequest, error) {
	job, err := b.Job.request()
	if err != nil {
		return nil, err
	}
	overlap, ok := overlaps[b.Overlap]
	if !ok {
		return nil, badRequest("overlap=%q: want allow or skip", truncate(b.Overlap, 40))
	}
	missed, ok := misseds[b.Missed]
	if !ok {
		return nil, badRequest("missed=%q: want run_once or skip", truncate(b.Missed, 40))
	}
	return &spoolv1.CreateScheduleRequest{Schedule: &spoolv1.Schedule{Name: b.Name, Cron: b.Cron, Timezone: b.Timezone,
		Job: job, Overlap: overlap, Missed: missed}}, nil
}

func viewSchedule(sc *spoolv1.Schedule) scheduleView {
	return scheduleView{Name: sc.GetName(), Cron: sc.GetCron(), Timezone: sc.GetTimezone(), Job: enqueueJobOf(sc.GetJob()),
		Overlap: nameOf(overlaps, sc.GetOverlap()), Missed: nameOf(misseds, sc.GetMissed()), Paused: sc.GetPaused(),
		CreatedAt: timeOf(sc.GetCreatedAt()), UpdatedAt: timeOf(sc.GetUpdatedAt()), LastTickAt: timeOf(sc.GetLastTickAt()),
		LastJobID: sc.GetLastJobId(), NextTickAt: timeOf(sc.GetNextTickAt()), Revision: sc.GetRevision()}
}

func timeOf(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil {
		return nil
	}
	t := ts.AsTime()
	return &t
}

func (a *api) listSchedules(w http.ResponseWriter, r *http.Request) {
	resp, err := a.Service.ListSchedules(r.Context(), &spoolv1.ListSchedulesRequest{})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	out := scheduleList{Schedules: []scheduleView{}}
	for _, sc := range resp.GetSchedules() {
		out.Schedules = append(out.Schedules, viewSchedule(sc))
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) createSchedule(w http.ResponseWriter, r *http.Request) {
	var body scheduleBody
	err := sameSite(r, "create schedules with spool schedules create or a script")
	if err == nil {
		err = readJSON(w, r, &body, service.MaxEnqueueRequestBytes)
	}
	var req *spoolv1.CreateScheduleRequest
	if err == nil {
		req, err = body.request()
	}
	var resp *spoolv1.CreateScheduleResponse
	if err == nil {
		resp, err = a.Service.CreateSchedule(r.Context(), req)
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	w.Header().Set("Location", "/api/v1/schedules/"+url.PathEscape(resp.GetSchedule().GetName()))
	writeJSON(w, http.StatusCreated, viewSchedule(resp.GetSchedule()))
}

func (a *api) getSchedule(w http.ResponseWriter, r *http.Request) {
	resp, err := a.Service.GetSchedule(r.Context(), &spoolv1.GetScheduleRequest{Name: r.PathValue("name")})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, viewSchedule(resp.GetSchedule()))
}

func (a *api) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	err := sameSite(r, "delete schedules with spool schedules delete")
	if err == nil {
		_, err = a.Service.DeleteSchedule(r.Context(), &spoolv1.DeleteScheduleRequest{Name: r.PathValue("name")})
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	a.setSchedulePaused(w, r, true)
}

func (a *api) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	a.setSchedulePaused(w, r, false)
}

// setSchedulePaused pauses or resumes the schedule the path names. Only
// the web UI's own pages may do it from a browser.
func (a *api) setSchedulePaused(w http.ResponseWriter, r *http.Request, paused bool) {
	if err := sameSite(r, "pause or resume a schedule from the spool web UI"); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	var (
		sc  *spoolv1.Schedule
		err error
	)
	name := r.PathValue("name")
	if paused {
		var resp *spoolv1.PauseScheduleResponse
		resp, err = a.Service.PauseSchedule(r.Context(), &spoolv1.PauseScheduleRequest{Name: name})
		sc = resp.GetSchedule()
	} else {
		var resp *spoolv1.ResumeScheduleResponse
		resp, err = a.Service.ResumeSchedule(r.Context(), &spoolv1.ResumeScheduleRequest{Name: name})
		sc = resp.GetSchedule()
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, viewSchedule(sc))
}

// configureQueueBody is the body of POST /api/v1/queues/{name}/configure:
// the settings to change (absent: unchanged).
type configureQueueBody struct {
	MaxRunning *int32 `json:"max_running,omitempty"`
}

func (a *api) configureQueue(w http.ResponseWriter, r *http.Request) {
	var body configureQueueBody
	err := sameSite(r, "set a queue's limits with spool queues set")
	if err == nil {
		err = readJSON(w, r, &body, service.MaxRequestBytes)
	}
	var resp *spoolv1.ConfigureQueueResponse
	if err == nil {
		resp, err = a.Service.ConfigureQueue(r.Context(), &spoolv1.ConfigureQueueRequest{Name: r.PathValue("name"), MaxRunning: body.MaxRunning})
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.QueueView(convert.Queue(resp.GetQueue())))
}
