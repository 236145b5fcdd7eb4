-- A worker's start marks and plain successes in one round trip: one call of this function,
-- committed on its own, instead of a transaction of six statements.
--
-- A function, not one statement: whether a job has dependents (or the store tracking sets)
-- must be read after the write lock is held, so that no dependency added by a rule that held
-- it exclusively is missed, and a single statement reads with the snapshot it started with,
-- before it waited for the lock. Each statement of a volatile function reads with a new one.
--
-- Successes of jobs that something waits for, or of any job while tracking sets have members,
-- are left alone: the caller records them, with their consequences, in a transaction of the
-- shared SQL. The caller also leaves out every job that is a member (batch, group, lane) or
-- writes to a workflow's context.
--
-- Returns the ids whose start mark ('started') and whose success ('succeeded') it wrote; what
-- it did not write was refused by the fence (cancelled, taken over) or left to the caller.
CREATE FUNCTION jobq_record_successes(
    worker text, worker_json text, now double precision, notify_workers boolean,
    start_ids bigint[], start_attempts integer[], start_times double precision[],
    success_ids bigint[], success_attempts integer[], success_results text[], success_starts double precision[]
) RETURNS TABLE (job_id bigint, written text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- The shared write lock, as every write's first step (PostgresServer.writeLockKey).
    PERFORM pg_advisory_xact_lock_shared(1785684581);
    PERFORM pg_notify('jobq_events', '');
    IF notify_workers THEN
        PERFORM pg_notify('jobq_work', 'finished');
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
