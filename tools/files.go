package tools

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/tools/patch"
)

// maxFileBytes bounds what file tools load; larger files are E_TOO_LARGE.
const maxFileBytes = 10 << 20

type ReadFileInput struct {
	Path   string `json:"path" jsonschema:"file path relative to the workspace root"`
	Offset int    `json:"offset,omitempty" minimum:"1" jsonschema:"1-based line to start at (default 1)"`
	Limit  int    `json:"limit,omitempty" minimum:"1" jsonschema:"number of lines to return (default 500, max 2000)"`
}

type ReadFileOutput struct {
	Path       string `json:"path"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	TotalLines int    `json:"total_lines"`
	Truncated  bool   `json:"truncated"`
	NextOffset int    `json:"next_offset,omitempty"`
	SHA256     string `json:"sha256"`
	Content    string `json:"content"`
}

func (c *call) readText(ctx context.Context, p string) ([]byte, error) {
	b, err := c.svc.ReadFile(ctx, c.ws, p, maxFileBytes)
	if err != nil {
		return nil, c.notFound(ctx, p, err)
	}
	if isBinary(b) {
		return nil, grove.Errorf(grove.ErrBinaryFile, "%s is a binary file (%d bytes)", p, len(b))
	}
	return b, nil
}

func readFile(ctx context.Context, c *call, in ReadFileInput) (ReadFileOutput, string, error) {
	p, err := c.relPath(ctx, in.Path)
	if err != nil {
		return ReadFileOutput{}, "", err
	}
	offset, limit := max(in.Offset, 1), in.Limit
	if limit <= 0 {
		limit = 500
	}
	if limit > 2000 {
		return ReadFileOutput{}, "", invalidf("limit %d is over the maximum of 2000 lines", limit)
	}
	b, err := c.readText(ctx, p)
	if err != nil {
		return ReadFileOutput{}, "", err
	}
	lines := splitLines(string(b))
	out := ReadFileOutput{Path: p, TotalLines: len(lines), SHA256: sha(b)}
	if offset > len(lines) && !(offset == 1 && len(lines) == 0) {
		return out, "", &Error{Code: "E_INVALID_ARGUMENT", Msg: fmt.Sprintf("offset %d is past the end of %s, which has %d lines", offset, p, len(lines)),
			Hint: fmt.Sprintf("use an offset between 1 and %d", len(lines)), Err: grove.ErrInvalid}
	}
	if len(lines) == 0 {
		return out, fmt.Sprintf("%s is empty (sha256 %s)", p, out.SHA256), nil
	}
	end := min(len(lines), offset+limit-1)
	out.StartLine, out.EndLine = offset, end
	out.Content = numbered(lines, offset, end)
	text := out.Content
	if end < len(lines) {
		out.Truncated, out.NextOffset = true, end+1
		text += fmt.Sprintf("[lines %d-%d of %d shown; continue with offset=%d]\n", offset, end, len(lines), end+1)
	}
	return out, text, nil
}

type ListDirInput struct {
	Path  string `json:"path,omitempty" jsonschema:"directory relative to the workspace root (default: the root)"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels to descend (default 1, max 5)"`
}

type ListEntry struct {
	Name  string `json:"name" jsonschema:"path relative to the listed directory"`
	IsDir bool   `json:"is_dir"`
	Size  int64  `json:"size"`
}

type ListDirOutput struct {
	Path      string      `json:"path"`
	Entries   []ListEntry `json:"entries"`
	Total     int         `json:"total"`
	Truncated bool        `json:"truncated"`
}

const maxListEntries = 1000

