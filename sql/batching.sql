-- The batching engine: capture into the dirty log, flush_flow, refresh_flow,
-- flow_stats and flow_errors.  Every case changes a source, flushes the flow
-- and checks the sink against the flow's query (flow_mismatches = 0).
-- Stable output: UTC, ISO dates.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- The worker stays off while the cases run, so that flush_flow does all the
-- work and its results (rows written, pending entries, stats) are exact.
-- It is switched on again at the end, to show that it records errors.
ALTER SYSTEM SET flowpg.enabled = off;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SHOW flowpg.enabled;

CREATE SCHEMA bt;
CREATE TABLE bt.events (ts timestamptz, device int, kind text, amount numeric, ok boolean);
INSERT INTO bt.events
SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '7 minutes',
	   CASE WHEN i % 11 = 0 THEN NULL ELSE i % 4 END,
	   CASE WHEN i % 3 = 0 THEN 'a' WHEN i % 3 = 1 THEN 'b' ELSE NULL END,
	   CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 37 % 100) / 4.0 END,
	   i % 5 <> 0
  FROM generate_series(0, 299) i;		-- 2024-01-01 00:00 .. 2024-01-02 10:53

------------------------------------------------------------------------------
-- Aggregates: count, sum, avg, min, max, stddev, count(DISTINCT), bool_and,
-- percentile_cont; NULL keys and NULL values; several group keys.
------------------------------------------------------------------------------
SELECT flowpg.create_flow('bt_aggs', 'bt.aggs',
  $$SELECT device, kind, date_trunc('hour', ts) AS hour,
		   count(*) AS n, count(amount) AS n_amount, sum(amount) AS total,
		   avg(amount) AS mean, min(amount) AS lo, max(amount) AS hi,
		   stddev(amount) AS sd, count(DISTINCT kind) AS kinds, bool_and(ok) AS all_ok,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median
	  FROM bt.events GROUP BY device, kind, date_trunc('hour', ts)$$) > 0 AS created;
SELECT flowpg.flush_flow('bt_aggs') >= 0 AS backfilled;
SELECT mode, time_column, window_expression FROM flowpg.flows WHERE flow_name = 'bt_aggs';
-- the capture triggers: one per event, on the source only
SELECT tgrelid::regclass, tgname FROM pg_trigger
 WHERE tgname LIKE 'flowpg_capture%' AND tgrelid::regclass::text LIKE 'bt.%' ORDER BY 1::text, 2;
SELECT count(*) AS sink_rows, flow_mismatches('bt_aggs') AS mismatches FROM bt.aggs;
-- nothing pending: flush writes nothing
SELECT flowpg.flush_flow('bt_aggs') AS written;

-- INSERT into one hour (2024-01-01 02:00, which has 8 rows in 8 groups):
-- one dirty log entry, and the flush rewrites exactly that hour's groups.
SELECT count(*) AS groups_0200 FROM bt.aggs WHERE hour = '2024-01-01 02:00+00';
INSERT INTO bt.events VALUES
  ('2024-01-01 02:10+00', 1, 'a', 1000, true),		-- existing group, new max
  ('2024-01-01 02:20+00', 9, 'z', NULL, NULL),		-- new group, NULL values only
  ('2024-01-01 02:30+00', NULL, NULL, 0.25, false);	-- NULL keys
SELECT pending, pending_rows FROM flowpg.flow_stats WHERE flow_name = 'bt_aggs';
SELECT flowpg.flush_flow('bt_aggs') AS written;
SELECT count(*) AS groups_0200 FROM bt.aggs WHERE hour = '2024-01-01 02:00+00';
SELECT pending, pending_rows FROM flowpg.flow_stats WHERE flow_name = 'bt_aggs';
SELECT flow_mismatches('bt_aggs') AS mismatches;
SELECT device, kind, n, n_amount, total, lo, hi, kinds, all_ok, median
  FROM bt.aggs WHERE hour = '2024-01-01 02:00+00' AND (device IS NULL OR device IN (1, 9))
 ORDER BY device NULLS FIRST, kind NULLS FIRST;
