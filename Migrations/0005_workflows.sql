-- jobq schema version 5: dependencies, workflows (nested sequence/parallel groups), lanes and a
-- shared context per workflow. One mechanism orders them all: a job in the new state `waiting`
-- keeps a counter of unmet dependencies, and an edge table indexed by the dependency lets the
-- transaction that finishes a job find its direct dependents by seek.
--
-- `waiting` is a new value of jobs.state, whose CHECK constraint SQLite cannot alter: the table
-- is rebuilt with the new columns, every row and id kept, and the AUTOINCREMENT counter carried
-- over so that ids of pruned jobs are never handed out again.

CREATE TABLE jobs_v5 (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    queue         TEXT NOT NULL,
    executor      TEXT NOT NULL,
    payload       TEXT NOT NULL CHECK (json_valid(payload)),
    priority      INTEGER NOT NULL DEFAULT 0,
    state         TEXT NOT NULL CHECK (state IN
                    ('waiting', 'scheduled', 'ready', 'running', 'succeeded', 'failed', 'dead', 'cancelled')),
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
    finished_at   REAL,
    progress          REAL,
    progress_message  TEXT,
    update_data       TEXT CHECK (update_data IS NULL OR json_valid(update_data)),
    checkpoint        TEXT CHECK (checkpoint IS NULL OR json_valid(checkpoint)),
    snoozes           INTEGER NOT NULL DEFAULT 0,
    name              TEXT,
    batch             TEXT,
    -- Dependencies not met yet; a waiting job becomes ready (or scheduled) when it reaches 0.
    unmet             INTEGER NOT NULL DEFAULT 0 CHECK (unmet >= 0),
    -- What a dependency that dies or is cancelled does to this job when its edge names no
    -- policy: cancel (NULL), fail, ignore or run.
    on_dependency_failure TEXT CHECK (on_dependency_failure IN ('cancel', 'fail', 'ignore', 'run')),
    -- The dependencies that failed and were ignored or ran this job anyway: a JSON array.
    failed_dependencies TEXT CHECK (failed_dependencies IS NULL OR json_valid(failed_dependencies)),
    workflow_id       INTEGER,
    -- The innermost group the job is a member of, and its place there (0-based).
    group_id          INTEGER,
    group_position    INTEGER,
    -- Where the job's "previous" input comes from: 'job:<id>' or 'group:<id>'.
    input_from        TEXT,
    lane              TEXT
);

INSERT INTO jobs_v5 (id, queue, executor, payload, priority, state, attempt, max_attempts, run_at, timeout,
    lease_until, worker_id, result, error, created_at, started_at, finished_at, progress, progress_message,
    update_data, checkpoint, snoozes, name, batch)
SELECT id, queue, executor, payload, priority, state, attempt, max_attempts, run_at, timeout,
    lease_until, worker_id, result, error, created_at, started_at, finished_at, progress, progress_message,
    update_data, checkpoint, snoozes, name, batch
FROM jobs;

DELETE FROM sqlite_sequence WHERE name = 'jobs_v5';
INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs_v5', seq FROM sqlite_sequence WHERE name = 'jobs';
DROP TABLE jobs;
ALTER TABLE jobs_v5 RENAME TO jobs;

-- The indexes of version 4, unchanged.
CREATE INDEX jobs_claim_order ON jobs (queue, priority DESC, run_at, id) WHERE state = 'ready';
CREATE INDEX jobs_due ON jobs (run_at, queue) WHERE state IN ('scheduled', 'failed');
CREATE INDEX jobs_leases ON jobs (lease_until) WHERE state = 'running';
CREATE INDEX jobs_finished ON jobs (queue, state, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX jobs_batch ON jobs (batch) WHERE batch IS NOT NULL;

-- Waiting jobs by queue, for status counts and the "all jobs finished" check.
CREATE INDEX jobs_waiting ON jobs (queue) WHERE state = 'waiting';
-- A group's members in order (cancel of a group, "previous" results, `workflow show`).
CREATE INDEX jobs_group ON jobs (group_id, group_position) WHERE group_id IS NOT NULL;
-- A lane's jobs in append order (`jobq lane show`).
CREATE INDEX jobs_lane ON jobs (lane, id) WHERE lane IS NOT NULL;

-- One row per edge: job_id waits for a job (depends_on) or for a whole workflow group
-- (after_group: what follows a group in a sequence waits for the group, one edge, instead of
-- one edge per member of it). `policy` overrides the job's on_dependency_failure for this edge;
-- 'lane' defers to the lane's on_failure.
CREATE TABLE dependencies (
    job_id       INTEGER NOT NULL,
    depends_on   INTEGER,
    after_group  INTEGER,
    policy       TEXT CHECK (policy IN ('cancel', 'fail', 'ignore', 'run', 'lane')),
    CHECK ((depends_on IS NULL) != (after_group IS NULL))
);
-- What a finishing job or group unlocks is found by these seeks.
CREATE INDEX dependencies_by_job ON dependencies (depends_on) WHERE depends_on IS NOT NULL;
CREATE INDEX dependencies_by_group ON dependencies (after_group) WHERE after_group IS NOT NULL;
-- A job's own dependencies (`jobq show`, pruning).
CREATE INDEX dependencies_of_job ON dependencies (job_id);

CREATE TABLE workflows (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT,
    state        TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    -- The shared context: one JSON object, written a key at a time by succeeding members.
    context      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(context)),
    root_group   INTEGER,
    error        TEXT,
    created_at   REAL NOT NULL,
    finished_at  REAL
);
CREATE INDEX workflows_state ON workflows (state, id);

-- A sequence or parallel group. Counters of its direct members (jobs and groups) are kept in
-- the transactions that finish them, so completion is one comparison, never a scan.
CREATE TABLE workflow_groups (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id  INTEGER NOT NULL,
    parent_id    INTEGER,
    position     INTEGER NOT NULL DEFAULT 0,
    kind         TEXT NOT NULL CHECK (kind IN ('sequence', 'parallel')),
    name         TEXT,
    -- Where the group sits in its submission, e.g. $.sequence[4].parallel.
    path         TEXT NOT NULL,
    on_failure   TEXT NOT NULL DEFAULT 'fail' CHECK (on_failure IN ('fail', 'continue')),
    state        TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    total        INTEGER NOT NULL,
    succeeded    INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    cancelled    INTEGER NOT NULL DEFAULT 0,
    finished_at  REAL
);
CREATE INDEX workflow_groups_children ON workflow_groups (parent_id, position) WHERE parent_id IS NOT NULL;
CREATE INDEX workflow_groups_workflow ON workflow_groups (workflow_id);

-- A lane runs its jobs one at a time in append order: each appended job depends on the tail.
CREATE TABLE lanes (
    name           TEXT PRIMARY KEY,
    tail_job_id    INTEGER,
    on_failure     TEXT NOT NULL DEFAULT 'continue' CHECK (on_failure IN ('continue', 'halt')),
    -- The job whose failure halted the lane, until `jobq lane resume`.
    halted_job_id  INTEGER,
    created_at     REAL NOT NULL
) WITHOUT ROWID;

-- Events of workflow members, groups and the workflow itself carry its id.
ALTER TABLE events ADD COLUMN workflow_id INTEGER;
CREATE INDEX events_workflow ON events (workflow_id, id) WHERE workflow_id IS NOT NULL;
