package main

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// redacted stands in for a secret that is set.
func redacted(v string) string {
	if v == "" {
		return ""
	}
	return "(set, redacted)"
}

func (c *cli) configCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration (secrets redacted)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			runtime, err := c.cfg.pickRuntime()
			if err != nil {
				return err
			}
			eff := []struct{ key, value string }{
				{"root", c.cfg.Root},
				{"store", orDefault(redactURL(c.cfg.Store), "sqlite")},
				{"locks", orDefault(redactURL(c.cfg.Locks), "local")},
				{"runtime", runtime},
				{"sandbox_path", c.cfg.sandboxPath(runtime)},
				{"allow_unisolated", fmt.Sprint(c.cfg.AllowUnisolated)},
				{"network", c.cfg.Network},
				{"fetch_freshness", c.cfg.Freshness.String()},
				{"github_base_url", c.cfg.BaseURL},
				{"user", c.cfg.User},
				{"author", c.cfg.AuthorName + " <" + c.cfg.AuthorEmail + ">"},
				{"no_sync", fmt.Sprint(c.cfg.NoSync)},
				{"image", c.cfg.Image},
				{"server", c.server},
				{"api_key", redacted(os.Getenv("GROVE_API_KEY"))},
				{"git_token", redacted(os.Getenv("GROVE_GIT_TOKEN"))},
			}
			if c.cfg.JSON {
				m := make(map[string]string, len(eff))
				for _, kv := range eff {
					m[kv.key] = kv.value
				}
				return c.printJSON(m)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			for _, kv := range eff {
				fmt.Fprintf(tw, "%s\t%s\n", kv.key, kv.value)
			}
			return tw.Flush()
		},
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// redactURL hides the password of a DSN-like URL; anything that does not
// parse as a URL with a scheme is shown only by its scheme-less kind.
func redactURL(v string) string {
	if v == "" || !strings.Contains(v, "://") {
		if strings.Contains(v, "password") {
			return "(set, redacted)"
		}
		return v
	}
	u, err := url.Parse(v)
	if err != nil {
		return "(set, redacted)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "redacted")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
