-- Schedules (RWTaskKit's schedule and timer tasks, durable): a named job template with its
-- timing, the next occurrence it waits for, and how many jobs it has made. A job made for an
-- occurrence carries (schedule, occurrence) under a unique index, so two schedulers racing for
-- the same occurrence make one job.

CREATE TABLE schedules (
    name            TEXT PRIMARY KEY,
    executor        TEXT NOT NULL,
    payload         TEXT NOT NULL CHECK (json_valid(payload)),
    queue           TEXT NOT NULL,
    priority        INTEGER NOT NULL,
    max_attempts    INTEGER NOT NULL CHECK (max_attempts >= 1),
    timeout         REAL,
    kind            TEXT NOT NULL CHECK (kind IN ('at', 'every', 'cron')),
    -- kind 'at': the time; kind 'every': the first occurrence.
    start_at        REAL,
    -- kind 'every': seconds between occurrences, and how many (NULL: forever).
    every           REAL CHECK (every IS NULL OR every > 0),
    times           INTEGER CHECK (times IS NULL OR times >= 1),
    cron            TEXT,
    time_zone       TEXT NOT NULL DEFAULT 'UTC',
    missed          TEXT NOT NULL CHECK (missed IN ('skip', 'catchUp')),
    catch_up_limit  INTEGER NOT NULL CHECK (catch_up_limit >= 1),
    paused          INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    -- The occurrence it waits for; NULL once it has made all its jobs.
    next_run_at     REAL,
    -- Jobs made so far (an `every ... times N` schedule stops at N).
    made            INTEGER NOT NULL DEFAULT 0,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE paused = 0 AND next_run_at IS NOT NULL;

ALTER TABLE jobs ADD COLUMN schedule TEXT;
ALTER TABLE jobs ADD COLUMN occurrence REAL;
CREATE UNIQUE INDEX jobs_schedule_occurrence ON jobs (schedule, occurrence) WHERE schedule IS NOT NULL;
