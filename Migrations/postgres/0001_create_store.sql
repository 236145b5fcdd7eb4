-- jobq's store on PostgreSQL: the same tables as the SQLite store at its schema version 9,
-- in one step (a PostgreSQL store starts here). Times are Unix seconds (double precision) as
-- in SQLite, so that both stores share their model code. A job's payload, result and every
-- text a user gives are `json`, which keeps the text as given (jsonb would reorder keys); jobq
-- edits JSON (a workflow's shared context, a payload's "previous") in Swift, the same way on
-- both stores. Flags are integers 0 and 1, as in SQLite, so that both stores run the same SQL.

CREATE TABLE queues (
    name    text PRIMARY KEY,
    paused  integer NOT NULL DEFAULT 0 CHECK (paused IN (0, 1))
);

CREATE TABLE workers (
    id            text PRIMARY KEY,
    host          text NOT NULL,
    pid           bigint NOT NULL,
    queues        json NOT NULL,
    concurrency   integer NOT NULL,
    started_at    double precision NOT NULL,
    heartbeat_at  double precision NOT NULL
);

CREATE TABLE data_migrations (
    name            text PRIMARY KEY,
    version         integer NOT NULL CHECK (version >= 0),
    target_version  integer NOT NULL,
    initialized_at  double precision,
    updated_at      double precision NOT NULL
);

CREATE TABLE data_migration_steps (
    name        text NOT NULL,
    version     integer NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('initialized', 'migrated', 'skipped')),
    applied_at  double precision NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TABLE jobs (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue         text NOT NULL,
    executor      text NOT NULL,
    payload       json NOT NULL,
    priority      integer NOT NULL DEFAULT 0,
    state         text NOT NULL CHECK (state IN
                    ('waiting', 'scheduled', 'ready', 'running', 'succeeded', 'failed', 'dead', 'cancelled')),
    attempt       integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts  integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    run_at        double precision NOT NULL,
    timeout       double precision,
    lease_until   double precision,
    worker_id     text,
    result        json,
    error         text,
    created_at    double precision NOT NULL,
    started_at    double precision,
    finished_at   double precision,
    progress          double precision,
    progress_message  text,
    update_data       json,
    checkpoint        json,
    snoozes           integer NOT NULL DEFAULT 0,
    name              text,
    batch             text,
    -- Dependencies not met yet; a waiting job becomes ready (or scheduled) when it reaches 0.
    unmet             integer NOT NULL DEFAULT 0 CHECK (unmet >= 0),
    -- What a dependency that dies or is cancelled does to this job when its edge names no
    -- policy: cancel (NULL), fail, ignore or run.
    on_dependency_failure text CHECK (on_dependency_failure IN ('cancel', 'fail', 'ignore', 'run')),
    -- The dependencies that failed and were ignored or ran this job anyway: a JSON array.
    failed_dependencies json,
    workflow_id       bigint,
    -- The innermost group the job is a member of, and its place there (0-based).
    group_id          bigint,
    group_position    integer,
    -- Where the job's "previous" input comes from: 'job:<id>' or 'group:<id>'.
    input_from        text,
    lane              text,
    tree_node         bigint,
    schedule          text,
    occurrence        double precision,
    unique_key        text,
    unique_hold       text,
    unique_states     integer,
    unique_for        double precision,
    -- Deliveries to workers that died before the attempt's start was recorded.
    unstarted_deliveries integer NOT NULL DEFAULT 0
);

