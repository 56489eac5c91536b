package tools

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/grove-dev/grove"
)

// blockingService runs every command until its context ends.
type blockingService struct{ grove.Service }

func (blockingService) ExecStream(ctx context.Context, _ string, _ grove.ExecRequest, _ func(grove.Chunk) error) (*grove.ExecResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// One user filling their share of background processes leaves room for
// every other user: the table is bounded per workspace, per user and in
// total, each with its own message.
func TestBackgroundProcessesPerUser(t *testing.T) {
	ps := newProcesses(12, 4, 8)
	defer ps.close()
	svc := blockingService{}
	alice, bob := Caller{User: "alice"}, Caller{User: "bob"}
	started := 0
	for ws := 0; ws < 3 && started < 8; ws++ {
		for i := 0; i < 4 && started < 8; i++ {
			if _, err := ps.start(alice, svc, fmt.Sprint("ws_a", ws), "sleep", grove.ExecRequest{}); err != nil {
				t.Fatalf("alice's process %d: %v", started, err)
			}
			started++
		}
	}
	if _, err := ps.start(alice, svc, "ws_a9", "sleep", grove.ExecRequest{}); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("alice past her share: %v", err)
	}
	for i := 0; i < 4; i++ {
		if _, err := ps.start(bob, svc, "ws_b", "sleep", grove.ExecRequest{}); err != nil {
			t.Fatalf("bob refused while alice holds her share: %v", err)
		}
	}
	carol := Caller{User: "carol"}
	_, err := ps.start(carol, svc, "ws_c", "sleep", grove.ExecRequest{})
	var e *Error
	if !errors.As(err, &e) || e.Code != "E_RESOURCE_LIMIT" || e.Msg == "" {
		t.Fatalf("a full server table: %v", err)
	}
}
