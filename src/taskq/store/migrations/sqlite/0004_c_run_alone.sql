-- A job blamed for a death it shared with other running jobs is re-run alone before a
-- second blame can poison it (docs/jobs.md, "Blame and poison"): run_alone tells the
-- worker that claims it to run nothing else meanwhile. Set by a blamed shared death,
-- cleared when a run of the job ends any other way than a crash.
ALTER TABLE jobs ADD COLUMN run_alone INTEGER NOT NULL DEFAULT 0;
