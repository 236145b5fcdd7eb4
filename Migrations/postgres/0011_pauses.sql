-- Pauses by executor and of the whole store, and since when each pause holds. A paused
-- executor's jobs are passed over by every claim in every queue (running ones finish); the
-- whole store paused (store setting `paused_all`), no claim takes anything.
ALTER TABLE jobq_queues ADD COLUMN paused_at double precision;

CREATE TABLE jobq_paused_executors (
    name      text PRIMARY KEY,
    paused_at double precision NOT NULL
);

-- Indexes an operator added on payload members (`jobq index add /customer`), so that filters
-- on them (`/customer = "acme"`) look jobs up instead of reading every one: the pointer, and
-- the name of the expression index made for it.
CREATE TABLE jobq_payload_indexes (
    pointer    text PRIMARY KEY,
    index_name text NOT NULL,
    created_at double precision NOT NULL
);
