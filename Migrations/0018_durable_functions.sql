-- jobq schema version 18: durable functions. A function's steps, sleeps and waits, in the order
-- its code reached them (`position`), so that a run after a crash, a retry or a wake-up returns
-- the recorded results instead of running finished steps again; and the signals sent to jobs.
--
-- kind: 'step' (`result` is its JSON), 'sleep' (`wake_at`: when it ends), 'signal' (a wait for
-- the signal `name`: `wake_at` is its deadline, `finished_at` NULL while it waits, `result` the
-- signal's payload, NULL when it timed out), 'call' (child jobs it enqueued, `children` their ids
-- as a JSON array; `result` once they all finished: each one's state and result or error).
-- `cancelled`: the sleep, wait or call the function had reached when it was cancelled, ended
-- there, so that a replay of its compensation reaches the same point and ends it the same way.
CREATE TABLE jobq_steps (
    job_id      INTEGER NOT NULL,
    position    INTEGER NOT NULL CHECK (position >= 0),
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('step', 'sleep', 'signal', 'call')),
    result      TEXT,
    children    TEXT,
    wake_at     REAL,
    attempt     INTEGER NOT NULL,
    started_at  REAL NOT NULL,
    finished_at REAL,
    cancelled   INTEGER NOT NULL DEFAULT 0 CHECK (cancelled IN (0, 1)),
    PRIMARY KEY (job_id, position)
) WITHOUT ROWID;

-- Signals sent to a job (`jobq signal`), kept until a wait of the same name takes them, in the
-- order sent; `position` is the step that took it (NULL: not taken yet).
CREATE TABLE jobq_signals (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id    INTEGER NOT NULL,
    name      TEXT NOT NULL,
    payload   TEXT,
    sent_at   REAL NOT NULL,
    position  INTEGER,
    taken_at  REAL
);
CREATE INDEX jobq_signals_job ON jobq_signals (job_id, name, id);

-- The signal a parked function waits for (its job `scheduled` until the wait's deadline); NULL
-- for any other job.
ALTER TABLE jobq_jobs ADD COLUMN awaiting TEXT;

-- When cancelling a durable function was asked for (`jobq cancel`): the function runs once more,
-- its sleeps, waits and calls throwing FunctionCancelled so that its compensating steps run, and
-- then ends `cancelled`. NULL for any other job.
ALTER TABLE jobq_jobs ADD COLUMN cancel_requested REAL;
