package daytonatest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The OpenAPI documents requests and responses are validated against are
// the ones shipped inside Daytona's generated client modules, at the
// version go.mod pins, so the fake and the clients agree on one text.
const (
	apiModule     = "github.com/daytonaio/daytona/libs/api-client-go"
	toolboxModule = "github.com/daytonaio/daytona/libs/toolbox-api-client-go"
)

var specs struct {
	sync.Once
	api, toolbox *openapi3.T
	err          error
}

func loadSpecs() (api, toolbox *openapi3.T, err error) {
	specs.Do(func() {
		load := func(mod string) (*openapi3.T, error) {
			out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
			if err != nil {
				return nil, fmt.Errorf("locating %s: %v", mod, err)
			}
			l := openapi3.NewLoader()
			doc, err := l.LoadFromFile(filepath.Join(strings.TrimSpace(string(out)), "api", "openapi.yaml"))
			if err != nil {
				return nil, fmt.Errorf("loading %s's OpenAPI document: %v", mod, err)
			}
			return doc, nil
		}
		if specs.api, specs.err = load(apiModule); specs.err != nil {
			return
		}
		specs.toolbox, specs.err = load(toolboxModule)
	})
	return specs.api, specs.toolbox, specs.err
}

// validator checks every request and response of one server against a
// document whose servers are rewritten to that server's URL.
type validator struct {
	name   string
	router routers.Router
	report func(string) // called with each violation
}

func newValidator(name string, doc *openapi3.T, baseURL string, report func(string)) (*validator, error) {
	cp := *doc
	cp.Servers = openapi3.Servers{{URL: baseURL}}
	r, err := gorillamux.NewRouter(&cp)
	if err != nil {
		return nil, err
	}
	return &validator{name: name, router: r, report: report}, nil
}

var filterOptions = &openapi3filter.Options{
	// Authentication is checked by the fake itself (401 on a wrong key);
	// the filter only checks the rest of the contract.
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	MultiError:         true,
}

// wrap validates the request before next sees it and the response before
// the client does. A request the document does not allow is answered 400
// and reported; a response it does not allow is reported (and still sent,
// so the test shows both sides).
func (v *validator) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, params, err := v.router.FindRoute(r)
		if err != nil {
			v.report(fmt.Sprintf("%s: %s %s: no such operation in the OpenAPI document: %v", v.name, r.Method, r.URL.Path, err))
			http.Error(w, `{"statusCode":404,"message":"no such route"}`, http.StatusNotFound)
			return
		}
		in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: filterOptions}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			v.report(fmt.Sprintf("%s: request %s %s violates the OpenAPI document: %v", v.name, r.Method, r.URL.Path, err))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"statusCode":400,"message":%q,"path":%q,"timestamp":"2026-01-01T00:00:00Z"}`, "request violates the OpenAPI document", r.URL.Path)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		// Faults injected by the test (429, 5xx) are outside the document.
		if rec.Header().Get(faultHeader) == "" {
			opts := filterOptions
			if route.Operation != nil && route.Operation.OperationID == "GetSessionCommandLogs" &&
				strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
				// The document gives the plain-text logs old SDKs get the
				// JSON object's schema, which no text can match: check the
				// status only.
				o := *filterOptions
				o.ExcludeResponseBody = true
				opts = &o
			}
			out := &openapi3filter.ResponseValidationInput{
				RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
				Body: ioNopCloser(bytes.NewReader(body)), Options: opts,
			}
			if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
				v.report(fmt.Sprintf("%s: response %d to %s %s violates the OpenAPI document: %v", v.name, rec.Code, r.Method, r.URL.Path, err))
			}
		}
		rec.Header().Del(faultHeader)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}
