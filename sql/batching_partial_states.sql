-- Batching flows keeping partial states (issue 38): a batching flow whose
-- query the streaming engine can run is fed by its table's shared capture,
-- and its refresh writes the groups changed since the last one from the
-- kept states instead of re-reading the windows.  Its sink is written at a
-- batching flow's cadence (eval_interval, else flowpg.min_refresh_interval),
-- and flush_flow writes it at once.  The suites' configuration turns the
-- setting off; this test turns it on.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
SET flowpg.batching_partial_states = on;

CREATE SCHEMA ps;
CREATE TABLE ps.src (ts timestamptz NOT NULL, device int, v float8);
INSERT INTO ps.src SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '7 seconds', i % 5, i
  FROM generate_series(0, 1999) i;

-- kept: an hourly rollup (min and max cannot take a row back: their
-- windows are recomputed on deletes), and one on ticks of an hour
SELECT flowpg.create_flow('ps_hour', 'ps.by_hour', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total,
		   avg(v) AS mean, min(v) AS lo, max(v) AS hi
	  FROM ps.src GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
SELECT flowpg.create_flow('ps_tick', 'ps.by_minute', $$
	SELECT date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS total
	  FROM ps.src GROUP BY 1$$, eval_interval => '1 hour') > 0 AS created;
-- not kept: the streaming engine cannot run a DISTINCT aggregate
SELECT flowpg.create_flow('ps_distinct', 'ps.by_distinct', $$
	SELECT date_trunc('hour', ts) AS hour, count(DISTINCT device) AS devices
	  FROM ps.src GROUP BY 1$$, mode => 'batching') > 0 AS created;
-- a streaming twin of ps_hour, written within a fraction of a second
SELECT flowpg.create_flow('ps_stream', 'ps.by_stream', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n
	  FROM ps.src GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
-- not kept: the setting is off when the flow is created
SET flowpg.batching_partial_states = off;
SELECT flowpg.create_flow('ps_off', 'ps.by_hour_off', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total
	  FROM ps.src GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
RESET flowpg.batching_partial_states;

SELECT flow_name, mode, partial_states, mode_reason FROM flowpg.flows
 WHERE flow_name LIKE 'ps\_%' ORDER BY flow_id;
SELECT line FROM flowpg.explain_flow('ps_hour') line WHERE line LIKE '%Partial states%'
UNION ALL
SELECT 'ps_off: ' || count(*) FROM flowpg.explain_flow('ps_off') line WHERE line LIKE '%Partial states%';
-- the kept flows are in the streaming engine's memory, the others not
SELECT flow_name FROM flowpg.memory WHERE scope = 'flow' AND flow_name LIKE 'ps\_%' ORDER BY 1;

SELECT * FROM flush_and_check('ps', 'backfill');

-- inserts, an aborted transaction, a rolled-back savepoint
INSERT INTO ps.src SELECT '2024-03-01 05:00+00'::timestamptz + i * interval '11 seconds', i % 7, i / 4.0
  FROM generate_series(0, 499) i;
BEGIN;
INSERT INTO ps.src VALUES ('2024-03-01 01:30+00', 1, 1e6);
ROLLBACK;
BEGIN;
INSERT INTO ps.src VALUES ('2024-03-01 02:30+00', 2, 2);
SAVEPOINT s;
INSERT INTO ps.src VALUES ('2024-03-01 02:31+00', 2, 1e6);
ROLLBACK TO s;
INSERT INTO ps.src VALUES ('2024-03-01 06:30+00', 9, 3);
COMMIT;
SELECT * FROM flush_and_check('ps', 'inserts');

-- updates and deletes: taken back out of the states, or their windows
-- recomputed where an aggregate cannot take a row back (min, max)
UPDATE ps.src SET v = v + 1000 WHERE device = 3 AND ts < '2024-03-01 01:00+00';
DELETE FROM ps.src WHERE device = 4 AND ts >= '2024-03-01 02:00+00' AND ts < '2024-03-01 03:00+00';
UPDATE ps.src SET ts = ts + interval '3 hours' WHERE device = 0 AND ts < '2024-03-01 00:30+00';
SELECT * FROM flush_and_check('ps', 'updates and deletes');

-- The cadence: with a refresh interval of an hour, a committed row is in
-- the streaming twin's sink within a fraction of a second, but not in the
-- kept batching flow's until flush_flow; flow_stats counts it as lag.
ALTER SYSTEM SET flowpg.min_refresh_interval = '1h';
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SELECT flowpg.flush_flow('ps_hour') >= 0 AS flushed;	-- its last write: now
INSERT INTO ps.src VALUES ('2024-03-01 09:15+00', 42, 1);
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN EXISTS (SELECT FROM ps.by_stream WHERE device = 42);
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT (SELECT count(*) FROM ps.by_stream WHERE device = 42) AS streaming_sink,
	   (SELECT count(*) FROM ps.by_hour WHERE device = 42) AS kept_batching_sink;
SELECT lag > interval '0' AS lags FROM flowpg.flow_stats WHERE flow_name = 'ps_hour';
SELECT flowpg.flush_flow('ps_hour') >= 0 AS flushed;
SELECT count(*) AS kept_batching_sink FROM ps.by_hour WHERE device = 42;
ALTER SYSTEM RESET flowpg.min_refresh_interval;
SELECT pg_reload_conf();

-- TRUNCATE, then new rows
TRUNCATE ps.src;
INSERT INTO ps.src SELECT '2024-03-02 00:00+00'::timestamptz + i * interval '13 seconds', i % 3, i
  FROM generate_series(0, 299) i;
SELECT * FROM flush_and_check('ps', 'truncate');

-- verify_flow and pause/resume work on a kept flow as on any other
SELECT flowpg.verify_flow('ps_hour') AS mismatches;
SELECT flowpg.pause_flow('ps_hour');
INSERT INTO ps.src VALUES ('2024-03-02 03:00+00', 1, 5);
SELECT flowpg.resume_flow('ps_hour');
SELECT * FROM flush_and_check('ps', 'after pause');

-- Replacing a recomputing flow by a kept one: the shared dirty-log rows
-- written for the first are not the second's to claim, and stop counting
-- as pending; and back.
SET flowpg.batching_partial_states = off;
SELECT flowpg.create_flow('ps_swap', 'ps.by_swap', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n FROM ps.src GROUP BY 1, 2$$,
	mode => 'batching') > 0 AS created;
INSERT INTO ps.src VALUES ('2024-03-02 04:00+00', 3, 1);
SELECT pending > 0 AS pending FROM flowpg.flow_stats WHERE flow_name = 'ps_swap';
SET flowpg.batching_partial_states = on;
SELECT flowpg.create_flow('ps_swap', 'ps.by_swap', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n FROM ps.src GROUP BY 1, 2$$,
	mode => 'batching', or_replace => true) > 0 AS replaced;
SELECT * FROM flush_and_check('ps', 'kept by replacement');
SELECT partial_states, s.pending FROM flowpg.flows f JOIN flowpg.flow_stats s USING (flow_id)
 WHERE f.flow_name = 'ps_swap';
SET flowpg.batching_partial_states = off;
SELECT flowpg.create_flow('ps_swap', 'ps.by_swap', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n FROM ps.src GROUP BY 1, 2$$,
	mode => 'batching', or_replace => true) > 0 AS replaced;
RESET flowpg.batching_partial_states;
INSERT INTO ps.src VALUES ('2024-03-02 05:00+00', 3, 1);
SELECT * FROM flush_and_check('ps', 'recomputing again');
SELECT partial_states, s.pending FROM flowpg.flows f JOIN flowpg.flow_stats s USING (flow_id)
 WHERE f.flow_name = 'ps_swap';

-- A kept flow takes one of the streaming engine's slots.  A role that
-- holds all it may (flowpg.max_streaming_flows_per_role) gets a batching
-- flow that recomputes, not an error.
CREATE ROLE regress_ps_owner;
CREATE SCHEMA ps_own AUTHORIZATION regress_ps_owner;
ALTER SYSTEM SET flowpg.max_streaming_flows_per_role = 1;
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SET ROLE regress_ps_owner;
CREATE TABLE ps_own.src (ts timestamptz NOT NULL, v int);
INSERT INTO ps_own.src SELECT '2024-03-01'::timestamptz + i * interval '1 minute', i FROM generate_series(1, 100) i;
SELECT flowpg.create_flow('ps_own_stream', 'ps_own.s1', $$
	SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM ps_own.src GROUP BY 1$$,
	mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('ps_own_batch', 'ps_own.s2', $$
	SELECT date_trunc('hour', ts) AS hour, sum(v) AS total FROM ps_own.src GROUP BY 1$$,
	mode => 'batching') > 0 AS created;
SELECT flow_name, mode, partial_states FROM flowpg.flows WHERE flow_name LIKE 'ps\_own%' ORDER BY flow_id;
INSERT INTO ps_own.src VALUES ('2024-03-01 05:00', 7);
SELECT * FROM flush_and_check('ps_own', 'no slot');
SELECT flowpg.drop_flow('ps_own_stream');
SELECT flowpg.drop_flow('ps_own_batch');
RESET ROLE;
ALTER SYSTEM RESET flowpg.max_streaming_flows_per_role;
SELECT pg_reload_conf();
DROP SCHEMA ps_own CASCADE;
DROP ROLE regress_ps_owner;

-- Dropping a kept flow gives its slot back: the streaming engine forgets it.
SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'ps\_%' ORDER BY flow_id;
SELECT count(*) AS flows_left FROM flowpg.memory WHERE scope = 'flow' AND flow_name LIKE 'ps\_%';
DROP SCHEMA ps CASCADE;
