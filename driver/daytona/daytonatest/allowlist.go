package daytonatest

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// routeScript replaces the main routing table of the network namespace it
// runs in (a sandbox's, joined by a helper container) with one route per
// allowed CIDR block through the bridge's gateway (onlink, so no route to
// the gateway itself is needed): every other destination, the host's
// bridge address and other containers included, is unreachable. It
// speaks rtnetlink from the Python standard library (the agent image has
// no ip or iptables). Arguments: gateway, CIDR blocks.
const routeScript = `
import socket, struct, sys
gw, cidrs = sys.argv[1], sys.argv[2:]
# The bridge's interface: the only one but loopback (its name depends on
# how the container joined the bridge).
oif = [i for i, n in socket.if_nameindex() if n != "lo"][0]
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
s.bind((0, 0))
seq = [0]
def attr(t, data):
    n = 4 + len(data)
    return struct.pack("=HH", n, t) + data + b"\0" * ((4 - n % 4) % 4)
def send(typ, flags, body):
    seq[0] += 1
    s.send(struct.pack("=IHHII", 16 + len(body), typ, flags, seq[0], 0) + body)
def recv_all():
    out = []
    while True:
        data = s.recv(65536)
        off = 0
        while off < len(data):
            ln, typ, fl, sq, pid = struct.unpack_from("=IHHII", data, off)
            if typ == 3:  # NLMSG_DONE
                return out
            if typ == 2:  # NLMSG_ERROR
                err = struct.unpack_from("=i", data, off + 16)[0]
                if err != 0:
                    raise OSError(-err, "netlink")
                return out
            out.append(data[off + 16:off + ln])
            off += (ln + 3) & ~3
# Dump IPv4 routes; delete those of the main table.
send(26, 0x301, struct.pack("=BBBBBBBBI", socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0))
for body in recv_all():
    fam, dlen, slen, tos, table, proto, scope, typ, flags = struct.unpack_from("=BBBBBBBBI", body)
    if table != 254:
        continue
    send(25, 0x5, body)
    recv_all()
gwb = socket.inet_aton(gw)
for c in cidrs:
    net, ln = c.split("/")
    rt = struct.pack("=BBBBBBBBI", socket.AF_INET, int(ln), 0, 0, 254, 4, 0, 1, 4)  # RTNH_F_ONLINK
    rt += attr(1, socket.inet_aton(net)) + attr(5, gwb) + attr(4, struct.pack("=I", oif))
    send(24, 0x605, rt)  # REQUEST|ACK|CREATE|EXCL
    recv_all()
`

// restrictRoutes applies b's allow-list to its running container: only
// the listed blocks are routed. Docker rebuilds the namespace's routes
// when the container starts or joins the bridge, so this runs after each.
func (s *Server) restrictRoutes(ctx context.Context, b *sandbox) error {
	b.mu.Lock()
	list, blockAll, id := b.allowList, b.blockAll, b.container
	b.mu.Unlock()
	if blockAll || list == "" {
		return nil
	}
	ins, err := s.cli.ContainerInspect(ctx, id)
	if err != nil {
		return err
	}
	br := ins.NetworkSettings.Networks["bridge"]
	if br == nil || br.Gateway == "" {
		return fmt.Errorf("daytonatest: sandbox %s is not on the bridge", b.id)
	}
	var cidrs []string
	for _, c := range strings.Split(list, ",") {
		cidrs = append(cidrs, strings.TrimSpace(c))
	}
	resp, err := s.cli.ContainerCreate(ctx, &container.Config{
		Image: s.opts.Image, User: "0", Entrypoint: []string{"python3", "-c", routeScript, br.Gateway},
		Cmd: cidrs, Labels: map[string]string{"daytonatest": "1"},
	}, &container.HostConfig{
		NetworkMode: container.NetworkMode("container:" + id),
		CapAdd:      []string{"NET_ADMIN"},
	}, nil, nil, "")
	if err != nil {
		return err
	}
	defer s.cli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true})
	if err := s.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return err
	}
	wc, ec := s.cli.ContainerWait(ctx, resp.ID, container.WaitConditionNotRunning)
	select {
	case w := <-wc:
		if w.StatusCode != 0 {
			var out, errb bytes.Buffer
			if rc, err := s.cli.ContainerLogs(ctx, resp.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true}); err == nil {
				_, _ = stdcopy.StdCopy(&out, &errb, rc)
				rc.Close()
			}
			return fmt.Errorf("daytonatest: allow-list routes for %s: exit %d: %s%s", b.id, w.StatusCode, out.String(), errb.String())
		}
		return nil
	case err := <-ec:
		return err
	}
}
