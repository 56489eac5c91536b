#!/usr/bin/env bash
# The whole test suite: installs what it can, then vet, format, staticcheck,
# race-enabled tests, and a short run of every fuzz target.
#
#   ./scripts/test.sh              everything
#   FUZZTIME=0 ./scripts/test.sh   skip fuzzing
#
# Tests that need bubblewrap, ripgrep, Docker, Postgres, Redis, tmux or a
# debugger skip when
# the component is missing, unless GROVE_TEST_REQUIRE names it (CI does).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v git >/dev/null || need+=(git)
command -v rg >/dev/null || need+=(ripgrep)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v fdfind >/dev/null || need+=(fd-find)
command -v debootstrap >/dev/null || need+=(debootstrap)
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server redis-tools)
# The sandbox sees only the system's /usr: tests run Debian's python3 there.
[ -x /usr/bin/python3 ] || need+=(python3)
command -v setpriv >/dev/null || need+=(util-linux)
# Debugging (issue 12): compilers and the debug adapters the DAP tests drive.
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v tmux >/dev/null || need+=(tmux)
command -v lldb-dap-19 >/dev/null || command -v lldb-dap >/dev/null || need+=(lldb-19)
/usr/bin/python3 -c 'import debugpy' 2>/dev/null || need+=(python3-debugpy)
if ((${#need[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing (tests needing them will skip): ${need[*]}" >&2
  fi
fi

# Delve (Go's debug adapter) is a Go module, installed like staticcheck.
export PATH="$PATH:$(go env GOPATH)/bin"
command -v dlv >/dev/null || go install github.com/go-delve/delve/cmd/dlv@v1.27.2

# PostgreSQL and Redis for the store and lock adapters: throwaway servers on
# loopback, unless the caller already points the tests at some.
if [ -z "${GROVE_TEST_POSTGRES_DSN:-}${GROVE_TEST_REDIS_ADDR:-}" ]; then
  eval "$(./scripts/services.sh start)"
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; exit 1; fi

echo "== go vet"
go vet ./...
go vet -tags daytonafake ./cmd/grove   # the development build with the fake Daytona

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

echo "== go test -race"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -race -count=1 -timeout 20m ./... 2>&1 | tee "$log"
passed=$(grep -c '^ok ' "$log" || true)

fuzztime=${FUZZTIME:-4s}
if [ "$fuzztime" != 0 ]; then
  echo "== fuzz ($fuzztime each)"
  git grep -l '^func Fuzz' -- '*_test.go' | while read -r file; do
    pkg=./$(dirname "$file")
    for fn in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
      echo "-- $pkg $fn"
      out=$(mktemp)
      # A loaded 2-core machine can make the fuzzer's worker miss its
      # deadline; run a failing target once more and fail only if it fails
      # again, showing why.
      if ! go test -run='^$' -fuzz="^${fn}\$" -fuzztime="$fuzztime" "$pkg" >"$out" 2>&1 &&
         ! go test -run='^$' -fuzz="^${fn}\$" -fuzztime="$fuzztime" "$pkg" >"$out" 2>&1; then
        tail -40 "$out"
        exit 1
      fi
      rm -f "$out"
    done
  done
fi
echo "all checks passed"
echo "packages: $passed passed, 0 failed"
