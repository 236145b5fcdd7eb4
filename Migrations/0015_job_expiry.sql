-- jobq schema version 15: a job's deadline to start (Unix seconds; NULL: none). A job that has
-- not started an attempt by then never does: claims pass over it, and a worker's maintenance
-- ends it as cancelled with an `expired` event, its dependents following their edge policies.
ALTER TABLE jobq_jobs ADD COLUMN expires_at REAL;

-- The jobs a deadline can still end: only those with one, while they have not finished, so
-- that the sweep reads nothing else.
CREATE INDEX jobq_jobs_expiring ON jobq_jobs (expires_at)
    WHERE expires_at IS NOT NULL AND state IN ('waiting', 'scheduled', 'ready', 'failed');
