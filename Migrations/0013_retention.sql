-- Retention: how long finished jobs are kept, by state, per queue (seconds; NULL: the store's
-- default; -1: for ever). The cleaner `jobq work` runs deletes what is older.
ALTER TABLE queues ADD COLUMN keep_succeeded REAL;
ALTER TABLE queues ADD COLUMN keep_dead REAL;
ALTER TABLE queues ADD COLUMN keep_cancelled REAL;

-- Store-wide settings: the default retention of finished jobs (keep_succeeded, keep_dead,
-- keep_cancelled) and of events (keep_events), in seconds (-1: for ever; no row: jobq's
-- default), and `events_deleted_through`, the newest event id deleted so far (by the cleaner or
-- `jobq prune`): a follower whose cursor is before it may have missed events, and is told.
CREATE TABLE store_settings (
    name   TEXT PRIMARY KEY,
    value  REAL NOT NULL
) WITHOUT ROWID;

-- Leases on store-wide duties (the cleaner): one holder at a time, until `until`.
CREATE TABLE leases (
    name    TEXT PRIMARY KEY,
    holder  TEXT NOT NULL,
    until   REAL NOT NULL
) WITHOUT ROWID;
