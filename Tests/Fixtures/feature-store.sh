#!/usr/bin/env bash
# Builds a jobq store that uses every feature, mid-flight: running workflows and a tree, a
# halted lane, an open batch, a tracking set mid-round, schedules, triggers (one `once` task
# spent), unique holds, dependencies, queue limits and partitions, pauses, retention, a payload
# index. The copy tests copy it and let workers finish it on both sides.
#
#   JOBQ=path/to/jobq JOBQ_DB=store.sqlite RUNLOG=runs.txt bash Tests/Fixtures/feature-store.sh
#
# Shell jobs append their id to $RUNLOG (the worker's environment), so a test sees which jobs ran
# and how often. Jobs on the queue `first` run here; the rest wait for the test's workers.
set -euo pipefail
: "${JOBQ:?path to jobq}" "${JOBQ_DB:?the store}" "${RUNLOG:?a file the shell jobs append to}"
jq() { "$JOBQ" "$@"; }
run='{"script": "echo $JOBQ_JOB_ID >> \"$RUNLOG\""}'
runFor() { printf '{"script": "echo $JOBQ_JOB_ID >> \\"$RUNLOG\\"", "customer": "%s"}' "$1"; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Settings: limits, a partitioned queue, retention, a paused executor, a payload index.
jq queue limit work --concurrency 3 --rate 1000/1s >/dev/null
jq queue limit parts --concurrency 1 --partition-by /customer >/dev/null
jq queue retention work --succeeded 30d --dead forever >/dev/null
jq retention --events 90d >/dev/null
jq pause --executor never-runs >/dev/null
jq index add /customer >/dev/null

# Plain jobs on two queues, partitioned jobs, priorities.
for i in $(seq 1 30); do jq enqueue shell --queue work --priority $((i % 3)) --payload "$run" >/dev/null; done
for c in a b c a b c a; do jq enqueue shell --queue parts --payload "$(runFor $c)" >/dev/null; done
for i in $(seq 1 10); do jq enqueue sum --queue first --payload "{\"a\": $i, \"b\": 1}" >/dev/null; done

# Unique holds: one job holds each key; the second enqueue of a key gets the holder.
jq enqueue shell --queue work --unique report:1 --payload "$run" >/dev/null
jq enqueue shell --queue work --unique report:1 --payload "$run" >/dev/null 2>&1
jq enqueue shell --queue work --unique report:2 --unique-for 1h --payload "$run" >/dev/null

# Dependencies across queues: a parent that runs here, children that wait for the copy.
parent=$(jq enqueue shell --queue first --payload "$run")
jq enqueue shell --queue work --after "$parent" --payload "$run" >/dev/null
late=$(jq enqueue shell --queue work --payload "$run")
jq enqueue shell --queue work --after "$late" --after "$parent" --payload "$run" >/dev/null

# A lane halted by its first job's failure, with a job waiting behind it; another lane flowing.
jq enqueue fail --queue first --lane deploys --lane-on-failure halt --max-attempts 1 --payload '{"message": "boom"}' >/dev/null
jq enqueue shell --queue work --lane deploys --payload "$run" >/dev/null
for i in 1 2 3; do jq enqueue shell --queue work --lane emails --payload "$run" >/dev/null; done

# An open batch with members, and a closed one whose members have not run.
jq batch create import --on-complete echo --payload '{"notify": "ops"}' >/dev/null
for i in 1 2 3; do jq enqueue shell --queue work --batch import --payload "$run" >/dev/null; done
jq batch create export --on-success echo --payload '{"done": true}' >/dev/null
for i in 1 2; do jq enqueue shell --queue work --batch export --payload "$run" >/dev/null; done
jq batch close export >/dev/null

# A tracking set mid-round: its member `daily` has a result here, `nightly` has not.
jq track add pair --member job:daily --member job:nightly >/dev/null
jq enqueue sum --queue first --name daily --payload '{"a": 5, "b": 5}' >/dev/null
jq enqueue shell --queue work --name nightly --payload "$run" >/dev/null

# Workflows: one whose first step runs here, so it is mid-flight when copied; one not started.
cat > "$dir/flow.json" <<JSON
{"name": "flow", "sequence": [
  {"executor": "sum", "queue": "first", "payload": {"a": 1, "b": 2}},
  {"parallel": [
    {"executor": "shell", "queue": "work", "payload": $run},
    {"executor": "sum", "queue": "work", "payload": {"a": 3, "b": 4}}]},
  {"executor": "echo", "queue": "work", "input": "previous"}]}
JSON
jq workflow submit "$dir/flow.json" >/dev/null
cat > "$dir/later.json" <<JSON
{"name": "later", "sequence": [{"executor": "shell", "queue": "work", "payload": $run},
  {"executor": "echo", "queue": "work", "payload": {"step": 2}}]}
JSON
jq workflow submit "$dir/later.json" >/dev/null
# A tree: the root runs here and fans out into children that wait for the copy.
cat > "$dir/tree.json" <<JSON
{"name": "fan", "tree": {"executor": "echo", "queue": "first", "payload": {"items": [{"n": 1}, {"n": 2}, {"n": 3}]},
  "children": [{"executor": "echo", "queue": "work", "each": "/items"}]}}
JSON
jq workflow submit "$dir/tree.json" >/dev/null

# Schedules (none due for an hour) and triggers, one `once` task spent by a first emit.
jq schedule add nightly shell --queue work --payload "$run" --cron '0 3 * * *' >/dev/null
jq schedule add hourly shell --queue work --payload "$run" --every 1h --times 5 >/dev/null
jq trigger add app.launched migrate shell --queue work --payload "$run" --once >/dev/null
jq trigger add app.launched warm shell --queue work --payload "$run" --depends-on migrate >/dev/null
jq emit app.launched --dedupe first-launch >/dev/null

# Run what is on `first` here: workflows and the tree move on, the lane halts.
jq work --queue first --until-empty --no-scheduler >/dev/null 2>&1
