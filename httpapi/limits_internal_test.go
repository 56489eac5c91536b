package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/wire"
)

// writeExecResult must give exactly the bytes of the plain encoding,
// whatever the output holds and wherever its pieces are cut.
func TestWriteExecResultMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := [][]byte{[]byte("a"), []byte("é"), []byte("€"), []byte("😀"), {0xff}, {0xe2, 0x82}, {0x80}, []byte("<>&"), []byte("\u2028"), {0}, []byte("\n\t\"\\")}
	gen := func(n int) []byte {
		var b []byte
		for len(b) < n {
			b = append(b, alphabet[rng.IntN(len(alphabet))]...)
		}
		return b
	}
	cases := []*grove.ExecResult{
		{},
		{ExitCode: 3, Stdout: []byte("hi\n"), Stderr: []byte("oops"), TimedOut: true, Truncated: true, StdoutOmitted: 5, Duration: time.Second},
		{Stdout: bytes.Repeat([]byte("€"), 40000), Stderr: gen(100000)},
		{Stdout: append(bytes.Repeat([]byte("a"), 32<<10-1), []byte("😀😀")...)},
		{Stdout: append(bytes.Repeat([]byte("a"), 32<<10-2), 0xe2, 0x82, 0x80, 0x80, 0x80, 0x80)},
	}
	for range 20 {
		cases = append(cases, &grove.ExecResult{Stdout: gen(rng.IntN(200 << 10)), Stderr: gen(rng.IntN(70 << 10)), ExitCode: rng.IntN(3)})
	}
	for i, res := range cases {
		rec := httptest.NewRecorder()
		writeExecResult(rec, res)
		var want bytes.Buffer
		json.NewEncoder(&want).Encode(wire.ExecResponseOf(res))
		if !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
			got, w := rec.Body.String(), want.String()
			k := 0
			for k < len(got) && k < len(w) && got[k] == w[k] {
				k++
			}
			t.Fatalf("case %d: differs at byte %d: got %q want %q", i, k, clipT(got[k:]), clipT(w[k:]))
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("content type %q", ct)
		}
	}
}

func clipT(s string) string { return s[:min(len(s), 40)] }

func TestConnLimiterCountsIPv6Per64(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.7:443":             "192.0.2.7",
		"[::ffff:192.0.2.7]:443":    "192.0.2.7",
		"[2001:db8:1:2:3::4]:443":   "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::]:443": "2001:db8:1:2::/64",
	} {
		if got := remoteIP(fakeConn{addr: addr}); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}

// fakeConn is a net.Conn with only a remote address.
type fakeConn struct {
	net.Conn
	addr string
}

func (c fakeConn) RemoteAddr() net.Addr { return fakeAddr(c.addr) }

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }
