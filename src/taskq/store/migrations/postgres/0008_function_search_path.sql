-- The trigger functions name no schema in their bodies: they ran with the session's
-- search_path, which taskq used to set on every connection. A connection through a
-- transaction pooler (PgBouncer) has no session of its own to set it on, so each
-- function now carries its own: the schema it lives in (this migration runs with
-- search_path set to it, and FROM CURRENT keeps that value).
ALTER FUNCTION notify_enqueued() SET search_path FROM CURRENT;
ALTER FUNCTION record_job_error() SET search_path FROM CURRENT;
ALTER FUNCTION workflow_step_moved() SET search_path FROM CURRENT;
