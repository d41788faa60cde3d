-- The Postgres schema that taskq's migrations build from zero: a generated snapshot
-- to read, not to apply. Regenerate with `make schema` after changing a migration.

CREATE TABLE actors (
    name text NOT NULL,
    queue text NOT NULL,
    max_attempts integer NOT NULL,
    max_crashes integer NOT NULL,
    idempotent boolean NOT NULL,
    cpu_bound boolean NOT NULL,
    timeout double precision,
    extra json NOT NULL DEFAULT '{}'::json,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT actors_pkey PRIMARY KEY (name)
);

CREATE TABLE job_errors (
    job_id uuid NOT NULL,
    attempt integer NOT NULL,
    at timestamp with time zone NOT NULL DEFAULT now(),
    crash boolean NOT NULL,
    worker_id uuid,
    error text NOT NULL,
    CONSTRAINT job_errors_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE CASCADE
);

CREATE TABLE jobs (
    id uuid NOT NULL,
    actor text NOT NULL,
    queue text NOT NULL,
    args json NOT NULL,
    kwargs json NOT NULL,
    priority integer NOT NULL DEFAULT 0,
    state text NOT NULL DEFAULT 'queued'::text,
    attempt integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL,
    crash_count integer NOT NULL DEFAULT 0,
    max_crashes integer NOT NULL,
    idempotent boolean NOT NULL,
    run_at timestamp with time zone NOT NULL DEFAULT now(),
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    worker_id uuid,
    lease_expires_at timestamp with time zone,
    last_error text,
    dead_reason text,
    result json,
    unique_key text,
    unique_states text,
    meta json,
    tags text[],
    snooze_count integer NOT NULL DEFAULT 0,
    cancelled_at timestamp with time zone,
    cancelled_by text,
    lost_worker_id uuid,
    late boolean NOT NULL DEFAULT false,
    blamed_crashes integer NOT NULL DEFAULT 0,
    unproven_crashes integer NOT NULL DEFAULT 0,
    run_alone boolean NOT NULL DEFAULT false,
    workflow_id uuid,
    step text,
    upstream uuid[],
    downstream uuid[],
    upstream_left integer,
    on_failure text,
    CONSTRAINT jobs_attempt_check CHECK (((attempt >= 0) AND (crash_count >= 0))),
    CONSTRAINT jobs_dead_reason_check CHECK (((state = 'dead'::text) = (dead_reason IS NOT NULL))),
    CONSTRAINT jobs_pkey PRIMARY KEY (id),
    CONSTRAINT jobs_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'dead'::text, 'cancelled'::text]))),
    CONSTRAINT jobs_unique_states_check CHECK (((unique_key IS NULL) OR ((strpos(unique_states, ',queued,'::text) > 0) AND (strpos(unique_states, ',running,'::text) > 0))))
) WITH (autovacuum_analyze_scale_factor=0.02, autovacuum_vacuum_cost_delay=1, autovacuum_vacuum_insert_scale_factor=0.05, autovacuum_vacuum_scale_factor=0.02, fillfactor=80);

CREATE TABLE leaders (
    name text NOT NULL,
    holder text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT leaders_pkey PRIMARY KEY (name)
);

CREATE TABLE limit_starts (
    kind text NOT NULL,
    name text NOT NULL,
    bucket timestamp with time zone NOT NULL,
    starts integer NOT NULL,
    CONSTRAINT limit_starts_pkey PRIMARY KEY (kind, name, bucket)
);

CREATE TABLE limits (
    kind text NOT NULL,
    name text NOT NULL,
    concurrency integer,
    rate integer,
    rate_period double precision,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT limits_check CHECK (((rate IS NULL) = (rate_period IS NULL))),
    CONSTRAINT limits_check1 CHECK (((concurrency IS NOT NULL) OR (rate IS NOT NULL))),
    CONSTRAINT limits_concurrency_check CHECK ((concurrency >= 1)),
    CONSTRAINT limits_kind_check CHECK ((kind = ANY (ARRAY['queue'::text, 'actor'::text]))),
    CONSTRAINT limits_pkey PRIMARY KEY (kind, name),
    CONSTRAINT limits_rate_check CHECK ((rate >= 1)),
    CONSTRAINT limits_rate_period_check CHECK ((rate_period > (0)::double precision))
);

