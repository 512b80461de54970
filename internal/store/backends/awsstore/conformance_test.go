package awsstore_test

import (
	"context"
	"testing"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/conformance"
)

// TestConformance runs the JobStore suite against dynalite and
// local-aws-sqs. Every test gets its own tables; Reopen is a server
// restart: a new Store on the same tables and queues.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Backend{
		Open: func(t *testing.T) store.JobStore {
			s, err := awsstore.OpenPolling(context.Background(), awstest.Shared(t).NewConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Reopen: func(t *testing.T, s store.JobStore) store.JobStore {
			cfg := s.(*awsstore.Store).Config()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2, err := awsstore.OpenPolling(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return s2
		},
		Polling: polling,
		RawJob: func(t *testing.T, s store.JobStore, id string) []byte {
			raw, err := awsstore.RawJob(context.Background(), s.(*awsstore.Store), id)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		},
	})
}

// TestShared: two stores on the same tables and queues, as two servers
// sharing them, behave as one (the suite every shared store passes).
func TestShared(t *testing.T) {
	conformance.RunShared(t, conformance.Shared{Polling: polling, Pair: func(t *testing.T) (store.JobStore, store.JobStore) {
		cfg := awstest.Shared(t).NewConfig(t)
		a, err := awsstore.OpenPolling(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := awsstore.OpenPolling(context.Background(), cfg)
		if err != nil {
			_ = a.Close()
			t.Fatal(err)
		}
		return a, b
	}})
}

// polling: a dequeue waits in SQS's long poll, one call of up to 20 s
// with no timer of spool's to shorten.
var polling = conformance.Polling{
	Waiting: func(s store.JobStore, q string) int { return awsstore.Polling(s.(*awsstore.Store), q) },
}
