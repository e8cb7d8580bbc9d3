-- Streaming flows take UPDATEs and DELETEs back out of their state
-- (retractions) instead of recomputing windows: each aggregate family is
-- checked against its query (flow_mismatches) and against a batching flow
-- of the same query, which recomputes.  The dirty log shows which path a
-- change took: a retracting flow logs nothing.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA rt;
CREATE TABLE rt.m (
	ts timestamptz,
	dev int,
	i2 int2,
	i4 int4,
	i8 int8,
	num numeric,
	f8 float8,
	cash money,
	dur interval,
	flag boolean,
	label text
);
CREATE INDEX ON rt.m (ts);
INSERT INTO rt.m
SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '23 seconds', i % 5,
	   CASE WHEN i % 7 = 0 THEN NULL ELSE (i % 300)::int2 END,
	   CASE WHEN i % 11 = 0 THEN NULL ELSE i * 37 % 1000 END,
	   i::int8 * 1000003,
	   CASE WHEN i % 13 = 0 THEN NULL ELSE round((i % 97) * 1.25, (i % 3)) END,
	   CASE WHEN i % 17 = 0 THEN 'NaN'::float8 ELSE (i % 64)::float8 / 4 END,
	   (i % 50)::money,
	   CASE WHEN i % 19 = 0 THEN NULL ELSE (i % 90) * interval '1 second' END,
	   CASE WHEN i % 23 = 0 THEN NULL ELSE i % 3 <> 0 END,
	   'l' || (i % 41)
FROM generate_series(1, 2000) i;

