-- jobq schema version 17: pauses by executor and of the whole store, and since when each
-- pause holds. A paused executor's jobs are passed over by every claim in every queue (running
-- ones finish); the whole store paused, no claim takes anything.
ALTER TABLE jobq_queues ADD COLUMN paused_at REAL;

CREATE TABLE jobq_paused_executors (
    name      TEXT PRIMARY KEY,
    paused_at REAL NOT NULL
) WITHOUT ROWID;
