-- jobq schema version 20: the tokens of the HTTP API, and the history of outcomes and times.
--
-- The tokens (`jobq token add|list|revoke`): a token is shown once, when made; the store keeps
-- only its SHA-256 (a token is 160 random bits, so a fast hash is as safe as a slow one), its
-- scopes (a comma-separated subset of read, enqueue, operate), when it was made and last used,
-- and when it was revoked (kept, for the record). A name belongs to one token not revoked.
CREATE TABLE jobq_api_tokens (
    token_hash   TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    created_at   REAL NOT NULL,
    last_used_at REAL,
    revoked_at   REAL
) WITHOUT ROWID;
CREATE UNIQUE INDEX jobq_api_tokens_active_name ON jobq_api_tokens (name) WHERE revoked_at IS NULL;

-- The history the dashboard draws and `jobq stats` prints: per minute (Unix seconds / 60),
-- queue and executor, the attempts that ended by outcome, and histograms of how long their
-- jobs waited to start (from their run time) and ran: JSON arrays of counts, bucket i holding
-- times below 2^((i+1)/4) ms. Each worker adds what it ran about every 10 s.
CREATE TABLE jobq_history (
    minute    INTEGER NOT NULL,
    queue     TEXT NOT NULL,
    executor  TEXT NOT NULL,
    succeeded INTEGER NOT NULL DEFAULT 0,
    retried   INTEGER NOT NULL DEFAULT 0,
    dead      INTEGER NOT NULL DEFAULT 0,
    waits     TEXT NOT NULL DEFAULT '[]',
    runs      TEXT NOT NULL DEFAULT '[]',
    wait_max  REAL NOT NULL DEFAULT 0,
    run_max   REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, executor)
) WITHOUT ROWID;

-- Jobs by queue and unfinished state, sampled once a minute by one worker of the store.
CREATE TABLE jobq_backlog_history (
    minute INTEGER NOT NULL,
    queue  TEXT NOT NULL,
    state  TEXT NOT NULL,
    jobs   INTEGER NOT NULL,
    PRIMARY KEY (minute, queue, state)
) WITHOUT ROWID;
