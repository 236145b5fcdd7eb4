-- jobs_worker indexed running jobs by worker, but no statement looks jobs up by worker alone:
-- every fenced statement names the job ids first. The planner still chose it for a worker's
-- check of the jobs it holds, and during a drain, when the index is full of entries for jobs
-- that stopped running moments ago, that check took seconds. It also cost every claim and
-- completion an index write.
DROP INDEX IF EXISTS jobs_worker;
