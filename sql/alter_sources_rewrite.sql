-- ALTER TABLE on flow sources that leaves the flows' queries valid, for both
-- engines (alter_sources covers the renames): SET SCHEMA of a source and
-- the rename of its schema; unrelated columns dropped before the columns the
-- flow reads, and added; ALTER COLUMN TYPE of unrelated columns, CLUSTER and
-- VACUUM FULL (rewrites, a new relfilenode); a partitioned source gaining
-- partitions that hold rows, with other column orders and dropped columns
-- (attribute numbers differ from the parent's), and losing partitions (their
-- rows leave the sinks); worker restarts in between (the streaming state is
-- refilled from the altered source).  ALTERs that would break a query stay
-- refused and leave the flows working.  After each step: INSERT, UPDATE and
-- DELETE, then every flow flushed, 'active' and equal to its query.
SET TimeZone = 'UTC';
CREATE SCHEMA ars;

-- Flush every flow matching a pattern, then its state and the oracle.
CREATE FUNCTION ars_check(pattern text)
RETURNS TABLE (flow text, mode text, state text, mismatches bigint)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM flowpg.flush_flow(f.flow_name) FROM flowpg.flows f
	  WHERE f.flow_name LIKE pattern ORDER BY f.flow_name;
	RETURN QUERY SELECT f.flow_name::text, f.mode::text, f.state::text, flow_mismatches(f.flow_name)
	  FROM flowpg.flows f WHERE f.flow_name LIKE pattern ORDER BY 1;
END $$;

-- Terminate the database's flowpg workers and wait until they are gone.
CREATE FUNCTION ars_restart_workers() RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	old int[];
BEGIN
	SELECT array_agg(pid) INTO old FROM pg_stat_activity
	 WHERE backend_type = 'flowpg worker' AND datname = current_database();
	IF old IS NULL THEN
		RETURN false;
	END IF;
	PERFORM pg_terminate_backend(p) FROM unnest(old) p;
	FOR i IN 1..300 LOOP
		PERFORM pg_stat_clear_snapshot();
		EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = ANY (old));
		PERFORM pg_sleep(0.1);
	END LOOP;
	PERFORM pg_stat_clear_snapshot();
	RETURN NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = ANY (old));
END $$;

------------------------------------------------------------------------------
-- An ordinary source: columns the flows never read sit before, between and
-- after the ones they read (ts, device, v, w).
------------------------------------------------------------------------------
CREATE TABLE ars.src (pre int, gone1 text, ts timestamptz NOT NULL, gone2 int,
					  device int, v int, w float8, tail text);
INSERT INTO ars.src
SELECT i, 'g' || i, '2024-01-01 00:00+00'::timestamptz + i * interval '10 seconds', i,
	   i % 5, i, (i % 17) * 0.25, 't' || i
  FROM generate_series(1, 600) i;
SELECT flowpg.create_flow('ars_' || m, 'ars_out_' || m,
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS total,
		   min(w) AS lo, max(w) AS hi, avg(w) AS mean
	  FROM ars.src WHERE v % 7 <> 3 GROUP BY 1, 2$$, mode => m) > 0 AS created
  FROM unnest(ARRAY['streaming', 'batching']) m;
SELECT * FROM ars_check('ars\_%');

-- SET SCHEMA of the source
CREATE SCHEMA ars_moved;
ALTER TABLE ars.src SET SCHEMA ars_moved;
SELECT flow_name, source_tables FROM flowpg.flows WHERE flow_name LIKE 'ars\_%' ORDER BY 1;
INSERT INTO ars_moved.src (ts, device, v, w)
SELECT '2024-01-01 00:00:05+00'::timestamptz + i * interval '1 minute', i % 3, 1000 + i, i * 0.5
  FROM generate_series(0, 30) i;
UPDATE ars_moved.src SET v = v + 100, w = w + 1 WHERE device = 2 AND ts < '2024-01-01 00:30+00';
DELETE FROM ars_moved.src WHERE device = 3 AND ts >= '2024-01-01 01:00+00';
SELECT * FROM ars_check('ars\_%');

-- the source's schema renamed
ALTER SCHEMA ars_moved RENAME TO ars_renamed;
SELECT flow_name, source_tables FROM flowpg.flows WHERE flow_name LIKE 'ars\_%' ORDER BY 1;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES
  ('2024-01-01 00:10:01+00', 4, 7, 0.75), ('2024-01-01 02:10:01+00', 9, 8, 1.25);