-- One partial index per transient state, as in SQLite: a claim walks jobs_claim_order in its
-- exact order and stops after its batch, whatever the history holds.
CREATE INDEX jobs_claim_order ON jobs (queue, priority DESC, run_at, id) WHERE state = 'ready';
CREATE INDEX jobs_due ON jobs (run_at, queue) WHERE state IN ('scheduled', 'failed');
CREATE INDEX jobs_leases ON jobs (lease_until) WHERE state = 'running';
CREATE INDEX jobs_finished ON jobs (queue, state, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX jobs_batch ON jobs (batch) WHERE batch IS NOT NULL;
CREATE INDEX jobs_waiting ON jobs (queue) WHERE state = 'waiting';
CREATE INDEX jobs_group ON jobs (group_id, group_position) WHERE group_id IS NOT NULL;
CREATE INDEX jobs_lane ON jobs (lane, id) WHERE lane IS NOT NULL;
CREATE INDEX jobs_worker ON jobs (worker_id) WHERE state = 'running';
CREATE UNIQUE INDEX jobs_schedule_occurrence ON jobs (schedule, occurrence) WHERE schedule IS NOT NULL;
CREATE UNIQUE INDEX jobs_unique_hold ON jobs (unique_hold) WHERE unique_hold IS NOT NULL;

-- The event feed. Ids must follow commit order (a follower resumes after the last id it saw):
-- the store takes a transaction-level advisory lock before it writes a transaction's events,
-- so that ids are handed out in the order the transactions commit.
CREATE TABLE events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       bigint,
    kind         text NOT NULL,
    queue        text,
    executor     text,
    batch        text,
    data         json,
    created_at   double precision NOT NULL,
    workflow_id  bigint
);
CREATE INDEX events_job ON events (job_id);
CREATE INDEX events_workflow ON events (workflow_id, id) WHERE workflow_id IS NOT NULL;

CREATE TABLE batches (
    name                  text PRIMARY KEY,
    state                 text NOT NULL CHECK (state IN ('open', 'closed', 'fired')),
    total                 integer NOT NULL DEFAULT 0,
    succeeded             integer NOT NULL DEFAULT 0,
    dead                  integer NOT NULL DEFAULT 0,
    cancelled             integer NOT NULL DEFAULT 0,
    on_complete_executor  text,
    on_complete_payload   json,
    on_success_executor   text,
    on_success_payload    json,
    callback_queue        text NOT NULL DEFAULT 'default',
    complete_job_id       bigint,
    success_job_id        bigint,
    created_at            double precision NOT NULL,
    closed_at             double precision,
    fired_at              double precision
);

CREATE TABLE tracking_sets (
    name        text PRIMARY KEY,
    round       integer NOT NULL DEFAULT 0,
    created_at  double precision NOT NULL
);

CREATE TABLE tracking_members (
    set_name       text NOT NULL REFERENCES tracking_sets (name) ON DELETE CASCADE,
    kind           text NOT NULL CHECK (kind IN ('executor', 'job')),
    member         text NOT NULL,
    fresh          integer NOT NULL DEFAULT 0 CHECK (fresh IN (0, 1)),
    latest_job_id  bigint,
    latest_result  json,
    PRIMARY KEY (set_name, kind, member)
);
CREATE INDEX tracking_members_by_member ON tracking_members (kind, member);

CREATE TABLE dependencies (
    job_id       bigint NOT NULL,
    depends_on   bigint,
    after_group  bigint,
    policy       text CHECK (policy IN ('cancel', 'fail', 'ignore', 'run', 'lane')),
    CHECK ((depends_on IS NULL) != (after_group IS NULL))
);
CREATE INDEX dependencies_by_job ON dependencies (depends_on) WHERE depends_on IS NOT NULL;
CREATE INDEX dependencies_by_group ON dependencies (after_group) WHERE after_group IS NOT NULL;
CREATE INDEX dependencies_of_job ON dependencies (job_id);

CREATE TABLE workflows (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text,
    state        text NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    -- The shared context: one JSON object, written a key at a time by succeeding members.
    context      json  NOT NULL DEFAULT '{}' CHECK (json_typeof(context) = 'object'),
    root_group   bigint,
    error        text,
    created_at   double precision NOT NULL,
    finished_at  double precision
);
CREATE INDEX workflows_state ON workflows (state, id);

CREATE TABLE workflow_groups (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workflow_id  bigint NOT NULL,
    parent_id    bigint,
    position     integer NOT NULL DEFAULT 0,
    kind         text NOT NULL CHECK (kind IN ('sequence', 'parallel', 'tree')),
    name         text,
    path         text NOT NULL,
    on_failure   text NOT NULL DEFAULT 'fail' CHECK (on_failure IN ('fail', 'continue')),
    state        text NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    total        integer NOT NULL,
    succeeded    integer NOT NULL DEFAULT 0,
    failed       integer NOT NULL DEFAULT 0,
    cancelled    integer NOT NULL DEFAULT 0,
    finished_at  double precision,
    tree_node       bigint,
    jobs_succeeded  integer NOT NULL DEFAULT 0,
    jobs_failed     integer NOT NULL DEFAULT 0,
    jobs_cancelled  integer NOT NULL DEFAULT 0
);
CREATE INDEX workflow_groups_children ON workflow_groups (parent_id, position) WHERE parent_id IS NOT NULL;
CREATE INDEX workflow_groups_workflow ON workflow_groups (workflow_id);

