package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/client"
	"github.com/grove-dev/grove/httpapi"
)

// TestClientEndToEnd drives the server through the Go client, and checks
// that error kinds survive the wire.
func TestClientEndToEnd(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	ctx := context.Background()
	alice := client.New(f.srv.URL, f.alice, f.srv.Client())
	bob := client.New(f.srv.URL, f.bob, f.srv.Client())
	w, created, err := alice.Acquire(ctx, grove.AcquireRequest{Repo: f.repo, Project: "p", Mode: grove.ModeEdit, Conversation: "c1"})
	if err != nil || !created || w.User != "alice" {
		t.Fatalf("Acquire = %+v, %v, %v", w, created, err)
	}
	if _, created, err := alice.Acquire(ctx, grove.AcquireRequest{Repo: f.repo, Project: "p", Mode: grove.ModeEdit, Conversation: "c1"}); err != nil || created {
		t.Fatalf("second Acquire: created=%v, %v", created, err)
	}
	if err := alice.WriteFile(ctx, w.ID, "a/b.txt", []byte("data\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := alice.ReadFile(ctx, w.ID, "a/b.txt", 0); err != nil || string(b) != "data\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	var out strings.Builder
	res, err := alice.ExecStream(ctx, w.ID, grove.ExecRequest{Shell: "cat a/b.txt; exit 2"}, func(c grove.Chunk) error { out.Write(c.Data); return nil })
	if err != nil || res.ExitCode != 2 || out.String() != "data\n" {
		t.Fatalf("ExecStream = %+v, %q, %v", res, out.String(), err)
	}
	cr, err := alice.Commit(ctx, w.ID, grove.CommitRequest{Message: "add b"})
	if err != nil || cr.SHA == "" {
		t.Fatalf("Commit = %+v, %v", cr, err)
	}
	if log, err := alice.Log(ctx, w.ID, 5, ""); err != nil || len(log) < 2 || log[0].Subject != "add b" {
		t.Fatalf("Log = %+v, %v", log, err)
	}
	kinds := []struct {
		name string
		err  error
		kind error
	}{
		{"other user's workspace", func() error { _, err := bob.Get(ctx, w.ID); return err }(), grove.ErrNotFound},
		{"missing file", func() error { _, err := alice.ReadFile(ctx, w.ID, "nope", 0); return err }(), grove.ErrNotFound},
		{"escape", func() error { _, err := alice.ReadFile(ctx, w.ID, "../../etc/passwd", 0); return err }(), grove.ErrPathOutside},
		{"nothing to commit", func() error { _, err := alice.Commit(ctx, w.ID, grove.CommitRequest{Message: "x"}); return err }(), grove.ErrNothingToCommit},
		{"bad key", func() error {
			_, err := client.New(f.srv.URL, "grove_x", nil).List(ctx, grove.WorkspaceFilter{})
			return err
		}(), grove.ErrUnauthorized},
	}
	for _, k := range kinds {
		if !errors.Is(k.err, k.kind) {
			t.Errorf("%s: %v, want errors.Is %v", k.name, k.err, k.kind)
		}
	}
	if err := alice.Destroy(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Get(ctx, w.ID); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("Get after Destroy = %v", err)
	}
}
