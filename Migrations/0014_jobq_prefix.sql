-- jobq's tables, indexes and sequences take the `jobq_` prefix, so that a store can live in the
-- application's own database file beside tables named `jobs`, `events` or `workers`, and an
-- application can enqueue in its own transaction (one file: one commit).
--
-- This runs on a store made by an earlier jobq, whose tables had bare names: each table is
-- renamed (SQLite carries its rows, its automatic indexes and its AUTOINCREMENT counter along)
-- and each index is made again under its new name, as an index cannot be renamed. A store made
-- by this jobq or later gets the prefixed names from its first migration and skips this one.

ALTER TABLE batches RENAME TO jobq_batches;
ALTER TABLE data_migration_steps RENAME TO jobq_data_migration_steps;
ALTER TABLE data_migrations RENAME TO jobq_data_migrations;
ALTER TABLE dependencies RENAME TO jobq_dependencies;
ALTER TABLE events RENAME TO jobq_events;
ALTER TABLE jobs RENAME TO jobq_jobs;
ALTER TABLE lanes RENAME TO jobq_lanes;
ALTER TABLE leases RENAME TO jobq_leases;
ALTER TABLE queue_starts RENAME TO jobq_queue_starts;
ALTER TABLE queues RENAME TO jobq_queues;
ALTER TABLE schedules RENAME TO jobq_schedules;
ALTER TABLE schema_migrations RENAME TO jobq_schema_migrations;
ALTER TABLE store_settings RENAME TO jobq_store_settings;
ALTER TABLE tracking_members RENAME TO jobq_tracking_members;
ALTER TABLE tracking_sets RENAME TO jobq_tracking_sets;
ALTER TABLE tree_nodes RENAME TO jobq_tree_nodes;
ALTER TABLE trees RENAME TO jobq_trees;
ALTER TABLE trigger_emits RENAME TO jobq_trigger_emits;
ALTER TABLE triggers RENAME TO jobq_triggers;
ALTER TABLE workers RENAME TO jobq_workers;
ALTER TABLE workflow_groups RENAME TO jobq_workflow_groups;
ALTER TABLE workflows RENAME TO jobq_workflows;

DROP INDEX dependencies_by_group;
DROP INDEX dependencies_by_job;
DROP INDEX dependencies_of_job;
DROP INDEX events_job;
DROP INDEX events_workflow;
DROP INDEX jobs_batch;
DROP INDEX jobs_claim_order;
DROP INDEX jobs_due;
DROP INDEX jobs_finished;
DROP INDEX jobs_group;
DROP INDEX jobs_lane;
DROP INDEX jobs_leases;
DROP INDEX jobs_schedule_occurrence;
DROP INDEX jobs_unique_hold;
DROP INDEX jobs_waiting;
DROP INDEX queue_starts_window;
DROP INDEX schedules_due;
DROP INDEX tracking_members_by_member;
DROP INDEX tree_nodes_children;
DROP INDEX tree_nodes_tree;
DROP INDEX trees_workflow;
DROP INDEX workflow_groups_children;
DROP INDEX workflow_groups_workflow;
DROP INDEX workflows_state;
CREATE INDEX jobq_dependencies_by_group ON jobq_dependencies (after_group) WHERE after_group IS NOT NULL;
CREATE INDEX jobq_dependencies_by_job ON jobq_dependencies (depends_on) WHERE depends_on IS NOT NULL;
CREATE INDEX jobq_dependencies_of_job ON jobq_dependencies (job_id);
CREATE INDEX jobq_events_job ON jobq_events (job_id);
CREATE INDEX jobq_events_workflow ON jobq_events (workflow_id, id) WHERE workflow_id IS NOT NULL;
CREATE INDEX jobq_jobs_batch ON jobq_jobs (batch) WHERE batch IS NOT NULL;
CREATE INDEX jobq_jobs_claim_order ON jobq_jobs (queue, priority DESC, run_at, id) WHERE state = 'ready';
CREATE INDEX jobq_jobs_due ON jobq_jobs (run_at, queue) WHERE state IN ('scheduled', 'failed');
CREATE INDEX jobq_jobs_finished ON jobq_jobs (queue, state, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX jobq_jobs_group ON jobq_jobs (group_id, group_position) WHERE group_id IS NOT NULL;
CREATE INDEX jobq_jobs_lane ON jobq_jobs (lane, id) WHERE lane IS NOT NULL;
CREATE INDEX jobq_jobs_leases ON jobq_jobs (lease_until) WHERE state = 'running';
CREATE UNIQUE INDEX jobq_jobs_schedule_occurrence ON jobq_jobs (schedule, occurrence) WHERE schedule IS NOT NULL;
CREATE UNIQUE INDEX jobq_jobs_unique_hold ON jobq_jobs (unique_hold) WHERE unique_hold IS NOT NULL;
CREATE INDEX jobq_jobs_waiting ON jobq_jobs (queue) WHERE state = 'waiting';
CREATE INDEX jobq_queue_starts_window ON jobq_queue_starts (queue, started_at);
CREATE INDEX jobq_schedules_due ON jobq_schedules (next_run_at) WHERE paused = 0 AND next_run_at IS NOT NULL;
CREATE INDEX jobq_tracking_members_by_member ON jobq_tracking_members (kind, member);
CREATE INDEX jobq_tree_nodes_children ON jobq_tree_nodes (parent_id, position) WHERE parent_id IS NOT NULL;
CREATE INDEX jobq_tree_nodes_tree ON jobq_tree_nodes (tree_id);
CREATE INDEX jobq_trees_workflow ON jobq_trees (workflow_id);
CREATE INDEX jobq_workflow_groups_children ON jobq_workflow_groups (parent_id, position) WHERE parent_id IS NOT NULL;
CREATE INDEX jobq_workflow_groups_workflow ON jobq_workflow_groups (workflow_id);
CREATE INDEX jobq_workflows_state ON jobq_workflows (state, id);