CREATE TABLE queue_minutes (
    minute timestamp with time zone NOT NULL,
    queue text NOT NULL,
    actor text NOT NULL DEFAULT ''::text,
    succeeded bigint NOT NULL DEFAULT 0,
    failed_runs bigint NOT NULL DEFAULT 0,
    dead bigint NOT NULL DEFAULT 0,
    backlog_age double precision,
    CONSTRAINT queue_minutes_pkey PRIMARY KEY (minute, queue, actor)
);

CREATE TABLE queues (
    name text NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    paused_at timestamp with time zone,
    paused_by text,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT queues_pkey PRIMARY KEY (name)
);

CREATE TABLE rollups (
    name text NOT NULL,
    upto timestamp with time zone NOT NULL,
    CONSTRAINT rollups_pkey PRIMARY KEY (name)
);

CREATE TABLE schedules (
    name text NOT NULL,
    actor text NOT NULL,
    cron text NOT NULL,
    timezone text NOT NULL,
    missed text NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    seen_at timestamp with time zone NOT NULL,
    last_tick timestamp with time zone,
    CONSTRAINT schedules_pkey PRIMARY KEY (name)
);

CREATE TABLE schema_migrations (
    version text NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
);

CREATE TABLE workers (
    id uuid NOT NULL,
    workgroup_instance uuid,
    worker_label text,
    pid integer NOT NULL,
    hostname text NOT NULL,
    queues text[] NOT NULL,
    started_at timestamp with time zone NOT NULL DEFAULT now(),
    last_seen_at timestamp with time zone NOT NULL DEFAULT now(),
    max_connections integer,
    connections integer,
    CONSTRAINT workers_pkey PRIMARY KEY (id)
) WITH (autovacuum_vacuum_scale_factor=0.05, fillfactor=70);

CREATE TABLE workflow_ended (
    id uuid NOT NULL
);

CREATE TABLE workflow_totals (
    state text NOT NULL,
    finished bigint NOT NULL,
    CONSTRAINT workflow_totals_pkey PRIMARY KEY (state)
);

CREATE TABLE workflows (
    id uuid NOT NULL,
    name text NOT NULL,
    state text NOT NULL DEFAULT 'running'::text,
    steps integer NOT NULL,
    steps_left integer NOT NULL,
    failed_steps integer NOT NULL DEFAULT 0,
    cancelled_steps integer NOT NULL DEFAULT 0,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    finished_at timestamp with time zone,
    cancelled_at timestamp with time zone,
    cancelled_by text,
    CONSTRAINT workflows_pkey PRIMARY KEY (id),
    CONSTRAINT workflows_state_check CHECK ((state = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text]))),
    CONSTRAINT workflows_steps_check CHECK ((steps >= 1)),
    CONSTRAINT workflows_steps_left_check CHECK ((steps_left >= 0))
);

CREATE TABLE workgroups (
    instance uuid NOT NULL,
    hostname text NOT NULL,
    pid integer NOT NULL,
    children json NOT NULL,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT workgroups_pkey PRIMARY KEY (instance)
);

CREATE INDEX job_errors_at_idx ON job_errors USING btree (at);

CREATE INDEX job_errors_job_idx ON job_errors USING btree (job_id, at);

CREATE INDEX jobs_claim_idx ON jobs USING btree (queue, priority, run_at, id) WHERE (state = 'queued'::text);

CREATE INDEX jobs_dead_finished_idx ON jobs USING btree (finished_at) WHERE (state = 'dead'::text);

CREATE INDEX jobs_dead_idx ON jobs USING btree (queue, id) WHERE (state = 'dead'::text);

