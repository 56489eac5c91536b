package tools

import "context"

// readOnly is what every inspection tool is.
var readOnly = Annotations{ReadOnly: true, Idempotent: true}

// definitions is the catalog, in the order tools are listed.
func (ts *Toolset) definitions() []*Tool {
	all := []*Tool{
		define(Tool{Name: "workspace_open", Title: "Open workspace", Unbound: true,
			Annotations: Annotations{Idempotent: true, OpenWorld: true},
			Description: "Create or re-attach a git workspace and return its id for the other tools. " +
				"mode=analysis gives a read-only checkout of ref; mode=edit (with conversation) or mode=task (with task) gives a writable branch " +
				"(agent/edits-<conversation> or agent/task-<task> unless branch is given). Calling it again with the same inputs returns the same workspace; " +
				"an existing branch is re-attached, never reset.",
		}, workspaceOpen),
		define(Tool{Name: "read_file", Title: "Read file", Annotations: readOnly,
			Description: "Read a text file as numbered lines (line number, tab, line). Returns at most `limit` lines (default 500, max 2000) from `offset` (1-based); " +
				"when truncated, continue with next_offset. Also returns total_lines and the file's sha256 (pass it as expected_sha256 to write_file/edit_file to avoid overwriting concurrent changes). " +
				"The numbers are not part of the file: never copy them into old_string.",
		}, readFile),
		define(Tool{Name: "list_dir", Title: "List directory", Annotations: readOnly,
			Description: "List one directory of the workspace, directories first, with file sizes. depth>1 (max 5) descends into subdirectories. Use find_files to locate files by name pattern.",
		}, listDir),
		define(Tool{Name: "find_files", Title: "Find files", Annotations: readOnly,
			Description: "Find files by glob pattern (e.g. '*.go', 'src/**/*.test.ts'), honouring .gitignore. Returns sorted paths with size and mtime, at most max_results (default 200), with the total count.",
		}, findFiles),
		define(Tool{Name: "search_code", Title: "Search code", Annotations: readOnly,
			Description: "Search file contents with ripgrep (regex by default, fixed_string for literals), honouring .gitignore. " +
				"output_mode=content (default) returns matching lines as path:line:text with optional context lines; files returns only matching paths; count returns matches per file. " +
				"Results are paged: max_results per page (default 100), continue with offset=next_offset. Prefer one well-chosen search over many narrow ones.",
		}, searchCode),
		define(Tool{Name: "write_file", Title: "Write file", Write: true, Annotations: Annotations{Destructive: true, Idempotent: true},
			Description: "Create a file or replace its whole content (parent directories are created). Use edit_file for changes to existing files. " +
				"create_only=true refuses to overwrite; expected_sha256 refuses if the file changed since you read it.",
		}, writeFile),
		define(Tool{Name: "edit_file", Title: "Edit file", Write: true, Annotations: Annotations{Destructive: true},
			Description: "Replace an exact string in a file. old_string must match the file byte for byte (including indentation, without read_file's line-number prefix) and exactly once, " +
				"unless replace_all=true. Include enough surrounding lines to make it unique. Returns the changed region as numbered lines so you can check the result. " +
				"Fails with the matching line numbers when old_string is ambiguous, and with the closest candidate line when it matches nothing.",
		}, editFile),
		define(Tool{Name: "apply_patch", Title: "Apply patch", Write: true, Annotations: Annotations{Destructive: true},
			Description: "Apply a multi-file patch, all or nothing. Format:\n*** Begin Patch\n*** Add File: path\n+line\n*** Delete File: path\n*** Update File: path\n*** Move to: new/path (optional)\n" +
				"@@ a line near the change, e.g. the enclosing function (optional)\n context line\n-removed line\n+added line\n*** End of File (optional: the hunk ends the file)\n*** End Patch\n" +
				"Give about 3 lines of context around each change. Context is matched exactly, then ignoring trailing whitespace, then ignoring indentation; the level used is reported per file. dry_run=true checks without writing.",
		}, applyPatch),
		define(Tool{Name: "run_command", Title: "Run command", Write: true, Annotations: Annotations{Destructive: true, OpenWorld: true},
			Description: "Run a shell command with `bash -c` in the workspace's sandbox (cwd: the workspace root unless cwd is given; PATH: the sandbox's, which the operator configures). " +
				"Returns exit code, stdout and stderr; a non-zero exit is a normal result. Output beyond max_output_bytes (default 30000 per stream) keeps its head and tail. " +
				"The command is killed after timeout_s (default 120) and the partial output returned with timed_out=true. " +
				"background=true starts it and returns a process_id to poll with process_io (for servers and long builds).",
		}, func(ctx context.Context, c *call, in RunCommandInput) (RunCommandOutput, string, error) {
			return runCommand(ctx, c, in, ts.procs)
		}),
		define(Tool{Name: "process_io", Title: "Background process I/O", Write: true, Annotations: Annotations{Destructive: true},
			Description: "Poll or kill a background process started by run_command with background=true. Returns whether it is running, its exit code once done, " +
				"and the output produced since the previous poll. wait_ms waits up to that long for it to finish; kill=true kills its process group.",
		}, func(ctx context.Context, c *call, in ProcessIOInput) (ProcessIOOutput, string, error) {
			return processIO(ctx, c, in, ts.procs)
		}),
		define(Tool{Name: "run_tests", Title: "Run tests", Write: true, Annotations: Annotations{Destructive: true},
			Description: "Detect the test framework (go, cargo, npm test, pytest, make test) and run the tests, optionally limited to a path or a name filter. " +
				"Returns passed/failed/skipped counts and each failing test's name with an excerpt of its output.",
		}, runTests),
		define(Tool{Name: "git_status", Title: "Git status", Annotations: readOnly,
			Description: "Show the working tree state: branch, head, upstream with ahead/behind, staged, unstaged, untracked and conflicted files.",
		}, gitStatus),
		define(Tool{Name: "git_diff", Title: "Git diff", Annotations: readOnly,
			Description: "Show changes as a unified diff with a per-file summary (status, lines added and removed). Default: uncommitted changes against HEAD; base_ref compares with another ref. " +
				"stat_only skips the patch text; the patch is cut at max_bytes (default 50000).",
		}, gitDiff),
		define(Tool{Name: "git_log", Title: "Git log", Annotations: readOnly,
			Description: "List recent commits (sha, author, date, subject), newest first; limit defaults to 20; path limits to commits touching it.",
		}, gitLog),
		define(Tool{Name: "git_commit", Title: "Git commit", Write: true, Annotations: Annotations{},
			Description: "Stage and commit changes (all changes, or only paths). Repository hooks do not run. Fails with E_NOTHING_TO_COMMIT when there is nothing to commit.",
		}, gitCommit),
		define(Tool{Name: "git_push", Title: "Git push", Write: true, Annotations: Annotations{Destructive: true, OpenWorld: true},
			Description: "Push this workspace's branch to the remote (only this branch: never the base or default branch). " +
				"A rejected non-fast-forward push is E_CONFLICT; force_with_lease=true overwrites only if the remote branch is where it was last seen.",
		}, gitPush),
		define(Tool{Name: "create_pull_request", Title: "Create pull request", Write: true, Annotations: Annotations{Idempotent: true, OpenWorld: true},
			Description: "Open a pull request for this workspace's pushed branch, or return the existing one. Push first with git_push.",
		}, createPullRequest),
		define(Tool{Name: "comment_pull_request", Title: "Comment on pull request", Write: true, Annotations: Annotations{OpenWorld: true},
			Description: "Add a comment to a pull request: top-level, or inline with both path and line.",
		}, commentPullRequest),
	}
	return append(all, debugTools()...)
}
