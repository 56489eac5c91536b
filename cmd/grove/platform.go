package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/platform/github"
)

// gitPlatform wires the GitHub platform and the credential chain from the
// environment: GITHUB_BASE_URL, GH_APP_ID with GH_APP_PRIVATE_KEY or
// GH_APP_PRIVATE_KEY_FILE (and GH_APP_SLUG for the bot identity), and
// GH_TOKEN, GITHUB_TOKEN, GH_TOKEN_LIST. GROVE_PROTECTED_BRANCHES is a
// comma-separated list of patterns. Errors never quote a secret.
func gitPlatform(baseURL string) (*github.Client, *credentials.Chain, *gitrepo.Identity, []string, error) {
	gh, err := github.New(github.Options{BaseURL: baseURL})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	chain := &credentials.Chain{Hosts: []string{gh.Host()}}
	var bot *gitrepo.Identity
	if id := os.Getenv("GH_APP_ID"); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return nil, nil, nil, nil, grove.Errorf(grove.ErrInvalid, "GH_APP_ID must be a number")
		}
		key := []byte(os.Getenv("GH_APP_PRIVATE_KEY"))
		if f := os.Getenv("GH_APP_PRIVATE_KEY_FILE"); len(key) == 0 && f != "" {
			if key, err = os.ReadFile(f); err != nil {
				return nil, nil, nil, nil, grove.Errorf(grove.ErrInvalid, "GH_APP_PRIVATE_KEY_FILE cannot be read")
			}
		}
		slug := os.Getenv("GH_APP_SLUG")
		app, err := credentials.NewApp(n, slug, key, gh)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		chain.Sources = append(chain.Sources, app)
		if slug != "" {
			name, email := credentials.BotIdentity(slug, gh.Host())
			bot = &gitrepo.Identity{Name: name, Email: email}
		}
	}
	env, err := credentials.EnvFrom(os.Getenv)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if env != nil {
		chain.Sources = append(chain.Sources, env)
	}
	var protected []string
	for _, p := range strings.Split(os.Getenv("GROVE_PROTECTED_BRANCHES"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			protected = append(protected, p)
		}
	}
	return gh, chain, bot, protected, nil
}