CREATE INDEX jobs_prune_idx ON jobs USING btree (finished_at) WHERE (state = 'succeeded'::text);

CREATE INDEX jobs_running_idx ON jobs USING btree (worker_id) WHERE (state = 'running'::text);

CREATE INDEX jobs_tags_idx ON jobs USING gin (tags) WHERE (tags IS NOT NULL);

CREATE UNIQUE INDEX jobs_unique_idx ON jobs USING btree (unique_key) WHERE ((unique_key IS NOT NULL) AND (strpos(unique_states, ((','::text || state) || ','::text)) > 0));

CREATE INDEX jobs_workflow_idx ON jobs USING btree (workflow_id) WHERE (workflow_id IS NOT NULL);

CREATE INDEX queue_minutes_totals_idx ON queue_minutes USING btree (minute, queue) WHERE (actor = ''::text);

CREATE INDEX workers_wg_lookup_idx ON workers USING btree (workgroup_instance, worker_label, last_seen_at DESC) WHERE (workgroup_instance IS NOT NULL);

CREATE INDEX workflows_finished_idx ON workflows USING btree (finished_at) WHERE (finished_at IS NOT NULL);

CREATE OR REPLACE FUNCTION crash_outcome(blamed_crashes integer, unproven_crashes integer, max_crashes integer, idempotent boolean, blamed boolean, shared boolean, max_unblamed integer)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT CASE
        WHEN blamed AND NOT shared AND blamed_crashes + 1 >= max_crashes THEN 'poison'
        WHEN unproven_crashes + CASE WHEN blamed AND NOT shared THEN 0 ELSE 1 END
             >= max_unblamed THEN 'poison'
        WHEN idempotent THEN 'queued'
        ELSE 'crashed'
    END
$function$;

CREATE OR REPLACE FUNCTION notify_enqueued()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO '<schema>'
AS $function$
BEGIN
    PERFORM pg_notify(left('taskq_' || TG_TABLE_SCHEMA, 63), q.queue)
    FROM (SELECT DISTINCT queue FROM new_jobs WHERE run_at <= now()) AS q;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION record_job_error()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO '<schema>'
AS $function$
BEGIN
    INSERT INTO job_errors (job_id, attempt, crash, worker_id, error)
    VALUES (NEW.id, NEW.attempt, NEW.crash_count > OLD.crash_count, OLD.worker_id,
            NEW.last_error);
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION workflow_step_ended()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO '<schema>'
AS $function$
BEGIN
    INSERT INTO workflow_ended (id) VALUES (NEW.id);
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION workflow_steps_advance()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO '<schema>'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    channel  text := left('taskq_' || TG_TABLE_SCHEMA, 63);
    ended    uuid[];
    finished uuid[];
    notified bigint;
