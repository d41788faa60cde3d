-- taskq 0009: on Postgres, the fan-in of 0007 moves from once per ended row to once per
-- statement (see the Postgres migration of the same number). SQLite has no statement
-- triggers and updates a row in place (no new version per update), so its 0007 row
-- triggers stay as they are; this number keeps the engines' migrations in step.
SELECT 1;
