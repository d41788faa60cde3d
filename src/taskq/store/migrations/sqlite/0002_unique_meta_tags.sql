-- Unique jobs, job metadata and tags (see the Postgres migration of the same number).
-- unique_states is ',queued,running,...,'; meta is a JSON object as TEXT; tags a JSON
-- array as TEXT.

ALTER TABLE jobs ADD COLUMN unique_key TEXT;
ALTER TABLE jobs ADD COLUMN unique_states TEXT;
ALTER TABLE jobs ADD COLUMN meta TEXT;
ALTER TABLE jobs ADD COLUMN tags TEXT;

CREATE UNIQUE INDEX jobs_unique_idx ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND instr(unique_states, ',' || state || ',') > 0;
