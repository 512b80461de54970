package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDoc describes every route of this package (checked by
// openapi_test.go). Edit it with the handlers.
//
//go:embed openapi.yaml
var openAPIDoc []byte

func (a *api) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPIDoc)
}
