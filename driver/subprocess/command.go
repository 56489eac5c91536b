package subprocess

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/grove-dev/grove"
)

// command builds the process for req. When the program cannot be run it
// returns instead the result a shell would give (127 not found, 126 not
// executable), because the contract makes that a result, not an error.
func command(req grove.ExecRequest, env []string, dir string) (*exec.Cmd, *grove.ExecResult) {
	argv := req.Argv
	if req.Shell != "" {
		sh := "bash"
		if _, err := lookPath("bash", envValue(env, "PATH"), dir); err != nil {
			sh = "sh"
		}
		argv = []string{sh, "-c", req.Shell}
	}
	prog, err := lookPath(argv[0], envValue(env, "PATH"), dir)
	if err != nil {
		code := 127
		if errors.Is(err, fs.ErrPermission) {
			code = 126
		}
		return nil, &grove.ExecResult{
			ExitCode: code,
			Stdout:   []byte{},
			Stderr:   []byte("grove: " + argv[0] + ": " + err.Error() + "\n"),
		}
	}
	return &exec.Cmd{Path: prog, Args: argv, Env: env, Dir: dir}, nil
}

var errNotFound = errors.New("command not found")

// lookPath resolves name against the command's PATH, not the host
// process's (exec.LookPath reads os.Getenv("PATH"), which the clean
// environment must not depend on).
func lookPath(name, path, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, executable(p)
	}
	var firstErr error
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // relative PATH entries would depend on the cwd
		}
		p := filepath.Join(d, name)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && errors.Is(err, fs.ErrPermission) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", errNotFound
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errNotFound
		}
		return err
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
