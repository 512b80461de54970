package awsstore

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// heard records what a store reported to its RetryObserver.
type heard struct {
	mu     sync.Mutex
	events []string
}

func (h *heard) Retried(op, reason string) { h.add("retried " + op + " " + reason) }
func (h *heard) Throttled(op string)       { h.add("throttled " + op) }
func (h *heard) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, s)
}

// TestRetriesReported: requests DynamoDB throttles, or fails with a 500,
// and the SDK runs again are reported by AWS call and why; one that went
// through at once reports nothing.
func TestRetriesReported(t *testing.T) {
	var (
		mu      sync.Mutex
		answers = []int{http.StatusBadRequest, http.StatusOK, http.StatusInternalServerError, http.StatusOK, http.StatusOK}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		code := answers[0]
		answers = answers[1:]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(code)
		switch code {
		case http.StatusBadRequest:
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`)
		case http.StatusInternalServerError:
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`)
		default:
			fmt.Fprint(w, `{"Table":{"TableName":"jobs"}}`)
		}
	}))
	defer srv.Close()

	cfg := Config{Endpoint: srv.URL, JobsTable: "jobs", EventsTable: "events"}.withDefaults()
	c, err := newClients(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &heard{}
	s := newStore(cfg, c)
	s.ReportRetries(h)
	for range 3 {
		if _, err := c.db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("jobs")}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"throttled DynamoDB.DescribeTable", "retried DynamoDB.DescribeTable throttled",
		"retried DynamoDB.DescribeTable transient",
	}
	if !slices.Equal(h.events, want) {
		t.Errorf("reported %q, want %q", h.events, want)
	}
}
