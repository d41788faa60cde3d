-- taskq-contract: crash-outcome-blame (docs/upgrading.md: before any release)
-- Poison means "this job killed its runner" (docs/jobs.md, "Blame and poison").
-- blamed_crashes: deaths whose cause points at the job (taskq.blame), alone or shared.
-- unproven_crashes: deaths that did not prove the job guilty: blamed on no job, or shared
-- with other running jobs. crash_count still counts every death.
ALTER TABLE jobs ADD COLUMN blamed_crashes integer NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN unproven_crashes integer NOT NULL DEFAULT 0;

DROP FUNCTION crash_outcome(integer, integer, boolean);

-- The crash rules, in one place: what a runner's death does to a job. 'queued' (run
-- again), 'poison' or 'crashed' (both dead). blamed: the death points at a job; shared:
-- the runner was running other jobs too. A blame poisons only a job that died alone
-- (after a shared blame the job is re-run before a second blame can poison it); a job
-- with max_unblamed unproven deaths is poison too, so an unreadable cause cannot loop.
CREATE FUNCTION crash_outcome(blamed_crashes integer, unproven_crashes integer,
                              max_crashes integer, idempotent boolean, blamed boolean,
                              shared boolean, max_unblamed integer)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN blamed AND NOT shared AND blamed_crashes + 1 >= max_crashes THEN 'poison'
        WHEN unproven_crashes + CASE WHEN blamed AND NOT shared THEN 0 ELSE 1 END
             >= max_unblamed THEN 'poison'
        WHEN idempotent THEN 'queued'
        ELSE 'crashed'
    END
$$;
