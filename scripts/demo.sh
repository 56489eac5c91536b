#!/usr/bin/env bash
# The main job on embedded defaults: a local repository, two agents on two
# branches, an edit, a command, a commit and the status. Everything lives
# under a temporary GROVE_ROOT (SQLite store, repo cache, workspaces).
#
#   ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for tool in git:git rg:ripgrep bwrap:bubblewrap jq:jq; do
  command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
done
if ((${#need[@]})) && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v bwrap >/dev/null; then
  echo "bubblewrap not found: using the unisolated subprocess runtime for this demo" >&2
  export GROVE_RUNTIME=subprocess GROVE_ALLOW_UNISOLATED=1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/grove" ./cmd/grove
grove() { "$work/grove" "$@"; }
export GROVE_ROOT=$work/root GROVE_USER=demo

# A small local repository stands in for a GitHub repo.
repo=$work/hello
git init -q -b main "$repo"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' > "$repo/main.go"
printf '# hello\n' > "$repo/README.md"
git -C "$repo" add -A
git -C "$repo" -c user.name=demo -c user.email=demo@example.invalid commit -qm "initial"

echo "== two agents, two branches, one cache"
a=$(grove ws acquire --repo "$repo" --project demo --conversation alpha --json | jq -r .id)
b=$(grove ws acquire --repo "$repo" --project demo --task fix-1 --json | jq -r .id)
grove ws list

echo "== agent alpha edits a file and runs a command in its sandbox"
printf '# hello\n\nEdited by agent alpha.\n' | grove write "$a" README.md
grove exec "$a" -- sh -c 'wc -l README.md && git log --oneline'
grove search "$a" Println

echo "== agent alpha commits; agent fix-1 is untouched"
grove git commit "$a" -m "docs: say who edited" --json | jq '{sha, files_changed}'
grove git status "$a"
grove git status "$b"
grove git log "$a" -n 3

echo "== re-acquiring returns the same workspace, with no git call"
grove ws acquire --repo "$repo" --project demo --conversation alpha --json | jq '{id, created, branch}'