CREATE TABLE lanes (
    name           text PRIMARY KEY,
    tail_job_id    bigint,
    on_failure     text NOT NULL DEFAULT 'continue' CHECK (on_failure IN ('continue', 'halt')),
    -- The job whose failure halted the lane, until `jobq lane resume`.
    halted_job_id  bigint,
    created_at     double precision NOT NULL
);

CREATE TABLE trees (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workflow_id  bigint NOT NULL,
    root_group   bigint,
    -- The most jobs the tree may create, and how many it has created.
    max_jobs     integer NOT NULL CHECK (max_jobs >= 1),
    jobs         integer NOT NULL DEFAULT 0
);
CREATE INDEX trees_workflow ON trees (workflow_id);

CREATE TABLE tree_nodes (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tree_id       bigint NOT NULL,
    parent_id     bigint,
    position      integer NOT NULL,
    name          text NOT NULL,
    -- Node names from the root, e.g. 'cookbook/recipe/ingredient'.
    path          text NOT NULL,
    executor      text NOT NULL,
    -- A JSON Pointer into the parent's result: one job per element of the array there.
    each_pointer  text,
    -- A JSON object merged into each job's input.
    with_object   json,
    on_failure    text NOT NULL CHECK (on_failure IN ('failTree', 'continue')),
    queue         text NOT NULL,
    priority      integer NOT NULL,
    max_attempts  integer NOT NULL CHECK (max_attempts >= 1),
    timeout       double precision,
    leaf          integer NOT NULL CHECK (leaf IN (0, 1))
);
CREATE INDEX tree_nodes_children ON tree_nodes (parent_id, position) WHERE parent_id IS NOT NULL;
CREATE INDEX tree_nodes_tree ON tree_nodes (tree_id);

CREATE TABLE schedules (
    name            text PRIMARY KEY,
    executor        text NOT NULL,
    payload         json NOT NULL,
    queue           text NOT NULL,
    priority        integer NOT NULL,
    max_attempts    integer NOT NULL CHECK (max_attempts >= 1),
    timeout         double precision,
    kind            text NOT NULL CHECK (kind IN ('at', 'every', 'cron')),
    -- kind 'at': the time; kind 'every': the first occurrence.
    start_at        double precision,
    -- kind 'every': seconds between occurrences, and how many (NULL: forever).
    every           double precision CHECK (every IS NULL OR every > 0),
    times           integer CHECK (times IS NULL OR times >= 1),
    cron            text,
    time_zone       text NOT NULL DEFAULT 'UTC',
    missed          text NOT NULL CHECK (missed IN ('skip', 'catchUp')),
    catch_up_limit  integer NOT NULL CHECK (catch_up_limit >= 1),
    paused          integer NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    -- The occurrence it waits for; NULL once it has made all its jobs.
    next_run_at     double precision,
    -- Jobs made so far (an `every ... times N` schedule stops at N).
    made            integer NOT NULL DEFAULT 0,
    created_at      double precision NOT NULL,
    updated_at      double precision NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE paused = 0 AND next_run_at IS NOT NULL;

CREATE TABLE triggers (
    event           text NOT NULL,
    task            text NOT NULL,
    executor        text NOT NULL,
    payload         json NOT NULL CHECK (json_typeof(payload) = 'object'),
    queue           text NOT NULL,
    priority        integer NOT NULL,
    max_attempts    integer NOT NULL CHECK (max_attempts >= 1),
    timeout         double precision,
    -- A JSON array of task names of the same event.
    depends_on      json  NOT NULL DEFAULT '[]' CHECK (json_typeof(depends_on) = 'array'),
    once            integer NOT NULL DEFAULT 0 CHECK (once IN (0, 1)),
    -- When a `once` task ran (it never runs again); NULL until then.
    ran_once_at     double precision,
    paused          integer NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    created_at      double precision NOT NULL,
    updated_at      double precision NOT NULL,
    PRIMARY KEY (event, task)
);

CREATE TABLE trigger_emits (
    event       text NOT NULL,
    dedupe      text NOT NULL,
    job_ids     json  NOT NULL CHECK (json_typeof(job_ids) = 'array'),
    emitted_at  double precision NOT NULL,
    PRIMARY KEY (event, dedupe)
);