func listDir(ctx context.Context, c *call, in ListDirInput) (ListDirOutput, string, error) {
	p, err := c.relPath(ctx, in.Path)
	if err != nil {
		return ListDirOutput{}, "", err
	}
	depth := in.Depth
	if depth <= 0 {
		depth = 1
	}
	if depth > 5 {
		return ListDirOutput{}, "", invalidf("depth %d is over the maximum of 5", depth)
	}
	entries, err := c.svc.ListDir(ctx, c.ws, p, depth)
	if err != nil {
		return ListDirOutput{}, "", c.notFound(ctx, p, err)
	}
	out := ListDirOutput{Path: p, Total: len(entries)}
	prefix := ""
	if p != "." {
		prefix = p + "/"
	}
	for _, e := range entries {
		name := strings.TrimPrefix(e.Path, prefix)
		if name == "" {
			name = e.Name
		}
		out.Entries = append(out.Entries, ListEntry{Name: name, IsDir: e.IsDir, Size: e.Size})
	}
	// Directories first, then by name — the order people scan a tree in.
	sort.SliceStable(out.Entries, func(i, j int) bool {
		a, b := out.Entries[i], out.Entries[j]
		if depth == 1 && a.IsDir != b.IsDir {
			return a.IsDir
		}
		return a.Name < b.Name
	})
	if len(out.Entries) > maxListEntries {
		out.Entries, out.Truncated = out.Entries[:maxListEntries], true
	}
	var b strings.Builder
	for _, e := range out.Entries {
		if e.IsDir {
			fmt.Fprintf(&b, "%s/\n", e.Name)
		} else {
			fmt.Fprintf(&b, "%s\t%d\n", e.Name, e.Size)
		}
	}
	if len(out.Entries) == 0 {
		b.WriteString("(empty directory)\n")
	}
	if out.Truncated {
		fmt.Fprintf(&b, "[%d of %d entries shown; list a subdirectory or use find_files with a pattern]\n", maxListEntries, out.Total)
	}
	return out, b.String(), nil
}

type WriteFileInput struct {
	Path           string `json:"path" jsonschema:"file path relative to the workspace root; parent directories are created"`
	Content        string `json:"content" jsonschema:"the complete new content of the file"`
	CreateOnly     bool   `json:"create_only,omitempty" jsonschema:"fail with E_CONFLICT if the file already exists"`
	ExpectedSHA256 string `json:"expected_sha256,omitempty" jsonschema:"fail with E_CONFLICT unless the file's current sha256 (from read_file) is this"`
}

type WriteFileOutput struct {
	Path    string `json:"path"`
	Created bool   `json:"created"`
	Bytes   int    `json:"bytes"`
	Lines   int    `json:"lines"`
	SHA256  string `json:"sha256"`
}

