package procexec

import "sort"

// DefaultPath is the PATH of every sandboxed command.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env builds the clean environment: PATH, HOME, LANG=C.UTF-8, TERM=dumb,
// then the request's variables (which may override those four). Nothing
// comes from the host process. The result is sorted so that the command
// line is deterministic.
func Env(home string, extra map[string]string) []string {
	m := map[string]string{
		"PATH": DefaultPath,
		"HOME": home,
		"LANG": "C.UTF-8",
		"TERM": "dumb",
	}
	for k, v := range extra {
		m[k] = v
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}
