-- Claims, plain enqueues and a worker's successes now write side by side (a shared advisory
-- lock instead of one exclusive lock for every write), so event ids no longer follow commit
-- order. Each event records the id of the transaction that wrote it; followers read events in
-- (xact, id) order and only those of transactions older than the oldest one still running,
-- so a follower that resumes after the last event it saw misses nothing.
-- Existing events all get this migration's transaction id: their order stays their id order.
ALTER TABLE events ADD COLUMN xact bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX events_order ON events (xact, id);
