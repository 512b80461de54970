package httpapi

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/ingest"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/service"
)

// The logs of programs spool did not start come in the formats their
// senders speak: Amazon Data Firehose's HTTP endpoint delivery (of
// CloudWatch Logs subscription records) and newline-delimited JSON from log
// shippers. The core decodes and stores them; these handlers only find the
// body (undoing a Content-Encoding) and answer in each sender's terms.

// IngestSummary is the answer to POST /api/v1/ingest/lines (schema
// IngestSummary in openapi.yaml).
type IngestSummary struct {
	Events     int             `json:"events"`
	Accepted   int             `json:"accepted"`
	Duplicates int             `json:"duplicates"`
	Sources    []SourceSummary `json:"sources"`
}

// SourceSummary is what a delivery did for one of its sources.
type SourceSummary struct {
	Source   string `json:"source"`
	JobID    string `json:"job_id,omitempty"`
	Accepted int    `json:"accepted"`
	Opened   bool   `json:"opened"`
}

func summaryView(s service.IngestSummary) IngestSummary {
	out := IngestSummary{Events: s.Events, Accepted: s.Accepted, Duplicates: s.Duplicates, Sources: make([]SourceSummary, len(s.Sources))}
	for i, src := range s.Sources {
		out.Sources[i] = SourceSummary(src)
	}
	return out
}

// ingestFirehose serves Firehose's HTTP endpoint destination. Firehose
// reads only the status and, on failure, the errorMessage, and retries a
// failed request as a whole; every answer echoes its request id.
func (a *api) ingestFirehose(w http.ResponseWriter, r *http.Request) {
	requestID := r.Header.Get("X-Amz-Firehose-Request-Id")
	body, err := a.ingestBody(w, r)
	if err == nil {
		var req ingest.FirehoseRequest
		req, _, err = a.Service.IngestFirehose(r.Context(), body)
		if req.RequestID != "" {
			requestID = req.RequestID
		}
	}
	status := http.StatusOK
	if err != nil {
		var msg string
		status, msg = a.ingestStatus(r, firehoseTerms(r, err))
		err = errors.New(msg)
	}
	writeJSON(w, status, ingest.NewFirehoseResponse(requestID, time.Now(), err))
}

// refuseFirehose answers a delivery the server's door refused (no key, or
// one that is not known) as Firehose reads an answer: with the request's
// id, which Firehose sends in a header too, and the error's status.
func refuseFirehose(w http.ResponseWriter, r *http.Request, err error) {
	writeJSON(w, apierr.Status(err), ingest.NewFirehoseResponse(r.Header.Get("X-Amz-Firehose-Request-Id"), time.Now(), firehoseTerms(r, err)))
}

// firehoseTerms words a refused key as the person reading the delivery
// stream's errors knows it: the access key of its HTTP endpoint
// destination, which Firehose sends as X-Amz-Firehose-Access-Key, not an
// API key of spool's command line. Other errors are left as they are.
func firehoseTerms(r *http.Request, err error) error {
	sent := r.Header.Get("X-Amz-Firehose-Access-Key") != "" || r.Header.Get("Authorization") != ""
	return senderKeyTerms(err, sent, "delivery", "access key",
		"set the access key of the stream's HTTP endpoint destination to a spool key of role ingest (spool keys create --role ingest --name firehose prints one)")
}

// shipperTerms words a refused key as the person configuring a log
// shipper (Vector, Fluent Bit) knows it: the token of its HTTP sink, not
// SPOOL_API_KEY, which only spool's command line reads.
func shipperTerms(r *http.Request, err error) error {
	return senderKeyTerms(err, r.Header.Get("Authorization") != "", "request", "key",
		"set the HTTP sink's header to Authorization: Bearer KEY, with a spool key of role ingest (spool keys create --role ingest --name shipper prints one)")
}