BEGIN
    PERFORM set_config('taskq.workflow_advancing', 'on', true);
    LOOP
        PERFORM set_config('taskq.workflow_steps_ended', '', true);
        WITH gone AS (DELETE FROM workflow_ended RETURNING id)
        SELECT array_agg(id) INTO ended FROM gone;
        EXIT WHEN ended IS NULL;
        WITH e AS (
            SELECT d.id,
                   count(*) FILTER (WHERE s.state = 'succeeded') AS ok,
                   count(*) FILTER (WHERE s.state <> 'succeeded') AS bad
            FROM jobs s, unnest(s.downstream) AS d(id)
            WHERE s.id = ANY(ended)
            GROUP BY d.id
        ), u AS (
            UPDATE jobs
            SET upstream_left = jobs.upstream_left
                                - (e.ok + CASE WHEN jobs.on_failure = 'run' THEN e.bad ELSE 0 END),
                run_at = CASE WHEN jobs.upstream_left
                                   = e.ok + CASE WHEN jobs.on_failure = 'run' THEN e.bad ELSE 0 END
                              THEN now() ELSE jobs.run_at END
            FROM e
            WHERE jobs.id = e.id AND jobs.state = 'queued' AND jobs.upstream_left > 0
              AND (e.bad = 0 OR jobs.on_failure = 'run')
              AND e.ok + CASE WHEN jobs.on_failure = 'run' THEN e.bad ELSE 0 END > 0
            RETURNING jobs.queue, jobs.upstream_left
        ), c AS (
            UPDATE jobs
            SET state = 'cancelled', finished_at = now(), cancelled_at = now(),
                cancelled_by = 'upstream_failed'
            FROM e
            WHERE jobs.id = e.id AND e.bad > 0 AND jobs.state = 'queued'
              AND jobs.on_failure <> 'run'
            RETURNING jobs.id
        )
        SELECT (SELECT count(pg_notify(channel, r.queue))
                FROM (SELECT DISTINCT queue FROM u WHERE upstream_left = 0) AS r)
               + (SELECT count(*) FROM c)
        INTO notified;
        WITH s AS (
            SELECT workflow_id, count(*) AS n,
                   count(*) FILTER (WHERE state = 'dead') AS dead,
                   count(*) FILTER (WHERE state = 'cancelled') AS cancelled
            FROM jobs WHERE id = ANY(ended)
            GROUP BY workflow_id
        ), w AS (
            UPDATE workflows
            SET steps_left = workflows.steps_left - s.n,
                failed_steps = workflows.failed_steps + s.dead,
                cancelled_steps = workflows.cancelled_steps + s.cancelled
            FROM s
            WHERE workflows.id = s.workflow_id
            RETURNING workflows.id, workflows.steps_left
        )
        SELECT array_agg(id) INTO finished FROM w WHERE steps_left = 0;
        IF finished IS NOT NULL THEN
            WITH f AS (
                UPDATE workflows
                SET finished_at = now(),
                    state = CASE WHEN failed_steps > 0 THEN 'failed'
                                 WHEN cancelled_steps > 0 OR cancelled_at IS NOT NULL
                                     THEN 'cancelled'
                                 ELSE 'succeeded' END
                WHERE id = ANY(finished)
                RETURNING state
            )
            INSERT INTO workflow_totals AS t (state, finished)
            SELECT state, count(*) FROM f GROUP BY state
            ON CONFLICT (state) DO UPDATE SET finished = t.finished + excluded.finished;
        END IF;
    END LOOP;
    PERFORM set_config('taskq.workflow_advancing', '', true);
    RETURN NULL;
END
$function$;

CREATE TRIGGER jobs_notify_enqueued AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION notify_enqueued();

CREATE TRIGGER jobs_record_error AFTER UPDATE OF last_error ON jobs FOR EACH ROW WHEN (((old.state = 'running'::text) AND (new.state = ANY (ARRAY['queued'::text, 'dead'::text])) AND (new.last_error IS NOT NULL) AND (new.attempt = old.attempt))) EXECUTE FUNCTION record_job_error();

CREATE TRIGGER jobs_workflow_step AFTER UPDATE OF state ON jobs FOR EACH ROW WHEN (
        CASE
            WHEN ((new.workflow_id IS NOT NULL) AND (new.state = ANY (ARRAY['succeeded'::text, 'dead'::text, 'cancelled'::text])) AND (old.state <> ALL (ARRAY['succeeded'::text, 'dead'::text, 'cancelled'::text]))) THEN (set_config('taskq.workflow_steps_ended'::text, 'on'::text, true) = 'on'::text)
            ELSE false
        END) EXECUTE FUNCTION workflow_step_ended();

CREATE TRIGGER jobs_workflow_steps AFTER UPDATE OF state ON jobs FOR EACH STATEMENT WHEN (((current_setting('taskq.workflow_steps_ended'::text, true) = 'on'::text) AND (current_setting('taskq.workflow_advancing'::text, true) IS DISTINCT FROM 'on'::text))) EXECUTE FUNCTION workflow_steps_advance();
