package debug

import (
	"encoding/json"
	"errors"
	"testing"

	grove "github.com/grove-dev/grove"
)

func TestParseLaunchJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // names
		wantErr bool
	}{
		{name: "plain", in: `{"version": "0.2.0", "configurations": [{"name": "a", "type": "go", "request": "launch"}]}`, want: []string{"a"}},
		{name: "line comments", in: "{\n// top\n\"configurations\": [ // list\n{\"name\": \"a\", \"type\": \"lldb\"} // one\n]\n}", want: []string{"a"}},
		{name: "block comments", in: `{/* a
		multi-line */ "configurations": [{"name": /* inline */ "b"}]}`, want: []string{"b"}},
		{name: "trailing commas", in: `{"configurations": [{"name": "a", "args": ["x", "y",],}, {"name": "b",},],}`, want: []string{"a", "b"}},
		{name: "trailing comma before comment", in: "{\"configurations\": [{\"name\": \"a\", // c\n}]}", want: []string{"a"}},
		{name: "url in string", in: `{"configurations": [{"name": "http://x//y /* not */", "url": "a//b"}]}`, want: []string{"http://x//y /* not */"}},
		{name: "escaped quote", in: `{"configurations": [{"name": "say \"hi\" // still"}]}`, want: []string{`say "hi" // still`}},
		{name: "comma in string kept", in: `{"configurations": [{"name": "a,]"}]}`, want: []string{"a,]"}},
		{name: "bom", in: "\xef\xbb\xbf{\"configurations\": []}", want: []string{}},
		{name: "no configurations", in: `{"version": "0.2.0"}`, want: []string{}},
		{name: "malformed", in: `{"configurations": [{"name": }]}`, wantErr: true},
		{name: "unterminated comment", in: `{"configurations": []} /* `, want: []string{}},
		{name: "unterminated string", in: `{"configurations": [{"name": "a`, wantErr: true},
		{name: "not an object", in: `[1, 2]`, wantErr: true},
		{name: "config not an object", in: `{"configurations": [1]}`, wantErr: true},
		{name: "empty", in: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLaunchJSON([]byte(tt.in))
			if tt.wantErr {
				if !errors.Is(err, grove.ErrInvalid) {
					t.Fatalf("err %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d configurations, want %d", len(got), len(tt.want))
			}
			for i, c := range got {
				if c.Name != tt.want[i] {
					t.Errorf("name %q, want %q", c.Name, tt.want[i])
				}
				if !json.Valid(c.Raw) {
					t.Errorf("raw %s is not JSON", c.Raw)
				}
			}
		})
	}
}

func TestParseLaunchJSONKeepsRaw(t *testing.T) {
	got, err := ParseLaunchJSON([]byte(`{
	  // VS Code's own template, abridged
	  "configurations": [
	    {
	      "name": "Launch C",
	      "type": "cppdbg",
	      "request": "launch",
	      "program": "${workspaceFolder}/a.out",
	      "MIMode": "lldb",
	      "environment": [{"name": "X", "value": "1"}],
	    },
	  ]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Type != "cppdbg" || got[0].Request != "launch" {
		t.Fatalf("%+v", got)
	}
	var raw map[string]any
	if err := json.Unmarshal(got[0].Raw, &raw); err != nil || raw["MIMode"] != "lldb" {
		t.Fatalf("raw %s: %v", got[0].Raw, err)
	}
}

func FuzzParseLaunchJSON(f *testing.F) {
	for _, s := range []string{
		`{"configurations": [{"name": "a", "type": "go",},]}`,
		"{// c\n\"configurations\": [/* x */]}",
		`{"configurations": [{"name": "a//b\"/*"}]}`,
		`{"configurations": [`,
		`/*`, `"`, `\`, `,]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseLaunchJSON(b)
		if err != nil {
			if !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		for _, c := range got {
			if !json.Valid(c.Raw) {
				t.Fatalf("raw %q is not JSON", c.Raw)
			}
		}
		// Plain JSON must parse the same with or without stripping.
		if json.Valid(b) {
			var doc struct {
				Configurations []json.RawMessage `json:"configurations"`
			}
			if json.Unmarshal(b, &doc) == nil && len(doc.Configurations) != len(got) {
				t.Fatalf("valid JSON: %d configurations, stripped: %d", len(doc.Configurations), len(got))
			}
		}
	})
}
