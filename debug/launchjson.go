package debug

import (
	"bytes"
	"encoding/json"

	grove "github.com/grove-dev/grove"
)

// launchJSONPath is where VS Code keeps launch configurations.
const launchJSONPath = ".vscode/launch.json"

// ParseLaunchJSON parses .vscode/launch.json into its configurations. The
// file is JSONC, as VS Code writes it: // and /* */ comments and trailing
// commas are allowed. Each configuration is kept whole in Raw.
func ParseLaunchJSON(b []byte) ([]grove.LaunchConfig, error) {
	clean := stripJSONC(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")))
	var doc struct {
		Configurations []json.RawMessage `json:"configurations"`
	}
	if err := json.Unmarshal(clean, &doc); err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "launch.json: %v", err)
	}
	out := make([]grove.LaunchConfig, 0, len(doc.Configurations))
	for i, raw := range doc.Configurations {
		var c struct {
			Name    string `json:"name"`
			Type    string `json:"type"`
			Request string `json:"request"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, grove.Errorf(grove.ErrInvalid, "launch.json: configuration %d: %v", i, err)
		}
		out = append(out, grove.LaunchConfig{Name: c.Name, Type: c.Type, Request: c.Request, Raw: compact(raw)})
	}
	return out, nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return b.Bytes()
}

// stripJSONC turns JSONC into JSON: comments become spaces (newlines kept,
// so error offsets still point at the right line) and a comma before a
// closing bracket is dropped. Strings are copied untouched, so a URL's //
// survives.
func stripJSONC(in []byte) []byte {
	out := make([]byte, 0, len(in))
	lastSig := -1 // index in out of the last non-space byte outside comments
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '"':
			start := len(out)
			out = append(out, c)
			for i++; i < len(in); i++ {
				out = append(out, in[i])
				if in[i] == '\\' && i+1 < len(in) {
					i++
					out = append(out, in[i])
					continue
				}
				if in[i] == '"' {
					break
				}
			}
			lastSig = start
		case c == '/' && i+1 < len(in) && in[i+1] == '/':
			for i < len(in) && in[i] != '\n' {
				out = append(out, ' ')
				i++
			}
			if i < len(in) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(in) && in[i+1] == '*':
			out = append(out, ' ', ' ')
			i += 2
			for ; i < len(in); i++ {
				if in[i] == '*' && i+1 < len(in) && in[i+1] == '/' {
					out = append(out, ' ', ' ')
					i++
					break
				}
				if in[i] == '\n' {
					out = append(out, '\n')
				} else {
					out = append(out, ' ')
				}
			}
		case c == '}' || c == ']':
			if lastSig >= 0 && out[lastSig] == ',' {
				out[lastSig] = ' '
			}
			lastSig = len(out)
			out = append(out, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, c)
		default:
			lastSig = len(out)
			out = append(out, c)
		}
	}
	return out
}
