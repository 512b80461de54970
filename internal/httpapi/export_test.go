package httpapi

import "net/http"

// NewHandlerForTest returns the API on a mux of its own, with onFrame (if
// set) told the size of every lines frame sent.
func NewHandlerForTest(o Options, onFrame func(lines, bytes int)) http.Handler {
	a := newAPI(o)
	a.onFrame = onFrame
	mux := http.NewServeMux()
	a.register(mux)
	return mux
}

// Frame caps, for tests that check them.
const (
	MaxFrameLines = maxFrameLines
	MaxFrameBytes = maxFrameBytes
	MaxLogLimit   = maxLogLimit
)

// RouteKeys lists the routes as "METHOD path".
func RouteKeys() []string {
	var out []string
	for _, r := range routes {
		out = append(out, r.method+" "+r.path)
	}
	return out
}