UPDATE ars_renamed.src SET ts = ts + interval '7 minutes' WHERE device = 1 AND v < 200;
DELETE FROM ars_renamed.src WHERE device = 0 AND v BETWEEN 300 AND 400;
SELECT * FROM ars_check('ars\_%');

-- unrelated columns before the used ones dropped, others added (no rewrite:
-- a constant default is stored as the missing value)
ALTER TABLE ars_renamed.src DROP COLUMN gone1;
ALTER TABLE ars_renamed.src DROP COLUMN gone2;
ALTER TABLE ars_renamed.src ADD COLUMN added int DEFAULT 42, ADD COLUMN added2 text;
SELECT attnum, attname, attisdropped FROM pg_attribute
 WHERE attrelid = 'ars_renamed.src'::regclass AND attnum > 0 ORDER BY attnum;
INSERT INTO ars_renamed.src (pre, ts, device, v, w, tail, added, added2)
SELECT i, '2024-01-01 00:20:30+00'::timestamptz + i * interval '17 seconds', i % 4, 2000 + i, i * 0.25, 'n', i, 'a'
  FROM generate_series(1, 50) i;
UPDATE ars_renamed.src SET v = v - 50, added = 0 WHERE device = 3 AND v < 300;
UPDATE ars_renamed.src SET tail = 'only unrelated', added2 = 'x' WHERE device = 1;
DELETE FROM ars_renamed.src WHERE device = 2 AND added = 42 AND ts < '2024-01-01 00:15+00';
SELECT * FROM ars_check('ars\_%');

-- ALTER COLUMN TYPE of unrelated columns: a rewrite, and the column before
-- the used ones changes its width (int to text)
CREATE TEMP TABLE ars_files AS SELECT 'src' AS what, pg_relation_filenode('ars_renamed.src') AS filenode;
ALTER TABLE ars_renamed.src ALTER COLUMN pre TYPE text USING 'pre-' || pre,
  ALTER COLUMN added TYPE bigint;
SELECT pg_relation_filenode('ars_renamed.src') <> filenode AS rewritten FROM ars_files;
INSERT INTO ars_renamed.src (pre, ts, device, v, w) VALUES
  ('a much longer text than an int ever was', '2024-01-01 00:40:40+00', 1, 11, 2.5),
  (NULL, '2024-01-01 01:40:40+00', 2, 12, 3.5);
UPDATE ars_renamed.src SET w = w * 2 WHERE device = 4 AND ts < '2024-01-01 00:50+00';
UPDATE ars_renamed.src SET pre = pre || '!' WHERE device = 0;
DELETE FROM ars_renamed.src WHERE v % 11 = 0;
SELECT * FROM ars_check('ars\_%');

-- CLUSTER and VACUUM FULL: the rows move to a new relfilenode
UPDATE ars_files SET filenode = pg_relation_filenode('ars_renamed.src');
CREATE INDEX ars_src_device_ts ON ars_renamed.src (device, ts);
CLUSTER ars_renamed.src USING ars_src_device_ts;
SELECT pg_relation_filenode('ars_renamed.src') <> filenode AS rewritten FROM ars_files;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES ('2024-01-01 00:05:55+00', 3, 13, 0.5);
UPDATE ars_renamed.src SET v = v + 1 WHERE device = 3 AND ts < '2024-01-01 00:30+00';
DELETE FROM ars_renamed.src WHERE device = 4 AND ts >= '2024-01-01 01:20+00';
SELECT * FROM ars_check('ars\_%');
UPDATE ars_files SET filenode = pg_relation_filenode('ars_renamed.src');
VACUUM FULL ars_renamed.src;
SELECT pg_relation_filenode('ars_renamed.src') <> filenode AS rewritten FROM ars_files;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES ('2024-01-01 01:05:55+00', 0, 14, 0.25);
UPDATE ars_renamed.src SET device = 5 WHERE device = 0 AND ts < '2024-01-01 00:20+00';
DELETE FROM ars_renamed.src WHERE device = 1 AND ts < '2024-01-01 00:10+00';
SELECT * FROM ars_check('ars\_%');

