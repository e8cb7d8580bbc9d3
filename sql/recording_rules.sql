-- Recording rules: batching flows whose GROUP BY keys use now() (the tick's
-- time) keep the groups of every tick; WITH queries in batching flows.
-- GreptimeDB's cases run their flow statements verbatim through
-- flowpg.execute, with the source tables' DDL translated.  Where GreptimeDB
-- sleeps, the suite polls with a bounded wait instead (it must not depend
-- on how fast a loaded machine is), then reads the sink in one snapshot.

-- wait_until(condition, seconds): polls until the condition holds, at most
-- that long, and says whether it did
-- (a procedure: each poll sees what the worker committed since the last)
CREATE PROCEDURE wait_until(cond text, seconds int)
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean;
BEGIN
	FOR i IN 1..seconds * 20 LOOP
		EXECUTE 'SELECT coalesce((' || cond || '), false)' INTO ok;
		EXIT WHEN ok;
		COMMIT;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RAISE NOTICE 'waited for %: %', cond, CASE WHEN ok THEN 'true' ELSE 'timed out' END;
END $$;
SET client_min_messages = notice;

---------------------------------------------------------------------------
-- GreptimeDB's flow_eval_interval_schedule: a row per tick, earlier ticks'
-- rows stay
---------------------------------------------------------------------------
CREATE TABLE eval_interval_schedule_input (
  ts timestamp(3) NOT NULL,
  series text,
  v double precision,
  PRIMARY KEY (series, ts)
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW eval_interval_schedule_flow
SINK TO eval_interval_schedule_sink
EVAL INTERVAL '1s'
AS
SELECT
  date_trunc('second', now()) AS ts,
  count(v) AS value_count
FROM eval_interval_schedule_input
GROUP BY date_trunc('second', now());
$$);

INSERT INTO eval_interval_schedule_input VALUES
  ('2026-06-25 00:00:00', 'a', 1.0);

-- (GreptimeDB: SQLNESS SLEEP 5s)
CALL wait_until($$SELECT count(DISTINCT ts) >= 2 FROM eval_interval_schedule_sink WHERE value_count > 0$$, 60);
SELECT
  count(DISTINCT ts) >= 2 AS has_multiple_scheduled_ticks,
  min(value_count) AS min_value_count,
  max(value_count) AS max_value_count
FROM eval_interval_schedule_sink
WHERE value_count > 0;

-- what flowpg says of it
SELECT mode, eval_interval, mode_reason FROM flowpg.flows
 WHERE flow_name = 'eval_interval_schedule_flow';
SELECT regexp_replace(line, 'FROM \(.*\) q', 'FROM (<the query>) q') AS line
  FROM flowpg.explain_flow('eval_interval_schedule_flow') AS line
 WHERE line ~ '^(Window|Eval interval|  Recording rule|Refresh|  Delete|  Insert)';
-- every row is a tick's: a whole second, one row per second
SELECT bool_and(ts = date_trunc('second', ts)) AS on_ticks, count(*) = count(DISTINCT ts) AS one_row_a_tick
FROM eval_interval_schedule_sink;
-- the last tick's rows are the query's at that tick
SELECT flowpg.verify_flow('eval_interval_schedule_flow', 0);

SELECT flow_name, result FROM flowpg.execute($$DROP FLOW eval_interval_schedule_flow$$);
DROP TABLE eval_interval_schedule_sink;
DROP TABLE eval_interval_schedule_input;

---------------------------------------------------------------------------
-- GreptimeDB's flow_scheduled_now_boundary: now() only in WHERE (and as an
-- output): not a recording rule, the sink is the query at the last tick
---------------------------------------------------------------------------
CREATE TABLE now_boundary_input (
  ts timestamp(3) NOT NULL,
  v double precision,
  PRIMARY KEY (v, ts)
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW now_boundary_flow
SINK TO now_boundary_sink
EVAL INTERVAL '1s'
AS
SELECT
  date_bin(INTERVAL '1 second', ts) AS window_start,
  count(v) AS value_count,
  now() AS create_time,
  current_timestamp() AS cur_ts
FROM now_boundary_input
WHERE ts >= date_trunc('second', now()) - INTERVAL '1 second'
  AND ts <  date_trunc('second', current_timestamp())
GROUP BY date_bin(INTERVAL '1 second', ts);
$$);

