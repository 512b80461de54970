package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestIsUnavailable: only a call that could not reach the server is
// "unavailable"; local errors whose system error looks like a network one
// (every errno has Timeout and Temporary methods) are not.
func TestIsUnavailable(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	srv.Stop()
	_, err := c.Job(context.Background(), "any")
	if !errors.Is(err, spool.ErrUnavailable) || !errors.Is(err, spool.ErrUnavailable) {
		t.Errorf("a call to a stopped server: %v is not unavailable", err)
	}

	_, fileErr := os.ReadFile("/no/such/spool.yaml")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, listenErr := net.Listen("tcp", busy.Addr().String())
	for _, err := range []error{fileErr, listenErr, fmt.Errorf("open the data directory: %w", fileErr)} {
		if err == nil || errors.Is(err, spool.ErrUnavailable) {
			t.Errorf("%v is said to be unavailable", err)
		}
	}
}

// TestNegativeTimeoutRefused: a negative timeout reaches the server, which
// refuses it, instead of quietly meaning "no timeout".
func TestNegativeTimeoutRefused(t *testing.T) {
	srv := spooltest.NewServer(t)
	_, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Argv: []string{"true"}, Timeout: -5 * time.Second})
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "params.timeout") {
		t.Fatalf("got %v, want the server to refuse params.timeout", err)
	}
}
