-- Operating flows: why a mode was chosen, statistics that mean the same in
-- both engines, pause and resume, progress and memory.
CREATE SCHEMA op;
CREATE TABLE op.m (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
CREATE TABLE op.devices (device int PRIMARY KEY, site text NOT NULL);
INSERT INTO op.devices SELECT d, 'site' || (d % 3) FROM generate_series(0, 9) d;
INSERT INTO op.m
SELECT '2024-05-01 00:00:00+00'::timestamptz + i * interval '1 second', i % 10, i % 100
FROM generate_series(0, 9999) i;

-- 1. mode_reason: why mode => 'auto' chose the engine, NULL when asked
-- for; auto choosing batching says so at creation.
SET client_min_messages = notice;
SELECT flowpg.create_flow('op_s', 'op.s', $$
	SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
	  FROM op.m GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.create_flow('op_pct', 'op.pct', $$
	SELECT date_trunc('hour', ts) AS hour, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS med
	  FROM op.m GROUP BY 1$$) > 0 AS created;
SELECT flowpg.create_flow('op_join', 'op.per_site', $$
	SELECT d.site, date_trunc('hour', m.ts) AS hour, count(*) AS n
	  FROM op.m m JOIN op.devices d USING (device) GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.create_flow('op_distinct', 'op.dist', $$
	SELECT date_trunc('hour', ts) AS hour, count(DISTINCT value) AS values
	  FROM op.m GROUP BY 1$$) > 0 AS created;
SELECT flowpg.create_flow('op_sub', 'op.sub', $$
	SELECT date_trunc('hour', ts) AS hour, count(*) AS n
	  FROM (SELECT ts FROM op.m WHERE value > 10) s GROUP BY 1$$) > 0 AS created;
SELECT flowpg.create_flow('op_agg', 'op.agg', $$
	SELECT date_trunc('hour', ts) AS hour, string_agg(value::text, ',' ORDER BY ts) AS vals
	  FROM op.m GROUP BY 1$$) > 0 AS created;
SELECT flowpg.create_flow('op_tick', 'op.tick', $$
	SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM op.m GROUP BY 1$$,
	eval_interval => '1 hour') > 0 AS created;
SELECT flowpg.create_flow('op_b', 'op.b', $$
	SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
	  FROM op.m GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
-- row-level security that filters the owner's reads
CREATE ROLE op_alice;
CREATE ROLE op_bob;
GRANT USAGE, CREATE ON SCHEMA op TO op_alice;
GRANT USAGE ON SCHEMA op TO op_bob;
SET ROLE op_alice;
CREATE TABLE op.r (ts timestamptz NOT NULL, device int NOT NULL);
INSERT INTO op.r SELECT '2024-05-01'::timestamptz + i * interval '1 minute', i % 10
FROM generate_series(0, 99) i;
ALTER TABLE op.r ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY low_devices ON op.r USING (device < 5);
SELECT flowpg.create_flow('op_rls', 'op.rls', $$
	SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM op.r GROUP BY 1$$) > 0 AS created;
RESET ROLE;
SET client_min_messages = warning;
SELECT flow_name, mode, mode_reason FROM flowpg.flows WHERE flow_name LIKE 'op\_%' ORDER BY flow_name;
SELECT flowpg.flush_flow(flow_name) >= 0 AS flushed FROM flowpg.flows
 WHERE flow_name LIKE 'op\_%' AND flow_name <> 'op_rls' ORDER BY flow_name;
SET ROLE op_alice;
SELECT flowpg.flush_flow('op_rls') >= 0 AS flushed, flow_mismatches('op_rls') AS mismatches;
RESET ROLE;

-- 2. Statistics.  rows_in counts the source rows applied, up to now, in
-- both engines; a run's duration is its own (a streaming round's, here
-- well under a second); runs = successes + failures.
SELECT flow_name, rows_in AS rows_before FROM flowpg.flow_stats
 WHERE flow_name = 'op_s' \gset s_
SELECT flow_name, rows_in AS rows_before FROM flowpg.flow_stats
 WHERE flow_name = 'op_b' \gset b_
INSERT INTO op.m
SELECT '2024-05-01 03:00:00+00'::timestamptz + i * interval '1 second', i % 10, i % 100
FROM generate_series(0, 1999) i;
SELECT flowpg.flush_flow('op_s') >= 0 AS flushed, flowpg.flush_flow('op_b') >= 0 AS flushed;
SELECT flow_name,
	   rows_in - CASE flow_name WHEN 'op_s' THEN :s_rows_before ELSE :b_rows_before END AS rows_applied,
	   last_run_duration < interval '1 second' AS run_under_a_second,
	   runs = successes + failures AS runs_add_up,
	   successes > 0 AS succeeded,
	   last_success_at IS NOT NULL AND last_success_at <= last_run_at AS last_success_known,
	   last_run_at > now() - interval '1 minute' AS ran_just_now,
	   lag_seconds >= 0 AS lag_is_a_number,
	   (freshness_ms >= 0) IS NOT FALSE AS freshness_is_a_number
  FROM flowpg.flow_stats WHERE flow_name IN ('op_s', 'op_b') ORDER BY flow_name;
SELECT flow_mismatches('op_s') AS s_mismatches, flow_mismatches('op_b') AS b_mismatches;

-- A failed streaming flow shows when it is tried again.
CREATE TABLE op.d (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO op.d VALUES ('2024-05-01', 1);
SELECT flowpg.create_flow('op_fail', 'op.fail', $$
	SELECT date_trunc('hour', ts) AS hour, sum(100 / v) AS q FROM op.d GROUP BY 1$$) > 0 AS created;
SELECT flowpg.flush_flow('op_fail') >= 0 AS flushed;
INSERT INTO op.d VALUES ('2024-05-01 00:10', 0);
DO $$
BEGIN
	FOR i IN 1..200 LOOP
		EXIT WHEN (SELECT state FROM flowpg.flow_stats WHERE flow_name = 'op_fail') = 'failed';
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT state, failures > 0 AS failed, next_run_at > last_run_at AS retry_scheduled,
	   runs = successes + failures AS runs_add_up
  FROM flowpg.flow_stats WHERE flow_name = 'op_fail';
SELECT sqlstate, message FROM flowpg.flow_errors WHERE flow_name = 'op_fail' LIMIT 1;
-- the dashboard queries of docs/operations.md
SELECT flow_name, errors > 0 AS has_errors, latest FROM (
SELECT e.flow_name, count(*) AS errors, max(e.at) AS last_error,
       (array_agg(e.sqlstate || ': ' || e.message ORDER BY e.at DESC))[1] AS latest
  FROM flowpg.flow_errors e
 WHERE e.at > now() - interval '1 hour'
 GROUP BY e.flow_name
 ORDER BY last_error DESC) d WHERE flow_name LIKE 'op\_%';
SELECT flow_name, state FROM (
SELECT flow_name, mode, state, lag_seconds, pending
  FROM flowpg.flow_stats
 WHERE lag_seconds > 30 OR state NOT IN ('active', 'backfilling', 'paused')
 ORDER BY lag_seconds DESC) d WHERE flow_name LIKE 'op\_%';
DELETE FROM op.d WHERE v = 0;
DO $$
BEGIN
	FOR i IN 1..400 LOOP
		EXIT WHEN (SELECT state FROM flowpg.flow_stats WHERE flow_name = 'op_fail') = 'active';
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT flowpg.flush_flow('op_fail') >= 0 AS flushed;
SELECT state, next_run_at IS NULL AS no_retry, flow_mismatches('op_fail') AS mismatches
  FROM flowpg.flow_stats WHERE flow_name = 'op_fail';
SELECT clock_timestamp() AS recovered_at \gset

-- 3. Pause and resume.  A paused flow keeps capturing (a streaming flow's
-- writers log their windows dirty instead of queueing partials), nothing
-- writes its sink, and resume_flow catches up exactly.
SELECT flowpg.pause_flow('op_s'), flowpg.pause_flow('op_b');
SELECT flow_name, state, state_reason FROM flowpg.flows
 WHERE flow_name IN ('op_s', 'op_b') ORDER BY flow_name;
SELECT count(*) AS rows_before FROM op.s \gset
INSERT INTO op.m
SELECT '2024-05-01 05:00:00+00'::timestamptz + i * interval '1 second', i % 10, i % 100
FROM generate_series(0, 499) i;
UPDATE op.m SET value = value + 1 WHERE ts < '2024-05-01 00:05:00+00';
DELETE FROM op.m WHERE ts >= '2024-05-01 01:00:00+00' AND ts < '2024-05-01 01:02:00+00';
SELECT pg_sleep(0.5);	-- the worker had time to run, were they not paused
SELECT count(*) = :rows_before AS sink_untouched, flow_mismatches('op_s') > 0 AS s_stale,
	   flow_mismatches('op_b') > 0 AS b_stale FROM op.s;
SELECT flow_name, state, pending > 0 AS changes_captured, coalesce(queue_depth, 0) AS queued,
	   next_run_at IS NULL AS nothing_scheduled
  FROM flowpg.flow_stats WHERE flow_name IN ('op_s', 'op_b') ORDER BY flow_name;
SELECT flowpg.flush_flow('op_s');
SELECT flowpg.refresh_flow('op_b');
SET client_min_messages = notice;
SELECT flowpg.pause_flow('op_s');
SET client_min_messages = warning;
-- only its owner (or a role acting for it)
SET ROLE op_bob;
SELECT flowpg.pause_flow('op_b');
SELECT flowpg.resume_flow('op_b');
-- nor does the owner's window expression run in another role's transaction
SELECT * FROM flowpg.flow_window_bounds('op_b', '2024-05-01 00:10:00+00'::timestamptz);
RESET ROLE;
SELECT flowpg.pause_flow(NULL);
SELECT flowpg.resume_flow('no_such_flow');
SELECT flowpg.resume_flow('op_s'), flowpg.resume_flow('op_b');
SELECT flowpg.flush_flow('op_s') >= 0 AS flushed, flowpg.flush_flow('op_b') >= 0 AS flushed;
SELECT flow_mismatches('op_s') AS s_mismatches, flow_mismatches('op_b') AS b_mismatches;
SELECT flow_name, state FROM flowpg.flows WHERE flow_name IN ('op_s', 'op_b') ORDER BY flow_name;
-- without flush_flow too: the worker catches up by itself
SELECT flowpg.pause_flow('op_s');
INSERT INTO op.m VALUES ('2024-05-01 06:00:00+00', 3, 33);
SELECT flowpg.resume_flow('op_s');
DO $$
BEGIN
	FOR i IN 1..200 LOOP
		EXIT WHEN flow_mismatches('op_s') = 0;
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT flow_mismatches('op_s') AS caught_up_without_flush;

-- 4. Progress.  An inline run shows in flowpg.flow_progress while it runs
-- (TAP 027 watches one); one that ended, or failed, leaves no row.
SELECT flowpg.refresh_flow('op_b') > 0 AS refreshed;
SELECT count(*) AS my_rows FROM flowpg.flow_progress WHERE pid = pg_backend_pid();
CREATE TABLE op.z (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO op.z VALUES ('2024-05-01', 1);
SELECT flowpg.create_flow('op_z', 'op.z_sink', $$
	SELECT date_trunc('hour', ts) AS hour, sum(100 / v) AS q FROM op.z GROUP BY 1$$,
	mode => 'batching') > 0 AS created;
SELECT flowpg.flush_flow('op_z') >= 0 AS flushed;
INSERT INTO op.z VALUES ('2024-05-01', 0);
SELECT flowpg.refresh_flow('op_z');
SELECT count(*) AS my_rows_after_a_failure FROM flowpg.flow_progress WHERE pid = pg_backend_pid();
DO $$
BEGIN
	PERFORM flowpg.refresh_flow('op_z');
EXCEPTION WHEN division_by_zero THEN
	RAISE WARNING 'caught';
END $$;
SELECT count(*) AS my_rows_after_a_caught_failure FROM flowpg.flow_progress WHERE pid = pg_backend_pid();
SELECT flowpg.drop_flow('op_z');

-- 5. Memory: the state and the queue against their limits, for the
-- server, the database and each streaming flow.  The state holds the
-- groups of the windows from flow_stats.state_from on: those that end
-- less than flowpg.state_keep (5 minutes) before the newest row; new rows
-- move it on.
SELECT scope, state_bytes > 0 AS holds_state, state_limit > 0 AS state_limited,
	   queue_limit > 0 AS queue_limited, queue_bytes >= 0 AS queue_known
  FROM flowpg.memory WHERE scope IN ('server', 'database') ORDER BY scope;
SELECT state_bytes AS state_before, state_groups AS groups_before FROM flowpg.memory
 WHERE flow_name = 'op_s' \gset
CREATE FUNCTION op.state_matches_sink() RETURNS TABLE (groups_match_sink bool, minutes bigint)
LANGUAGE sql AS $$
SELECT m.state_groups = count(*), count(DISTINCT o.minute)
  FROM flowpg.memory m
  JOIN flowpg.flow_stats s USING (flow_id)
  JOIN op.s o ON o.minute >= s.state_from
 WHERE s.flow_name = 'op_s'
 GROUP BY m.state_groups
$$;
SELECT groups_match_sink FROM op.state_matches_sink();
SELECT degraded_flows, degrades, evictions FROM flowpg.memory WHERE flow_name = 'op_s';
INSERT INTO op.m
SELECT '2024-05-02 00:00:00+00'::timestamptz + i * interval '1 second', i % 10, i % 100
FROM generate_series(0, 5999) i;
SELECT flowpg.flush_flow('op_s') >= 0 AS flushed;
-- (the floor moves at the next round)
INSERT INTO op.m VALUES ('2024-05-02 01:39:59+00', 0, 0);
SELECT flowpg.flush_flow('op_s') >= 0 AS flushed;
SELECT s.state_from = '2024-05-02 01:34:00+00' AS moved_to_newest_minus_5_minutes, m.state_groups AS groups
  FROM flowpg.flow_stats s JOIN flowpg.memory m USING (flow_id) WHERE s.flow_name = 'op_s';
SELECT * FROM op.state_matches_sink();
SELECT flow_mismatches('op_s') AS s_mismatches;
-- a late row, to a window no longer in the state: recomputed, exact; its
-- window is kept warm in the state for the next late rows
INSERT INTO op.m VALUES ('2024-05-02 00:10:30+00', 3, 7);
SELECT flowpg.flush_flow('op_s') >= 0 AS flushed;
SELECT flow_mismatches('op_s') AS s_mismatches;
SELECT m.state_groups = (SELECT count(*) FROM op.s o
						  WHERE o.minute >= st.state_from OR o.minute = '2024-05-02 00:10:00+00') AS with_the_warm_window
  FROM flowpg.memory m JOIN flowpg.flow_stats st USING (flow_id) WHERE st.flow_name = 'op_s';
SELECT (SELECT state_bytes FROM flowpg.memory WHERE scope = 'database') >=
	   (SELECT sum(state_bytes) FROM flowpg.memory WHERE scope = 'flow') AS database_holds_its_flows;

-- the worker's failed rounds (their recompute failed inside them) left no
-- row behind: nothing that started before the flow recovered still runs
SELECT count(*) AS stale_progress_rows FROM flowpg.flow_progress
 WHERE started_at < :'recovered_at'::timestamptz;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'op\_%' AND owner <> 'op_alice';
SET ROLE op_alice;
SELECT flowpg.drop_flow('op_rls');
DROP TABLE op.r;
RESET ROLE;
DROP SCHEMA op CASCADE;
DROP ROLE op_alice;
DROP ROLE op_bob;
