package daytona

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/daytona/daytonatest"
)

// TestListingFollowsPages: with one sandbox a page, the lookup by labels
// passes over a destroying sandbox on the first page to the live one on
// the next instead of creating a second sandbox for the pair, and
// RunningSandboxes lists every started pair across pages and no stopped
// one.
func TestListingFollowsPages(t *testing.T) {
	cli, img := engine(t)
	fake := daytonatest.New(t, cli, daytonatest.Options{Image: img, APIKey: "k1", PageSize: 1})
	cfg := Config{APIURL: fake.URL, APIKey: "k1", WorkspaceRoot: root, AllowMutating: true,
		RetryBackoff: 10 * time.Millisecond, PollInterval: 100 * time.Millisecond}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := create(t, d, "a1", "alice")
	create(t, d, "b1", "bob")
	create(t, d, "c1", "carol")
	if err := d.Stop(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	fake.AddDestroying(map[string]string{LabelManagedBy: managedBy, LabelUser: "alice", LabelProject: "p"})

	// A new process: nothing remembered, every sandbox found by listing.
	d2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	again := create(t, d2, "a2", "alice")
	if again.BackendID != first.BackendID {
		t.Fatalf("alice's second workspace got sandbox %s, want her existing %s (a lookup that stops at the first page creates a duplicate)", again.BackendID, first.BackendID)
	}
	got, err := d2.RunningSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []driver.Owner{{User: "alice", Project: "p"}, {User: "bob", Project: "p"}}
	slices.SortFunc(got, func(a, b driver.Owner) int {
		if a.User < b.User {
			return -1
		}
		return 1
	})
	if !slices.Equal(got, want) {
		t.Fatalf("RunningSandboxes = %v, want %v (carol's is stopped)", got, want)
	}
}
