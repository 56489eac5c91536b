package daytonatest

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestValidatesRequests checks that the fake holds clients to the OpenAPI
// documents: a request the document forbids is reported and refused, and
// so is an operation the document does not have. No container is needed.
func TestValidatesRequests(t *testing.T) {
	var mu sync.Mutex
	var reports []string
	s := New(t, nil, Options{Image: "unused", APIKey: "k", Report: func(m string) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, m)
	}})
	do := func(method, path, body string) int {
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := do("POST", "/sandbox", `{"labels":"not-a-map","cpu":"two"}`); c != 400 {
		t.Errorf("invalid create answered %d", c)
	}
	if c := do("GET", "/no-such-operation", ""); c != 404 {
		t.Errorf("unknown operation answered %d", c)
	}
	if c := do("GET", "/sandbox?limit=0", ""); c != 400 {
		t.Errorf("limit 0 answered %d", c)
	}
	if c := do("GET", "/sandbox", ""); c != 200 {
		t.Errorf("valid list answered %d", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 3 {
		t.Fatalf("want 3 violations, got %d: %q", len(reports), reports)
	}
	for _, want := range []string{"request POST /sandbox violates", "no such operation", "request GET /sandbox violates"} {
		found := false
		for _, r := range reports {
			found = found || strings.Contains(r, want)
		}
		if !found {
			t.Errorf("no report %q in %q", want, reports)
		}
	}
}
