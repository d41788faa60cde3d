-- taskq 0010: on Postgres, the fan-in trigger's statements get generic plans from their
-- first run (see the Postgres migration of the same number). SQLite plans each statement
-- once per prepared statement; this number keeps the engines' migrations in step.
SELECT 1;