// current reads a file for a precondition check: exists=false when it is
// missing.
func (c *call) current(ctx context.Context, p string) (b []byte, exists bool, err error) {
	b, err = c.svc.ReadFile(ctx, c.ws, p, maxFileBytes)
	if errors.Is(err, grove.ErrNotFound) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func checkSHA(p string, cur []byte, exists bool, want string) error {
	if want == "" {
		return nil
	}
	if !exists {
		return &Error{Code: "E_CONFLICT", Msg: fmt.Sprintf("expected_sha256 was given but %s does not exist", p), Hint: "omit expected_sha256 to create the file", Err: grove.ErrConflict}
	}
	if got := sha(cur); !strings.EqualFold(got, want) {
		return &Error{Code: "E_CONFLICT", Msg: fmt.Sprintf("%s changed since you read it (sha256 is now %s)", p, got), Hint: "read_file it again and redo the change on the current content", Err: grove.ErrConflict}
	}
	return nil
}

func writeFile(ctx context.Context, c *call, in WriteFileInput) (WriteFileOutput, string, error) {
	p, err := c.relPath(ctx, in.Path)
	if err != nil {
		return WriteFileOutput{}, "", err
	}
	if p == "." {
		return WriteFileOutput{}, "", invalidf("path is required")
	}
	cur, exists, err := c.current(ctx, p)
	if err != nil {
		return WriteFileOutput{}, "", err
	}
	if exists && in.CreateOnly {
		return WriteFileOutput{}, "", &Error{Code: "E_CONFLICT", Msg: fmt.Sprintf("%s already exists", p), Hint: "use edit_file to change it, or drop create_only to overwrite it", Err: grove.ErrConflict}
	}
	if err := checkSHA(p, cur, exists, in.ExpectedSHA256); err != nil {
		return WriteFileOutput{}, "", err
	}
	data := []byte(in.Content)
	if err := c.svc.WriteFile(ctx, c.ws, p, data); err != nil {
		return WriteFileOutput{}, "", err
	}
	out := WriteFileOutput{Path: p, Created: !exists, Bytes: len(data), Lines: len(splitLines(in.Content)), SHA256: sha(data)}
	verb := "Overwrote"
	if out.Created {
		verb = "Created"
	}
	return out, fmt.Sprintf("%s %s (%d bytes, %d lines, sha256 %s)", verb, p, out.Bytes, out.Lines, out.SHA256), nil
}

type EditFileInput struct {
	Path           string `json:"path" jsonschema:"file path relative to the workspace root"`
	OldString      string `json:"old_string" jsonschema:"exact text to replace, including indentation; must match exactly once unless replace_all"`
	NewString      string `json:"new_string" jsonschema:"replacement text"`
	ReplaceAll     bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence"`
	ExpectedSHA256 string `json:"expected_sha256,omitempty" jsonschema:"fail with E_CONFLICT unless the file's current sha256 is this"`
}

type EditFileOutput struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	FirstLine    int    `json:"first_changed_line"`
	Snippet      string `json:"snippet"`
	SHA256       string `json:"sha256"`
}

func editFile(ctx context.Context, c *call, in EditFileInput) (EditFileOutput, string, error) {
	p, err := c.relPath(ctx, in.Path)
	if err != nil {
		return EditFileOutput{}, "", err
	}
	b, err := c.readText(ctx, p)
	if err != nil {
		return EditFileOutput{}, "", err
	}
	if err := checkSHA(p, b, true, in.ExpectedSHA256); err != nil {
		return EditFileOutput{}, "", err
	}
	r, err := replaceExactContext(ctx, string(b), in.OldString, in.NewString, in.ReplaceAll)
	if err != nil {
		return EditFileOutput{}, "", err
	}
	data := []byte(r.content)
	if err := c.svc.WriteFile(ctx, c.ws, p, data); err != nil {
		return EditFileOutput{}, "", err
	}
	out := EditFileOutput{
		Path: p, Replacements: r.replacements, FirstLine: r.firstLine, SHA256: sha(data),
		Snippet: snippet(r.content, r.firstLine, r.firstLine+r.newLines-1, 4),
	}
	text := fmt.Sprintf("Edited %s: %d replacement(s). Lines around the first change:\n%s", p, out.Replacements, out.Snippet)
	return out, text, nil
}

type ApplyPatchInput struct {
	Patch  string `json:"patch" jsonschema:"the patch, from '*** Begin Patch' to '*** End Patch'"`
	DryRun bool   `json:"dry_run,omitempty" jsonschema:"check that the patch applies without writing anything"`
}

type PatchFile struct {
	Path   string `json:"path"`
	MoveTo string `json:"move_to,omitempty"`
	Action string `json:"action" jsonschema:"add, delete or update"`
	Hunks  int    `json:"hunks"`
	Fuzz   string `json:"fuzz" jsonschema:"how loosely context matched: exact, ignore-trailing-whitespace or ignore-whitespace"`
}

type ApplyPatchOutput struct {
	Files   []PatchFile `json:"files"`
	DryRun  bool        `json:"dry_run"`
	Applied bool        `json:"applied"`
}

