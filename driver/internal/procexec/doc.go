// Package procexec is the process-running core shared by the local runtime
// drivers (subprocess, bwrap): request validation, the clean environment,
// confinement of the working directory, and running one command with a
// timeout, capped output, streaming and process-group kill.
//
// It implements the exec half of the driver contract once so that every
// local driver behaves the same way on the edge cases (timeouts, floods of
// output, grandchildren that keep pipes open).
package procexec
