// Package procexec is the process-running core shared by the local runtime
// drivers (subprocess, bwrap) and by grove tunnel's agent on a developer's
// machine: request validation, the clean environment, confinement of the
// working directory, and running one command with a timeout, capped
// output, streaming and process-group kill.
//
// It implements the exec half of the driver contract once so that every
// place Grove runs a local process behaves the same way on the edge cases
// (timeouts, floods of output, grandchildren that keep pipes open) and
// reports the end the same way (exit 124 at a timeout, 128+n for signal n).
package procexec