INSERT INTO now_boundary_input VALUES
  (date_trunc('second', now()) - INTERVAL '1 second', 0.0),
  (date_trunc('second', now()), 1.0),
  (date_trunc('second', now()) + INTERVAL '1 second', 2.0),
  (date_trunc('second', now()) + INTERVAL '2 seconds', 3.0),
  (date_trunc('second', now()) + INTERVAL '3 seconds', 4.0),
  (date_trunc('second', now()) + INTERVAL '4 seconds', 5.0),
  (date_trunc('second', now()) + INTERVAL '5 seconds', 6.0),
  (date_trunc('second', now()) + INTERVAL '6 seconds', 7.0),
  (date_trunc('second', now()) + INTERVAL '7 seconds', 8.0);

-- (GreptimeDB: SQLNESS SLEEP 4s; the rows cover eight seconds of ticks)
CALL wait_until($$SELECT count(*) >= 1 FROM now_boundary_sink WHERE value_count > 0$$, 60);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT
  count(DISTINCT window_start) >= 1 AS has_selected_window,
  min(value_count) AS min_value_count,
  max(value_count) AS max_value_count,
  bool_and(create_time = date_trunc('second', create_time)) AS all_create_time_at_second_boundary,
  bool_and(cur_ts = create_time) AS cur_ts_equals_create_time,
  bool_and(window_start = create_time - INTERVAL '1 second') AS all_windows_match_scheduled_previous_second
FROM now_boundary_sink
WHERE value_count > 0;

-- The WHERE clause should select exactly the previous scheduled second.
-- It intentionally uses both now() and current_timestamp() in filter bounds.
-- If the distributed analyzer folds now()/current_timestamp() with wall-clock time, the remote
-- filter shifts forward and this invariant fails: window_start becomes equal
-- to create_time instead of create_time - 1s.
SELECT
  bool_and(value_count = 1) AS all_value_count_equals_one
FROM now_boundary_sink
WHERE value_count > 0;
-- flowpg: the sink holds the last tick's result only
SELECT count(*) AS sink_rows FROM now_boundary_sink;
COMMIT;
SELECT options::jsonb ? 'recording_rule' AS recording_rule FROM flowpg.flow WHERE flow_name = 'now_boundary_flow';

SELECT flow_name, result FROM flowpg.execute($$DROP FLOW now_boundary_flow$$);
DROP TABLE now_boundary_sink;
DROP TABLE now_boundary_input;

---------------------------------------------------------------------------
-- GreptimeDB's flow_scheduled_late_overlap: WITH queries, a join, an
-- ordered last_value aggregate, rows arriving late.
---------------------------------------------------------------------------
CREATE TABLE scheduled_late_overlap_input (
  ts timestamp(3) NOT NULL,
  series text,
  reading double precision,
  PRIMARY KEY (series, ts)
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW scheduled_late_overlap_flow
SINK TO scheduled_late_overlap_sink
EVAL INTERVAL '1s'
AS
WITH
target_offsets(delta) AS (
  VALUES
    (INTERVAL '1 second'),
    (INTERVAL '2 seconds'),
    (INTERVAL '3 seconds'),
    (INTERVAL '4 seconds'),
    (INTERVAL '5 seconds'),
    (INTERVAL '6 seconds'),
    (INTERVAL '7 seconds'),
    (INTERVAL '8 seconds'),
    (INTERVAL '9 seconds'),
    (INTERVAL '10 seconds')
),
target_seconds AS (
  SELECT date_trunc('second', now()) - delta AS target_ts
  FROM target_offsets
),
bucketed AS (
  SELECT
    series,
    date_bin(INTERVAL '1 second', ts) AS bucket_ts,
    last_value(reading ORDER BY ts) AS reading
  FROM scheduled_late_overlap_input
  WHERE ts >= date_trunc('second', now()) - INTERVAL '20 seconds'
    AND ts <  date_trunc('second', now())
  GROUP BY series, date_bin(INTERVAL '1 second', ts)
)
SELECT
  target_seconds.target_ts AS ts,
  bucketed.series,
  bucketed.reading,
  now() AS create_time
FROM target_seconds
JOIN bucketed
  ON bucketed.bucket_ts = target_seconds.target_ts;
$$);

