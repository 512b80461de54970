package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/sqlitestore"
	"github.com/spool-run/spool/internal/store/storetest"
)

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.JobStore {
			return open(t, filepath.Join(t.TempDir(), "spool.db"))
		},
		Reopen: func(t *testing.T, s store.JobStore) store.JobStore {
			path := s.(*sqlitestore.Store).Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, path)
		},
	})
}
