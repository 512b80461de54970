package pgblob_test

import (
	"context"
	"io"
	"strings"
)

func blobReader(s string) io.Reader { return strings.NewReader(s) }

// cancelAfter yields zeros, and cancels its context after left of them.
type cancelAfter struct {
	left   int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.cancel()
	}
	n := min(len(p), max(c.left, 1))
	clear(p[:n])
	c.left -= n
	return n, nil
}
