-- The batching engine under every kind of change to a source: INSERT, COPY,
-- UPDATE (also of the time column), DELETE, MERGE, TRUNCATE; several flows
-- on one source with time columns of type timestamptz, timestamp, date and
-- an integer epoch; a partitioned source; a writer with INSERT rights only.
-- After each change every flow is flushed and compared with its query.
-- Stable output: UTC, ISO dates.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- The worker stays off: flush_flow does the work and its results are exact.
ALTER SYSTEM SET flowpg.enabled = off;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SHOW flowpg.enabled;

CREATE SCHEMA bo;
-- One source, four time columns that agree with each other.
CREATE TABLE bo.readings (ts timestamptz, at_local timestamp, day date, epoch bigint,
						  sensor int, reading numeric);
INSERT INTO bo.readings
SELECT t, t AT TIME ZONE 'UTC', (t AT TIME ZONE 'UTC')::date, extract(epoch FROM t)::bigint,
	   i % 3, (i * 17 % 50) / 2.0
  FROM generate_series(0, 191) i,
	   LATERAL (SELECT '2024-01-31 00:00+00'::timestamptz + i * interval '15 minutes' AS t) x;
SELECT count(*), min(ts), max(ts) FROM bo.readings;

-- Six flows on it.
SELECT flowpg.create_flow('bo_hourly', 'bo.hourly',		-- timestamptz, streaming-capable
  $$SELECT sensor, date_trunc('hour', ts) AS hour, count(*) AS n, sum(reading) AS total,
		   min(reading) AS lo, max(reading) AS hi
	  FROM bo.readings GROUP BY sensor, date_trunc('hour', ts)$$) > 0 AS created;
SELECT flowpg.create_flow('bo_slots', 'bo.slots',			-- timestamp, date_bin with an origin
  $$SELECT date_bin('40 minutes', at_local, '2024-01-01 00:10:00') AS slot,
		   count(*) AS n, avg(reading) AS mean, count(DISTINCT sensor) AS sensors
	  FROM bo.readings GROUP BY 1$$) > 0 AS created;
