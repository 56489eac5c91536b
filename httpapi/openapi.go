package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPI is the API's OpenAPI 3.1 document, written by hand and kept true
// by TestOpenAPIResponses, which validates real responses against it.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the document.
func OpenAPI() []byte { return openAPI }

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
