package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/httpapi"
)

// limitsFromEnv reads the server's resource limits (docs/SECURITY.md,
// "Limits"). Unset variables keep httpapi's defaults; a malformed one is
// an error, not a silent default.
func limitsFromEnv() (httpapi.Limits, error) {
	var l httpapi.Limits
	var errs []error
	num := func(name string, dst *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
				return
			}
			*dst = n
		}
	}
	dur := func(name string, dst *time.Duration) {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive duration such as 30s", name, v))
				return
			}
			*dst = d
		}
	}
	num("GROVE_MAX_CONNS", &l.MaxConns)
	num("GROVE_MAX_CONNS_PER_IP", &l.MaxConnsPerIP)
	num("GROVE_MAX_HEADER_BYTES", &l.MaxHeaderBytes)
	dur("GROVE_BODY_TIMEOUT", &l.BodyTimeout)
	dur("GROVE_WRITE_TIMEOUT", &l.WriteTimeout)
	dur("GROVE_SSE_KEEPALIVE", &l.SSEKeepAlive)
	num("GROVE_EXEC_SLOTS", &l.MaxSlots)
	num("GROVE_MAX_OUTPUT", &l.MaxOutput)
	num("GROVE_MAX_MCP_BATCH", &l.MaxMCPBatch)
	num("GROVE_MAX_SEARCH_OFFSET", &l.MaxSearchOffset)
	dur("GROVE_REVOKE_CHECK", &l.RevokeCheck)
	num("GROVE_AUTH_FAILURES", &l.AuthFailures)
	dur("GROVE_AUTH_BACKOFF", &l.AuthBackoff)
	var perUser int // the --max-exec-per-user default; checked here so a typo is not silently 8
	num("GROVE_EXEC_SLOTS_PER_USER", &perUser)
	if len(errs) > 0 {
		return l, grove.Errorf(grove.ErrInvalid, "%v", errs[0])
	}
	return l, nil
}

// envInt is an integer flag default from the environment.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
