-- Bad input: every case gets a clear error with its SQLSTATE, and leaves
-- nothing behind (no catalog row, no sink, no index).

CREATE TABLE flows_before AS SELECT flow_id, flow_name FROM flowpg.flows;
CREATE TABLE events (at timestamptz, kind text, note text, n int, day date);
CREATE VIEW events_view AS SELECT * FROM events;
CREATE TEMP TABLE temp_events (at timestamptz, n int);
\x on

-- 1-4: arguments
SELECT * FROM try($$SELECT flowpg.create_flow(NULL, 'bad1', 'SELECT count(*) AS n FROM events')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('', 'bad1', 'SELECT count(*) AS n FROM events')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT count(*) AS n FROM events', mode => 'fast')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT count(*) AS n FROM events', or_replace => true, if_not_exists => true)$$);
-- 5-10: the query itself
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT count(*) AS n FROM no_such_table')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT no_such_column, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT count(* AS n FROM events')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT 1 AS a FROM events; DROP TABLE events')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'DELETE FROM events')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT 1 AS one')$$);
-- 11-14: the time window
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT kind, count(DISTINCT note) AS notes FROM events GROUP BY kind')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', note::timestamptz) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
-- a GROUP BY expression that is not monotonic is an ordinary key: no window
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT extract(hour FROM at) AS hour_of_day, count(*) AS n FROM events GROUP BY 1', expire_after => '1 day')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT -n / 10 AS bucket, count(*) AS c FROM events GROUP BY 1', mode => 'batching')$$);
-- 15-17: output columns
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT count(*) AS n FROM events GROUP BY date_trunc(''hour'', at)')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS n, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) + 1 FROM events GROUP BY 1')$$);
-- 19-30: functions and clauses a flow cannot use
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events WHERE random() < 0.5 GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at + random() * interval ''1s'') AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, generate_series(1, 2) AS g FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT g, count(*) AS n FROM events, generate_series(1, 2) g GROUP BY g')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, rank() OVER (ORDER BY count(*)) AS r FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1 ORDER BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1 LIMIT 10')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1 OFFSET 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT DISTINCT ON (kind) kind, at FROM events')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT at FROM events UNION SELECT at FROM events')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, kind, count(*) AS n FROM events GROUP BY ROLLUP (1, 2)')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'WITH RECURSIVE e AS (SELECT * FROM events UNION ALL SELECT * FROM e) SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM e GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, n FROM events FOR UPDATE')$$);
-- 31-36: modes
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(DISTINCT kind) AS kinds FROM events GROUP BY 1', mode => 'streaming')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, array_agg(n) AS ns FROM events GROUP BY 1', mode => 'streaming')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, percentile_cont(0.5) WITHIN GROUP (ORDER BY n) AS p FROM events GROUP BY 1', mode => 'streaming')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', e.at) AS hour, count(*) AS n FROM events e JOIN events f ON e.n = f.n GROUP BY 1', mode => 'streaming')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', mode => 'streaming', eval_interval => '1 minute')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT at, n FROM events', mode => 'batching')$$);
-- 37-41: intervals
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', expire_after => '-1 hour')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', eval_interval => '0 seconds')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', eval_interval => '1 month')$$);
-- eval_interval bounds: at least a second, at most 36500 days, no overflow
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', eval_interval => '0.000001 s')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', eval_interval => '0.999999 s')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', eval_interval => '213503982 days 28909.551616 seconds')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', eval_interval => '213503982 days 28909.551615 seconds')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1', eval_interval => '36501 days')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW f SINK TO bad1 EVAL INTERVAL ''0.000001 s'' AS SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT kind, count(*) AS n FROM events GROUP BY kind', expire_after => '1 day')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT n / 60 * 60 AS minute, count(*) AS c FROM events GROUP BY 1', expire_after => '1 day')$$);
-- 42-45: sources
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events_view GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM temp_events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'events', 'SELECT date_trunc(''hour'', at) AS at, count(*)::int AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'pg_temp.bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
-- 46-52: existing sinks
CREATE TABLE sink_wrong_type (hour timestamptz, n interval);	-- no cast from bigint
CREATE TABLE sink_missing_column (hour timestamptz);
CREATE TABLE sink_no_index (hour timestamptz, n bigint);
CREATE TABLE sink_not_null (hour timestamptz UNIQUE, n bigint, owner_note text NOT NULL);
CREATE TABLE sink_bad_update_at (hour timestamptz UNIQUE, n bigint, update_at text);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'events_view', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'sink_wrong_type', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'sink_missing_column', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'sink_no_index', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'sink_not_null', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'sink_bad_update_at', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'no_schema.bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
-- 53-56: names
SELECT * FROM try($$SELECT flowpg.create_flow('per_minute', 'bad1', 'SELECT date_trunc(''hour'', at) AS hour, count(*) AS n FROM events GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('f', 'metrics_per_minute', 'SELECT device, date_trunc(''minute'', ts) AS minute, count(*) AS n, sum(value) AS total, avg(value) AS mean, min(value) AS lo, max(value) AS hi FROM metrics GROUP BY 1, 2')$$);
SELECT * FROM try($$SELECT flowpg.drop_flow('no_such_flow')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('public.f', 'bad1', 'SELECT count(*) AS n FROM events')$$);
\x off

-- An error in the backfill: the backfill runs after create_flow committed
-- (online, in the worker), so create_flow succeeds; flush_flow, which
-- completes the backfill, reports the error.  The flow and its sink are
-- dropped again, so that the counts below see only the failed calls.
INSERT INTO events VALUES ('2024-01-01', 'a', NULL, 0, '2024-01-01');
SELECT flowpg.create_flow('divides', 'bad_late',
  'SELECT date_trunc(''hour'', at) AS hour, sum(1 / n) AS s FROM events GROUP BY 1') > 0 AS created;
SELECT flowpg.flush_flow('divides');
SELECT flowpg.drop_flow('divides');
DROP TABLE bad_late;
-- A top-level duplicate.
SELECT flowpg.create_flow('per_minute', 'bad2', 'SELECT count(*) AS n FROM events');
-- Errors in the query point into the query (QUERY: and its caret), not
-- into the create_flow call.
SELECT flowpg.create_flow('f', 'bad2',
  'SELECT kind, count(*) AS n FROM events WHERE no_such_column > 0 GROUP BY 1');
SELECT flowpg.create_flow('f', 'bad2', 'SELECT kind, count(* AS n FROM events GROUP BY 1');
SELECT flowpg.create_flow('f', 'bad2', 'SELECT kind, sum(note) AS n FROM events GROUP BY 1');

SELECT count(*) AS leftover_relations FROM pg_class WHERE relname LIKE 'bad%';
SELECT (SELECT count(*) FROM flowpg.flows) - (SELECT count(*) FROM flows_before) AS new_flows;
-- The failed calls also left the unrelated sinks as they were.
SELECT count(*) AS untouched FROM sink_wrong_type;