-- SET UNLOGGED and SET LOGGED: rewrites too
UPDATE ars_files SET filenode = pg_relation_filenode('ars_renamed.src');
ALTER TABLE ars_renamed.src SET UNLOGGED;
SELECT pg_relation_filenode('ars_renamed.src') <> filenode AS rewritten FROM ars_files;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES ('2024-01-01 00:07:07+00', 3, 27, 0.5);
UPDATE ars_renamed.src SET v = v + 2 WHERE device = 3 AND ts >= '2024-01-01 01:00+00';
DELETE FROM ars_renamed.src WHERE device = 0 AND ts >= '2024-01-01 01:30+00';
SELECT * FROM ars_check('ars\_%');
ALTER TABLE ars_renamed.src SET LOGGED;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES ('2024-01-01 00:08:08+00', 3, 28, 0.75);
UPDATE ars_renamed.src SET w = w + 1 WHERE device = 1 AND ts >= '2024-01-01 01:00+00';
DELETE FROM ars_renamed.src WHERE device = 4 AND ts < '2024-01-01 00:05+00';
SELECT * FROM ars_check('ars\_%');

-- in one transaction, with changes before, between and after: a rewrite
-- that widens the column before the used ones, SET SCHEMA there and back,
-- an unrelated column dropped
BEGIN;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES ('2024-01-01 00:12:12+00', 1, 19, 1.5);
UPDATE ars_renamed.src SET v = v + 5 WHERE device = 1 AND ts < '2024-01-01 00:20+00';
ALTER TABLE ars_renamed.src ALTER COLUMN pre TYPE char(60);
INSERT INTO ars_renamed.src (pre, ts, device, v, w) VALUES ('p', '2024-01-01 00:12:13+00', 1, 20, 1.75);
DELETE FROM ars_renamed.src WHERE device = 2 AND ts < '2024-01-01 00:25+00';
ALTER TABLE ars_renamed.src SET SCHEMA ars;
UPDATE ars.src SET w = w + 0.5 WHERE device = 3;
ALTER TABLE ars.src DROP COLUMN tail;
INSERT INTO ars.src (ts, device, v, w) VALUES ('2024-01-01 00:12:14+00', 1, 21, 2.0);
ALTER TABLE ars.src SET SCHEMA ars_renamed;
DELETE FROM ars_renamed.src WHERE device = 4 AND v % 3 = 0;
COMMIT;
SELECT * FROM ars_check('ars\_%');
-- the same, rolled back
BEGIN;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES ('2024-01-01 00:13:13+00', 1, 22, 1.5);
ALTER TABLE ars_renamed.src ALTER COLUMN added TYPE numeric;
UPDATE ars_renamed.src SET v = v * 3 WHERE device = 1;
ALTER TABLE ars_renamed.src SET SCHEMA ars;
DELETE FROM ars.src WHERE device = 3;
ROLLBACK;
SELECT * FROM ars_check('ars\_%');

-- a sink TRUNCATE and a worker restart after the rewrites: the streaming
-- state is refilled from the rewritten source
TRUNCATE ars_out_streaming;
SELECT ars_restart_workers() AS restarted;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES ('2024-01-01 00:33:33+00', 2, 15, 4.0);
UPDATE ars_renamed.src SET v = v * 2 WHERE device = 2 AND ts >= '2024-01-01 01:00+00';
DELETE FROM ars_renamed.src WHERE device = 5;
SELECT * FROM ars_check('ars\_%');

------------------------------------------------------------------------------
-- A partitioned source: partitions attached with rows, their columns in
-- another order and with dropped columns; partitions detached.
------------------------------------------------------------------------------
CREATE TABLE ars.parted (ts timestamptz NOT NULL, device int, v int, w float8) PARTITION BY RANGE (ts);
CREATE TABLE ars.p_d1 PARTITION OF ars.parted
  FOR VALUES FROM ('2024-01-01 00:00+00') TO ('2024-01-02 00:00+00');
CREATE TABLE ars.p_d2 PARTITION OF ars.parted
  FOR VALUES FROM ('2024-01-02 00:00+00') TO ('2024-01-03 00:00+00');
INSERT INTO ars.parted
SELECT '2024-01-01 12:00+00'::timestamptz + i * interval '5 minutes', i % 3, i, (i % 13) * 0.5
  FROM generate_series(0, 287) i;
SELECT flowpg.create_flow('ars_p_' || m, 'ars_p_out_' || m,
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total,
		   min(w) AS lo, max(w) AS hi
	  FROM ars.parted WHERE v % 7 <> 3 GROUP BY 1, 2$$, mode => m) > 0 AS created
  FROM unnest(ARRAY['streaming', 'batching']) m;
