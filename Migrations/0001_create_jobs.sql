-- jobq schema version 1: jobs, queues, workers, and the record of applied migrations.
--
-- Times are Unix seconds as REAL. Payloads and results are JSON text.
-- States: scheduled (run_at in the future), ready, running, succeeded, failed (will retry at
-- run_at), dead (out of attempts), cancelled.

CREATE TABLE schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    applied_at  REAL NOT NULL
);

CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    queue         TEXT NOT NULL,
    executor      TEXT NOT NULL,
    payload       TEXT NOT NULL CHECK (json_valid(payload)),
    priority      INTEGER NOT NULL DEFAULT 0,
    state         TEXT NOT NULL CHECK (state IN
                    ('scheduled', 'ready', 'running', 'succeeded', 'failed', 'dead', 'cancelled')),
    attempt       INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts  INTEGER NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    run_at        REAL NOT NULL,
    timeout       REAL,
    lease_until   REAL,
    worker_id     TEXT,
    result        TEXT CHECK (result IS NULL OR json_valid(result)),
    error         TEXT,
    created_at    REAL NOT NULL,
    started_at    REAL,
    finished_at   REAL
);

-- The claim reads this index in order and stops after LIMIT rows: its column order is exactly
-- the claim's ORDER BY, so a claim never sorts the backlog.
CREATE INDEX jobs_claim_order ON jobs (queue, priority DESC, run_at, id) WHERE state = 'ready';

-- Jobs that become ready at run_at: delayed jobs and failed jobs waiting for their retry.
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN ('scheduled', 'failed');

-- Running jobs by lease expiry, for reclaiming jobs of dead or hung workers.
CREATE INDEX jobs_leases ON jobs (lease_until) WHERE state = 'running';

-- Status counts and listing by queue and state; pruning finished jobs by age.
CREATE INDEX jobs_queue_state ON jobs (queue, state);
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE queues (
    name    TEXT PRIMARY KEY,
    paused  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE workers (
    id            TEXT PRIMARY KEY,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    queues        TEXT NOT NULL,
    concurrency   INTEGER NOT NULL,
    started_at    REAL NOT NULL,
    heartbeat_at  REAL NOT NULL
) WITHOUT ROWID;
