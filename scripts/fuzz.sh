#!/usr/bin/env bash
# Fuzzes jobq's parsers of outside text with libFuzzer for SECONDS each (default 30), then
# prints one line per parser: its executions and whether it found a crash. Inputs that crash
# are kept in Tests/Fuzz/corpus/<target>/ as regression tests (the test suite replays them).
#
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"

export JOBQ_FUZZ=1
swift build --product jobq-fuzz --scratch-path .build-fuzz >/dev/null
binary="$(swift build --product jobq-fuzz --scratch-path .build-fuzz --show-bin-path)/jobq-fuzz"

status=0
for target in duration jobline names workflow dashboard stored; do
    work="$(mktemp -d)"
    cp Tests/Fuzz/corpus/"$target"/* "$work"/
    log="$(mktemp)"
    if JOBQ_FUZZ_TARGET="$target" "$binary" "$work" -max_total_time="$seconds" -max_len=4096 \
        -artifact_prefix="Tests/Fuzz/corpus/$target/crash-" >"$log" 2>&1; then
        result="no crash"
    else
        result="CRASH (input kept in Tests/Fuzz/corpus/$target/)"
        status=1
    fi
    runs="$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 || true)"
    echo "fuzz $target: ${runs:-see $log}: $result"
    [ "$status" -eq 0 ] && rm -f "$log"
    rm -rf "$work"
done
exit "$status"