SELECT flowpg.create_flow('bo_monthly', 'bo.monthly',		-- date
  $$SELECT sensor, date_trunc('month', day)::date AS month, count(*) AS n, max(reading) AS hi
	  FROM bo.readings GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
SELECT flowpg.create_flow('bo_epoch', 'bo.epoch_hours',		-- integer epoch
  $$SELECT epoch / 3600 * 3600 AS hour_epoch, count(*) AS n, sum(reading) AS total
	  FROM bo.readings GROUP BY 1 HAVING sum(reading) > 0$$) > 0 AS created;
SELECT flowpg.create_flow('bo_sensors', 'bo.sensors',		-- no time window
  $$SELECT sensor, count(*) AS n, sum(reading) AS total FROM bo.readings GROUP BY sensor$$) > 0 AS created;
SELECT flowpg.create_flow('bo_all', 'bo.everything',		-- a global aggregate
  $$SELECT count(*) AS n, sum(reading) AS total, max(ts) AS last FROM bo.readings$$) > 0 AS created;
SELECT flow_name, mode, time_column, window_expression FROM flowpg.flows
 WHERE flow_name LIKE 'bo\_%' ORDER BY flow_id;
-- one set of capture triggers serves all of them
SELECT tgname FROM pg_trigger WHERE tgrelid = 'bo.readings'::regclass ORDER BY 1;

-- check(): flush every flow of this file, then compare each with its query.
CREATE FUNCTION bo.check() RETURNS TABLE (flow text, mismatches bigint)
LANGUAGE plpgsql AS $$
DECLARE
	f text;
BEGIN
	FOR f IN SELECT flow_name FROM flowpg.flows WHERE flow_name LIKE 'bo\_%' ORDER BY flow_id LOOP
		PERFORM flowpg.flush_flow(f);
		flow := f;
		mismatches := flow_mismatches(f);
		RETURN NEXT;
	END LOOP;
END $$;
SELECT * FROM bo.check();

------------------------------------------------------------------------------
-- INSERT: hour 2024-02-01 05:00 (sensors 0, 1, 2 have rows there).
------------------------------------------------------------------------------
INSERT INTO bo.readings VALUES
  ('2024-02-01 05:50+00', '2024-02-01 05:50', '2024-02-01', 1706766600, 1, 100);
SELECT flow_name, pending, pending_rows FROM flowpg.flow_stats
 WHERE flow_name LIKE 'bo\_%' AND mode = 'batching' ORDER BY flow_id;
SELECT * FROM bo.check();
SELECT sensor, n, total, hi FROM bo.hourly WHERE hour = '2024-02-01 05:00+00' ORDER BY sensor;

------------------------------------------------------------------------------
-- COPY FROM STDIN: a new sensor, and a new hour after the last one.
------------------------------------------------------------------------------
COPY bo.readings (ts, at_local, day, epoch, sensor, reading) FROM STDIN;
2024-01-31 10:05:00+00	2024-01-31 10:05:00	2024-01-31	1706695500	7	1.5
2024-01-31 10:06:00+00	2024-01-31 10:06:00	2024-01-31	1706695560	7	2.5
2024-02-02 00:30:00+00	2024-02-02 00:30:00	2024-02-02	1706833800	0	9
\N	\N	\N	\N	7	0.5
\.
SELECT * FROM bo.check();
SELECT sensor, n FROM bo.sensors ORDER BY sensor;
SELECT month, sensor, n FROM bo.monthly WHERE sensor = 7 ORDER BY month NULLS FIRST;

------------------------------------------------------------------------------
-- UPDATE of values, and of time columns: rows move between windows.
------------------------------------------------------------------------------
UPDATE bo.readings SET reading = reading + 1 WHERE sensor = 2 AND ts < '2024-01-31 03:00+00';
SELECT * FROM bo.check();
-- move the 02:00 - 02:59 rows of sensor 0 to 23:00 of the next day (all columns)
UPDATE bo.readings
   SET ts = ts + interval '21 hours', at_local = at_local + interval '21 hours',
	   day = day + 1, epoch = epoch + 21 * 3600
 WHERE sensor = 0 AND ts >= '2024-01-31 02:00+00' AND ts < '2024-01-31 03:00+00';
SELECT * FROM bo.check();
SELECT hour, sensor, n FROM bo.hourly
 WHERE hour IN ('2024-01-31 02:00+00', '2024-01-31 23:00+00') ORDER BY 1, 2;
-- move one column only: each flow sees its own column
UPDATE bo.readings SET day = '2024-03-15' WHERE sensor = 7 AND day = '2024-01-31';
UPDATE bo.readings SET at_local = at_local - interval '1 hour' WHERE sensor = 1 AND day = '2024-02-01';
SELECT * FROM bo.check();
SELECT month, sensor, n FROM bo.monthly WHERE sensor = 7 ORDER BY month NULLS FIRST;
-- a time value becomes NULL, then gets a value again
UPDATE bo.readings SET ts = NULL WHERE sensor = 1 AND ts = '2024-02-01 05:50+00';
SELECT * FROM bo.check();
UPDATE bo.readings SET ts = '2024-02-01 05:55+00' WHERE sensor = 1 AND ts IS NULL;
SELECT * FROM bo.check();

------------------------------------------------------------------------------
-- DELETE: a few rows, then every row of one hour (its groups vanish).
------------------------------------------------------------------------------
DELETE FROM bo.readings WHERE sensor = 2 AND ts >= '2024-01-31 12:00+00' AND ts < '2024-01-31 13:00+00';
SELECT * FROM bo.check();
SELECT count(*) AS groups_1200 FROM bo.hourly WHERE hour = '2024-01-31 12:00+00';
DELETE FROM bo.readings WHERE ts >= '2024-01-31 12:00+00' AND ts < '2024-01-31 13:00+00';
SELECT * FROM bo.check();
SELECT count(*) AS groups_1200 FROM bo.hourly WHERE hour = '2024-01-31 12:00+00';
SELECT count(*) AS epoch_1200 FROM bo.epoch_hours
 WHERE hour_epoch = extract(epoch FROM timestamptz '2024-01-31 12:00+00');
-- a sensor vanishes from the flow without a window
DELETE FROM bo.readings WHERE sensor = 7;
SELECT * FROM bo.check();
SELECT sensor FROM bo.sensors ORDER BY sensor;
-- HAVING: an hour whose sum drops to 0 disappears from bo_epoch
UPDATE bo.readings SET reading = 0 WHERE ts >= '2024-01-31 13:00+00' AND ts < '2024-01-31 14:00+00';
SELECT * FROM bo.check();
SELECT count(*) AS epoch_1300 FROM bo.epoch_hours
 WHERE hour_epoch = extract(epoch FROM timestamptz '2024-01-31 13:00+00');

------------------------------------------------------------------------------
-- MERGE: update, delete and insert in one statement.
------------------------------------------------------------------------------
MERGE INTO bo.readings r
USING (VALUES (0, timestamptz '2024-01-31 00:00+00', 40.0),		-- matched: update
			  (1, timestamptz '2024-01-31 00:15+00', NULL),		-- matched: delete
			  (2, timestamptz '2024-01-31 20:10+00', 3.0))		-- not matched: insert
	  AS s(sensor, ts, reading)
   ON r.sensor = s.sensor AND r.ts = s.ts
WHEN MATCHED AND s.reading IS NULL THEN DELETE
WHEN MATCHED THEN UPDATE SET reading = s.reading
WHEN NOT MATCHED THEN
  INSERT VALUES (s.ts, s.ts AT TIME ZONE 'UTC', (s.ts AT TIME ZONE 'UTC')::date,
				 extract(epoch FROM s.ts)::bigint, s.sensor, s.reading);
SELECT * FROM bo.check();
SELECT sensor, hour, n, total FROM bo.hourly
 WHERE hour IN ('2024-01-31 00:00+00', '2024-01-31 20:00+00') ORDER BY 2, 1;

------------------------------------------------------------------------------
-- refresh_flow on flows over timestamp, date and integer epoch columns
-- (the bounds are timestamptz; integers are taken as Unix seconds).
------------------------------------------------------------------------------
UPDATE bo.slots SET n = -1;
UPDATE bo.monthly SET n = -1;
UPDATE bo.epoch_hours SET n = -1;
SELECT flowpg.refresh_flow('bo_slots', '2024-01-31 00:00+00', '2024-01-31 02:00+00') AS written;
SELECT flowpg.refresh_flow('bo_monthly', '2024-02-10+00', '2024-02-20+00') AS written;
SELECT flowpg.refresh_flow('bo_epoch', '2024-01-31 22:00+00', '2024-02-01 00:00+00') AS written;
SELECT slot, n > 0 AS restored FROM bo.slots WHERE slot < '2024-01-31 03:00' ORDER BY slot;
SELECT month, sensor, n > 0 AS restored FROM bo.monthly ORDER BY 1, 2;
SELECT to_timestamp(hour_epoch) AS hour, n > 0 AS restored FROM bo.epoch_hours
 WHERE hour_epoch >= extract(epoch FROM timestamptz '2024-01-31 21:00+00')
   AND hour_epoch < extract(epoch FROM timestamptz '2024-02-01 01:00+00') ORDER BY 1;
SELECT flowpg.refresh_flow('bo_slots') > 0 AS wrote, flow_mismatches('bo_slots') AS mismatches;
SELECT flowpg.refresh_flow('bo_monthly') > 0 AS wrote, flow_mismatches('bo_monthly') AS mismatches;
SELECT flowpg.refresh_flow('bo_epoch') > 0 AS wrote, flow_mismatches('bo_epoch') AS mismatches;

------------------------------------------------------------------------------
-- A writer with INSERT rights only needs no rights on flowpg's tables.
------------------------------------------------------------------------------
CREATE ROLE regress_bo_writer;
GRANT USAGE ON SCHEMA bo TO regress_bo_writer;
GRANT INSERT ON bo.readings TO regress_bo_writer;
SET ROLE regress_bo_writer;
INSERT INTO bo.readings VALUES
  ('2024-01-31 06:20+00', '2024-01-31 06:20', '2024-01-31', 1706682000, 2, 11);
COPY bo.readings (ts, at_local, day, epoch, sensor, reading) FROM STDIN;
2024-02-01 18:01:00+00	2024-02-01 18:01:00	2024-02-01	1706810460	1	12
\.
SELECT count(*) FROM flowpg.dirty_log;		-- not readable to it
-- and flushing is for the flow's owner
\set VERBOSITY terse
SELECT flowpg.flush_flow('bo_hourly');
\set VERBOSITY default
RESET ROLE;
SELECT flow_name, pending, pending_rows FROM flowpg.flow_stats
 WHERE flow_name LIKE 'bo\_%' AND mode = 'batching' ORDER BY flow_id;
SELECT * FROM bo.check();

------------------------------------------------------------------------------
-- TRUNCATE: every flow is emptied; the global aggregate keeps its one row.
------------------------------------------------------------------------------
TRUNCATE bo.readings;
SELECT * FROM bo.check();
SELECT (SELECT count(*) FROM bo.hourly) AS hourly, (SELECT count(*) FROM bo.slots) AS slots,
	   (SELECT count(*) FROM bo.monthly) AS monthly, (SELECT count(*) FROM bo.epoch_hours) AS epoch,
	   (SELECT count(*) FROM bo.sensors) AS sensors;
SELECT n, total, last FROM bo.everything;
-- and filled again in one transaction with TRUNCATE
BEGIN;
INSERT INTO bo.readings VALUES
  ('2024-01-31 06:20+00', '2024-01-31 06:20', '2024-01-31', 1706682000, 2, 11);
TRUNCATE bo.readings;
INSERT INTO bo.readings VALUES
  ('2024-01-31 08:20+00', '2024-01-31 08:20', '2024-01-31', 1706689200, 1, 4);
COMMIT;
SELECT * FROM bo.check();
SELECT n, total, last FROM bo.everything;

------------------------------------------------------------------------------
-- A partitioned source: the capture triggers are on the parent.
------------------------------------------------------------------------------
CREATE TABLE bo.parted (ts timestamptz NOT NULL, k int, v int) PARTITION BY RANGE (ts);
CREATE TABLE bo.parted_jan PARTITION OF bo.parted
  FOR VALUES FROM ('2024-01-01 00:00+00') TO ('2024-02-01 00:00+00');
CREATE TABLE bo.parted_feb PARTITION OF bo.parted
  FOR VALUES FROM ('2024-02-01 00:00+00') TO ('2024-03-01 00:00+00');
CREATE TABLE bo.parted_rest PARTITION OF bo.parted DEFAULT;
INSERT INTO bo.parted
SELECT '2024-01-30 00:00+00'::timestamptz + i * interval '1 hour', i % 2, i FROM generate_series(0, 71) i;
SELECT flowpg.create_flow('bo_parted', 'bo.parted_daily',
  $$SELECT k, date_trunc('day', ts) AS day, count(*) AS n, sum(v) AS total
	  FROM bo.parted GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.flush_flow('bo_parted') >= 0 AS backfilled;
SELECT tgrelid::regclass, count(*) FROM pg_trigger
 WHERE tgname LIKE 'flowpg_capture%' AND tgrelid::regclass::text LIKE 'bo.parted%' GROUP BY 1 ORDER BY 1;
SELECT day, k, n, total FROM bo.parted_daily ORDER BY 1, 2;
-- through the parent: insert, an update that moves rows to another partition, delete
INSERT INTO bo.parted VALUES ('2024-01-30 05:30+00', 0, 1000), ('2024-03-05 00:00+00', 1, 7);
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
UPDATE bo.parted SET ts = ts + interval '2 days' WHERE ts >= '2024-01-31 00:00+00' AND ts < '2024-01-31 06:00+00';
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
DELETE FROM bo.parted WHERE ts >= '2024-02-01 00:00+00' AND ts < '2024-02-02 00:00+00' AND k = 1;
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
MERGE INTO bo.parted p USING (VALUES (timestamptz '2024-01-30 01:00+00', 500)) s(ts, v) ON p.ts = s.ts
WHEN MATCHED THEN UPDATE SET v = s.v;
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
SELECT day, k, n, total FROM bo.parted_daily ORDER BY 1, 2;
-- a partition attached later, with another column order and a dropped column
CREATE TABLE bo.parted_apr (junk text, v int, k int, ts timestamptz NOT NULL);
ALTER TABLE bo.parted_apr DROP COLUMN junk;
ALTER TABLE bo.parted ATTACH PARTITION bo.parted_apr
  FOR VALUES FROM ('2024-04-01 00:00+00') TO ('2024-05-01 00:00+00');
INSERT INTO bo.parted VALUES ('2024-04-02 00:00+00', 0, 3);
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
COPY bo.parted (ts, k, v) FROM STDIN;
2024-04-02 10:00:00+00	1	4
2024-01-31 23:00:00+00	1	5
\.
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
UPDATE bo.parted SET ts = ts - interval '60 days' WHERE ts >= '2024-04-01 00:00+00';
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
SELECT day, k, n, total FROM bo.parted_daily WHERE day >= '2024-01-31' ORDER BY 1, 2;
-- changes made directly to a partition change the parent's rows too
INSERT INTO bo.parted_jan VALUES ('2024-01-30 07:00+00', 1, 100);
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
UPDATE bo.parted_feb SET v = v + 1;
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
DELETE FROM bo.parted_jan WHERE ts < '2024-01-30 12:00+00';
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
TRUNCATE bo.parted_rest;
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
-- truncating the parent empties the flow
TRUNCATE bo.parted;
SELECT flowpg.flush_flow('bo_parted') >= 0 AS flushed, flow_mismatches('bo_parted') AS mismatches;
SELECT count(*) AS sink_rows FROM bo.parted_daily;

------------------------------------------------------------------------------
-- INSERT ... ON CONFLICT, a writable CTE, replication-role sessions, and a
-- flow over another flow's sink (it sees the first flow's refreshes).
------------------------------------------------------------------------------
CREATE TABLE bo.latest (id int PRIMARY KEY, ts timestamptz NOT NULL, v int);
INSERT INTO bo.latest SELECT i, '2024-01-01 00:00+00'::timestamptz + i * interval '50 minutes', i
  FROM generate_series(1, 30) i;
SELECT flowpg.create_flow('bo_latest', 'bo.latest_hourly',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total FROM bo.latest GROUP BY 1$$,
  mode => 'batching') > 0 AS created;
SELECT flowpg.flush_flow('bo_latest') >= 0 AS backfilled;	-- bo_chain starts from its full sink
SELECT flowpg.create_flow('bo_chain', 'bo.latest_daily',
  $$SELECT date_trunc('day', hour) AS day, sum(n) AS n, max(total) AS top FROM bo.latest_hourly GROUP BY 1$$,
  mode => 'batching') > 0 AS created;
SELECT tgrelid::regclass, count(*) FROM pg_trigger
 WHERE tgname LIKE 'flowpg_capture%' AND tgrelid::regclass::text LIKE 'bo.latest%' GROUP BY 1 ORDER BY 1;
-- an upsert: one row inserted, one updated and moved to another day
INSERT INTO bo.latest VALUES (3, '2024-01-03 10:00+00', 300), (31, '2024-01-01 01:10+00', 31)
  ON CONFLICT (id) DO UPDATE SET ts = excluded.ts, v = excluded.v;
SELECT * FROM bo.check();
-- a writable CTE: rows deleted and inserted elsewhere in one statement
WITH moved AS (DELETE FROM bo.latest WHERE id BETWEEN 10 AND 12 RETURNING *)
INSERT INTO bo.latest SELECT id + 100, ts + interval '2 days', v FROM moved;
SELECT * FROM bo.check();
-- the capture triggers fire under session_replication_role = replica too
SET session_replication_role = replica;
INSERT INTO bo.latest VALUES (200, '2024-01-02 05:00+00', 7);
DELETE FROM bo.latest WHERE id = 1;
RESET session_replication_role;
SELECT * FROM bo.check();
SELECT day, n, top FROM bo.latest_daily ORDER BY day;

------------------------------------------------------------------------------
-- Counters of the flows (the worker was off: only flush_flow ran them).
------------------------------------------------------------------------------
SELECT flow_name, state, runs > 0 AS ran, rows_in > 0 AS rows_in, rows_out > 0 AS rows_out,
	   failures, pending
  FROM flowpg.flow_stats WHERE flow_name LIKE 'bo\_%' ORDER BY flow_id;

------------------------------------------------------------------------------
-- Clean up.  Dropping one of several flows keeps the shared triggers.
------------------------------------------------------------------------------
INSERT INTO bo.readings VALUES (now(), now(), now(), 0, 1, 1);		-- left pending
SELECT flowpg.drop_flow('bo_hourly');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'bo.readings'::regclass;
SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'bo\_%' ORDER BY flow_id;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'bo.readings'::regclass;
SELECT (SELECT count(*) FROM flowpg.dirty_entries WHERE flow_id NOT IN (SELECT flow_id FROM flowpg.flow)) AS dirty_log,
	   (SELECT count(*) FROM flowpg.flow_run WHERE flow_id NOT IN (SELECT flow_id FROM flowpg.flow)) AS runs;
DROP SCHEMA bo CASCADE;
DROP ROLE regress_bo_writer;
ALTER SYSTEM RESET flowpg.enabled;
SELECT pg_reload_conf();
