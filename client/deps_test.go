package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientDoesNotImportServer keeps the client small: a program that only
// wants the client must not compile in the HTTP server, the MCP SDK, the
// tool catalog, the store or the engine.
func TestClientDoesNotImportServer(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil && os.Getenv("GOROOT") != "" {
		goBin, err = filepath.Join(os.Getenv("GOROOT"), "bin", "go"), nil
	}
	if err != nil {
		t.Fatalf("the go command is needed to list the client's dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/grove-dev/grove/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/grove-dev/grove/httpapi", "github.com/grove-dev/grove/mcpserver",
		"github.com/grove-dev/grove/store", "github.com/grove-dev/grove/tools",
		"github.com/grove-dev/grove/engine", "github.com/modelcontextprotocol/",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(pkg, f)) {
				t.Errorf("client depends on %s", pkg)
			}
		}
	}
}
