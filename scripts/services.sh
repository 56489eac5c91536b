#!/usr/bin/env bash
# Throwaway PostgreSQL and Redis servers on loopback for the tests.
#
#   eval "$(scripts/services.sh start)"   # prints the exports the tests read
#   scripts/services.sh stop
#
# Both keep their data under $GROVE_SERVICES_DIR (default
# /tmp/grove-test-services) and nothing else on the machine changes: the
# distribution's own PostgreSQL cluster is left alone. Starting twice reuses
# running servers.
set -euo pipefail
dir=${GROVE_SERVICES_DIR:-/tmp/grove-test-services}
pgport=${GROVE_PG_PORT:-54329}
redisport=${GROVE_REDIS_PORT:-63790}

pgbin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/pg_ctl" ] && echo "$d"
}

# PostgreSQL refuses to run as root; run its tools as the postgres user then.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  mkdir -p "$dir"
  if bin=$(pgbin); then
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    if [ ! -f "$dir/pg/PG_VERSION" ]; then
      as_pg "$bin/initdb" -D "$dir/pg" -A trust -U grove >/dev/null
    fi
    if ! as_pg "$bin/pg_ctl" -D "$dir/pg" status >/dev/null 2>&1; then
      as_pg "$bin/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w \
        -o "-p $pgport -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
    fi
    as_pg "$bin/psql" -h 127.0.0.1 -p "$pgport" -U grove -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname='grove_test'" | grep -q 1 ||
      as_pg "$bin/createdb" -h 127.0.0.1 -p "$pgport" -U grove grove_test
    echo "export GROVE_TEST_POSTGRES_DSN='postgres://grove@127.0.0.1:$pgport/grove_test?sslmode=disable'"
  else
    echo "services: PostgreSQL not installed; postgres tests will skip" >&2
  fi
  if command -v redis-server >/dev/null; then
    if ! redis-cli -p "$redisport" ping >/dev/null 2>&1; then
      redis-server --port "$redisport" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize yes --dir "$dir" --logfile "$dir/redis.log" >/dev/null
      for _ in $(seq 50); do redis-cli -p "$redisport" ping >/dev/null 2>&1 && break; sleep 0.1; done
    fi
    echo "export GROVE_TEST_REDIS_ADDR=127.0.0.1:$redisport"
  else
    echo "services: Redis not installed; redis tests will skip" >&2
  fi
}

stop() {
  if bin=$(pgbin) && [ -f "$dir/pg/PG_VERSION" ]; then
    as_pg "$bin/pg_ctl" -D "$dir/pg" -m fast stop >/dev/null 2>&1 || true
  fi
  redis-cli -p "$redisport" shutdown nosave >/dev/null 2>&1 || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