INSERT INTO scheduled_late_overlap_input VALUES
  (date_trunc('second', now()), 'seed', 1.0);

-- (GreptimeDB: SQLNESS SLEEP 3s) the seed is in the sink
CALL wait_until($$SELECT count(*) >= 1 FROM scheduled_late_overlap_sink WHERE series = 'seed'$$, 60);
INSERT INTO scheduled_late_overlap_input
SELECT min(ts), 'late_a', 10.0 FROM scheduled_late_overlap_input
UNION ALL
SELECT min(ts), 'late_b', 11.0 FROM scheduled_late_overlap_input;

-- (GreptimeDB: SQLNESS SLEEP 4s) a tick after the late rows: the seed's
-- second is within the ten seconds a tick rewrites for ten ticks
CALL wait_until($$SELECT count(DISTINCT series) >= 3 FROM scheduled_late_overlap_sink WHERE ts = (SELECT min(ts) FROM scheduled_late_overlap_input)$$, 60);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT
  count(DISTINCT series) >= 3 AS replayed_late_series,
  bool_and(ts < create_time) AS all_ts_before_create_time,
  bool_and(ts >= create_time - INTERVAL '10 seconds') AS all_ts_within_overlap_window
FROM scheduled_late_overlap_sink
WHERE ts = (SELECT min(ts) FROM scheduled_late_overlap_input);
COMMIT;

SELECT flow_name, result FROM flowpg.execute($$DROP FLOW scheduled_late_overlap_flow$$);
DROP TABLE scheduled_late_overlap_sink;
DROP TABLE scheduled_late_overlap_input;

-- The same flow with max(reading) for last_value(reading ORDER BY ts)
-- (one reading a series and second): the WITH queries, the join and the
-- late rows, compared with the query at a tick.
CREATE TABLE late_input (
  ts timestamp(3) NOT NULL,
  series text,
  reading double precision,
  PRIMARY KEY (series, ts)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW late_max_flow
SINK TO late_max_sink
EVAL INTERVAL '1s'
AS
WITH
target_offsets(delta) AS (
  VALUES (INTERVAL '1 second'), (INTERVAL '2 seconds'), (INTERVAL '3 seconds'),
         (INTERVAL '4 seconds'), (INTERVAL '5 seconds'), (INTERVAL '6 seconds'),
         (INTERVAL '7 seconds'), (INTERVAL '8 seconds'), (INTERVAL '9 seconds'),
         (INTERVAL '10 seconds')
),
target_seconds AS (
  SELECT date_trunc('second', now()) - delta AS target_ts
  FROM target_offsets
),
bucketed AS (
  SELECT
    series,
    date_bin(INTERVAL '1 second', ts) AS bucket_ts,
    max(reading) AS reading
  FROM late_input
  WHERE ts >= date_trunc('second', now()) - INTERVAL '20 seconds'
    AND ts <  date_trunc('second', now())
  GROUP BY series, date_bin(INTERVAL '1 second', ts)
)
SELECT
  target_seconds.target_ts AS ts,
  bucketed.series,
  bucketed.reading,
  now() AS create_time
FROM target_seconds
JOIN bucketed
  ON bucketed.bucket_ts = target_seconds.target_ts;
$$);
SELECT mode, source_tables, mode_reason FROM flowpg.flows WHERE flow_name = 'late_max_flow';
INSERT INTO late_input VALUES (date_trunc('second', now()), 'seed', 1.0);
CALL wait_until($$SELECT count(*) >= 1 FROM late_max_sink WHERE series = 'seed'$$, 60);
INSERT INTO late_input
SELECT min(ts), 'late_a', 10.0 FROM late_input
UNION ALL
SELECT min(ts), 'late_b', 11.0 FROM late_input;
CALL wait_until($$SELECT count(DISTINCT series) >= 3 FROM late_max_sink WHERE ts = (SELECT min(ts) FROM late_input)$$, 60);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT
  count(DISTINCT series) >= 3 AS replayed_late_series,
  bool_and(ts < create_time) AS all_ts_before_create_time,
  bool_and(ts >= create_time - INTERVAL '10 seconds') AS all_ts_within_overlap_window
