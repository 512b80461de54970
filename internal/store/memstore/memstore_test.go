package memstore_test

import (
	"testing"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/memstore"
	"github.com/spool-run/spool/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(*testing.T) store.JobStore { return memstore.New() },
	})
}
