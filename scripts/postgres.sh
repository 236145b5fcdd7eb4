#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback, for jobq's PostgreSQL tests and by hand.
#
#   scripts/postgres.sh start   # installs Debian's postgresql if missing (as root), starts a
#                               # cluster in $JOBQ_PG_DIR, creates a database, prints its URL
#   scripts/postgres.sh stop    # stops it and deletes the cluster
#
# The tests read the URL from JOBQ_TEST_POSTGRES_URL:
#   export JOBQ_TEST_POSTGRES_URL="$(scripts/postgres.sh start)"; swift test; scripts/postgres.sh stop
set -euo pipefail

dir="${JOBQ_PG_DIR:-${TMPDIR:-/tmp}/jobq-postgres}"
port="${JOBQ_PG_PORT:-54329}"

find_bin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

# initdb and the server refuse to run as root: run them as the postgres user then.
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
start)
    bin="$(find_bin)"
    if [ -z "$bin" ]; then
        if [ "$(id -u)" != 0 ]; then
            echo "postgres.sh: PostgreSQL is not installed; install Debian's postgresql package" >&2
            exit 1
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get update >/dev/null
        apt-get install -y --no-install-recommends postgresql >/dev/null
        bin="$(find_bin)"
    fi
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >/dev/null
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=1000" start >/dev/null
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres jobq_test
    echo "postgres://postgres@127.0.0.1:$port/jobq_test"
    ;;
stop)
    bin="$(find_bin)"
    if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: scripts/postgres.sh start|stop" >&2
    exit 2
    ;;
esac