FROM late_max_sink
WHERE ts = (SELECT min(ts) FROM late_input);
COMMIT;
-- not a recording rule (no GROUP BY): flushed, the sink is the query now
BEGIN;
SELECT flowpg.flush_flow('late_max_flow') >= 0 AS flushed;
SELECT flow_mismatches('late_max_flow');
SELECT flowpg.verify_flow('late_max_flow', 0);
COMMIT;
SELECT flow_name, result FROM flowpg.execute($$DROP FLOW late_max_flow$$);
DROP TABLE late_max_sink;
DROP TABLE late_input;

---------------------------------------------------------------------------
-- A native recording rule: flush_flow, refresh_flow and ADMIN FLUSH_FLOW
-- upsert the rows of the current tick; earlier ticks' rows stay as they
-- were computed.  The worker stays off meanwhile: only this session
-- evaluates, each time in a later second than before.
---------------------------------------------------------------------------
ALTER SYSTEM SET flowpg.enabled = off;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
-- next_second(): sleeps into the next whole second
CREATE FUNCTION next_second() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	target timestamptz := date_trunc('second', clock_timestamp()) + interval '1 second';
BEGIN
	WHILE clock_timestamp() < target LOOP
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
CREATE TABLE rr_src (ts timestamptz NOT NULL, host text, v int);
INSERT INTO rr_src VALUES
  ('2024-01-01 00:00:00+00', 'a', 1), ('2024-01-01 00:00:01+00', 'a', 2),
  ('2024-01-01 00:00:02+00', 'b', 5);
SELECT flowpg.create_flow('rr_native', 'rr_native_out',
    $$SELECT now() AS at, host, count(*) AS n, sum(v) AS total FROM rr_src GROUP BY now(), host$$,
    eval_interval => '1 second') > 0 AS created;
SELECT mode, mode_reason FROM flowpg.flows WHERE flow_name = 'rr_native';
SELECT options->'recording_rule' AS recording_rule FROM flowpg.flow WHERE flow_name = 'rr_native';
-- the sink: a unique index on the group keys, which the upserts use
SELECT indexdef FROM pg_indexes WHERE tablename = 'rr_native_out';
SELECT next_second();
BEGIN;
SELECT flowpg.flush_flow('rr_native');
SELECT date_trunc('second', now()) AS t1 \gset
COMMIT;
-- each row's key is a tick: now() was the tick's time
SELECT count(*) AS rows, bool_and(at = date_trunc('second', at)) AS on_ticks FROM rr_native_out;
-- changes of the source: UPDATE, DELETE, INSERT
UPDATE rr_src SET v = v * 10 WHERE host = 'a';
DELETE FROM rr_src WHERE host = 'b';
INSERT INTO rr_src VALUES ('2024-01-01 00:00:03+00', 'c', 7);
SELECT next_second();
BEGIN;
SELECT flowpg.flush_flow('rr_native');
SELECT date_trunc('second', now()) AS t2 \gset
-- this tick's rows are the query's at this tick
SELECT count(*) AS tick_mismatches FROM (
  (SELECT at, host, n, total FROM rr_native_out WHERE at = :'t2'
   EXCEPT ALL SELECT :'t2'::timestamptz, host, count(*), sum(v) FROM rr_src GROUP BY host)
  UNION ALL
  (SELECT :'t2'::timestamptz, host, count(*), sum(v) FROM rr_src GROUP BY host
   EXCEPT ALL SELECT at, host, n, total FROM rr_native_out WHERE at = :'t2')) d;
COMMIT;
-- the first tick's rows stay as they were computed: b is still there, a
-- has its old total
SELECT CASE at WHEN :'t1' THEN 't1' WHEN :'t2' THEN 't2' END AS tick, host, n, total
  FROM rr_native_out WHERE at IN (:'t1', :'t2') ORDER BY at, host;
-- verify_flow checks the last tick's groups
SELECT flowpg.verify_flow('rr_native', 0);
-- ... and finds the sink behind once the source changed since
INSERT INTO rr_src VALUES ('2024-01-01 00:00:04+00', 'c', 1);
SELECT flowpg.verify_flow('rr_native', 0);
-- a flush within the same tick brings that tick's rows up to date (one
-- later, on a loaded machine, adds its own)
BEGIN;
SELECT flowpg.flush_flow('rr_native') > 0 AS flushed;
SELECT date_trunc('second', now()) = :'t2' AS same_tick \gset
COMMIT;
SELECT :'same_tick' = 'f' OR (SELECT total FROM rr_native_out WHERE at = :'t2' AND host = 'c') = 8
    AS current_tick_updated;
