package apierr_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// TestEveryKindRoundTrips: each error kind has a Connect code and a status,
// and the code leads back to the same kind, so a client sees the kind the
// core decided.
func TestEveryKindRoundTrips(t *testing.T) {
	seen := map[connect.Code]bool{}
	for _, kind := range spool.Kinds() {
		err := apierr.Errorf(kind, "something about %s", "it")
		if err.Error() != "something about it" {
			t.Errorf("message = %q", err.Error())
		}
		code := apierr.Code(err)
		if code == 0 || seen[code] {
			t.Errorf("%v: code %v (zero or shared)", kind, code)
		}
		seen[code] = true
		if back := apierr.Kind(code); back != kind {
			t.Errorf("%v -> %v -> %v", kind, code, back)
		}
		if s := apierr.Status(err); s < 400 {
			t.Errorf("%v: status %d", kind, s)
		}
		if ce := apierr.Connect(err); connect.CodeOf(ce) != code || !errors.Is(ce, kind) {
			t.Errorf("%v: Connect gives %v", kind, ce)
		}
	}
}

func TestUnknownAndContextErrors(t *testing.T) {
	if c := apierr.Code(errors.New("disk on fire")); c != connect.CodeInternal {
		t.Errorf("unknown error: %v", c)
	}
	if s := apierr.Status(fmt.Errorf("x: %w", context.Canceled)); s != http.StatusServiceUnavailable {
		t.Errorf("cancelled: %d", s)
	}
	if c := apierr.Code(connect.NewError(connect.CodeAborted, errors.New("x"))); c != connect.CodeAborted {
		t.Errorf("connect error keeps its code: %v", c)
	}
	if k := apierr.Kind(connect.CodeCanceled); k != nil {
		t.Errorf("Canceled has no kind, got %v", k)
	}
}
