-- jobq schema version 4: cheaper state changes.
--
-- jobs_queue_state (queue, state) held an entry for every job, so every transition (enqueue,
-- claim, completion) moved an entry inside a large index: about a fifth of the SQLite work of a
-- claim+complete cycle. What it served is now served by the partial indexes that exist anyway:
-- ready jobs by jobs_claim_order, due ones by jobs_due, running ones by jobs_leases, and finished
-- ones by jobs_finished, which now leads with (queue, state) so status counts never read rows.

DROP INDEX jobs_queue_state;

DROP INDEX jobs_finished;
CREATE INDEX jobs_finished ON jobs (queue, state, finished_at) WHERE finished_at IS NOT NULL;

-- Counts of scheduled and failed jobs by queue read the index alone.
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at, queue) WHERE state IN ('scheduled', 'failed');

-- Finished jobs are exactly those with finished_at: status counts rely on it.
UPDATE jobs SET finished_at = COALESCE(started_at, created_at)
WHERE state IN ('succeeded', 'dead', 'cancelled') AND finished_at IS NULL;
UPDATE jobs SET finished_at = NULL
WHERE state NOT IN ('succeeded', 'dead', 'cancelled') AND finished_at IS NOT NULL;