SELECT flowpg.verify_flow('rr_native', 0);
-- refresh_flow adds the current tick's rows too (a range is no different)
SELECT next_second();
BEGIN;
SELECT flowpg.refresh_flow('rr_native', now() - interval '1 hour', now());
SELECT date_trunc('second', now()) AS t3 \gset
COMMIT;
SELECT flowpg.verify_flow('rr_native', 0);
-- ADMIN FLUSH_FLOW as flush_flow
SELECT next_second();
BEGIN;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('rr_native')$$);
SELECT date_trunc('second', now()) AS t4 \gset
COMMIT;
SELECT CASE at WHEN :'t3' THEN 't3' WHEN :'t4' THEN 't4' END AS tick, host, n, total
  FROM rr_native_out WHERE at IN (:'t3', :'t4') ORDER BY at, host;
SELECT count(DISTINCT at) FILTER (WHERE at IN (:'t1', :'t2', :'t3', :'t4')) AS ticks,
       bool_and(at = date_trunc('second', at)) AS on_ticks
  FROM rr_native_out;
-- a TRUNCATE of the sink drops the history: the next run adds its tick only
TRUNCATE rr_native_out;
SELECT flowpg.flush_flow('rr_native');
SELECT count(DISTINCT at) AS ticks, count(*) AS groups FROM rr_native_out;
SELECT flowpg.drop_flow('rr_native');
DROP TABLE rr_native_out;

-- expire_after: at each tick, rows whose now() key is older than the
-- tick's time minus it are deleted (before the tick writes its own)
SELECT flowpg.create_flow('rr_expire', 'rr_expire_out',
    $$SELECT date_trunc('minute', now()) AS minute, count(*) AS n FROM rr_src GROUP BY 1$$,
    eval_interval => '1 second', expire_after => '1 hour') > 0 AS created;
SELECT line FROM flowpg.explain_flow('rr_expire') AS line
 WHERE line ~ '^(  Recording rule|  Expire after|Refresh|  Delete)';
-- rows of earlier ticks (as the worker would have written them)
BEGIN;
INSERT INTO rr_expire_out (minute, n)
VALUES (date_trunc('minute', now()) - interval '2 hours', 100),
       (date_trunc('minute', now()) - interval '61 minutes', 150),
       (date_trunc('minute', now()) - interval '30 minutes', 200);
SELECT flowpg.flush_flow('rr_expire');
SELECT CASE WHEN minute = date_trunc('minute', now()) THEN 'now'
            ELSE (date_trunc('minute', now()) - minute)::text END AS age, n
  FROM rr_expire_out ORDER BY minute;
COMMIT;
SELECT flowpg.verify_flow('rr_expire', 0);
SELECT flowpg.drop_flow('rr_expire');
DROP TABLE rr_expire_out;
-- a recording rule with a time window over the source too: the window is
-- one more key (changes wait for the tick), expire_after is the now() key's
SELECT flowpg.create_flow('rr_window', 'rr_window_out',
    $$SELECT date_trunc('day', now()) AS day, date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total
        FROM rr_src GROUP BY 1, 2$$,
    eval_interval => '1 second', expire_after => '2 days') > 0 AS created;
-- explain_flow says the time column has no index: a hash index cannot
-- serve a window's range of times
CREATE INDEX rr_src_ts_hash ON rr_src USING hash (ts);
SELECT line FROM flowpg.explain_flow('rr_window') AS line
 WHERE line ~ '^(Window|  Time column|  Recording rule|  Expire after|Refresh|  Delete)';
