package wire

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// REST makes the plain HTTP calls of spool's API that carry streams of
// bytes (a large stdin going up or coming down), which a Connect message
// would hold whole: with the key, and with the server's JSON error answer
// turned back into its error kind.
type REST struct {
	hc   *http.Client
	base string
	key  string
}

// NewREST returns a REST caller of the server at baseURL, with o's HTTP
// client (or one made from o), key and CA.
func NewREST(baseURL string, o Options) (*REST, error) {
	base, err := BaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	hc := o.HTTPClient
	if hc == nil {
		if hc, err = HTTPClient(o); err != nil {
			return nil, err
		}
	}
	return &REST{hc: hc, base: base, key: strings.TrimSpace(o.APIKey)}, nil
}

// WithBearer is r sending token (a job token) in place of its key.
func (r *REST) WithBearer(token string) *REST {
	c := *r
	c.key = strings.TrimSpace(token)
	return &c
}

// URL is the address of path (which starts with /) on the server.
func (r *REST) URL(path string) string { return r.base + path }

// TaskTokenHeader carries the task token of the attempt asking for its
// job's stdin, beside the worker's key.
const TaskTokenHeader = "Spool-Task-Token"

// maxErrorAnswer bounds what is read of a refusal's body.
const maxErrorAnswer = 64 << 10

// Do sends req with the key and returns the response of a 2xx answer,
// whose body the caller closes. Any other answer is an error of the kind
// its status stands for (apierr.FromStatus), with the server's message.
func (r *REST) Do(req *http.Request) (*http.Response, error) {
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, apierr.Errorf(spool.ErrUnavailable, "cannot reach the spool server at %s: %v", r.base, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var body struct {
		Error string `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, maxErrorAnswer)).Decode(&body) != nil || body.Error == "" {
		body.Error = fmt.Sprintf("the server at %s answered %s, not as a spool server does: is the address right?", r.base, resp.Status)
	}
	return nil, apierr.FromStatus(resp.StatusCode, body.Error)
}