func applyPatch(ctx context.Context, c *call, in ApplyPatchInput) (ApplyPatchOutput, string, error) {
	p, err := patch.Parse(in.Patch)
	if err != nil {
		return ApplyPatchOutput{}, "", withHint(err, "the patch must follow the *** Begin Patch format exactly")
	}
	// Paths are checked and made relative before anything is read.
	for i := range p.Files {
		f := &p.Files[i]
		if f.Path, err = c.relPath(ctx, f.Path); err != nil {
			return ApplyPatchOutput{}, "", err
		}
		if f.MoveTo != "" {
			if f.MoveTo, err = c.relPath(ctx, f.MoveTo); err != nil {
				return ApplyPatchOutput{}, "", err
			}
		}
	}
	changes, err := patch.ApplyContext(ctx, p, func(path string) ([]byte, error) {
		b, err := c.svc.ReadFile(ctx, c.ws, path, maxFileBytes)
		if err == nil && isBinary(b) {
			return nil, grove.Errorf(grove.ErrBinaryFile, "%s is a binary file and cannot be patched", path)
		}
		return b, err
	})
	if err != nil {
		return ApplyPatchOutput{}, "", err
	}
	out := ApplyPatchOutput{DryRun: in.DryRun}
	var b strings.Builder
	for _, ch := range changes {
		out.Files = append(out.Files, PatchFile{Path: ch.Path, MoveTo: ch.MoveTo, Action: string(ch.Action), Hunks: ch.Hunks, Fuzz: ch.Fuzz.String()})
		fmt.Fprintf(&b, "%s %s", ch.Action, ch.Path)
		if ch.MoveTo != "" {
			fmt.Fprintf(&b, " -> %s", ch.MoveTo)
		}
		if ch.Action == patch.Update {
			fmt.Fprintf(&b, " (%d hunks, %s)", ch.Hunks, ch.Fuzz)
		}
		b.WriteByte('\n')
	}
	if in.DryRun {
		return out, "Dry run: the patch applies cleanly.\n" + b.String(), nil
	}
	if err := c.writeChanges(ctx, changes); err != nil {
		return ApplyPatchOutput{}, "", err
	}
	out.Applied = true
	return out, "Applied:\n" + b.String(), nil
}

// writeChanges writes computed patch results. If a write fails, the files
// already written are put back as they were, so the patch stays
// all-or-nothing in the workspace too.
func (c *call) writeChanges(ctx context.Context, changes []patch.Change) error {
	type undo struct {
		path string
		old  []byte // nil: delete
	}
	var undos []undo
	// Snapshot every touched path's original content before the first
	// write: a later change may touch a path an earlier one wrote.
	orig := map[string][]byte{}
	for _, ch := range changes {
		if _, ok := orig[ch.Path]; !ok {
			orig[ch.Path] = ch.Old
		}
		if ch.MoveTo != "" {
			if _, ok := orig[ch.MoveTo]; !ok {
				orig[ch.MoveTo] = nil
			}
		}
	}
	do := func(ch patch.Change) error {
		dst := ch.Path
		if ch.MoveTo != "" && ch.MoveTo != ch.Path {
			dst = ch.MoveTo
		}
		if ch.New != nil {
			undos = append(undos, undo{dst, orig[dst]})
			if err := c.svc.WriteFile(ctx, c.ws, dst, ch.New); err != nil {
				return err
			}
		}
		if ch.New == nil || dst != ch.Path {
			undos = append(undos, undo{ch.Path, orig[ch.Path]})
			if err := c.svc.DeleteFile(ctx, c.ws, ch.Path); err != nil && !errors.Is(err, grove.ErrNotFound) {
				return err
			}
		}
		return nil
	}
	for _, ch := range changes {
		if err := do(ch); err != nil {
			// Roll back on a context that outlives a cancelled call.
			rb := context.WithoutCancel(ctx)
			for i := len(undos) - 1; i >= 0; i-- {
				u := undos[i]
				if u.old == nil {
					_ = c.svc.DeleteFile(rb, c.ws, u.path)
				} else {
					_ = c.svc.WriteFile(rb, c.ws, u.path, u.old)
				}
			}
			return fmt.Errorf("applying the patch failed and was rolled back: %w", err)
		}
	}
	return nil
}
