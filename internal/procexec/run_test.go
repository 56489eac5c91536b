package procexec

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(st), ") Z ")
}

func TestRunLeftovers(t *testing.T) {
	for _, keep := range []bool{false, true} {
		cmd := exec.Command("/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!")
		res, err := Run(context.Background(), cmd, Params{Timeout: 10 * time.Second, MaxOutput: 1 << 10, KeepBackground: keep})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("keep=%v: %+v %v", keep, res, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
		time.Sleep(50 * time.Millisecond)
		if got := alive(pid); got != keep {
			t.Errorf("KeepBackground=%v: background process alive=%v", keep, got)
		}
		if pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// A timeout kills the whole group even with KeepBackground.
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!; sleep 30")
	res, err := Run(context.Background(), cmd, Params{Timeout: 300 * time.Millisecond, MaxOutput: 1 << 10, KeepBackground: true})
	if err != nil || !res.TimedOut || res.ExitCode != TimeoutExitCode {
		t.Fatalf("timeout: %+v %v", res, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	time.Sleep(50 * time.Millisecond)
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("a timeout left the group's background process running")
	}
}

func TestRunStartError(t *testing.T) {
	_, err := Run(context.Background(), exec.Command("/no/such/program"), Params{Timeout: time.Second, MaxOutput: 10})
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing program: %v", err)
	}
	res, err := Run(context.Background(), exec.Command("/bin/sh", "-c", "kill -TERM $$"), Params{Timeout: time.Second, MaxOutput: 10})
	if err != nil || res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("signalled: %+v %v", res, err)
	}
}
