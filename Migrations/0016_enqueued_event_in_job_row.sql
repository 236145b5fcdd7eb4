-- jobq schema version 16: a job's `enqueued` event is its own row, not a row of jobq_events.
--
-- An enqueue wrote two rows (the job and its event) and three index entries; the event was
-- two of the five pages a single enqueue dirtied. Now the job row carries its event's data
-- (`enqueued_data`, NULL for jobs of older versions, whose event rows stay), and the feed reads
-- a job's `enqueued` event from it, at the job's id. For that id to be a place in the feed,
-- jobs and events take their ids from one counter: every write that appends events first
-- brings jobq_events' counter up to jobq_jobs' and afterwards jobq_jobs' up to jobq_events'
-- (`EventOutbox`), so that a job's id is above every event committed before it and below every
-- one committed after it, as an event row's id would be. A job's events go when it goes
-- (retention, `jobq delete`): its `enqueued` event with it (`SharedSQL.deleteJobs`).

ALTER TABLE jobq_jobs ADD COLUMN enqueued_data TEXT;

-- Both counters exist (a table's row appears with its first insert) and start level.
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'jobq_jobs', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobq_jobs');
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'jobq_events', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobq_events');
UPDATE sqlite_sequence SET seq = (SELECT MAX(seq) FROM sqlite_sequence WHERE name IN ('jobq_jobs', 'jobq_events'))
    WHERE name IN ('jobq_jobs', 'jobq_events');
