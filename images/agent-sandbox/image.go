// Package agentsandbox carries the recipe of Grove's agent image so that Go
// code (the docker driver's EnsureImage, `grove image build`) builds exactly
// what build.sh builds, under the same content-addressed tag.
package agentsandbox

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

// BuildScript is build.sh: debootstrap a Debian root filesystem, configure
// it, tar it.
//
//go:embed build.sh
var BuildScript []byte

// Variant selects the package set.
type Variant string

const (
	Full Variant = "full" // the image DESIGN.md §6 describes
	Lean Variant = "lean" // git, ripgrep, tini, ca-certificates: for measuring what the rest costs
)

// Repository returns the image repository of a variant.
func (v Variant) Repository() string {
	if v == Lean {
		return "grove/agent-sandbox-lean"
	}
	return "grove/agent-sandbox"
}

// InputsHash is the hash build.sh tags its image with: the first 12 hex
// digits of the script's sha256. The package lists and set-up steps live in
// the script, so any change to them names a new image.
func InputsHash() string {
	sum := sha256.Sum256(BuildScript)
	return hex.EncodeToString(sum[:])[:12]
}

// Tag is the content-addressed tag of a variant's image.
func (v Variant) Tag() string { return v.Repository() + ":" + InputsHash() }

// ImportChanges are the Dockerfile instructions applied when the root
// filesystem tarball is imported; build.sh passes the same ones to
// `docker import`.
func (v Variant) ImportChanges() []string {
	return []string{
		"USER agent",
		"WORKDIR /home/agent",
		"ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8",
		`ENTRYPOINT ["/usr/bin/tini", "--"]`,
		`CMD ["sleep", "infinity"]`,
		"LABEL dev.grove.image=agent-sandbox dev.grove.variant=" + string(v) + " dev.grove.inputs=" + InputsHash(),
	}
}
