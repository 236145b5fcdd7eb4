-- jobq schema version 21: the lists of states in the job table's checks and partial indexes are
-- written as comparisons joined by OR.
--
-- SQLite evaluates `state IN ('a', 'b', ...)` by building a temporary b-tree of the list each
-- time a statement runs, and a job's row is checked against three such lists on every insert and
-- on every change of its state (the CHECK of its state, the predicates of the due and expiring
-- indexes): about a microsecond each, a third of the CPU a claim and a completion of a job cost
-- SQLite. `state = 'a' OR state = 'b'` means the same and costs a comparison. Queries that walk
-- these indexes spell the predicate the same way (`SharedSQL.dueState`, `SharedSQL.expirableState`),
-- as SQLite uses a partial index only for a query whose terms imply its predicate.
--
-- A CHECK constraint changes in the table's definition alone: the rows already satisfy the new
-- one, which means the same, so nothing on disk moves (SQLite's documented procedure for such
-- changes; the indexes' DDL below changes the schema cookie, so every connection reads the new
-- definitions). RESET makes this connection read them too. A table whose definition differs
-- from what jobq wrote is left as it is: slower, still correct.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(
    replace(
        sql,
        'CHECK (state IN
                    (''waiting'', ''scheduled'', ''ready'', ''running'', ''succeeded'', ''failed'', ''dead'', ''cancelled''))',
        'CHECK (state = ''waiting'' OR state = ''scheduled'' OR state = ''ready'' OR state = ''running''
                    OR state = ''succeeded'' OR state = ''failed'' OR state = ''dead'' OR state = ''cancelled'')'),
    'CHECK (on_dependency_failure IN (''cancel'', ''fail'', ''ignore'', ''run''))',
    'CHECK (on_dependency_failure = ''cancel'' OR on_dependency_failure = ''fail''
        OR on_dependency_failure = ''ignore'' OR on_dependency_failure = ''run'')')
WHERE type = 'table' AND name = 'jobq_jobs';
UPDATE sqlite_master
SET sql = replace(
    replace(
        sql,
        'CHECK (kind IN (''step'', ''sleep'', ''signal'', ''event'', ''call''))',
        'CHECK (kind = ''step'' OR kind = ''sleep'' OR kind = ''signal'' OR kind = ''event'' OR kind = ''call'')'),
    'CHECK (cancelled IN (0, 1))', 'CHECK (cancelled = 0 OR cancelled = 1)')
WHERE type = 'table' AND name = 'jobq_steps';
PRAGMA writable_schema = RESET;

DROP INDEX jobq_jobs_due;
CREATE INDEX jobq_jobs_due ON jobq_jobs (run_at, queue) WHERE (state = 'scheduled' OR state = 'failed');
DROP INDEX jobq_jobs_expiring;
CREATE INDEX jobq_jobs_expiring ON jobq_jobs (expires_at)
    WHERE expires_at IS NOT NULL AND (state = 'waiting' OR state = 'scheduled' OR state = 'ready' OR state = 'failed');
