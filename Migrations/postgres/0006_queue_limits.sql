-- A queue's concurrency limit: at most this many of its jobs running at once, across every
-- worker and machine (NULL: no limit). Claims of a limited queue lock its row, count its
-- running jobs and take what is left (see StoreSQL.claimCapacity); a job claimed ahead into a
-- worker's buffer is running and counts.
ALTER TABLE queues ADD COLUMN concurrency_limit integer CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1);
