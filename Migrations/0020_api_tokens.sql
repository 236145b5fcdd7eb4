-- jobq schema version 20: the tokens of the HTTP API (`jobq token add|list|revoke`). A token is
-- shown once, when made; the store keeps only its SHA-256 (a token is 160 random bits, so a
-- fast hash is as safe as a slow one), its scopes (a comma-separated subset of read, enqueue,
-- operate), when it was made and last used, and when it was revoked (kept, for the record). A
-- name belongs to one token that is not revoked.
CREATE TABLE jobq_api_tokens (
    token_hash   TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    created_at   REAL NOT NULL,
    last_used_at REAL,
    revoked_at   REAL
) WITHOUT ROWID;
CREATE UNIQUE INDEX jobq_api_tokens_active_name ON jobq_api_tokens (name) WHERE revoked_at IS NULL;