-- a second flush has nothing to do
SELECT flowpg.flush_flow('bt_aggs') AS written;
-- statements that change no row log nothing
DELETE FROM bt.events WHERE false;
UPDATE bt.events SET amount = 0 WHERE device = 12345;
SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'bt_aggs';
-- flush_flow needs an existing flow and READ COMMITTED; NULL is an error
SELECT flowpg.flush_flow('bt_nope');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT flowpg.flush_flow('bt_aggs');
ROLLBACK;
SELECT flowpg.flush_flow(NULL);
SELECT flowpg.refresh_flow('bt_nope');

-- Inserts into two distant hours: both are recomputed (10 + 8 groups), not
-- the hours between them.
INSERT INTO bt.events VALUES ('2024-01-01 00:05+00', 2, 'b', 3, true);
INSERT INTO bt.events VALUES ('2024-01-02 10:59+00', 2, 'b', 4, true);
SELECT flowpg.flush_flow('bt_aggs') AS written, flow_mismatches('bt_aggs') AS mismatches;

-- Rows with a NULL time value form a NULL window group; they dirty the whole flow.
INSERT INTO bt.events VALUES (NULL, 1, 'a', 5, true), (NULL, 1, 'a', 7, false);
SELECT flowpg.flush_flow('bt_aggs') > 0 AS wrote, flow_mismatches('bt_aggs') AS mismatches;
SELECT device, kind, n, total, all_ok FROM bt.aggs WHERE hour IS NULL;
DELETE FROM bt.events WHERE ts IS NULL;
SELECT flowpg.flush_flow('bt_aggs') > 0 AS wrote, flow_mismatches('bt_aggs') AS mismatches;
SELECT count(*) AS null_hour_groups FROM bt.aggs WHERE hour IS NULL;

------------------------------------------------------------------------------
-- WHERE and HAVING: groups that stop satisfying HAVING disappear.
------------------------------------------------------------------------------
SELECT flowpg.create_flow('bt_having', 'bt.having_sink',
  $$SELECT kind, date_trunc('hour', ts) AS hour, count(*) AS n, sum(amount) AS total
	  FROM bt.events WHERE amount > 5 AND kind IS NOT NULL
	 GROUP BY kind, date_trunc('hour', ts) HAVING count(*) >= 3$$,
  mode => 'batching') > 0 AS created;
SELECT flowpg.flush_flow('bt_having') >= 0 AS backfilled;
SELECT flow_mismatches('bt_having') AS mismatches;
SELECT kind, n FROM bt.having_sink WHERE hour = '2024-01-01 05:00+00' ORDER BY kind;
-- 2024-01-01 05:00, kind 'a': 3 rows pass WHERE; delete one, the group goes
SELECT count(*) FROM bt.events
 WHERE ts >= '2024-01-01 05:00+00' AND ts < '2024-01-01 06:00+00' AND kind = 'a' AND amount > 5;
DELETE FROM bt.events WHERE ctid = (SELECT min(ctid) FROM bt.events
  WHERE ts >= '2024-01-01 05:00+00' AND ts < '2024-01-01 06:00+00' AND kind = 'a' AND amount > 5);
SELECT flowpg.flush_flow('bt_having') AS written, flow_mismatches('bt_having') AS mismatches;
SELECT kind, n FROM bt.having_sink WHERE hour = '2024-01-01 05:00+00' ORDER BY kind;
-- rows the WHERE filters out change nothing but still recompute the hour
INSERT INTO bt.events VALUES ('2024-01-01 05:01+00', 1, 'a', 1, true),
							 ('2024-01-01 05:02+00', 1, NULL, 50, true);
SELECT flowpg.flush_flow('bt_having') AS written, flow_mismatches('bt_having') AS mismatches;
SELECT kind, n FROM bt.having_sink WHERE hour = '2024-01-01 05:00+00' ORDER BY kind;
-- two rows that pass: the group is back
INSERT INTO bt.events VALUES ('2024-01-01 05:03+00', 1, 'a', 10, true),
							 ('2024-01-01 05:04+00', 2, 'a', 20, true);
SELECT flowpg.flush_flow('bt_having') AS written, flow_mismatches('bt_having') AS mismatches;
SELECT kind, n FROM bt.having_sink WHERE hour = '2024-01-01 05:00+00' ORDER BY kind;

