-- Job trees (DRBOperationTree): each node's output feeds its children.
--
-- A tree's nodes are stored once, at submission; a node's jobs are created by the transaction
-- that records its parent job's success. Every job of a node with children (and the root) gets
-- a group row of kind 'tree' holding the job and what its success created, so that a subtree
-- completes, post-order, through the same group counters as workflow groups: one mechanism.

CREATE TABLE trees (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id  INTEGER NOT NULL,
    root_group   INTEGER,
    -- The most jobs the tree may create, and how many it has created: a fan-out that would
    -- pass the limit fails its node rather than flooding the store.
    max_jobs     INTEGER NOT NULL CHECK (max_jobs >= 1),
    jobs         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX trees_workflow ON trees (workflow_id);

CREATE TABLE tree_nodes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    tree_id       INTEGER NOT NULL,
    parent_id     INTEGER,
    position      INTEGER NOT NULL,
    name          TEXT NOT NULL,
    -- Node names from the root, e.g. 'cookbook/recipe/ingredient'.
    path          TEXT NOT NULL,
    executor      TEXT NOT NULL,
    -- A JSON Pointer into the parent's result: one job per element of the array there.
    each_pointer  TEXT,
    -- A JSON object merged into each job's input.
    with_object   TEXT CHECK (with_object IS NULL OR json_valid(with_object)),
    on_failure    TEXT NOT NULL CHECK (on_failure IN ('failTree', 'continue')),
    queue         TEXT NOT NULL,
    priority      INTEGER NOT NULL,
    max_attempts  INTEGER NOT NULL CHECK (max_attempts >= 1),
    timeout       REAL,
    leaf          INTEGER NOT NULL CHECK (leaf IN (0, 1))
);
CREATE INDEX tree_nodes_children ON tree_nodes (parent_id, position) WHERE parent_id IS NOT NULL;
CREATE INDEX tree_nodes_tree ON tree_nodes (tree_id);

ALTER TABLE jobs ADD COLUMN tree_node INTEGER;

-- Groups gain the kind 'tree', the node a tree group is an instance of, and the jobs of
-- their whole subtree by outcome (members report theirs as they finish, so a subtree's counts
-- are known when it completes, without a scan). A CHECK cannot be altered: rebuilt.
CREATE TABLE workflow_groups_v6 (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id  INTEGER NOT NULL,
    parent_id    INTEGER,
    position     INTEGER NOT NULL DEFAULT 0,
    kind         TEXT NOT NULL CHECK (kind IN ('sequence', 'parallel', 'tree')),
    name         TEXT,
    path         TEXT NOT NULL,
    on_failure   TEXT NOT NULL DEFAULT 'fail' CHECK (on_failure IN ('fail', 'continue')),
    state        TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    total        INTEGER NOT NULL,
    succeeded    INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    cancelled    INTEGER NOT NULL DEFAULT 0,
    finished_at  REAL,
    tree_node       INTEGER,
    jobs_succeeded  INTEGER NOT NULL DEFAULT 0,
    jobs_failed     INTEGER NOT NULL DEFAULT 0,
    jobs_cancelled  INTEGER NOT NULL DEFAULT 0
);
INSERT INTO workflow_groups_v6 (id, workflow_id, parent_id, position, kind, name, path, on_failure, state, total, succeeded,
    failed, cancelled, finished_at)
SELECT id, workflow_id, parent_id, position, kind, name, path, on_failure, state, total, succeeded, failed, cancelled, finished_at
FROM workflow_groups;
DELETE FROM sqlite_sequence WHERE name = 'workflow_groups_v6';
INSERT INTO sqlite_sequence (name, seq) SELECT 'workflow_groups_v6', seq FROM sqlite_sequence WHERE name = 'workflow_groups';
DROP TABLE workflow_groups;
ALTER TABLE workflow_groups_v6 RENAME TO workflow_groups;
CREATE INDEX workflow_groups_children ON workflow_groups (parent_id, position) WHERE parent_id IS NOT NULL;
CREATE INDEX workflow_groups_workflow ON workflow_groups (workflow_id);
