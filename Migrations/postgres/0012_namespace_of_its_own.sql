-- A store owns its namespace: two stores in two schemas of one database share no advisory
-- lock and no notification channel, so that neither slows nor wakes the other. The lock key and
-- the channel names are the store's own (StoreNamespace.swift: the default schema `jobq` keeps
-- the values every store had before, any other schema's are derived from its name); the
-- migrator writes them in place of the @JOBQ_...@ names below. The hot path's statements, one
-- text for every store, read them through these functions, which PostgreSQL inlines as
-- constants when it plans.
CREATE FUNCTION jobq_write_lock_key() RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT CAST(@JOBQ_WRITE_LOCK_KEY@ AS bigint)';

CREATE FUNCTION jobq_work_channel() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT CAST(''@JOBQ_WORK_CHANNEL@'' AS text)';

CREATE FUNCTION jobq_events_channel() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT CAST(''@JOBQ_EVENTS_CHANNEL@'' AS text)';

-- The success function takes the store's lock and notifies its channels. It keeps the schema it
-- is made in as its search_path (as migration 9 set it): a store whose function was moved with
-- another search_path (a store in `public` moved away by an earlier jobq) gets its own back.
CREATE OR REPLACE FUNCTION jobq_record_successes(
    worker text, worker_json text, now double precision, notify_workers boolean,
    start_ids bigint[], start_attempts integer[], start_times double precision[],
    success_ids bigint[], success_attempts integer[], success_results text[], success_starts double precision[]
) RETURNS TABLE (job_id bigint, written text)
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    -- The store's shared write lock, as every write's first step, and its own channels.
    PERFORM pg_advisory_xact_lock_shared(jobq_write_lock_key());
    PERFORM pg_notify(jobq_events_channel(), '');
    IF notify_workers THEN
        PERFORM pg_notify(jobq_work_channel(), 'finished');
    END IF;

    -- Start marks of attempts that have not finished yet, in id order (row locks in one order).
    RETURN QUERY
    WITH marked AS (
        UPDATE jobs SET started_at = mark.at
        FROM unnest(start_ids, start_attempts, start_times) AS mark(id, attempt, at)
        WHERE jobs.id = mark.id AND CASE WHEN jobs.state = 'running' THEN jobs.worker_id END = worker
            AND jobs.attempt = mark.attempt AND jobs.started_at IS NULL
        RETURNING jobs.id, jobs.queue, jobs.executor, jobs.batch, jobs.attempt, jobs.workflow_id
    ),
    logged AS (
        INSERT INTO events (job_id, kind, queue, executor, batch, data, created_at, workflow_id)
        SELECT marked.id, 'started', marked.queue, marked.executor, marked.batch,
            CAST('{"attempt":' || marked.attempt || ',"worker":' || worker_json || '}' AS json), now,
            marked.workflow_id
        FROM marked ORDER BY marked.id
        RETURNING events.job_id
    )
    SELECT logged.job_id, 'started' FROM logged;

    -- While any tracking set has members, every success may complete one: the caller's.
    IF EXISTS (SELECT 1 FROM tracking_members) THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH done AS (
        UPDATE jobs SET state = 'succeeded', result = CAST(outcome.result AS json), error = NULL, finished_at = now,
            lease_until = NULL, started_at = COALESCE(outcome.start, jobs.started_at)
        FROM unnest(success_ids, success_attempts, success_results, success_starts) AS outcome(id, attempt, result, start)
        WHERE jobs.id = outcome.id AND CASE WHEN jobs.state = 'running' THEN jobs.worker_id END = worker
            AND jobs.attempt = outcome.attempt
            AND NOT EXISTS (SELECT 1 FROM dependencies WHERE dependencies.depends_on = jobs.id)
        RETURNING jobs.id, jobs.queue, jobs.executor, jobs.batch, jobs.attempt, jobs.workflow_id, outcome.start, outcome.result
    ),
    logged AS (
        -- Each job's `started` event (when its start is written with its success), then its
        -- `succeeded` one: ids are handed out in this order.
        INSERT INTO events (job_id, kind, queue, executor, batch, data, created_at, workflow_id)
        SELECT done.id, event.kind, done.queue, done.executor, done.batch, CAST(event.data AS json), now, done.workflow_id
        FROM done CROSS JOIN LATERAL (
            VALUES
                (0, 'started', '{"attempt":' || done.attempt || ',"worker":' || worker_json || '}'),
                (1, 'succeeded', '{"attempt":' || done.attempt || ',"result":' || done.result || '}')
        ) AS event(position, kind, data)
        WHERE event.position = 1 OR done.start IS NOT NULL
        ORDER BY done.id, event.position
        RETURNING events.job_id, events.kind
    )
    SELECT logged.job_id, 'succeeded' FROM logged WHERE logged.kind = 'succeeded';
END
$$;