-- Every family that retracts exactly (inverse transition functions).
SELECT flowpg.create_flow('rt_inverse', 'rt.inverse', $$
	SELECT date_trunc('hour', ts) AS hour, dev,
		   count(*) AS n, count(num) AS n_num,
		   sum(i2) AS s2, sum(i4) AS s4, sum(i8) AS s8, sum(num) AS snum,
		   sum(cash) AS scash, sum(dur) AS sdur,
		   avg(i2) AS a2, avg(i4) AS a4, avg(i8) AS a8, avg(num) AS anum, avg(dur) AS adur,
		   stddev(i4) AS sd4, var_pop(i8) AS vp8, variance(num) AS vnum, stddev_pop(i2) AS sdp2
	  FROM rt.m GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
-- Extremes: free unless the extreme goes (then its window is recomputed).
SELECT flowpg.create_flow('rt_extreme', 'rt.extreme', $$
	SELECT date_trunc('hour', ts) AS hour, dev,
		   min(i4) AS min4, max(i4) AS max4, max(num) AS maxnum, min(f8) AS minf, max(f8) AS maxf,
		   min(label) AS minl, max(ts) AS last_ts, bool_and(flag) AS all_flag,
		   bool_or(flag) AS any_flag, count(*) AS n
	  FROM rt.m GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
-- No inverse: a float sum is recomputed as before.
SELECT flowpg.create_flow('rt_float', 'rt.float', $$
	SELECT date_trunc('hour', ts) AS hour, dev, sum(f8) AS sf, avg(f8) AS af, count(*) AS n
	  FROM rt.m GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
-- No GROUP BY: one row, even over no rows.
SELECT flowpg.create_flow('rt_total', 'rt.total', $$
	SELECT count(*) AS n, sum(i4) AS s4, avg(num) AS anum, max(i8) AS max8 FROM rt.m$$,
	mode => 'streaming') > 0 AS created;
-- HAVING: a group leaves and rejoins the sink as its count crosses it.
SELECT flowpg.create_flow('rt_having', 'rt.having', $$
	SELECT date_trunc('hour', ts) AS hour, dev, count(*) AS n, sum(i4) AS s4
	  FROM rt.m WHERE i4 IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 20$$,
	mode => 'streaming') > 0 AS created;
-- The same queries recomputed by the batching engine, as a second oracle.
SELECT flowpg.create_flow('rt_inverse_b', 'rt.inverse_b',
	(SELECT query FROM flowpg.flows WHERE flow_name = 'rt_inverse'), mode => 'batching') > 0 AS created;
SELECT flowpg.create_flow('rt_extreme_b', 'rt.extreme_b',
	(SELECT query FROM flowpg.flows WHERE flow_name = 'rt_extreme'), mode => 'batching') > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled
  FROM flowpg.flows WHERE flow_name LIKE 'rt\_%' ORDER BY flow_id;
-- the worker has loaded each streaming flow's state
SELECT pg_sleep(0.5);
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed
  FROM flowpg.flows WHERE flow_name LIKE 'rt\_%' ORDER BY flow_id;

-- What explain_flow says of each aggregate and of the changes.
SELECT line FROM flowpg.explain_flow('rt_inverse') AS line
 WHERE line ~ 'Retraction|Changes:|transfn' AND line ~ 'int4|int2int4|Changes|numeric_accum_inv' ;
SELECT line FROM flowpg.explain_flow('rt_float') AS line WHERE line ~ 'Changes:|Retraction';
SELECT line FROM flowpg.explain_flow('rt_extreme') AS line WHERE line ~ 'Retraction' LIMIT 2;

CREATE FUNCTION rt.check(label text) RETURNS TABLE (step text, flow text, mismatches bigint)
LANGUAGE sql AS $$
	SELECT label, flow_name, flow_mismatches(flow_name)
	  FROM (SELECT flow_name, flowpg.flush_flow(flow_name) FROM flowpg.flows
			 WHERE flow_name LIKE 'rt\_%' ORDER BY flow_id) f
$$;
-- Which flows logged windows dirty in this transaction's changes: only the
-- ones that cannot retract.
CREATE FUNCTION rt.logged() RETURNS TABLE (flow text)
LANGUAGE sql AS $$
	SELECT DISTINCT f.flow_name FROM flowpg.dirty_log d JOIN flowpg.flows f USING (flow_id)
	 WHERE f.mode = 'streaming' ORDER BY 1
$$;

-- Updates of values (NULLs in and out), of the group key, of the time
-- (rows move between groups and windows, in one sink write).
BEGIN;
UPDATE rt.m SET i4 = i4 + 500, num = NULL, dur = dur * 2 WHERE i4 % 9 = 0;
UPDATE rt.m SET i2 = NULL, num = 3.125, flag = NOT flag WHERE i8 % 7 = 1;
UPDATE rt.m SET dev = dev + 1 WHERE i8 % 5 = 2;
UPDATE rt.m SET ts = ts + interval '2 hours' WHERE i8 % 11 = 3;
SELECT * FROM rt.logged();
COMMIT;
SELECT * FROM rt.check('updates');

-- Deletes: of extremes (the maximum of a group, NaN), of whole groups and
-- windows (they leave the sink), of the only rows of a numeric scale.
BEGIN;
DELETE FROM rt.m WHERE f8 = 'NaN';
DELETE FROM rt.m WHERE (dev, date_trunc('hour', ts)) IN
	(SELECT dev, date_trunc('hour', ts) FROM rt.m GROUP BY 1, 2 ORDER BY 2, 1 LIMIT 7);
DELETE FROM rt.m WHERE (dev, i4) IN
	(SELECT dev, max(i4) FROM rt.m GROUP BY dev, date_trunc('hour', ts));
DELETE FROM rt.m WHERE scale(num) = 2;
SELECT * FROM rt.logged();
COMMIT;
SELECT * FROM rt.check('deletes');
SELECT count(*) AS groups_left_in_sink FROM rt.inverse
 WHERE (hour, dev) NOT IN (SELECT date_trunc('hour', ts), dev FROM rt.m);

-- Savepoints: a rolled-back retraction never counts; a released one does.
BEGIN;
UPDATE rt.m SET i4 = 0 WHERE dev = 1;
SAVEPOINT a;
DELETE FROM rt.m WHERE dev = 2;
UPDATE rt.m SET dev = 9 WHERE dev = 3;
ROLLBACK TO a;
SAVEPOINT b;
DELETE FROM rt.m WHERE dev = 4 AND i8 % 2 = 0;
RELEASE b;
COMMIT;
SELECT * FROM rt.check('savepoints');
-- a transaction that inserts, updates and deletes its own rows
BEGIN;
INSERT INTO rt.m (ts, dev, i4, num, label)
SELECT '2024-03-01 05:00+00'::timestamptz + i * interval '1 minute', 7, i, i * 0.5, 'new'
FROM generate_series(1, 50) i;
UPDATE rt.m SET i4 = i4 * 10, num = num + 1 WHERE dev = 7;
DELETE FROM rt.m WHERE dev = 7 AND i4 > 300;
UPDATE rt.m SET i4 = i4 - 1 WHERE dev = 7;
COMMIT;
SELECT * FROM rt.check('own rows');
-- one round applies two transactions' batches (a long flush_interval): a
-- group emptied by the first (its maximum among its rows) and given smaller
-- rows by the second starts again from its initial states
ALTER SYSTEM SET flowpg.flush_interval = '3s';
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
DELETE FROM rt.m WHERE dev = 1 AND ts >= '2024-03-01 01:00+00' AND ts < '2024-03-01 02:00+00';
INSERT INTO rt.m (ts, dev, i4, num, f8, label, flag)
VALUES ('2024-03-01 01:30+00', 1, 3, 0.5, 1, 'zz', true), ('2024-03-01 01:31+00', 1, 2, 0.25, 0.5, 'zy', false);
ALTER SYSTEM RESET flowpg.flush_interval;
SELECT pg_reload_conf();
SELECT * FROM rt.check('emptied and refilled');
SELECT max4, maxnum, maxf, n FROM rt.extreme WHERE dev = 1 AND hour = '2024-03-01 01:00+00';
-- a whole rollback: nothing of it reaches a sink
BEGIN;
DELETE FROM rt.m WHERE dev = 0;
UPDATE rt.m SET i4 = -1;
ROLLBACK;
SELECT * FROM rt.check('rollback');

-- MERGE: its updates, deletes and inserts.
CREATE TABLE rt.changes (ts timestamptz, dev int, i4 int, drop boolean);
INSERT INTO rt.changes
SELECT ts, dev, i4 + 1, i8 % 3 = 0 FROM rt.m WHERE i8 % 10 = 4
UNION ALL
SELECT '2024-03-01 07:00+00'::timestamptz + i * interval '1 minute', 8, i, false
  FROM generate_series(1, 10) i;
MERGE INTO rt.m m USING rt.changes c ON m.ts = c.ts AND m.dev = c.dev
WHEN MATCHED AND c.drop THEN DELETE
WHEN MATCHED THEN UPDATE SET i4 = c.i4, num = c.i4 * 0.25
WHEN NOT MATCHED THEN INSERT (ts, dev, i4) VALUES (c.ts, c.dev, c.i4);
SELECT * FROM rt.check('merge');

-- Everything deleted: every group leaves, the global row stays.
DELETE FROM rt.m;
SELECT * FROM rt.check('all deleted');
SELECT (SELECT count(*) FROM rt.inverse) AS inverse_rows, (SELECT count(*) FROM rt.extreme) AS extreme_rows;
SELECT n, s4, anum, max8 FROM rt.total;
-- and rows again into the emptied state
INSERT INTO rt.m (ts, dev, i4, num) VALUES ('2024-03-02 00:00+00', 1, 5, 1.5), ('2024-03-02 00:00+00', 1, 7, 2);
UPDATE rt.m SET i4 = 6;
SELECT * FROM rt.check('refilled');

-- Removed extremes and numeric scales the inverse cannot drop had their
-- groups recomputed from their rows in the same round: only the flow
-- without a window (rt_total) handed them to the dirty log (fallbacks).
SELECT flow_name, batches_applied > 0 AS applied, fallbacks > 0 AS fell_back
  FROM flowpg.flow_stats WHERE mode = 'streaming' AND flow_name LIKE 'rt\_%' ORDER BY flow_id;


-- A flow on a partition, its table changed through the partitioned parent
-- (whose statements fire only the parent's triggers: flowpg installs its
-- own there too); a flow on the parent with rows moving across partitions.
CREATE TABLE rt.p (ts timestamptz NOT NULL, dev int NOT NULL, v int) PARTITION BY LIST (dev);
CREATE TABLE rt.p01 PARTITION OF rt.p FOR VALUES IN (0, 1);
CREATE TABLE rt.p23 PARTITION OF rt.p FOR VALUES IN (2, 3);
CREATE TABLE rt.pdef PARTITION OF rt.p DEFAULT;
INSERT INTO rt.p SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '10 s', i % 5, i
FROM generate_series(1, 600) i;
SELECT flowpg.create_flow('rt_part', 'rt.part', $$
	SELECT date_trunc('minute', ts) AS minute, dev, count(*) AS n, sum(v) AS total, max(v) AS hi
	  FROM rt.p23 GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('rt_part_b', 'rt.part_b',
	(SELECT query FROM flowpg.flows WHERE flow_name = 'rt_part'), mode => 'batching') > 0 AS created;
-- the partition's flows put capture triggers on the parent
SELECT tgrelid::regclass AS parent_has_triggers FROM pg_trigger
 WHERE tgrelid = 'rt.p'::regclass AND tgname = 'flowpg_capture_update';
SELECT flowpg.create_flow('rt_root', 'rt.root', $$
	SELECT date_trunc('minute', ts) AS minute, dev, count(*) AS n, sum(v) AS total, max(v) AS hi
	  FROM rt.p GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled
  FROM flowpg.flows WHERE flow_name IN ('rt_part', 'rt_part_b', 'rt_root') ORDER BY flow_id;
SELECT pg_sleep(0.5);
UPDATE rt.p SET v = v + 1 WHERE v % 3 = 1;
UPDATE rt.p SET dev = dev + 2 WHERE v % 7 = 0;
DELETE FROM rt.p WHERE v % 11 = 0;
INSERT INTO rt.p SELECT '2024-03-01 00:30+00'::timestamptz + i * interval '10 s', 2, i
FROM generate_series(1, 30) i;
UPDATE rt.p23 SET v = -v WHERE v % 5 = 0;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name IN ('rt_part', 'rt_part_b', 'rt_root') ORDER BY flow_id;
-- a table with a flow attached under a new parent: the parent captures too
CREATE TABLE rt.q (ts timestamptz NOT NULL, dev int NOT NULL, v int) PARTITION BY LIST (dev);
CREATE TABLE rt.q1 (ts timestamptz NOT NULL, dev int NOT NULL, v int);
INSERT INTO rt.q1 SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '10 s', 1, i
FROM generate_series(1, 100) i;
SELECT flowpg.create_flow('rt_attached', 'rt.attached', $$
	SELECT date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS total FROM rt.q1 GROUP BY 1$$,
	mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('rt_attached') >= 0 AS backfilled;
ALTER TABLE rt.q ATTACH PARTITION rt.q1 FOR VALUES IN (1);
SELECT count(*) AS parent_triggers FROM pg_trigger
 WHERE tgrelid = 'rt.q'::regclass AND tgname LIKE 'flowpg_capture%';
UPDATE rt.q SET v = v * 3 WHERE v % 4 = 0;
DELETE FROM rt.q WHERE v % 5 = 0;
SELECT flowpg.flush_flow('rt_attached') >= 0 AS flushed, flow_mismatches('rt_attached') AS mismatches;
SELECT flowpg.drop_flow('rt_attached');
-- the flow on the parent first: the partitions' last flows then take the
-- parent's triggers, installed for them, with them
SELECT flowpg.drop_flow(f) FROM unnest(ARRAY['rt_root', 'rt_part', 'rt_part_b']) f;
SELECT count(*) AS triggers_left_on_parent FROM pg_trigger
 WHERE tgrelid = 'rt.p'::regclass AND tgname LIKE 'flowpg%';
-- A row trigger
-- that updates each row its INSERT just added: the UPDATE's capture fires
-- before the INSERT's, yet every added row is applied before any row taken
-- back.  An output dividing by count(*) is not computed for a group whose
-- rows are all gone.
CREATE TABLE rt.o (id serial, ts timestamptz NOT NULL, k int, v int, status int);
CREATE FUNCTION rt.fix() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE rt.o SET v = NEW.v * 10 WHERE id = NEW.id;
	RETURN NULL;
END $f$;
CREATE TRIGGER a_fix AFTER INSERT ON rt.o FOR EACH ROW WHEN (NEW.v < 100) EXECUTE FUNCTION rt.fix();
SELECT flowpg.create_flow('rt_ratio', 'rt.ratio', $$
	SELECT date_trunc('minute', ts) AS minute, k, count(*) AS n, sum(v) AS total, avg(v) AS mean,
		   100.0 * count(*) FILTER (WHERE status >= 500) / count(*) AS error_pct
	  FROM rt.o GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
-- the worker's own backfill (a flush_flow now would recompute in this
-- session and have the worker reload its state after the rows below)
DO $$ BEGIN
	FOR i IN 1..200 LOOP
		EXIT WHEN (SELECT state FROM flowpg.flows WHERE flow_name = 'rt_ratio') = 'active';
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT state FROM flowpg.flows WHERE flow_name = 'rt_ratio';
INSERT INTO rt.o (ts, k, v, status)
SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '7 s', i % 3, i, CASE WHEN i % 4 = 0 THEN 503 ELSE 200 END
FROM generate_series(1, 40) i;
SELECT flowpg.flush_flow('rt_ratio') >= 0 AS flushed, flow_mismatches('rt_ratio') AS mismatches;
-- every row of two minutes deleted: those groups leave the sink, the round does not fail
DELETE FROM rt.o WHERE ts < '2024-03-01 00:02+00';
SELECT flowpg.flush_flow('rt_ratio') >= 0 AS flushed, flow_mismatches('rt_ratio') AS mismatches;
SELECT failures FROM flowpg.flow_stats WHERE flow_name = 'rt_ratio';
SELECT count(*) AS early_groups FROM rt.ratio WHERE minute < '2024-03-01 00:02+00';

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'rt\_%';
DROP SCHEMA rt CASCADE;
