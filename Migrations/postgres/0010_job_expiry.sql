-- A job's deadline to start (Unix seconds; NULL: none). A job that has not started an attempt
-- by then never does: claims pass over it, and a worker's maintenance ends it as cancelled
-- with an `expired` event, its dependents following their edge policies.
ALTER TABLE jobq_jobs ADD COLUMN expires_at double precision;

-- The jobs a deadline can still end: only those with one, while they have not finished, so
-- that the sweep reads nothing else.
CREATE INDEX jobs_expiring ON jobq_jobs (expires_at)
    WHERE expires_at IS NOT NULL AND state IN ('waiting', 'scheduled', 'ready', 'failed');
