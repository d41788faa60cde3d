-- Unique jobs, job metadata and tags.
--
-- unique_key: a producer's key; while a job holding it is in one of unique_states, no
-- other job with the same key can be inserted (enqueue uses ON CONFLICT DO NOTHING on
-- jobs_unique_idx and returns the holder's id). unique_states is a comma-delimited list
-- with a comma at each end (',queued,running,') so one strpos() tests membership; it
-- always holds queued and running, so moving between those two never collides.
-- meta: a small JSON object set at enqueue and extended by the running job.
-- tags: short labels to filter by (`taskq jobs list --tag T`).

ALTER TABLE jobs
    ADD COLUMN unique_key    text,
    ADD COLUMN unique_states text,
    ADD COLUMN meta          json,
    ADD COLUMN tags          text[],
    ADD CONSTRAINT jobs_unique_states_check CHECK (
        unique_key IS NULL
        OR (strpos(unique_states, ',queued,') > 0 AND strpos(unique_states, ',running,') > 0)
    );

CREATE UNIQUE INDEX jobs_unique_idx ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND strpos(unique_states, ',' || state || ',') > 0;
