package connectapi

import (
	"net/http"

	"connectrpc.com/connect"

	"github.com/spool-run/spool/internal/apierr"
)

// errorWriter writes an error in the protocol a request speaks: a Connect
// unary or streaming error, or gRPC and gRPC-Web trailers.
var errorWriter = connect.NewErrorWriter()

// Refuse answers a request for one of the services before any handler
// reads it (the server's door refusing it, or its body too large), in the
// form the caller's Connect, gRPC or gRPC-Web client reads as the error's
// code and message. It reads nothing of the body.
func Refuse(w http.ResponseWriter, r *http.Request, err error) {
	_ = errorWriter.Write(w, r, apierr.Connect(err))
}
