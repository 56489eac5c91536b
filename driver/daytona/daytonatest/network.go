package daytonatest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/docker/docker/api/types/network"
)

// maxAllowList is Daytona's documented bound on networkAllowList ("up to
// 5 CIDR network blocks"); the OpenAPI document states none.
const maxAllowList = 5

// checkAllowList validates Daytona's allow-list format: comma-separated
// IPv4 CIDR blocks, at most maxAllowList. Empty is no list.
func checkAllowList(s string) error {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxAllowList {
		return fmt.Errorf("networkAllowList: at most %d CIDR blocks, got %d", maxAllowList, len(parts))
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if ip, _, err := net.ParseCIDR(p); err != nil || ip.To4() == nil || strings.Contains(p, ":") {
			return fmt.Errorf("networkAllowList: %q is not an IPv4 CIDR block", p)
		}
	}
	return nil
}

// netName is the Docker network a sandbox's container is on.
func netName(blockAll bool) string {
	if blockAll {
		return "none"
	}
	return "bridge"
}

// networkSettings is POST /sandbox/{id}/network-settings: Daytona changes
// the outbound policy of a running sandbox. The fake moves the container
// between Docker's "none" network and the default bridge.
func (s *Server) networkSettings(w http.ResponseWriter, r *http.Request) {
	b := s.find(w, r)
	if b == nil {
		return
	}
	var req struct {
		NetworkBlockAll  *bool   `json:"networkBlockAll"`
		NetworkAllowList *string `json:"networkAllowList"`
	}
	if err := readJSON(r, &req); err != nil {
		writeErr(w, r, 400, err.Error(), "")
		return
	}
	if req.NetworkAllowList != nil {
		if err := checkAllowList(*req.NetworkAllowList); err != nil {
			writeErr(w, r, 400, err.Error(), "")
			return
		}
	}
	b.mu.Lock()
	st, was := b.state, b.blockAll
	b.mu.Unlock()
	if st != "started" {
		writeErr(w, r, 400, "Sandbox is not started", "")
		return
	}
	now := was
	if req.NetworkBlockAll != nil {
		now = *req.NetworkBlockAll
	}
	list := ""
	if req.NetworkAllowList != nil {
		list = *req.NetworkAllowList
	} else {
		b.mu.Lock()
		list = b.allowList
		b.mu.Unlock()
	}
	if err := s.applyNetwork(r.Context(), b, now, list); err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	writeJSON(w, 200, s.dto(b, true))
}

func (s *Server) moveNetwork(ctx context.Context, id, from, to string) error {
	if err := s.cli.NetworkDisconnect(ctx, from, id, true); err != nil {
		return err
	}
	return s.cli.NetworkConnect(ctx, to, id, &network.EndpointSettings{})
}

// Network returns a sandbox's recorded network settings and the Docker
// networks its container is attached to.
func (s *Server) Network(id string) (blockAll bool, allowList string, docker []string) {
	s.t.Helper()
	s.mu.Lock()
	b := s.sandboxes[id]
	s.mu.Unlock()
	if b == nil {
		s.t.Fatalf("daytonatest: no sandbox %s", id)
	}
	ins, err := s.cli.ContainerInspect(context.Background(), b.container)
	if err != nil {
		s.t.Fatal(err)
	}
	for n := range ins.NetworkSettings.Networks {
		docker = append(docker, n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.blockAll, b.allowList, docker
}

// SetNetworkBehind changes a sandbox's network settings as another
// client would (the container is moved when block-all changes).
func (s *Server) SetNetworkBehind(id string, blockAll bool, allowList string) {
	s.t.Helper()
	s.mu.Lock()
	b := s.sandboxes[id]
	s.mu.Unlock()
	if b == nil {
		s.t.Fatalf("daytonatest: no sandbox %s", id)
	}
	if err := s.applyNetwork(context.Background(), b, blockAll, allowList); err != nil {
		s.t.Fatal(err)
	}
}

// applyNetwork gives b's running container new settings: it moves
// between Docker's none network and the bridge, and is re-attached to
// the bridge (fresh routes) and restricted again when its list changes.
func (s *Server) applyNetwork(ctx context.Context, b *sandbox, blockAll bool, allowList string) error {
	b.mu.Lock()
	was, wasList := b.blockAll, b.allowList
	b.mu.Unlock()
	switch {
	case was != blockAll:
		if err := s.moveNetwork(ctx, b.container, netName(was), netName(blockAll)); err != nil {
			return err
		}
	case !blockAll && wasList != allowList:
		if err := s.moveNetwork(ctx, b.container, "bridge", "bridge"); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.blockAll, b.allowList = blockAll, allowList
	b.mu.Unlock()
	return s.restrictRoutes(ctx, b)
}

// ArchiveBehind archives a sandbox as Daytona's auto-archive would: its
// container stops and its state is "archived" until a start.
func (s *Server) ArchiveBehind(id string) {
	s.t.Helper()
	s.StopBehind(id)
	s.mu.Lock()
	b := s.sandboxes[id]
	s.mu.Unlock()
	b.mu.Lock()
	b.state = "archived"
	b.mu.Unlock()
}

// DeleteBehind deletes a sandbox (and its container) as another client
// of Daytona would.
func (s *Server) DeleteBehind(id string) {
	s.t.Helper()
	s.mu.Lock()
	b := s.sandboxes[id]
	delete(s.sandboxes, id)
	s.mu.Unlock()
	if b == nil {
		s.t.Fatalf("daytonatest: no sandbox %s", id)
	}
	s.removeContainer(b)
}