INSERT INTO ars.parted VALUES ('2024-01-01 13:30+00', 1, 500, 1.5), ('2024-01-02 01:30+00', 2, 501, 2.5);
SELECT * FROM ars_check('ars\_p\_%');

-- a partition with rows attached: its columns in another order, one dropped
CREATE TABLE ars.p_d3 (junk text, w float8, extra int, v int, device int, ts timestamptz NOT NULL);
ALTER TABLE ars.p_d3 DROP COLUMN junk;
INSERT INTO ars.p_d3 (ts, device, v, w, extra)
SELECT '2024-01-03 00:00+00'::timestamptz + i * interval '7 minutes', i % 4, 3000 + i, (i % 5) * 0.75, i
  FROM generate_series(0, 150) i;
ALTER TABLE ars.p_d3 DROP COLUMN extra;
SELECT attnum, attname FROM pg_attribute
 WHERE attrelid = 'ars.p_d3'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
ALTER TABLE ars.parted ATTACH PARTITION ars.p_d3
  FOR VALUES FROM ('2024-01-03 00:00+00') TO ('2024-01-04 00:00+00');
SELECT * FROM ars_check('ars\_p\_%');
SELECT count(*) AS day3_groups FROM ars_p_out_streaming WHERE hour >= '2024-01-03' AND hour < '2024-01-04';
-- through the parent: into the new partition, moved to and from it, deleted
INSERT INTO ars.parted VALUES ('2024-01-03 05:05+00', 1, 7, 0.25), ('2024-01-03 06:06+00', 0, 8, 9.75);
UPDATE ars.parted SET ts = ts + interval '1 day' WHERE ts >= '2024-01-02 06:00+00' AND ts < '2024-01-02 08:00+00';
UPDATE ars.parted SET ts = ts - interval '2 days', v = v + 1 WHERE ts >= '2024-01-03 10:00+00' AND ts < '2024-01-03 11:00+00';
DELETE FROM ars.parted WHERE ts >= '2024-01-03 12:00+00' AND device = 2;
SELECT * FROM ars_check('ars\_p\_%');
-- straight into the new partition
INSERT INTO ars.p_d3 (ts, device, v, w) VALUES ('2024-01-03 15:15+00', 3, 9, 8.5);
UPDATE ars.p_d3 SET v = v + 10, w = w / 2 WHERE device = 1;
DELETE FROM ars.p_d3 WHERE device = 0 AND ts >= '2024-01-03 18:00+00';
SELECT * FROM ars_check('ars\_p\_%');

-- a partitioned table with rows attached (two levels), its leaves' columns
-- in yet other orders
CREATE TABLE ars.p_d4 (w float8, v int, device int, ts timestamptz NOT NULL) PARTITION BY LIST (device);
CREATE TABLE ars.p_d4_even (x int, ts timestamptz NOT NULL, device int, v int, w float8);
ALTER TABLE ars.p_d4_even DROP COLUMN x;
ALTER TABLE ars.p_d4 ATTACH PARTITION ars.p_d4_even FOR VALUES IN (0, 2, 4);
CREATE TABLE ars.p_d4_odd PARTITION OF ars.p_d4 DEFAULT;
INSERT INTO ars.p_d4 (ts, device, v, w)
SELECT '2024-01-04 00:00+00'::timestamptz + i * interval '11 minutes', i % 5, 4000 + i, (i % 9) * 0.5
  FROM generate_series(0, 120) i;
ALTER TABLE ars.parted ATTACH PARTITION ars.p_d4
  FOR VALUES FROM ('2024-01-04 00:00+00') TO ('2024-01-05 00:00+00');
SELECT * FROM ars_check('ars\_p\_%');
UPDATE ars.parted SET device = device + 1 WHERE ts >= '2024-01-04 03:00+00' AND ts < '2024-01-04 06:00+00';
INSERT INTO ars.p_d4_even (ts, device, v, w) VALUES ('2024-01-04 20:20+00', 2, 10, 0.5);
DELETE FROM ars.p_d4_odd WHERE ts >= '2024-01-04 12:00+00';
SELECT * FROM ars_check('ars\_p\_%');

