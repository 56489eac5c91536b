package sqlrow

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Migration is one schema step. Files are applied in name order; each name
// starts with its version number (0001_init.sql). A migration, once
// released, is never edited — a change is a new file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads the *.sql files of dir in fsys (an embedded
// directory) and checks their versions strictly increase.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries { // ReadDir sorts by name
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a version number and '_'", e.Name())
		}
		if len(out) > 0 && out[len(out)-1].Version >= v {
			return nil, fmt.Errorf("migration %s: version %d is not above the previous one", e.Name(), v)
		}
		body, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	return out, nil
}
