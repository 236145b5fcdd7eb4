-- jobq schema version 17: pauses by executor and of the whole store, and since when each
-- pause holds; and the record of indexes on payload members. A paused executor's jobs are passed over by every claim in every queue (running
-- ones finish); the whole store paused, no claim takes anything.
ALTER TABLE jobq_queues ADD COLUMN paused_at REAL;

CREATE TABLE jobq_paused_executors (
    name      TEXT PRIMARY KEY,
    paused_at REAL NOT NULL
) WITHOUT ROWID;

-- Indexes an operator added on payload members (`jobq index add /customer`), so that filters
-- on them (`/customer = "acme"`) look jobs up instead of reading every one: the pointer, and
-- the name of the expression index made for it.
CREATE TABLE jobq_payload_indexes (
    pointer    TEXT PRIMARY KEY,
    index_name TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID;
