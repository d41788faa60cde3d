-- Poison means "this job killed its runner" (docs/jobs.md, "Blame and poison").
-- blamed_crashes: deaths whose cause points at the job (taskq.blame), alone or shared.
-- unproven_crashes: deaths that did not prove the job guilty: blamed on no job, or shared
-- with other running jobs. crash_count still counts every death. The rule itself is in
-- the crash_run statement of sqlite.sql.
ALTER TABLE jobs ADD COLUMN blamed_crashes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN unproven_crashes INTEGER NOT NULL DEFAULT 0;
