package procexec

import (
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// Validate checks a request's shape and returns its effective timeout and
// output cap (the driver defaults where the request leaves them zero).
func Validate(req grove.ExecRequest) (timeout time.Duration, maxOutput int, err error) {
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return 0, 0, grove.Errorf(grove.ErrInvalid, "exec: set argv or shell, not both")
	case len(req.Argv) == 0 && req.Shell == "":
		return 0, 0, grove.Errorf(grove.ErrInvalid, "exec: empty command")
	case len(req.Argv) > 0 && req.Argv[0] == "":
		return 0, 0, grove.Errorf(grove.ErrInvalid, "exec: empty program name")
	case req.Timeout < 0:
		return 0, 0, grove.Errorf(grove.ErrInvalid, "exec: negative timeout")
	case req.MaxOutput < 0:
		return 0, 0, grove.Errorf(grove.ErrInvalid, "exec: negative max_output")
	}
	// A NUL byte cannot cross execve; reject it instead of letting the
	// kernel truncate an argument silently.
	for _, a := range req.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return 0, 0, grove.Errorf(grove.ErrInvalid, "exec: argument contains a NUL byte")
		}
	}
	if strings.IndexByte(req.Shell, 0) >= 0 {
		return 0, 0, grove.Errorf(grove.ErrInvalid, "exec: shell command contains a NUL byte")
	}
	if err := CheckEnv(req.Env); err != nil {
		return 0, 0, err
	}
	timeout, maxOutput = req.Timeout, req.MaxOutput
	if timeout == 0 {
		timeout = driver.DefaultTimeout
	}
	if maxOutput == 0 {
		maxOutput = driver.DefaultMaxOutput
	}
	return timeout, maxOutput, nil
}

// CheckEnv refuses variable names that are not shell identifiers and
// values with a NUL byte.
func CheckEnv(env map[string]string) error {
	for k, v := range env {
		if !validEnvName(k) {
			return grove.Errorf(grove.ErrInvalid, "exec: invalid environment variable name %q", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return grove.Errorf(grove.ErrInvalid, "exec: environment variable %s contains a NUL byte", k)
		}
	}
	return nil
}

// validEnvName accepts the portable shell identifier syntax, so a name can
// neither carry '=' (which would smuggle a second assignment) nor confuse
// the shell that may read it.
func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Reject refuses mutating command classes on a runtime that does not allow
// them. The empty class counts as write, as grove.ExecRequest documents
// (CommandClass.Mutating alone says "" is not mutating, so it is not
// enough here: an unclassified command must not slip through).
func Reject(allowMutating bool, req grove.ExecRequest) error {
	if !allowMutating && (req.Class == "" || req.Class.Mutating()) {
		cls := req.Class
		if cls == "" {
			cls = grove.ClassWrite
		}
		return grove.Errorf(grove.ErrRejected, "exec: %s commands are not allowed on this runtime", cls)
	}
	return nil
}