------------------------------------------------------------------------------
-- date_bin with an origin.
------------------------------------------------------------------------------
SELECT flowpg.create_flow('bt_bins', 'bt.bins',
  $$SELECT date_bin('25 minutes', ts, '2023-12-31 23:52:00+00') AS bin, device,
		   count(*) AS n, sum(amount) AS total
	  FROM bt.events GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
SELECT flowpg.flush_flow('bt_bins') >= 0 AS backfilled;
SELECT * FROM flowpg.flow_window_bounds('bt_bins', '2024-01-01 00:17:00+00'::timestamptz);
-- 00:17 starts a bin: rows at 00:16:59 and 00:17 land in different bins
INSERT INTO bt.events VALUES ('2024-01-01 00:16:59+00', 3, 'a', 1, true),
							 ('2024-01-01 00:17:00+00', 3, 'a', 2, true);
SELECT flowpg.flush_flow('bt_bins') AS written, flow_mismatches('bt_bins') AS mismatches;
SELECT bin, n, total FROM bt.bins WHERE device = 3 AND bin < '2024-01-01 01:00+00' ORDER BY bin;

------------------------------------------------------------------------------
-- A join with a dimension table: changing the dimension recomputes the flow.
------------------------------------------------------------------------------
CREATE TABLE bt.devices (id int PRIMARY KEY, region text);
INSERT INTO bt.devices VALUES (0, 'north'), (1, 'north'), (2, 'south'), (3, 'east');
SELECT flowpg.create_flow('bt_regions', 'bt.regions',
  $$SELECT d.region, date_trunc('day', e.ts) AS day, count(*) AS n, sum(e.amount) AS total
	  FROM bt.events e JOIN bt.devices d ON d.id = e.device
	 GROUP BY d.region, date_trunc('day', e.ts)$$) > 0 AS created;
SELECT flowpg.flush_flow('bt_regions') >= 0 AS backfilled;
SELECT mode, source_tables, time_column FROM flowpg.flows WHERE flow_name = 'bt_regions';
SELECT region, day, n FROM bt.regions ORDER BY 1, 2;
-- a fact row
INSERT INTO bt.events VALUES ('2024-01-02 03:00+00', 3, 'b', 1, true);
SELECT flowpg.flush_flow('bt_regions') AS written, flow_mismatches('bt_regions') AS mismatches;
-- the dimension: 'south' vanishes, 'west' appears
UPDATE bt.devices SET region = 'west' WHERE id = 2;
SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'bt_regions';
SELECT flowpg.flush_flow('bt_regions') AS written, flow_mismatches('bt_regions') AS mismatches;
SELECT region, day, n FROM bt.regions ORDER BY 1, 2;
DELETE FROM bt.devices WHERE id = 3;
INSERT INTO bt.devices VALUES (9, 'east');
SELECT flowpg.flush_flow('bt_regions') AS written, flow_mismatches('bt_regions') AS mismatches;
SELECT region, day, n FROM bt.regions ORDER BY 1, 2;
-- a session in another time zone: the flush still uses the flow's days (UTC)
SET TimeZone = 'America/New_York';
INSERT INTO bt.events VALUES ('2024-01-02 02:00+00', 1, 'b', 1, true);	-- Jan 1 in New York
SELECT flowpg.flush_flow('bt_regions') AS written;
SET TimeZone = 'UTC';
SELECT flow_mismatches('bt_regions') AS mismatches;
SELECT region, day, n FROM bt.regions WHERE region = 'north' ORDER BY 1, 2;

------------------------------------------------------------------------------
-- Flows without a time window: a batching one (needs eval_interval) and a
-- streaming-capable one (auto), both recomputed whole.  A global aggregate.
------------------------------------------------------------------------------
SELECT flowpg.create_flow('bt_kinds', 'bt.kinds',
  $$SELECT kind, count(DISTINCT device) AS devices, count(*) AS n FROM bt.events GROUP BY kind$$,
  eval_interval => '30 seconds') > 0 AS created;
SELECT flowpg.create_flow('bt_per_device', 'bt.per_device',
  $$SELECT device, count(*) AS n, sum(amount) AS total, max(ts) AS last_seen
	  FROM bt.events GROUP BY device$$) > 0 AS created;
SELECT flowpg.create_flow('bt_total', 'bt.total',
  $$SELECT count(*) AS n, sum(amount) AS total, min(ts) AS first_seen FROM bt.events$$) > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name IN ('bt_kinds', 'bt_per_device', 'bt_total') ORDER BY flow_id;
SELECT flow_name, mode, time_column, eval_interval FROM flowpg.flows
 WHERE flow_name IN ('bt_kinds', 'bt_per_device', 'bt_total') ORDER BY flow_id;
INSERT INTO bt.events VALUES ('2024-01-01 12:00+00', 7, 'c', 2, true),
							 ('2024-01-01 12:00+00', 8, 'c', 3, true);
SELECT flowpg.flush_flow('bt_kinds') AS written, flow_mismatches('bt_kinds') AS mismatches;
SELECT kind, devices, n FROM bt.kinds ORDER BY kind NULLS FIRST;
SELECT flowpg.flush_flow('bt_per_device') >= 0 AS flushed, flow_mismatches('bt_per_device') AS mismatches;
SELECT flowpg.flush_flow('bt_total') >= 0 AS flushed, flow_mismatches('bt_total') AS mismatches;
SELECT n FROM bt.total;
-- a group vanishes
DELETE FROM bt.events WHERE kind = 'c';
SELECT flowpg.flush_flow('bt_kinds') AS written, flow_mismatches('bt_kinds') AS mismatches;
SELECT kind, devices, n FROM bt.kinds ORDER BY kind NULLS FIRST;
SELECT flowpg.flush_flow('bt_per_device') >= 0 AS flushed, flow_mismatches('bt_per_device') AS mismatches;
SELECT count(*) AS devices_7_8 FROM bt.per_device WHERE device IN (7, 8);
SELECT flowpg.flush_flow('bt_total') >= 0 AS flushed, flow_mismatches('bt_total') AS mismatches;
-- refresh_flow of a flow without a window recomputes all, whatever the range
UPDATE bt.kinds SET n = -1;
SELECT flowpg.refresh_flow('bt_kinds', '2024-01-01', '2024-01-02') AS written,
	   flow_mismatches('bt_kinds') AS mismatches;

------------------------------------------------------------------------------
-- flush_flow return values, and refresh_flow over a range after the sink
-- was damaged on purpose: the range is restored, the rest is untouched.
------------------------------------------------------------------------------
CREATE TABLE bt.ticks (ts timestamptz NOT NULL, k int NOT NULL, v int);
INSERT INTO bt.ticks
SELECT '2024-02-01 00:00+00'::timestamptz + i * interval '10 minutes', i % 2, i
  FROM generate_series(0, 59) i;						-- 10 hours, 6 rows each
SELECT flowpg.create_flow('bt_ticks', 'bt.ticks_hourly',
  $$SELECT k, date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total
	  FROM bt.ticks GROUP BY k, date_trunc('hour', ts)$$, mode => 'batching') > 0 AS created;
SELECT flowpg.flush_flow('bt_ticks') >= 0 AS backfilled;
SELECT count(*) AS sink_rows FROM bt.ticks_hourly;		-- 10 hours x 2 keys
-- one row into hour 03:00: its 2 groups are rewritten
INSERT INTO bt.ticks VALUES ('2024-02-01 03:30+00', 0, 1000);
SELECT flowpg.flush_flow('bt_ticks') AS written;
-- rows into hours 01:00 and 02:00 (one statement): 4 groups
INSERT INTO bt.ticks VALUES ('2024-02-01 01:00+00', 1, 1), ('2024-02-01 02:59:59+00', 1, 1);
SELECT flowpg.flush_flow('bt_ticks') AS written;
-- a new hour with one key: 1 group
INSERT INTO bt.ticks VALUES ('2024-02-01 12:00+00', 1, 5);
SELECT flowpg.flush_flow('bt_ticks') AS written;
-- entries from several transactions, hours 05:00 and 07:00: 4 groups
INSERT INTO bt.ticks VALUES ('2024-02-01 05:10+00', 0, 1);
INSERT INTO bt.ticks VALUES ('2024-02-01 07:10+00', 0, 1);
INSERT INTO bt.ticks VALUES ('2024-02-01 05:20+00', 1, 1);
SELECT pending, pending_rows FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
SELECT flowpg.flush_flow('bt_ticks') AS written;
SELECT flow_mismatches('bt_ticks') AS mismatches;

-- Damage every sink row, then refresh [01:30, 04:00): hours 01:00, 02:00, 03:00.
UPDATE bt.ticks_hourly SET n = -1, total = -1;
SELECT flowpg.refresh_flow('bt_ticks', '2024-02-01 01:30+00', '2024-02-01 04:00+00') AS written;
SELECT hour, count(*) AS groups, bool_and(n = -1) AS damaged FROM bt.ticks_hourly GROUP BY hour ORDER BY hour;
-- an end in the middle of an hour includes that hour; an open start goes back to the first
SELECT flowpg.refresh_flow('bt_ticks', NULL, '2024-02-01 00:00:01+00') AS written;
SELECT flowpg.refresh_flow('bt_ticks', '2024-02-01 06:00+00', '2024-02-01 07:00:00.000001+00') AS written;
SELECT hour, bool_and(n = -1) AS damaged FROM bt.ticks_hourly GROUP BY hour ORDER BY hour;
-- an open end goes to the last window
SELECT flowpg.refresh_flow('bt_ticks', '2024-02-01 09:00+00') AS written;
SELECT hour, bool_and(n = -1) AS damaged FROM bt.ticks_hourly GROUP BY hour ORDER BY hour;
-- no bounds: everything
SELECT flowpg.refresh_flow('bt_ticks') AS written, flow_mismatches('bt_ticks') AS mismatches;
-- a range without windows writes nothing; an empty range is an error
SELECT flowpg.refresh_flow('bt_ticks', '2030-01-01', '2030-01-02') AS written;
SELECT flowpg.refresh_flow('bt_ticks', '2024-02-01 02:00+00', '2024-02-01 02:00+00');
-- refresh_flow also deletes groups that are gone from the source
INSERT INTO bt.ticks_hourly (k, hour, n, total) VALUES (7, '2024-02-01 04:00+00', 1, 1);
SELECT flowpg.refresh_flow('bt_ticks', '2024-02-01 04:00+00', '2024-02-01 05:00+00') AS written;
SELECT count(*) AS stray FROM bt.ticks_hourly WHERE k = 7;
SELECT flow_mismatches('bt_ticks') AS mismatches;

------------------------------------------------------------------------------
-- Rolled-back transactions and savepoints never reach the dirty log or sink.
------------------------------------------------------------------------------
SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
BEGIN;
INSERT INTO bt.ticks VALUES ('2024-02-01 08:00+00', 0, 100000);
SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';	-- appended at commit
ROLLBACK;
SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
SELECT flowpg.flush_flow('bt_ticks') AS written;
SELECT n, total FROM bt.ticks_hourly WHERE hour = '2024-02-01 08:00+00' ORDER BY k;
BEGIN;
INSERT INTO bt.ticks VALUES ('2024-02-01 08:00+00', 0, 1);
SAVEPOINT s1;
INSERT INTO bt.ticks VALUES ('2024-02-01 09:00+00', 0, 100000);
SELECT 1 / 0;	-- an error inside the savepoint
ROLLBACK TO SAVEPOINT s1;
SAVEPOINT s2;
UPDATE bt.ticks SET v = v + 100000 WHERE ts >= '2024-02-01 06:00+00' AND ts < '2024-02-01 07:00+00';
ROLLBACK TO SAVEPOINT s2;
COMMIT;
-- only the first insert's entry (hour 08:00, one row) is logged
SELECT pending, pending_rows FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
SELECT flowpg.flush_flow('bt_ticks') AS written, flow_mismatches('bt_ticks') AS mismatches;
SELECT hour, k, n, total FROM bt.ticks_hourly
 WHERE hour IN ('2024-02-01 06:00+00', '2024-02-01 08:00+00', '2024-02-01 09:00+00') ORDER BY 1, 2;
-- a rolled-back TRUNCATE
BEGIN;
TRUNCATE bt.ticks;
ROLLBACK;
SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
SELECT count(*) AS sink_rows FROM bt.ticks_hourly;
-- prepared transactions: rolled back, never logged; committed, logged
BEGIN;
INSERT INTO bt.ticks VALUES ('2024-02-01 06:30+00', 0, 100000);
PREPARE TRANSACTION 'bt_prepared_1';
SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
ROLLBACK PREPARED 'bt_prepared_1';
BEGIN;
INSERT INTO bt.ticks VALUES ('2024-02-01 06:40+00', 1, 2);
PREPARE TRANSACTION 'bt_prepared_2';
SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
COMMIT PREPARED 'bt_prepared_2';
SELECT pending, pending_rows FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
SELECT flowpg.flush_flow('bt_ticks') AS written, flow_mismatches('bt_ticks') AS mismatches;
SELECT k, n, total FROM bt.ticks_hourly WHERE hour = '2024-02-01 06:00+00' ORDER BY k;

------------------------------------------------------------------------------
-- expire_after: windows older than now() - expire_after are left alone.
------------------------------------------------------------------------------
CREATE TABLE bt.recent (ts timestamptz NOT NULL, v int);
SELECT date_trunc('hour', now()) - interval '3 days' AS old_hour,
	   date_trunc('hour', now()) - interval '2 hours' AS new_hour \gset
INSERT INTO bt.recent VALUES (:'old_hour', 1), (:'old_hour', 2), (:'new_hour', 3);
-- first maintained whole, so the old window has a sink row; then limited
SELECT flowpg.create_flow('bt_recent', 'bt.recent_hourly',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total FROM bt.recent GROUP BY 1$$,
  mode => 'batching') > 0 AS created;
SELECT flowpg.flush_flow('bt_recent') >= 0 AS backfilled;
SELECT flowpg.create_flow('bt_recent', 'bt.recent_hourly',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total FROM bt.recent GROUP BY 1$$,
  mode => 'batching', expire_after => '1 day', or_replace => true) > 0 AS replaced;
SELECT flowpg.flush_flow('bt_recent') >= 0 AS backfilled;
SELECT expire_after FROM flowpg.flows WHERE flow_name = 'bt_recent';
SELECT hour = :'old_hour' AS old, n, total FROM bt.recent_hourly ORDER BY hour;
INSERT INTO bt.recent VALUES (:'old_hour'::timestamptz + interval '1 minute', 10),
							 (:'new_hour'::timestamptz + interval '1 minute', 20);
SELECT flowpg.flush_flow('bt_recent') AS written;
SELECT hour = :'old_hour' AS old, n, total FROM bt.recent_hourly ORDER BY hour;
-- a row moved from the old window to the recent one: only the recent one changes
UPDATE bt.recent SET ts = :'new_hour'::timestamptz + interval '2 minutes' WHERE v = 10;
SELECT flowpg.flush_flow('bt_recent') AS written;
SELECT hour = :'old_hour' AS old, n, total FROM bt.recent_hourly ORDER BY hour;
-- the old window's rows are all deleted: its sink row stays as it was
DELETE FROM bt.recent WHERE ts < :'old_hour'::timestamptz + interval '1 hour';
SELECT flowpg.flush_flow('bt_recent') AS written;
SELECT hour = :'old_hour' AS old, n, total FROM bt.recent_hourly ORDER BY hour;
-- refresh_flow over a range reaching into expired windows leaves them alone
SELECT flowpg.refresh_flow('bt_recent', :'old_hour', :'new_hour') AS written;
SELECT flowpg.refresh_flow('bt_recent') AS written;
SELECT hour = :'old_hour' AS old, n, total FROM bt.recent_hourly ORDER BY hour;
-- the maintained part equals the query
SELECT count(*) AS mismatches FROM (
  (SELECT hour, n, total FROM bt.recent_hourly WHERE hour >= :'new_hour'
   EXCEPT ALL
   SELECT date_trunc('hour', ts), count(*), sum(v) FROM bt.recent
	WHERE ts >= now() - interval '1 day' GROUP BY 1)
  UNION ALL
  (SELECT date_trunc('hour', ts), count(*), sum(v) FROM bt.recent
	WHERE ts >= now() - interval '1 day' GROUP BY 1
   EXCEPT ALL
   SELECT hour, n, total FROM bt.recent_hourly WHERE hour >= :'new_hour')) d;

------------------------------------------------------------------------------
-- flow_stats after the flushes above (the worker was off: exact counts).
------------------------------------------------------------------------------
-- Batching flows: exact counters.  runs counts the flushes that consumed
-- log entries (the flushes right after create_flow, which only complete
-- its backfill, and refresh_flow are not runs);
-- rows_in the rows those entries covered (an UPDATE logs old and new rows).
SELECT flow_name, state, runs, rows_in, rows_out, failures, pending,
	   pending_rows, lag > interval '0' AS lagging, state_groups, state_bytes
  FROM flowpg.flow_stats WHERE flow_name LIKE 'bt\_%' AND mode = 'batching' ORDER BY flow_id;
-- All flows: plausible values.
SELECT flow_name, mode, state, runs > 0 AS ran, rows_in > 0 AS rows_in, rows_out > 0 AS rows_out,
	   failures, last_run_at <= now() AS last_run_ok,
	   last_run_duration >= interval '0' AS duration_ok
  FROM flowpg.flow_stats WHERE flow_name LIKE 'bt\_%' ORDER BY flow_id;

-- Every flow catches up with its pending entries; all sinks equal their
-- queries, except bt_recent's expired window (one sink row the source lost).
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'bt\_%' ORDER BY flow_id;
SELECT flow_name, pending FROM flowpg.flow_stats WHERE flow_name LIKE 'bt\_%' ORDER BY flow_id;

------------------------------------------------------------------------------
-- flow_errors: a sink constraint that new data violates makes the flow fail.
------------------------------------------------------------------------------
ALTER TABLE bt.ticks_hourly ADD CONSTRAINT small_total CHECK (total < 100000);
INSERT INTO bt.ticks VALUES ('2024-02-01 04:30+00', 1, 200000);
\set VERBOSITY terse
SELECT flowpg.flush_flow('bt_ticks');
\set VERBOSITY default
-- the failed flush changed nothing: the entry is still pending
SELECT pending, state FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
-- the worker records the failure: switch it on and wait for it (up to 20 s)
ALTER SYSTEM SET flowpg.enabled = on;
SELECT pg_reload_conf();
DO $$
BEGIN
	FOR i IN 1..200 LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM flowpg.flow_errors WHERE flow_name = 'bt_ticks');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
