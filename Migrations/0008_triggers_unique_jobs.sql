-- Unique jobs and event triggers.
--
-- A unique job holds its key in `unique_hold` under a partial unique index: a second job with
-- the same key cannot be inserted while the first holds it, however many processes race. A job
-- holds its key while it is unfinished, and once finished for as long as its rule says
-- (`unique_states`: a bit per finished state that keeps the key, 1 succeeded, 2 dead,
-- 4 cancelled; `unique_for`: seconds after finishing, NULL for ever). An expired hold is
-- released (set to NULL) by the next insert of the same key, in that insert's transaction;
-- `unique_key` keeps the key for display.
ALTER TABLE jobs ADD COLUMN unique_key TEXT;
ALTER TABLE jobs ADD COLUMN unique_hold TEXT;
ALTER TABLE jobs ADD COLUMN unique_states INTEGER;
ALTER TABLE jobs ADD COLUMN unique_for REAL;
CREATE UNIQUE INDEX jobs_unique_hold ON jobs (unique_hold) WHERE unique_hold IS NOT NULL;

-- Event triggers (RWTaskKit's event and notification tasks, durable): the tasks an emitted
-- event enqueues, each with a priority and the names of tasks of the same event it waits for.
CREATE TABLE triggers (
    event           TEXT NOT NULL,
    task            TEXT NOT NULL,
    executor        TEXT NOT NULL,
    payload         TEXT NOT NULL CHECK (json_valid(payload) AND json_type(payload) = 'object'),
    queue           TEXT NOT NULL,
    priority        INTEGER NOT NULL,
    max_attempts    INTEGER NOT NULL CHECK (max_attempts >= 1),
    timeout         REAL,
    -- A JSON array of task names of the same event.
    depends_on      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(depends_on)),
    once            INTEGER NOT NULL DEFAULT 0 CHECK (once IN (0, 1)),
    -- When a `once` task ran (it never runs again); NULL until then.
    ran_once_at     REAL,
    paused          INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    PRIMARY KEY (event, task)
) WITHOUT ROWID;

-- Emits that carried a dedupe key, with the jobs they made: a second emit with the same key
-- within 24 hours makes nothing and answers with these.
CREATE TABLE trigger_emits (
    event       TEXT NOT NULL,
    dedupe      TEXT NOT NULL,
    job_ids     TEXT NOT NULL CHECK (json_valid(job_ids)),
    emitted_at  REAL NOT NULL,
    PRIMARY KEY (event, dedupe)
) WITHOUT ROWID;
