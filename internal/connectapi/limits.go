package connectapi

import (
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/spool-run/spool/internal/wire"
)

// bodySlack is what a request body may hold beyond its message: gRPC's
// 5-byte message prefix, and a little for compressed data that did not
// compress.
const bodySlack = 1 << 10

// capBody refuses a request body over limit as it comes, never holding it
// first: one declared longer (Content-Length) before any of it is read,
// and any other as soon as it is clearly over. Connect refuses such a
// message too, but only after reading the whole body to report its size,
// holding as much of it as the call may take; a client could make that go
// on for as long as it kept sending.
func capBody(h http.Handler, limit int) http.Handler {
	most := int64(limit) + bodySlack
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > most {
			Refuse(w, r, connect.NewError(connect.CodeResourceExhausted,
				fmt.Errorf("the request body is %d bytes, more than the %s this call accepts", r.ContentLength, wire.BytesText(int64(limit)))))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, most)
		h.ServeHTTP(w, r)
	})
}
