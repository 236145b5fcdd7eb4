-- Pauses by executor and of the whole store, and since when each pause holds. A paused
-- executor's jobs are passed over by every claim in every queue (running ones finish); the
-- whole store paused (store setting `paused_all`), no claim takes anything.
ALTER TABLE jobq_queues ADD COLUMN paused_at double precision;

CREATE TABLE jobq_paused_executors (
    name      text PRIMARY KEY,
    paused_at double precision NOT NULL
);