DROP INDEX rr_src_ts_hash;
INSERT INTO rr_src VALUES ('2024-01-01 05:00:00+00', 'd', 9);
BEGIN;
SELECT flowpg.flush_flow('rr_window') > 0 AS flushed;
SELECT count(*) AS tick_mismatches FROM (
  (SELECT day, hour, n, total FROM rr_window_out WHERE day = date_trunc('day', now())
   EXCEPT ALL SELECT date_trunc('day', now()), date_trunc('hour', ts), count(*), sum(v) FROM rr_src GROUP BY 2)
  UNION ALL
  (SELECT date_trunc('day', now()), date_trunc('hour', ts), count(*), sum(v) FROM rr_src GROUP BY 2
   EXCEPT ALL SELECT day, hour, n, total FROM rr_window_out WHERE day = date_trunc('day', now()))) d;
COMMIT;
SELECT hour, n, total FROM rr_window_out ORDER BY hour;
SELECT flowpg.verify_flow('rr_window', 0);
SELECT flowpg.drop_flow('rr_window');
DROP TABLE rr_window_out;

-- a group the current tick no longer yields leaves the sink: each
-- evaluation replaces the rows of its own tick
CREATE TABLE rr_dev (device int, v int);
INSERT INTO rr_dev VALUES (1, 1), (2, 1);
SELECT flowpg.create_flow('rr_vanish', 'rr_vanish_out',
  $$SELECT date_trunc('year', now()) AS tick, device, count(*) AS n FROM rr_dev GROUP BY 1, 2$$,
  mode => 'batching', eval_interval => '1 hour') > 0 AS created;
SELECT flowpg.flush_flow('rr_vanish') >= 0 AS flushed;
SELECT device, n FROM rr_vanish_out ORDER BY device;
DELETE FROM rr_dev WHERE device = 2;
SELECT flowpg.flush_flow('rr_vanish') >= 0 AS flushed;
SELECT device, n FROM rr_vanish_out ORDER BY device;
SELECT flowpg.verify_flow('rr_vanish', 0);
-- a row of the current tick the query does not yield is found
INSERT INTO rr_vanish_out (tick, device, n) VALUES (date_trunc('year', now()), 3, 7);
SELECT flowpg.verify_flow('rr_vanish', 0);
-- rows of another tick are not the current tick's: not compared, kept
DELETE FROM rr_vanish_out WHERE device = 3;
INSERT INTO rr_vanish_out (tick, device, n) VALUES (date_trunc('year', now()) - interval '1 year', 3, 7);
SELECT flowpg.verify_flow('rr_vanish', 0);
SELECT flowpg.flush_flow('rr_vanish') >= 0 AS flushed;
SELECT extract(year FROM age(date_trunc('year', now()), tick)) AS years_ago, device, n
  FROM rr_vanish_out ORDER BY 1, 2;
SELECT flowpg.drop_flow('rr_vanish');
DROP TABLE rr_vanish_out;

-- a key mixing now() with a column is a sliding window, not a tick: the
-- flow is recomputed whole and its sink is the query's result
SELECT flowpg.create_flow('rr_sliding', 'rr_sliding_out',
  $$SELECT device, (v > extract(year FROM now()) - 5000) AS recent, count(*) AS n
      FROM rr_dev GROUP BY 1, 2$$, mode => 'batching', eval_interval => '1 hour') > 0 AS created;
SELECT btrim(line) AS line FROM flowpg.explain_flow('rr_sliding') AS line WHERE line ~ 'Recording rule|Uses now';
SELECT flowpg.flush_flow('rr_sliding') >= 0 AS flushed;
UPDATE rr_dev SET v = 0;
SELECT flowpg.flush_flow('rr_sliding') >= 0 AS flushed;
SELECT device, recent, n FROM rr_sliding_out ORDER BY 1, 2;
SELECT flow_mismatches('rr_sliding');
SELECT flowpg.drop_flow('rr_sliding');
DROP TABLE rr_sliding_out;

-- a flow of 0.2 (no recording rules then) grouping by the tick with
-- expire_after but no time-typed tick key, which create_flow now refuses:
-- recomputed whole within expire_after, as 0.2 did
CREATE TABLE rr_old (ts timestamptz, v int);
INSERT INTO rr_old VALUES (now(), 1), (now(), 2);
SELECT flowpg.create_flow('rr_old', 'rr_old_out',
  $$SELECT date_trunc('hour', ts) AS hour, to_char(now(), 'YYYY') AS yr, count(*) AS n FROM rr_old GROUP BY 1, 2$$,
  mode => 'batching', eval_interval => '1 hour') > 0 AS created;
