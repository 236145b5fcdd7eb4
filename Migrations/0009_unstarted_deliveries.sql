-- An attempt counts when it starts. A claimed job whose worker dies before its start mark is
-- written is handed back with its attempt; this counts those hand-backs, so that a job that
-- kills its worker the moment it starts (before the mark can be written) still ends `dead`
-- once they reach its max_attempts (at least 3), rather than looping for ever.
ALTER TABLE jobs ADD COLUMN unstarted_deliveries INTEGER NOT NULL DEFAULT 0;
