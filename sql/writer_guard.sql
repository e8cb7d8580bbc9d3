-- A streaming flow's own code never fails a writer.  A writer merges the
-- partials of a released savepoint into its parent's with the aggregates'
-- combine functions -- at RELEASE SAVEPOINT, or at COMMIT for a savepoint
-- still open then -- outside any statement (no snapshot, no portal).  A
-- user-defined combine function may need one (PL/pgSQL, SQL) or raise: the
-- writer's RELEASE and COMMIT must succeed all the same, and after
-- flush_flow the sink must equal the flow's query (flow_mismatches 0): the
-- flow falls back to recomputing what it could not merge.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA wg;

-- sum(int) with a PL/pgSQL combine function that raises when the session
-- sets wg.poison (writers below do; the worker never does).
CREATE FUNCTION wg.sum_trans(s bigint, v int) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS 'SELECT s + v';
CREATE FUNCTION wg.sum_combine(a bigint, b bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
	IF current_setting('wg.poison', true) = 'on' THEN
		RAISE EXCEPTION 'wg.sum_combine refuses to combine % and %', a, b;
	END IF;
	RETURN a + b;
END $$;
CREATE AGGREGATE wg.psum(int) (sfunc = wg.sum_trans, stype = bigint,
							   combinefunc = wg.sum_combine, initcond = '0');

CREATE TABLE wg.src (ts timestamptz NOT NULL, k int NOT NULL, v int NOT NULL);
INSERT INTO wg.src SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '7 minutes', i % 2, i
  FROM generate_series(0, 99) i;
SELECT flowpg.create_flow('wg_p', 'wg.p_sink',
	$$SELECT k, date_trunc('hour', ts) AS h, count(*) AS n, wg.psum(v) AS s
		FROM wg.src GROUP BY k, date_trunc('hour', ts)$$, mode => 'streaming') > 0 AS created;
SELECT mode FROM flowpg.flows WHERE flow_name = 'wg_p';
SELECT flowpg.flush_flow('wg_p') >= 0 AS flushed, flow_mismatches('wg_p') AS mismatches;

-- Whatever the fixed flowpg says about the flow (a WARNING to its owner)
-- is not part of the contract checked here: errors only.
SET client_min_messages = error;

-- 1. A savepoint released before any row of the top level: its partial is
-- adopted by the top level, nothing is combined in the writer.
BEGIN;
SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 00:01+00', 0, 1000);
RELEASE SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 00:02+00', 0, 1001);
COMMIT;
SELECT flowpg.flush_flow('wg_p') >= 0 AS flushed, flow_mismatches('wg_p') AS mismatches;

-- 2. RELEASE merges into a top level holding the same group: the PL/pgSQL
-- combine function runs at RELEASE, without a snapshot.
BEGIN;
INSERT INTO wg.src VALUES ('2024-01-01 01:01+00', 1, 2000);
SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 01:02+00', 1, 2001);
RELEASE SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 01:03+00', 1, 2002);
COMMIT;
SELECT count(*) AS committed FROM wg.src WHERE v BETWEEN 2000 AND 2002;
SELECT flowpg.flush_flow('wg_p') >= 0 AS flushed, flow_mismatches('wg_p') AS mismatches;

-- 3. The same with a combine function that raises.
SET wg.poison = on;
BEGIN;
INSERT INTO wg.src VALUES ('2024-01-01 02:01+00', 0, 3000);
SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 02:02+00', 0, 3001), ('2024-01-01 09:00+00', 1, 3002);
RELEASE SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 02:03+00', 0, 3003);
COMMIT;
RESET wg.poison;
SELECT count(*) AS committed FROM wg.src WHERE v BETWEEN 3000 AND 3003;
SELECT flowpg.flush_flow('wg_p') >= 0 AS flushed, flow_mismatches('wg_p') AS mismatches;

-- 4. A savepoint still open at COMMIT is released by the COMMIT: the
-- combine function runs (and raises) only then.
SET wg.poison = on;
BEGIN;
INSERT INTO wg.src VALUES ('2024-01-01 03:01+00', 1, 4000);
INSERT INTO wg.src VALUES ('2024-01-01 03:02+00', 1, 4001);
SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 03:03+00', 1, 4002);
COMMIT;
RESET wg.poison;
SELECT count(*) AS committed FROM wg.src WHERE v BETWEEN 4000 AND 4002;
SELECT flowpg.flush_flow('wg_p') >= 0 AS flushed, flow_mismatches('wg_p') AS mismatches;

-- 5. ROLLBACK TO SAVEPOINT: the rolled-back rows never count.  Savepoint t
-- is released into s (the combine raises there), s is then rolled back --
-- taking with it whatever the failed merge left at its level -- and a new
-- row of the same group is released into the top level (raises again).
SET wg.poison = on;
BEGIN;
INSERT INTO wg.src VALUES ('2024-01-01 04:01+00', 0, 5000);
SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 04:02+00', 0, 5001);
SAVEPOINT t;
INSERT INTO wg.src VALUES ('2024-01-01 04:03+00', 0, 5002);
RELEASE SAVEPOINT t;
INSERT INTO wg.src VALUES ('2024-01-01 04:04+00', 0, 5003);
ROLLBACK TO SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 04:05+00', 0, 5004);
RELEASE SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 04:06+00', 0, 5005);
COMMIT;
RESET wg.poison;
SELECT array_agg(v ORDER BY v) AS committed FROM wg.src WHERE v BETWEEN 5000 AND 5005;
SELECT flowpg.flush_flow('wg_p') >= 0 AS flushed, flow_mismatches('wg_p') AS mismatches;

-- 6. The combine raises at RELEASE, the writer goes on in the same
-- transaction and then rolls it all back: nothing of it counts.
SET wg.poison = on;
BEGIN;
INSERT INTO wg.src VALUES ('2024-01-01 05:01+00', 1, 6000);
SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 05:02+00', 1, 6001);
RELEASE SAVEPOINT s;
INSERT INTO wg.src VALUES ('2024-01-01 05:03+00', 1, 6002);
ROLLBACK;
RESET wg.poison;
SELECT count(*) AS committed FROM wg.src WHERE v BETWEEN 6000 AND 6002;
SELECT flowpg.flush_flow('wg_p') >= 0 AS flushed, flow_mismatches('wg_p') AS mismatches;

-- 7. Later transactions, without any savepoint, still reach the sink.
INSERT INTO wg.src VALUES ('2024-01-01 06:01+00', 0, 7000), ('2024-01-01 12:00+00', 1, 7001);
SELECT flowpg.flush_flow('wg_p') >= 0 AS flushed, flow_mismatches('wg_p') AS mismatches;
SELECT count(*) AS rows, sum(v) AS total FROM wg.src;
SELECT sum(n) AS sink_rows, sum(s) AS sink_total FROM wg.p_sink;

-- 8. A combine function in SQL (not inlined when called through fmgr): it
-- runs its query under the active snapshot, which a RELEASE does not have.
CREATE FUNCTION wg.sql_combine(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS 'SELECT a + b';
CREATE AGGREGATE wg.ssum(int) (sfunc = wg.sum_trans, stype = bigint,
							   combinefunc = wg.sql_combine, initcond = '0');
CREATE TABLE wg.src2 (ts timestamptz NOT NULL, k int NOT NULL, v int NOT NULL);
INSERT INTO wg.src2 SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '7 minutes', i % 2, i
  FROM generate_series(0, 99) i;
SELECT flowpg.create_flow('wg_s', 'wg.s_sink',
	$$SELECT k, date_trunc('hour', ts) AS h, count(*) AS n, wg.ssum(v) AS s
		FROM wg.src2 GROUP BY k, date_trunc('hour', ts)$$, mode => 'streaming') > 0 AS created;
-- its backfill done, the writes below take the writers' path
SELECT flowpg.flush_flow('wg_s') >= 0 AS backfilled;
BEGIN;
INSERT INTO wg.src2 VALUES ('2024-01-01 01:01+00', 1, 8000);
SAVEPOINT s;
INSERT INTO wg.src2 VALUES ('2024-01-01 01:02+00', 1, 8001);
RELEASE SAVEPOINT s;
INSERT INTO wg.src2 VALUES ('2024-01-01 01:03+00', 1, 8002);
SAVEPOINT s2;
INSERT INTO wg.src2 VALUES ('2024-01-01 01:04+00', 1, 8003);
COMMIT;
SELECT count(*) AS committed FROM wg.src2 WHERE v BETWEEN 8000 AND 8003;
SELECT flowpg.flush_flow('wg_s') >= 0 AS flushed, flow_mismatches('wg_s') AS mismatches;

SET client_min_messages = warning;
SELECT flowpg.drop_flow('wg_p');
SELECT flowpg.drop_flow('wg_s');
DROP SCHEMA wg CASCADE;
