package memory

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/grove-dev/grove"
)

// branchKey is the (RepoCacheID, User, Branch) triple no two workspaces
// share: two users may each check out the same branch name of one repo.
type branchKey struct{ cacheID, user, branch string }

// state is one version of the data. Stored records are never modified in
// place (see the package comment), so clone copies only the maps.
type state struct {
	caches       map[string]*grove.RepoCache     // by id
	cacheByKey   map[string]string               // Repo.Key() → id
	workspaces   map[string]*grove.Workspace     // by id
	wsByKey      map[string]string               // Key → id
	wsByBranch   map[branchKey]string            // → id, non-empty branches only
	runtimes     map[string]*grove.RuntimeRecord // by workspace id
	wsByCacheCnt map[string]int                  // cache id → number of workspaces
}

func newState() *state {
	return &state{
		caches:       map[string]*grove.RepoCache{},
		cacheByKey:   map[string]string{},
		workspaces:   map[string]*grove.Workspace{},
		wsByKey:      map[string]string{},
		wsByBranch:   map[branchKey]string{},
		runtimes:     map[string]*grove.RuntimeRecord{},
		wsByCacheCnt: map[string]int{},
	}
}

func (st *state) clone() *state {
	return &state{
		caches:       maps.Clone(st.caches),
		cacheByKey:   maps.Clone(st.cacheByKey),
		workspaces:   maps.Clone(st.workspaces),
		wsByKey:      maps.Clone(st.wsByKey),
		wsByBranch:   maps.Clone(st.wsByBranch),
		runtimes:     maps.Clone(st.runtimes),
		wsByCacheCnt: maps.Clone(st.wsByCacheCnt),
	}
}

// byCreated orders records by creation time, then id, as the port promises.
func byCreated(at1 time.Time, id1 string, at2 time.Time, id2 string) int {
	if c := at1.Compare(at2); c != 0 {
		return c
	}
	return cmp.Compare(id1, id2)
}

func sortedValues[T any](m map[string]*T, keep func(*T) bool, less func(a, b *T) int) []*T {
	out := make([]*T, 0, len(m))
	for _, v := range m {
		if keep == nil || keep(v) {
			c := *v
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, less)
	return out
}
