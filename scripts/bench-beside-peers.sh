#!/usr/bin/env bash
# jobq on PostgreSQL beside graphile-worker, PgQueuer and procrastinate, in the same hour on the
# same kind of server: the peers' own harness (../shared/peers-pg: run_all.sh, each peer on a
# throwaway PostgreSQL 15 cluster with fsync on), then `jobq-bench --db` on a fresh cluster made
# the same way (its pg.sh), then the peers again, ROUNDS times. Prints the peers' tables and
# jobq's rows for bulk enqueue, drains, CPU per job and pick-up; keeps everything in OUT.
#
#   swift build -c release --traits Postgres --product jobq-bench
#   swift build -c release --traits Postgres --product jobq
#   scripts/bench-beside-peers.sh                   # ../shared/peers-pg, 1 round
#   ROUNDS=2 scripts/bench-beside-peers.sh /path/to/peers-pg
#
# Env: ROUNDS (1), BIN (.build/release), OUT (/tmp/jobq-beside-peers-<UTC stamp>), WAIT_LOAD
# (passed to run_all.sh: wait for a quiet machine before each peer).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=${1:-../shared/peers-pg}
ROUNDS=${ROUNDS:-1}
BIN=${BIN:-.build/release}
OUT=${OUT:-/tmp/jobq-beside-peers-$(date -u +%Y%m%dT%H%M%SZ)}

[ -f "$PEERS/run_all.sh" ] || { echo "bench-beside-peers: no peers harness at $PEERS (give its folder)" >&2; exit 2; }
for binary in jobq-bench jobq; do
  [ -x "$BIN/$binary" ] || {
    echo "bench-beside-peers: $BIN/$binary is missing: swift build -c release --traits Postgres --product $binary" >&2
    exit 2
  }
done
BENCH=$(cd "$BIN" && pwd)/jobq-bench
JOBQ=$(cd "$BIN" && pwd)/jobq

# The harness's folder is read-only where CI lays it: work on a copy.
mkdir -p "$OUT"
HARNESS="$OUT/peers-pg"
cp -r "$PEERS" "$HARNESS"
trap '"$HARNESS/pg.sh" stop >/dev/null 2>&1 || true' EXIT

run_jobq() {
  local round=$1 url
  "$HARNESS/pg.sh" stop >/dev/null 2>&1 || true
  url=$("$HARNESS/pg.sh" start)
  echo "bench-beside-peers: round $round: jobq-bench on $url/jobq (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  "$BENCH" --jobq "$JOBQ" --db "$url/jobq?sslmode=disable" --round-trip-ms 0 --enqueue-jobs 2000 \
    --bulk-jobs 20000 --drain-jobs 10000 --latency-jobs 200 --finished-jobs 25000 \
    >"$OUT/jobq-$round.txt" 2>"$OUT/jobq-$round.err"
  "$HARNESS/pg.sh" stop >/dev/null
}

for round in $(seq 1 "$ROUNDS"); do
  echo "bench-beside-peers: round $round: the peers (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  (cd "$HARNESS" && ./run_all.sh) >"$OUT/peers-$round.txt" 2>"$OUT/peers-$round.err"
  run_jobq "$round"
done

for round in $(seq 1 "$ROUNDS"); do
  echo "## Round $round"
  sed -n '/^| workload/,/^$/p' "$OUT/peers-$round.txt"
  grep -E "enqueue, bulk|drain with [124] .jobq work. process\(es\)|same drain with|CPU per job|committed to done in an idle" \
    "$OUT/jobq-$round.txt" || true
  echo
done
echo "bench-beside-peers: everything is in $OUT" >&2
