package gitfmt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
)

func TestParseLogRealGit(t *testing.T) {
	r := newRepo(t)
	subjects := []string{"first", "tabs\tand | pipes", "ünïcode — “quotes”", "record\x1eseparator"}
	var shas []string
	for i, s := range subjects {
		r.write("f", strings.Repeat("x", i+1))
		if i == 2 {
			r.write("other", "o")
		}
		shas = append(shas, r.commitAll(s+"\n\nbody line that must not leak into the subject"))
	}
	date := time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("", 2*3600))

	tests := []struct {
		name  string
		limit int
		path  string
		want  []int // indexes into subjects, newest first
	}{
		{"all", 0, "", []int{3, 2, 1, 0}},
		{"limit", 2, "", []int{3, 2}},
		{"path", 0, "other", []int{2}},
		{"odd path that does not exist", 0, "-n 1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := r.git(LogArgs(tt.limit, tt.path)...)
			commits, err := ParseLog(out)
			if err != nil {
				t.Fatalf("ParseLog(%q): %v", out, err)
			}
			if len(commits) != len(tt.want) {
				t.Fatalf("got %d commits, want %d: %+v", len(commits), len(tt.want), commits)
			}
			for i, c := range commits {
				w := tt.want[i]
				if c.SHA != shas[w] || c.Subject != subjects[w] || c.Author != "Ada Lovelace" || c.Email != "ada@example.com" || !c.Date.Equal(date) {
					t.Errorf("commit %d = %+v, want sha %s subject %q", i, c, shas[w], subjects[w])
				}
			}
		})
	}
}

func TestParseLogEmptyAndMalformed(t *testing.T) {
	if c, err := ParseLog(nil); err != nil || len(c) != 0 {
		t.Errorf("ParseLog(nil) = %v, %v", c, err)
	}
	sha := strings.Repeat("a", 40)
	for _, in := range []string{
		"x\x00y",
		"nothex" + strings.Repeat("0", 34) + "\x00a\x00e\x002024-01-01T00:00:00Z\x00s",
		sha + "\x00a\x00e\x00yesterday\x00s",
		sha + "\x00a\x00e\x002024-01-01T00:00:00Z\x00s\x00extra",
	} {
		if _, err := ParseLog([]byte(in)); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("ParseLog(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

func TestLogArgsKeepPathAfterDashDash(t *testing.T) {
	args := LogArgs(5, "--output=/tmp/x")
	if len(args) < 2 || args[len(args)-2] != "--" || args[len(args)-1] != "--output=/tmp/x" {
		t.Errorf("LogArgs = %q: path must follow --", args)
	}
}

func FuzzParseLog(f *testing.F) {
	sha := strings.Repeat("0", 40)
	f.Add([]byte(sha + "\x00a\x00e\x002024-01-01T00:00:00Z\x00s\x00"))
	f.Add([]byte(sha + "\x00a\x00e\x002024-01-01T00:00:00+02:00\x00s\x00" + sha + "\x00\x00\x002024-01-01T00:00:00Z\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		commits, err := ParseLog(in)
		if err != nil {
			if !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		// Round trip: write the commits back in the log format.
		var b strings.Builder
		for _, c := range commits {
			if strings.Contains(c.Author+c.Email+c.Subject, "\x00") {
				return
			}
			b.WriteString(c.SHA + "\x00" + c.Author + "\x00" + c.Email + "\x00" + c.Date.Format(time.RFC3339) + "\x00" + c.Subject + "\x00")
		}
		again, err := ParseLog([]byte(b.String()))
		if err != nil || len(again) != len(commits) {
			t.Fatalf("reparse: %v (%d vs %d commits)", err, len(again), len(commits))
		}
		for i := range again {
			if again[i].SHA != commits[i].SHA || again[i].Subject != commits[i].Subject || !again[i].Date.Equal(commits[i].Date) {
				t.Fatalf("round trip changed %+v into %+v", commits[i], again[i])
			}
		}
	})
}
