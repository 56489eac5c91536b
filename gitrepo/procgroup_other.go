//go:build !unix

package gitrepo

import "os/exec"

func setProcessGroup(*exec.Cmd) {}
