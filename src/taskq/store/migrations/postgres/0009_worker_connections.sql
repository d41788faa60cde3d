-- What `taskq workers` shows of each worker's connections: the most it may open
-- (--max-connections, written at registration) and how many it held open at its last
-- heartbeat. Nullable: rows of workers started before this release have neither.
ALTER TABLE workers ADD COLUMN max_connections integer;
ALTER TABLE workers ADD COLUMN connections integer;
