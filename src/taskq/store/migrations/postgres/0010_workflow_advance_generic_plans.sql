-- taskq 0010: the fan-in trigger plans its statements once per connection.
--
-- PL/pgSQL caches each statement's plan, but Postgres plans a cached statement afresh
-- for its first five runs (custom plans, in case its parameters matter) before it
-- settles on a generic one. workflow_steps_advance runs once per acknowledgement that
-- ends steps, and its statements' only parameter is the array of ended steps' ids, found
-- by primary key whatever its size: the custom plans bought nothing and cost 1 - 2 ms a
-- batch of acknowledgements (auto_explain, a 1,000-step group on one connection: the
-- trigger 2.2 - 3.1 ms a warm batch, 0.9 - 1.2 ms with generic plans; 23 -> 13 ms in all).
ALTER FUNCTION workflow_steps_advance() SET plan_cache_mode = force_generic_plan;