ALTER SYSTEM SET flowpg.enabled = off;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);	-- this session too must have read the setting (the views below say 'disabled')
SELECT DISTINCT flow_name, sqlstate, message FROM flowpg.flow_errors WHERE flow_name = 'bt_ticks';
SELECT state, failures > 0 AS failed, pending FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
SELECT state, state_reason FROM flowpg.flows WHERE flow_name = 'bt_ticks';
-- fix the data: the next flush succeeds and the flow is active again
UPDATE bt.ticks SET v = 2 WHERE v = 200000;
SELECT flowpg.flush_flow('bt_ticks') AS written, flow_mismatches('bt_ticks') AS mismatches;
SELECT state, pending FROM flowpg.flow_stats WHERE flow_name = 'bt_ticks';
SELECT state, state_reason FROM flowpg.flows WHERE flow_name = 'bt_ticks';

------------------------------------------------------------------------------
-- Clean up: the flows (their triggers go with them), the tables, the setting.
------------------------------------------------------------------------------
INSERT INTO bt.events VALUES ('2024-01-01 03:00+00', 1, 'a', 1, true);	-- left pending
SELECT count(*) > 0 AS pending FROM flowpg.dirty_entries;
SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'bt\_%' ORDER BY flow_id;
SELECT count(*) AS capture_triggers FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = 'bt'::regnamespace AND t.tgname LIKE 'flowpg_capture%';
-- their log entries, counters and errors are gone too
SELECT (SELECT count(*) FROM flowpg.dirty_entries WHERE flow_id NOT IN (SELECT flow_id FROM flowpg.flow)) AS dirty_log,
	   (SELECT count(*) FROM flowpg.flow_run WHERE flow_id NOT IN (SELECT flow_id FROM flowpg.flow)) AS runs,
	   (SELECT count(*) FROM flowpg.flow_error WHERE flow_id NOT IN (SELECT flow_id FROM flowpg.flow)) AS errors;
DROP SCHEMA bt CASCADE;
ALTER SYSTEM RESET flowpg.enabled;
SELECT pg_reload_conf();
