-- A queue's rate limit: at most rate_limit job starts in any span of rate_period seconds (a
-- sliding window), across every worker and machine. Both NULL: no rate limit.
ALTER TABLE queues ADD COLUMN rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit >= 1);
ALTER TABLE queues ADD COLUMN rate_period REAL CHECK (rate_period IS NULL OR rate_period > 0);
-- How the queue's limits are split: NULL (one set of limits for the whole queue), 'job' (per
-- job partition given at enqueue), or a JSON pointer into the payload such as '/customer'
-- (a job's own partition, when given, wins).
ALTER TABLE queues ADD COLUMN partition_by TEXT;

-- The partition a job was given at enqueue (JobOptions.partition), if any.
ALTER TABLE jobs ADD COLUMN partition_key TEXT;

-- The starts of rate-limited queues within their window: one row per claim and partition
-- (`starts` jobs started at `started_at`). Claims delete the rows that left the window.
CREATE TABLE queue_starts (
    queue         TEXT NOT NULL,
    partition_key TEXT NOT NULL,
    started_at    REAL NOT NULL,
    starts        INTEGER NOT NULL
);
CREATE INDEX queue_starts_window ON queue_starts (queue, started_at);
