-- jobq schema version 3: lifecycle events, progress and checkpoints on jobs, batches, and
-- tracking sets.

-- The append-only outbox. Every state change writes its events in the same transaction, so the
-- feed never shows a change that rolled back and never misses one that committed. Ids increase
-- in commit order (SQLite has one writer at a time), which makes `id > cursor` a gapless resume.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      INTEGER,
    kind        TEXT NOT NULL,
    queue       TEXT,
    executor    TEXT,
    batch       TEXT,
    data        TEXT CHECK (data IS NULL OR json_valid(data)),
    created_at  REAL NOT NULL
);
CREATE INDEX events_job ON events (job_id);

-- Progress (latest only; each report is also an event), the latest context.update value, the
-- checkpoint a re-entrant executor continues from, how often it snoozed, an optional name for
-- tracking sets, and the batch a job belongs to.
ALTER TABLE jobs ADD COLUMN progress REAL;
ALTER TABLE jobs ADD COLUMN progress_message TEXT;
ALTER TABLE jobs ADD COLUMN update_data TEXT CHECK (update_data IS NULL OR json_valid(update_data));
ALTER TABLE jobs ADD COLUMN checkpoint TEXT CHECK (checkpoint IS NULL OR json_valid(checkpoint));
ALTER TABLE jobs ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN name TEXT;
ALTER TABLE jobs ADD COLUMN batch TEXT;
CREATE INDEX jobs_batch ON jobs (batch) WHERE batch IS NOT NULL;

-- A batch fires once, in the transaction that finishes its last member (or closes it, if all
-- members had finished): it enqueues its callbacks and writes a `batch` event.
CREATE TABLE batches (
    name                  TEXT PRIMARY KEY,
    state                 TEXT NOT NULL CHECK (state IN ('open', 'closed', 'fired')),
    total                 INTEGER NOT NULL DEFAULT 0,
    succeeded             INTEGER NOT NULL DEFAULT 0,
    dead                  INTEGER NOT NULL DEFAULT 0,
    cancelled             INTEGER NOT NULL DEFAULT 0,
    on_complete_executor  TEXT,
    on_complete_payload   TEXT,
    on_success_executor   TEXT,
    on_success_payload    TEXT,
    callback_queue        TEXT NOT NULL DEFAULT 'default',
    complete_job_id       INTEGER,
    success_job_id        INTEGER,
    created_at            REAL NOT NULL,
    closed_at             REAL,
    fired_at              REAL
) WITHOUT ROWID;

-- A tracking set fires (a `tracking` event) when every member has a new result since the last
-- firing; the decision is made in the transaction that records the last member's result.
CREATE TABLE tracking_sets (
    name        TEXT PRIMARY KEY,
    round       INTEGER NOT NULL DEFAULT 0,
    created_at  REAL NOT NULL
) WITHOUT ROWID;

CREATE TABLE tracking_members (
    set_name       TEXT NOT NULL REFERENCES tracking_sets (name) ON DELETE CASCADE,
    kind           TEXT NOT NULL CHECK (kind IN ('executor', 'job')),
    member         TEXT NOT NULL,
    fresh          INTEGER NOT NULL DEFAULT 0,
    latest_job_id  INTEGER,
    latest_result  TEXT,
    PRIMARY KEY (set_name, kind, member)
) WITHOUT ROWID;
CREATE INDEX tracking_members_by_member ON tracking_members (kind, member);
