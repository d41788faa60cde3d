-- A late outcome is never lost (docs/jobs.md, "Late outcomes"). A worker cut off from the
-- database goes on running its jobs while a sweeper ends those runs by the crash rules.
-- When its outcome arrives and nobody has run the job since, it is still recorded.
-- lost_worker_id: the worker whose run the crash rules ended (cleared by the next claim).
-- late: the outcome recorded was written after the crash rules had ended that run.
ALTER TABLE jobs ADD COLUMN lost_worker_id uuid;
ALTER TABLE jobs ADD COLUMN late boolean NOT NULL DEFAULT false;