-- a worker restart: the streaming state is refilled from all partitions
TRUNCATE ars_p_out_streaming;
SELECT ars_restart_workers() AS restarted;
INSERT INTO ars.parted VALUES ('2024-01-03 21:21+00', 1, 11, 6.25), ('2024-01-04 21:21+00', 1, 12, 6.5);
UPDATE ars.parted SET w = w + 0.25 WHERE device = 1;
DELETE FROM ars.parted WHERE v % 10 = 1;
SELECT * FROM ars_check('ars\_p\_%');

-- a partition detached: its rows leave the flows, later changes to it do
-- not reach them, and it loses the capture triggers
ALTER TABLE ars.parted DETACH PARTITION ars.p_d2;
SELECT * FROM ars_check('ars\_p\_%');
SELECT count(*) AS day2_groups_streaming FROM ars_p_out_streaming WHERE hour >= '2024-01-02' AND hour < '2024-01-03';
SELECT count(*) AS day2_groups_batching FROM ars_p_out_batching WHERE hour >= '2024-01-02' AND hour < '2024-01-03';
SELECT count(*) AS capture_triggers FROM pg_trigger
 WHERE tgrelid = 'ars.p_d2'::regclass AND tgname LIKE 'flowpg\_capture%';
INSERT INTO ars.p_d2 VALUES ('2024-01-02 02:02+00', 1, 13, 1.0);
UPDATE ars.p_d2 SET v = v + 1000;
DELETE FROM ars.p_d2 WHERE device = 0;
INSERT INTO ars.parted VALUES ('2024-01-01 22:22+00', 2, 14, 7.5);
UPDATE ars.parted SET v = v + 1 WHERE device = 2 AND ts >= '2024-01-03 00:00+00';
DELETE FROM ars.parted WHERE device = 0 AND ts < '2024-01-01 15:00+00';
SELECT * FROM ars_check('ars\_p\_%');

-- attached again, with the changes it had while detached
ALTER TABLE ars.parted ATTACH PARTITION ars.p_d2
  FOR VALUES FROM ('2024-01-02 00:00+00') TO ('2024-01-03 00:00+00');
SELECT * FROM ars_check('ars\_p\_%');
UPDATE ars.p_d2 SET device = 4 WHERE device = 1;
SELECT * FROM ars_check('ars\_p\_%');

-- unrelated columns of the parent (and so of every partition) added,
-- retyped (a rewrite of every partition) and dropped; VACUUM FULL of all
ALTER TABLE ars.parted ADD COLUMN note int DEFAULT 1;
UPDATE ars.parted SET note = 2, v = v + 1 WHERE device = 2 AND ts < '2024-01-01 18:00+00';
ALTER TABLE ars.parted ALTER COLUMN note TYPE bigint;
INSERT INTO ars.parted (ts, device, v, w, note) VALUES ('2024-01-03 03:03+00', 2, 23, 2.25, 5);
DELETE FROM ars.parted WHERE device = 1 AND note = 1 AND ts >= '2024-01-04 10:00+00';
SELECT * FROM ars_check('ars\_p\_%');
VACUUM FULL ars.parted;
INSERT INTO ars.p_d4_odd (ts, device, v, w) VALUES ('2024-01-04 01:01+00', 3, 24, 2.5);
UPDATE ars.parted SET w = w - 0.5 WHERE device = 0 AND ts >= '2024-01-02 00:00+00';
ALTER TABLE ars.parted DROP COLUMN note;
DELETE FROM ars.parted WHERE device = 2 AND ts >= '2024-01-02 12:00+00' AND ts < '2024-01-03 12:00+00';
SELECT * FROM ars_check('ars\_p\_%');

-- in one transaction: changes, a partition with rows attached, changes
-- moving rows into it; then a DETACH rolled back
CREATE TABLE ars.p_d5 (v int, ts timestamptz NOT NULL, w float8, device int);
INSERT INTO ars.p_d5
SELECT 5000 + i, '2024-01-05 00:00+00'::timestamptz + i * interval '13 minutes', (i % 7) * 0.25, i % 3
  FROM generate_series(0, 100) i;
BEGIN;
INSERT INTO ars.parted VALUES ('2024-01-01 23:59+00', 0, 25, 3.0);
ALTER TABLE ars.parted ATTACH PARTITION ars.p_d5
  FOR VALUES FROM ('2024-01-05 00:00+00') TO ('2024-01-06 00:00+00');
