package drivertest

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/grove-dev/grove"
)

// privHostProcess: a process outside the sandbox cannot be seen, stopped
// or traced from inside it; the host checks it kept running.
func (s *suite) privHostProcess(t *testing.T) {
	l := s.privWorkspace(t)
	outside := exec.Command("sleep", "60")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outside.Process.Kill(); outside.Wait() }()
	pid := strconv.Itoa(outside.Process.Pid)
	res := l.w.exec(t, grove.ExecRequest{Shell: `kill -STOP ` + pid + ` 2>/dev/null && exit 0; test -e /proc/` + pid + `/status && grep -q sleep /proc/` + pid + `/comm && exit 0; exit 5`})
	if res.ExitCode != 5 {
		t.Errorf("a host process was visible or signalled from the sandbox (exit %d)", res.ExitCode)
	}
	if st := readProcState(outside.Process.Pid); st == "T" || st == "t" {
		t.Error("the host process was stopped from inside the sandbox")
	}
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the host process died: %v", err)
	}
}

func readProcState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// pid (comm) state ...
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return string(b[i+2])
	}
	return ""
}