// senderKeyTerms words a refused key for a sender that is configured, not
// typed at: what it sends (request) and calls its key (key), whether it
// sent one, and how to fix it. Other errors are left as they are.
func senderKeyTerms(err error, sent bool, request, key, fix string) error {
	switch {
	case errors.Is(err, spool.ErrUnauthenticated) && !sent:
		return apierr.Errorf(spool.ErrUnauthenticated, "the %s came with no %s: %s", request, key, fix)
	case errors.Is(err, spool.ErrUnauthenticated):
		return apierr.Errorf(spool.ErrUnauthenticated, "the %s is not a key of this spool server (mistyped, revoked, or another server's): %s", key, fix)
	case errors.Is(err, spool.ErrPermissionDenied):
		return apierr.Errorf(spool.ErrPermissionDenied, "the %s is a spool key whose role may not send logs: %s", key, fix)
	}
	return err
}

// refuseShipper answers a log shipper's request the server's door
// refused, in the shipper's terms.
func refuseShipper(w http.ResponseWriter, r *http.Request, err error) {
	writeJSON(w, apierr.Status(err), errorBody{Error: shipperTerms(r, err).Error()})
}

// ingestLines serves log shippers: one JSON event a line.
func (a *api) ingestLines(w http.ResponseWriter, r *http.Request) {
	body, err := a.ingestBody(w, r)
	var sum service.IngestSummary
	if err == nil {
		sum, err = a.Service.IngestLines(r.Context(), body)
	}
	if err != nil {
		status, msg := a.ingestStatus(r, shipperTerms(r, err))
		writeJSON(w, status, errorBody{Error: msg})
		return
	}
	writeJSON(w, http.StatusOK, summaryView(sum))
}

// completeSourceRequest is the body of POST /api/v1/ingest/complete.
type completeSourceRequest struct {
	Source string `json:"source"`
	JobID  string `json:"job_id"`
}

// maxCompleteBody holds a source name of the longest kind and a job id.
const maxCompleteBody = 8 << 10

func (a *api) completeSource(w http.ResponseWriter, r *http.Request) {
	var req completeSourceRequest
	err := sameSite(r, "end a source from the spool command line or a script")
	if err == nil {
		err = readJSON(w, r, &req, maxCompleteBody)
	}
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	resp, err := a.Service.CompleteSource(r.Context(), &spoolv1.CompleteSourceRequest{Source: req.Source, JobId: req.JobID})
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, jobjson.View(convert.Job(resp.GetJob())))
}

// ingestStatus is the status and message of a failed delivery: a body over
// a limit is 413, so the sender knows to send less at once.
func (a *api) ingestStatus(r *http.Request, err error) (int, string) {
	var tooBig *http.MaxBytesError
	if errors.Is(err, ingest.ErrTooLarge) || errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge, err.Error()
	}
	return statusOf(r, a.Log, err)
}

// ingestBody is the body of a delivery as its sender meant it: gzip
// undone when the sender compressed it. The body is cut off one byte past
// the core's limit, which is then the decoder's to report; a body declared
// longer than that is refused before any of it is read.
func (a *api) ingestBody(w http.ResponseWriter, r *http.Request) (io.Reader, error) {
	limit := a.Service.IngestMaxBodyBytes()
	if r.ContentLength > limit {
		return nil, errorf(http.StatusRequestEntityTooLarge, "the body is %d bytes, over %d (ingest.max_body_bytes): send fewer events at once", r.ContentLength, limit)
	}
	body := http.MaxBytesReader(w, r.Body, limit+1)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return body, nil
	case "gzip":
		// Opened at the first read, so the key is checked before any
		// of the body is.
		return &lazyGzip{r: body}, nil
	default:
		return nil, errorf(http.StatusUnsupportedMediaType, "Content-Encoding %q is not taken: send the body as it is, or gzip-compressed", enc)
	}
}

// lazyGzip decompresses r, reading its gzip header at the first Read.
type lazyGzip struct {
	r  io.Reader
	gz *gzip.Reader
}

func (l *lazyGzip) Read(p []byte) (int, error) {
	if l.gz == nil {
		gz, err := gzip.NewReader(l.r)
		if err != nil {
			return 0, errors.Join(errors.New("the body is not gzip data, though its Content-Encoding says gzip"), err)
		}
		l.gz = gz
	}
	return l.gz.Read(p)
}
