-- jobq schema version 2: the record of users' data migrations (see DataMigrator).
--
-- One row per migrator: the version its data is at, and the target the code asked for when it
-- last ran. Every step is logged in data_migration_steps, in the same transaction that moves the
-- version, so the log and the version never disagree.

CREATE TABLE data_migrations (
    name            TEXT PRIMARY KEY,
    version         INTEGER NOT NULL CHECK (version >= 0),
    target_version  INTEGER NOT NULL,
    initialized_at  REAL,
    updated_at      REAL NOT NULL
) WITHOUT ROWID;

CREATE TABLE data_migration_steps (
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('initialized', 'migrated', 'skipped')),
    applied_at  REAL NOT NULL,
    PRIMARY KEY (name, version)
) WITHOUT ROWID;
