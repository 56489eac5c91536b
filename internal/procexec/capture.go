package procexec

import "sync"

// capped keeps the first max bytes written to it and counts the rest. It
// never holds more than max bytes, whatever the command prints.
type capped struct {
	mu      sync.Mutex
	max     int
	discard bool // count what fits under the cap without keeping it
	kept    int
	buf     []byte
	omitted int64
}

// write stores what fits under the cap and returns that part (aliasing p),
// so a streaming caller can forward exactly the bytes the result keeps.
func (c *capped) write(p []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := max(c.max-c.kept, 0)
	keep := p
	if len(keep) > room {
		keep = keep[:room]
	}
	c.kept += len(keep)
	if !c.discard {
		c.buf = append(c.buf, keep...)
	}
	c.omitted += int64(len(p) - len(keep))
	return keep
}

func (c *capped) result() ([]byte, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.buf
	if out == nil {
		out = []byte{}
	}
	return out, c.omitted
}