UPDATE ars.parted SET ts = ts + interval '1 day' WHERE ts >= '2024-01-04 22:00+00' AND ts < '2024-01-05 00:00+00';
DELETE FROM ars.p_d5 WHERE device = 1 AND ts >= '2024-01-05 12:00+00';
COMMIT;
SELECT * FROM ars_check('ars\_p\_%');
SELECT count(*) AS day5_groups FROM ars_p_out_batching WHERE hour >= '2024-01-05' AND hour < '2024-01-06';
BEGIN;
ALTER TABLE ars.parted DETACH PARTITION ars.p_d1;
INSERT INTO ars.p_d1 VALUES ('2024-01-01 20:20+00', 1, 26, 3.25);
UPDATE ars.parted SET v = v + 2 WHERE device = 1;
ROLLBACK;
SELECT * FROM ars_check('ars\_p\_%');

-- SET SCHEMA of the partitioned source (its partitions stay where they are)
ALTER TABLE ars.parted SET SCHEMA ars_renamed;
SELECT flow_name, source_tables FROM flowpg.flows WHERE flow_name LIKE 'ars\_p\_%' ORDER BY 1;
INSERT INTO ars_renamed.parted VALUES ('2024-01-02 04:04+00', 1, 29, 4.5);
UPDATE ars_renamed.parted SET v = v + 1 WHERE device = 0 AND ts >= '2024-01-05 00:00+00';
DELETE FROM ars.p_d3 WHERE device = 3 AND ts < '2024-01-03 06:00+00';
SELECT * FROM ars_check('ars\_p\_%');
ALTER TABLE ars_renamed.parted SET SCHEMA ars;

-- a partitioned partition detached concurrently (two transactions)
ALTER TABLE ars.parted DETACH PARTITION ars.p_d4 CONCURRENTLY;
SELECT * FROM ars_check('ars\_p\_%');
SELECT count(*) AS day4_groups_streaming FROM ars_p_out_streaming WHERE hour >= '2024-01-04' AND hour < '2024-01-05';
SELECT count(*) AS day4_groups_batching FROM ars_p_out_batching WHERE hour >= '2024-01-04' AND hour < '2024-01-05';
SELECT count(*) AS capture_triggers FROM pg_trigger
 WHERE tgrelid IN ('ars.p_d4'::regclass, 'ars.p_d4_even'::regclass, 'ars.p_d4_odd'::regclass)
   AND tgname LIKE 'flowpg\_capture%';
INSERT INTO ars.p_d4 VALUES (1.0, 15, 3, '2024-01-04 23:00+00');
INSERT INTO ars.parted VALUES ('2024-01-03 23:00+00', 3, 16, 1.0);
SELECT * FROM ars_check('ars\_p\_%');

------------------------------------------------------------------------------
-- ALTERs that would break a query stay refused, and the flows work on.
------------------------------------------------------------------------------
ALTER TABLE ars_renamed.src DROP COLUMN v;
ALTER TABLE ars_renamed.src ALTER COLUMN v TYPE bigint;
ALTER TABLE ars_renamed.src ALTER COLUMN ts TYPE timestamp;
ALTER TABLE ars_renamed.src ALTER COLUMN w TYPE numeric;
-- with an unrelated change in the same statement: nothing of it happens
ALTER TABLE ars_renamed.src ADD COLUMN never int, DROP COLUMN device;
ALTER TABLE ars.parted DROP COLUMN w;
ALTER TABLE ars.parted ALTER COLUMN v TYPE bigint;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'ars_renamed.src'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
INSERT INTO ars_renamed.src (ts, device, v, w) VALUES ('2024-01-01 00:44:44+00', 4, 17, 1.75);
UPDATE ars_renamed.src SET v = v + 3 WHERE device = 4;
DELETE FROM ars_renamed.src WHERE device = 3 AND v > 2000;
INSERT INTO ars.parted VALUES ('2024-01-02 03:03+00', 0, 18, 2.0);
UPDATE ars.parted SET v = v - 3 WHERE device = 0;
DELETE FROM ars.parted WHERE device = 3;
SELECT * FROM ars_check('ars\_%');

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'ars\_%';
DROP TABLE ars_renamed.src, ars.parted, ars.p_d4, ars_out_streaming, ars_out_batching,
  ars_p_out_streaming, ars_p_out_batching;
DROP SCHEMA ars, ars_renamed;
DROP FUNCTION ars_check(text), ars_restart_workers();
