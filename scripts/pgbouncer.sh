#!/usr/bin/env bash
# Debian's PgBouncer in transaction pooling in front of scripts/postgres.sh's cluster, for the
# tests that check jobq through a pooler.
#
#   scripts/pgbouncer.sh start   # installs Debian's pgbouncer if missing (as root), starts it on
#                                # $JOBQ_PGBOUNCER_PORT (54330) in $JOBQ_PGBOUNCER_DIR, prints the
#                                # URL of the test database through it
#   scripts/pgbouncer.sh stop    # stops it and deletes its folder
#
# The tests read the URL from JOBQ_TEST_PGBOUNCER_URL; any database of the cluster is reachable
# through it (a `*` entry), as user postgres without a password (trust, as the cluster).
set -euo pipefail

dir="${JOBQ_PGBOUNCER_DIR:-${TMPDIR:-/tmp}/jobq-pgbouncer}"
port="${JOBQ_PGBOUNCER_PORT:-54330}"
server_port="${JOBQ_PG_PORT:-54329}"

# PgBouncer refuses to run as root: run it as the postgres user then.
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
start)
    if ! command -v pgbouncer >/dev/null; then
        if [ "$(id -u)" != 0 ]; then
            echo "pgbouncer.sh: PgBouncer is not installed; install Debian's pgbouncer package" >&2
            exit 1
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get update >/dev/null
        apt-get install -y --no-install-recommends pgbouncer >/dev/null
    fi
    if [ -f "$dir/pgbouncer.pid" ]; then
        kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true
        sleep 0.5
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    printf '"postgres" ""\n' >"$dir/users.txt"
    # Transaction pooling, the mode that makes many clients share few server connections and
    # the one jobq must work behind. jobq sends search_path and its timeouts in the startup
    # message; PgBouncer passes only a few parameters and refuses the rest unless told to ignore
    # them (behind it, the timeouts come from the role's or database's settings on the server).
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$server_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
ignore_startup_parameters = search_path,statement_timeout,lock_timeout,idle_in_transaction_session_timeout,tcp_keepalives_idle,tcp_keepalives_interval,tcp_keepalives_count
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
    [ "$(id -u)" = 0 ] && chown postgres: "$dir/users.txt" "$dir/pgbouncer.ini"
    as_owner pgbouncer -d "$dir/pgbouncer.ini"
    for _ in $(seq 50); do
        [ -f "$dir/pgbouncer.pid" ] && break
        sleep 0.1
    done
    # Unprepared statements: PgBouncer before 1.21 does not keep prepared statements.
    echo "postgres://postgres@127.0.0.1:$port/jobq_test?sslmode=disable&prepare=off"
    ;;
stop)
    if [ -f "$dir/pgbouncer.pid" ]; then
        kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: scripts/pgbouncer.sh start|stop" >&2
    exit 2
    ;;
esac
