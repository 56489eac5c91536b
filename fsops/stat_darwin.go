package fsops

import (
	"time"

	"golang.org/x/sys/unix"
)

func mtime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtimespec.Unix()) }
