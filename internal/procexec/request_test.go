package procexec

import (
	"errors"
	"testing"

	"github.com/grove-dev/grove"
)

func TestCapped(t *testing.T) {
	c := &capped{max: 5}
	var kept []byte
	for _, p := range []string{"ab", "cdef", "ghi", ""} {
		kept = append(kept, c.write([]byte(p))...)
	}
	buf, omitted := c.result()
	if string(buf) != "abcde" || string(kept) != "abcde" || omitted != 4 {
		t.Fatalf("buf %q kept %q omitted %d; want abcde abcde 4", buf, kept, omitted)
	}
}

func TestEnvIsCleanAndOverridable(t *testing.T) {
	t.Setenv("GROVE_PROCEXEC_LEAK", "x")
	env := Env("/h", map[string]string{"FOO": "bar", "TERM": "xterm"})
	want := []string{"FOO=bar", "HOME=/h", "LANG=C.UTF-8", "PATH=" + DefaultPath, "TERM=xterm"}
	if len(env) != len(want) {
		t.Fatalf("env %q, want %q", env, want)
	}
	for i := range want {
		if env[i] != want[i] {
			t.Fatalf("env %q, want %q", env, want)
		}
	}
}

func TestReject(t *testing.T) {
	tests := []struct {
		class grove.CommandClass
		allow bool
		want  error
	}{
		{grove.ClassRead, false, nil},
		{"", false, grove.ErrRejected},
		{grove.ClassWrite, false, grove.ErrRejected},
		{grove.ClassInstall, false, grove.ErrRejected},
		{grove.ClassTest, false, grove.ErrRejected},
		{grove.ClassWrite, true, nil},
		{"", true, nil},
	}
	for _, tt := range tests {
		err := Reject(tt.allow, grove.ExecRequest{Argv: []string{"true"}, Class: tt.class})
		if !errors.Is(err, tt.want) && !(err == nil && tt.want == nil) {
			t.Errorf("Reject(allow=%v, %q) = %v, want %v", tt.allow, tt.class, err, tt.want)
		}
	}
}

func FuzzValidateEnvName(f *testing.F) {
	for _, s := range []string{"PATH", "_x1", "1A", "A=B", "", "a b", "A\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		_, _, err := Validate(grove.ExecRequest{Argv: []string{"true"}, Env: map[string]string{name: "v"}})
		if err != nil {
			if !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for i, c := range name {
			if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
				t.Fatalf("accepted env name %q", name)
			}
		}
	})
}