UPDATE flowpg.flow SET expire_after = '1 day' WHERE flow_name = 'rr_old';
SELECT count(*) > 0 AS explained FROM flowpg.explain_flow('rr_old');
SELECT flowpg.flush_flow('rr_old') >= 0 AS flushed;
SELECT yr = to_char(now(), 'YYYY') AS this_year, n FROM rr_old_out;
SELECT flow_mismatches('rr_old');
SELECT flowpg.drop_flow('rr_old');
DROP TABLE rr_old_out, rr_old, rr_dev;
ALTER SYSTEM RESET flowpg.enabled;
SELECT pg_reload_conf();
DROP FUNCTION next_second();

-- refusals, each leaving nothing behind
SET client_min_messages = warning;
-- expire_after needs a now() key of a time type
SELECT * FROM try($$SELECT flowpg.create_flow('rr_bad', 'rr_bad_out',
    $q$SELECT to_char(now(), 'YYYY') AS year, count(*) AS n FROM rr_src GROUP BY 1$q$,
    eval_interval => '1 day', expire_after => '1 hour')$$);
-- a recording rule cannot stream
SELECT * FROM try($$SELECT flowpg.create_flow('rr_bad', 'rr_bad_out',
    $q$SELECT now() AS at, count(*) AS n FROM rr_src GROUP BY 1$q$, mode => 'streaming')$$);
-- nor run without ticks
SELECT * FROM try($$SELECT flowpg.create_flow('rr_bad', 'rr_bad_out',
    $q$SELECT now() AS at, count(*) AS n FROM rr_src GROUP BY 1$q$)$$);
-- a sink without a unique index on the keys
CREATE TABLE rr_bad_out (at timestamptz, n bigint);
SELECT * FROM try($$SELECT flowpg.create_flow('rr_bad', 'rr_bad_out',
    $q$SELECT now() AS at, count(*) AS n FROM rr_src GROUP BY 1$q$, eval_interval => '1 day')$$);
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name = 'rr_bad';
SELECT count(*) AS rows_left FROM rr_bad_out;
DROP TABLE rr_bad_out;
SELECT count(*) AS tables_left FROM pg_class WHERE relname = 'rr_bad_out';
SET client_min_messages = notice;

---------------------------------------------------------------------------
-- WITH queries in batching flows
---------------------------------------------------------------------------
CREATE TABLE cte_dim (device int PRIMARY KEY, zone text);
INSERT INTO cte_dim SELECT d, CASE WHEN d % 2 = 0 THEN 'even' ELSE 'odd' END FROM generate_series(0, 19) d;
-- a CTE over a second table, joined: recomputed whole on its ticks
SELECT flowpg.create_flow('cte_zones', 'cte_zones_out',
    $$WITH z AS (SELECT device, zone FROM cte_dim WHERE zone IS NOT NULL),
           hot AS MATERIALIZED (SELECT device, value FROM metrics WHERE value > 50)
      SELECT z.zone, count(*) AS n, sum(hot.value) AS total
        FROM hot JOIN z USING (device) GROUP BY z.zone$$,
    eval_interval => '1 hour') > 0 AS created;
SELECT f.mode, f.source_tables, g.window_expr FROM flowpg.flows f JOIN flowpg.flow g USING (flow_name)
 WHERE flow_name = 'cte_zones';
SELECT flowpg.flush_flow('cte_zones') >= 0 AS flushed;
SELECT flow_mismatches('cte_zones');
-- a change of a table only the CTE reads is captured
UPDATE cte_dim SET zone = 'odd' WHERE device = 4;
INSERT INTO metrics VALUES ('2024-03-01 12:00:00+00', 4, 99);
SELECT flowpg.flush_flow('cte_zones') > 0 AS flushed;
SELECT flow_mismatches('cte_zones'), flowpg.verify_flow('cte_zones', 0);
-- the CTE's table is a dependency of the flow
SELECT * FROM try('DROP TABLE cte_dim');
-- a time window over the query's own table, with a CTE over the same
-- table: a change may move other windows, so it recomputes the whole flow
SELECT flowpg.create_flow('cte_window', 'cte_window_out',
    $$WITH top AS (SELECT device, max(value) AS top FROM metrics GROUP BY device)
      SELECT date_trunc('hour', m.ts) AS hour, count(*) AS n
        FROM metrics m JOIN top USING (device) WHERE m.value >= top.top / 2
       GROUP BY 1$$, mode => 'batching') > 0 AS created;
