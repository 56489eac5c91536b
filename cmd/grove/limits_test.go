package main

import (
	"testing"
	"time"
)

func TestLimitsFromEnv(t *testing.T) {
	t.Setenv("GROVE_MAX_CONNS", "100")
	t.Setenv("GROVE_MAX_CONNS_PER_IP", "10")
	t.Setenv("GROVE_EXEC_SLOTS", "16")
	t.Setenv("GROVE_MAX_OUTPUT", "1048576")
	t.Setenv("GROVE_BODY_TIMEOUT", "5s")
	t.Setenv("GROVE_REVOKE_CHECK", "500ms")
	l, err := limitsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if l.MaxConns != 100 || l.MaxConnsPerIP != 10 || l.MaxSlots != 16 || l.MaxOutput != 1<<20 || l.BodyTimeout != 5*time.Second || l.RevokeCheck != 500*time.Millisecond {
		t.Errorf("limits %+v", l)
	}
	if l.MaxHeaderBytes != 0 {
		t.Errorf("an unset variable keeps the default (0 here): %d", l.MaxHeaderBytes)
	}
	for name, bad := range map[string]string{"GROVE_MAX_CONNS": "-1", "GROVE_WRITE_TIMEOUT": "soon", "GROVE_AUTH_FAILURES": "0", "GROVE_EXEC_SLOTS_PER_USER": "eight"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, bad)
			if _, err := limitsFromEnv(); err == nil {
				t.Errorf("%s=%s accepted", name, bad)
			}
		})
	}
	t.Setenv("GROVE_EXEC_SLOTS_PER_USER", "3")
	if n := envInt("GROVE_EXEC_SLOTS_PER_USER", 8); n != 3 {
		t.Errorf("envInt: %d", n)
	}
}
