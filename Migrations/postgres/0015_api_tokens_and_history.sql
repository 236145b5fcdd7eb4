-- The tokens of the HTTP API (`jobq token add|list|revoke`). A token is shown once, when made;
-- the store keeps only its SHA-256 (a token is 160 random bits, so a fast hash is as safe as a
-- slow one), its scopes (a comma-separated subset of read, enqueue, operate), when it was made
-- and last used, and when it was revoked (kept, for the record). A name belongs to one token
-- that is not revoked. The same table as the SQLite store's version 20.
CREATE TABLE jobq_api_tokens (
    token_hash   text PRIMARY KEY,
    name         text NOT NULL,
    scopes       text NOT NULL,
    created_at   double precision NOT NULL,
    last_used_at double precision,
    revoked_at   double precision
);
CREATE UNIQUE INDEX jobq_api_tokens_active_name ON jobq_api_tokens (name) WHERE revoked_at IS NULL;

-- The history the dashboard draws and `jobq stats` prints: per minute (Unix seconds / 60),
-- queue and executor, the attempts that ended by outcome, and histograms of how long their
-- jobs waited to start (from their run time) and ran: JSON arrays of counts, bucket i holding
-- times below 2^((i+1)/4) ms. Each worker adds what it ran about every 10 s. The same tables
-- as the SQLite store's version 20.
CREATE TABLE jobq_history (
    minute    bigint NOT NULL,
    queue     text NOT NULL,
    executor  text NOT NULL,
    succeeded bigint NOT NULL DEFAULT 0,
    retried   bigint NOT NULL DEFAULT 0,
    dead      bigint NOT NULL DEFAULT 0,
    waits     text NOT NULL DEFAULT '[]',
    runs      text NOT NULL DEFAULT '[]',
    wait_max  double precision NOT NULL DEFAULT 0,
    run_max   double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, executor)
);

-- Jobs by queue and unfinished state, sampled once a minute by one worker of the store.
CREATE TABLE jobq_backlog_history (
    minute bigint NOT NULL,
    queue  text NOT NULL,
    state  text NOT NULL,
    jobs   bigint NOT NULL,
    PRIMARY KEY (minute, queue, state)
);
