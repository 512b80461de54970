package httpapi

import "net/http"

// TestHooks adjust a handler made by NewHandlerForTest.
type TestHooks struct {
	// OnFrame is told the size of every lines frame sent.
	OnFrame func(lines, bytes int)
	// PageBytes replaces the byte budget of a REST page of lines.
	PageBytes int
}

// NewHandlerForTest returns the API on a mux of its own, with hooks.
func NewHandlerForTest(o Options, hooks TestHooks) http.Handler {
	a := newAPI(o)
	a.onFrame = hooks.OnFrame
	if hooks.PageBytes > 0 {
		a.pageBytes = hooks.PageBytes
	}
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
