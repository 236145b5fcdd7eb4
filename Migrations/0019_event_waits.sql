-- jobq schema version 19: durable functions wait for emitted events. A wait for an event is a
-- step of kind 'event' (`name`: the event's name) whose `filter` (the filter language, over the
-- event's payload; NULL: any payload) says which emits it takes. An emit of the event ends every
-- such wait still open whose filter matches, its payload as the wait's result, in the emit's
-- transaction. SQLite cannot change a CHECK constraint, so the table is made again with the new
-- kind and the new column, its rows copied.
CREATE TABLE jobq_steps_v19 (
    job_id      INTEGER NOT NULL,
    position    INTEGER NOT NULL CHECK (position >= 0),
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('step', 'sleep', 'signal', 'event', 'call')),
    result      TEXT,
    children    TEXT,
    wake_at     REAL,
    attempt     INTEGER NOT NULL,
    started_at  REAL NOT NULL,
    finished_at REAL,
    cancelled   INTEGER NOT NULL DEFAULT 0 CHECK (cancelled IN (0, 1)),
    filter      TEXT,
    PRIMARY KEY (job_id, position)
) WITHOUT ROWID;
INSERT INTO jobq_steps_v19 (job_id, position, name, kind, result, children, wake_at, attempt, started_at,
    finished_at, cancelled)
SELECT job_id, position, name, kind, result, children, wake_at, attempt, started_at, finished_at, cancelled
FROM jobq_steps;
DROP TABLE jobq_steps;
ALTER TABLE jobq_steps_v19 RENAME TO jobq_steps;

-- The open waits for an event, by the event's name: what an emit reads to find them.
CREATE INDEX jobq_steps_open_event_waits ON jobq_steps (name) WHERE kind = 'event' AND finished_at IS NULL;
