package storekit

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// Cursor is a position in the newest-first job listing: the last job of the
// previous page. Stores encode it opaquely so clients cannot build one.
type Cursor struct {
	CreatedAt time.Time
	JobID     string
}

type cursorJSON struct {
	T int64  `json:"t"` // created_at, Unix microseconds
	J string `json:"j"`
}

// Encode returns the cursor's opaque form.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(cursorJSON{T: c.CreatedAt.UnixMicro(), J: c.JobID})
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor parses a cursor made by Encode. Anything else is spool.ErrInvalidArgument.
func DecodeCursor(s string) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, apierr.Errorf(spool.ErrInvalidArgument, "malformed cursor: pass next_cursor from the previous page as it was")
	}
	var c cursorJSON
	if err := json.Unmarshal(b, &c); err != nil || c.J == "" {
		return Cursor{}, apierr.Errorf(spool.ErrInvalidArgument, "malformed cursor: pass next_cursor from the previous page as it was")
	}
	return Cursor{CreatedAt: time.UnixMicro(c.T), JobID: c.J}, nil
}

// Before reports whether a job created at t with id comes after the cursor
// in newest-first order.
func (c Cursor) Before(t time.Time, id string) bool {
	if !t.Equal(c.CreatedAt) {
		return t.Before(c.CreatedAt)
	}
	return id < c.JobID
}

// ParseCursor decodes a ListFilter cursor: nil for none (the first page).
func ParseCursor(s string) (*Cursor, error) {
	if s == "" {
		return nil, nil
	}
	c, err := DecodeCursor(s)
	if err != nil {
		return nil, err
	}
	return &c, nil
}