SELECT mode, window_expr FROM flowpg.flow WHERE flow_name = 'cte_window';
SELECT flowpg.flush_flow('cte_window') >= 0 AS flushed;
SELECT flow_mismatches('cte_window');
INSERT INTO metrics VALUES ('2024-03-01 23:00:00+00', 7, 1000);
SELECT flowpg.flush_flow('cte_window') > 0 AS flushed;
SELECT flow_mismatches('cte_window');
DELETE FROM metrics WHERE value = 1000 OR (ts = '2024-03-01 12:00:00+00' AND value = 99);
SELECT flowpg.flush_flow('cte_window') > 0 AS flushed;
SELECT flowpg.flush_flow('cte_zones') > 0 AS flushed;
SELECT flow_mismatches('cte_window'), flow_mismatches('cte_zones');
-- through flowpg.execute, a CTE named like no table (and one named like the source)
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW cte_greptime SINK TO cte_greptime_out EVAL INTERVAL '1 hour' AS
WITH metrics AS (SELECT device, value FROM public.metrics WHERE value IS NOT NULL),
     big AS (SELECT device FROM metrics WHERE value > 90)
SELECT device, count(*) AS n FROM big GROUP BY device$$);
SELECT flowpg.flush_flow('cte_greptime') >= 0 AS flushed;
SELECT flow_mismatches('cte_greptime'), source_tables FROM flowpg.flows WHERE flow_name = 'cte_greptime';
SELECT flowpg.drop_flow('cte_greptime');
DROP TABLE cte_greptime_out;

-- refused: WITH RECURSIVE (at any level), data-modifying WITH, streaming
SET client_min_messages = warning;
SELECT * FROM try($$SELECT flowpg.create_flow('cte_bad', 'cte_bad_out',
    $q$WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3)
       SELECT device, count(*) AS n FROM metrics JOIN r ON r.n = metrics.device GROUP BY device$q$,
    eval_interval => '1 hour')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('cte_bad', 'cte_bad_out',
    $q$SELECT device, count(*) AS n FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3)
       SELECT n FROM r) r JOIN metrics ON r.n = metrics.device GROUP BY device$q$,
    eval_interval => '1 hour')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('cte_bad', 'cte_bad_out',
    $q$WITH gone AS (DELETE FROM cte_dim WHERE device = 1 RETURNING device)
       SELECT device, count(*) AS n FROM metrics JOIN gone USING (device) GROUP BY device$q$,
    eval_interval => '1 hour')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('cte_bad', 'cte_bad_out',
    $q$WITH m AS (SELECT device FROM metrics) SELECT device, count(*) AS n FROM m GROUP BY device$q$,
    mode => 'streaming')$$);
SELECT count(*) AS rows_kept FROM cte_dim WHERE device = 1;
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name = 'cte_bad';
SELECT count(*) AS tables_left FROM pg_class WHERE relname = 'cte_bad_out';
-- the creator must be able to read what the CTEs read
CREATE ROLE recording_cte_user;
GRANT USAGE, CREATE ON SCHEMA public TO recording_cte_user;
GRANT SELECT ON metrics TO recording_cte_user;
SET ROLE recording_cte_user;
SELECT * FROM try($$SELECT flowpg.create_flow('cte_bad', 'cte_bad_out',
    $q$WITH z AS (SELECT device, zone FROM cte_dim)
       SELECT zone, count(*) AS n FROM metrics JOIN z USING (device) GROUP BY zone$q$,
    eval_interval => '1 hour')$$);
RESET ROLE;
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name = 'cte_bad';
REVOKE ALL ON SCHEMA public FROM recording_cte_user;
REVOKE ALL ON metrics FROM recording_cte_user;
DROP ROLE recording_cte_user;
SET client_min_messages = notice;

SELECT flowpg.drop_flow('cte_zones'), flowpg.drop_flow('cte_window');
DROP TABLE cte_zones_out, cte_window_out, cte_dim, rr_src;
DROP PROCEDURE wait_until(text, int);
