#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback, for jobq's PostgreSQL tests and by hand.
#
#   scripts/postgres.sh start   # installs Debian's postgresql if missing (as root), starts a
#                               # cluster in $JOBQ_PG_DIR, creates a database, prints its URL
#   scripts/postgres.sh stop    # stops it and deletes the cluster
#   scripts/postgres.sh ca      # prints the CA certificate the server's TLS certificate is
#                               # signed with (for sslmode=verify-ca/verify-full tests)
#   scripts/postgres.sh restart|halt|resume   # a fast restart; a stop keeping the cluster; a start
#                               # of a halted one
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
    # TLS with a certificate for localhost and 127.0.0.1 from a CA made here, so that the
    # tests can check sslmode=verify-ca and verify-full against a real server.
    if ! command -v openssl >/dev/null && [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openssl >/dev/null
    fi
    tls=""
    # JOBQ_PG_TLS=off: no certificates (a cluster of a test's own, which needs none).
    if command -v openssl >/dev/null && [ "${JOBQ_PG_TLS:-on}" != off ]; then
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=jobq test CA" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
            -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$dir/server.ext"
        openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 3650 \
            -extfile "$dir/server.ext" -out "$dir/server.crt" 2>/dev/null
        chmod 600 "$dir/server.key"
        [ "$(id -u)" = 0 ] && chown postgres: "$dir/server.key" "$dir/server.crt"
        tls="-c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key"
    fi
    # JOBQ_PG_FSYNC=off (what .ci/run sets) skips the server's fsyncs: the tests kill jobq's
    # processes, never the machine, so they check the same with it, and a DROP DATABASE (which
    # waits for a checkpoint) no longer stalls for a minute on a busy CI disk. Benches leave it on.
    fsync="-c fsync=${JOBQ_PG_FSYNC:-on}"
    # Kept for `halt`/`resume`/`restart`, which start the same server again.
    echo "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=1000 $fsync $tls" >"$dir/options"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "$(cat "$dir/options")" start >/dev/null
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres jobq_test
    # Plain connections for the tests (sslmode=disable): TLS is for the tests that ask for it,
    # and a TLS handshake on every test connection would slow the whole suite.
    echo "postgres://postgres@127.0.0.1:$port/jobq_test?sslmode=disable"
    ;;
ca)
    [ -f "$dir/ca.crt" ] && echo "$dir/ca.crt"
    ;;
# For the tests of a server going away under jobq (on a cluster of their own: JOBQ_PG_DIR and
# JOBQ_PG_PORT): a fast shutdown (sessions ended, 57P01) and start; or a stop and a later start.
restart)
    as_owner "$(find_bin)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -o "$(cat "$dir/options")" \
        restart >/dev/null
    ;;
halt)
    as_owner "$(find_bin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
resume)
    as_owner "$(find_bin)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "$(cat "$dir/options")" start >/dev/null
    ;;
stop)
    bin="$(find_bin)"
    if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: scripts/postgres.sh start|stop|ca|restart|halt|resume" >&2
    exit 2
    ;;
esac
