-- The batching flows of a table share their dirty-log entries (issue 38):
-- a writer appends, when it commits or prepares, one row per range it
-- changed to flowpg.table_dirty_log, naming every batching flow of the table
-- that reads that time column; each flow's refresh takes itself out of the
-- rows it recomputed and the last one deletes the row.  Streaming flows'
-- fallbacks keep their own entries (flowpg.dirty_log).
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;

-- the worker stays off: flush_flow does the work, the entries stay to be seen
ALTER SYSTEM SET flowpg.enabled = off;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);

CREATE SCHEMA sd;
CREATE TABLE sd.src (ts timestamptz, other timestamptz, device int, v int);
INSERT INTO sd.src SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '1 minute',
						  '2024-03-01 00:00+00'::timestamptz, i % 3, i
  FROM generate_series(0, 299) i;

-- two flows on ts, one on other, one without a window; a streaming flow beside them
SELECT flowpg.create_flow('sd_min', 'sd.by_min', $$
	SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS sv
	  FROM sd.src GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
SELECT flowpg.create_flow('sd_hour', 'sd.by_hour', $$
	SELECT date_trunc('hour', ts) AS hour, count(*) AS n, max(v) AS mv
	  FROM sd.src GROUP BY 1$$, mode => 'batching') > 0 AS created;
SELECT flowpg.create_flow('sd_other', 'sd.by_other', $$
	SELECT date_trunc('day', other) AS day, count(*) AS n
	  FROM sd.src GROUP BY 1$$, mode => 'batching') > 0 AS created;
SELECT flowpg.create_flow('sd_total', 'sd.by_device', $$
	SELECT device, count(*) AS n, sum(v) AS sv FROM sd.src GROUP BY 1$$,
	mode => 'batching', eval_interval => '1 hour') > 0 AS created;
SELECT flowpg.create_flow('sd_stream', 'sd.by_stream', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n
	  FROM sd.src GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow(flow_name) >= 0 AS flushed FROM flowpg.flows
 WHERE flow_name LIKE 'sd\_%' ORDER BY flow_id;

-- The shared rows, with the flows that have not claimed them yet, times for reading.
CREATE FUNCTION sd.shared() RETURNS TABLE (unseen_by text, lo timestamptz, hi timestamptz, nrows bigint)
LANGUAGE sql AS $$
	SELECT u.names,
		   to_timestamp(t.lo / 1e6) + (timestamptz '2000-01-01 00:00+00' - timestamptz 'epoch'),
		   to_timestamp(t.hi / 1e6) + (timestamptz '2000-01-01 00:00+00' - timestamptz 'epoch'),
		   t.nrows
	  FROM flowpg.table_dirty_log t
	 CROSS JOIN LATERAL (
		SELECT string_agg(f.flow_name, ',' ORDER BY f.flow_name) AS names
		  FROM unnest(t.flows) id JOIN flowpg.flows f ON f.flow_id = id AND f.flow_name LIKE 'sd\_%'
		  LEFT JOIN flowpg.table_dirty_seen s ON s.flow_id = id
		 WHERE s.seen IS NULL OR NOT pg_visible_in_snapshot(t.xid, s.seen)) u
	 WHERE u.names IS NOT NULL
	 ORDER BY 1, 2 NULLS FIRST, 3, 4$$;

-- One transaction of three statements: one row per time column and range
-- for all of its flows (sd_total, without a window, gets a whole-flow row).
BEGIN;
INSERT INTO sd.src VALUES ('2024-03-02 10:00+00', '2024-03-05 00:00+00', 1, 1);
INSERT INTO sd.src VALUES ('2024-03-02 10:00:30+00', '2024-03-05 00:00+00', 2, 2);
UPDATE sd.src SET v = v + 1 WHERE ts = '2024-03-02 10:00+00';
COMMIT;
SELECT * FROM sd.shared();
SELECT flow_name, pending FROM flowpg.flow_stats
 WHERE flow_name LIKE 'sd\_%' AND mode = 'batching' ORDER BY flow_id;

-- An aborted transaction leaves nothing, nor does a savepoint rolled back.
BEGIN;
INSERT INTO sd.src VALUES ('2024-03-09 00:00+00', '2024-03-09 00:00+00', 1, 1);
ROLLBACK;
BEGIN;
INSERT INTO sd.src VALUES ('2024-03-03 00:00+00', '2024-03-03 00:00+00', 1, 5);
SAVEPOINT s;
INSERT INTO sd.src VALUES ('2024-03-04 00:00+00', '2024-03-04 00:00+00', 1, 6);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM sd.shared();

-- One flow's refresh claims the rows (they are its own entries meanwhile,
-- consumed in the same transaction); the others have still to.
SELECT flowpg.flush_flow('sd_hour') >= 0 AS flushed;
SELECT * FROM sd.shared();
SELECT * FROM flush_and_check('sd', 'statements');
SELECT count(*) AS unseen FROM sd.shared();

-- Many disjoint ranges in one transaction: at most eight rows, the
-- closest ranges merged.
BEGIN;
INSERT INTO sd.src SELECT '2024-04-01 00:00+00'::timestamptz + i * interval '1 day',
						  '2024-04-01 00:00+00', i % 3, i
  FROM generate_series(0, 11) i;
SELECT count(*) AS rows_now FROM sd.shared();	-- appended at commit
INSERT INTO sd.src VALUES ('2024-04-01 00:00+00', '2024-04-01 00:00+00', 0, 100);
INSERT INTO sd.src VALUES ('2024-04-03 00:00+00', '2024-04-01 00:00+00', 0, 101);
INSERT INTO sd.src VALUES ('2024-05-01 00:00+00', '2024-04-01 00:00+00', 0, 102);
INSERT INTO sd.src VALUES ('2024-05-02 00:00+00', '2024-04-01 00:00+00', 0, 103);
INSERT INTO sd.src VALUES ('2024-06-01 00:00+00', '2024-04-01 00:00+00', 0, 104);
INSERT INTO sd.src VALUES ('2024-06-11 00:00+00', '2024-04-01 00:00+00', 0, 105);
INSERT INTO sd.src VALUES ('2024-07-01 00:00+00', '2024-04-01 00:00+00', 0, 106);
INSERT INTO sd.src VALUES ('2024-08-01 00:00+00', '2024-04-01 00:00+00', 0, 107);
INSERT INTO sd.src VALUES ('2024-09-01 00:00+00', '2024-04-01 00:00+00', 0, 108);
INSERT INTO sd.src VALUES ('2024-10-01 00:00+00', '2024-04-01 00:00+00', 0, 109);
INSERT INTO sd.src VALUES ('2024-10-01 00:00:01+00', '2024-04-01 00:00+00', 0, 110);
COMMIT;
SELECT * FROM sd.shared();
SELECT * FROM flush_and_check('sd', 'disjoint ranges');

-- Two-phase: the rows are appended at PREPARE, gone with a ROLLBACK PREPARED.
BEGIN;
INSERT INTO sd.src VALUES ('2024-03-06 00:00+00', '2024-03-06 00:00+00', 2, 7);
PREPARE TRANSACTION 'sd_rolled_back';
BEGIN;
INSERT INTO sd.src VALUES ('2024-03-07 00:00+00', '2024-03-07 00:00+00', 2, 8);
PREPARE TRANSACTION 'sd_committed';
ROLLBACK PREPARED 'sd_rolled_back';
COMMIT PREPARED 'sd_committed';
SELECT * FROM sd.shared();
SELECT * FROM flush_and_check('sd', 'two-phase');

-- A logical replication applier's rows (the replica role, row-level
-- capture) share one row per transaction too.
BEGIN;
SET LOCAL session_replication_role = replica;
INSERT INTO sd.src VALUES ('2024-03-08 00:00+00', '2024-03-08 00:00+00', 0, 9);
INSERT INTO sd.src VALUES ('2024-03-08 00:00:10+00', '2024-03-08 00:00+00', 0, 10);
DELETE FROM sd.src WHERE ts = '2024-03-01 00:07+00';
COMMIT;
SELECT * FROM sd.shared();
SELECT * FROM flush_and_check('sd', 'replica rows');

-- A flow created inside the writer's transaction joins its row; a flow
-- dropped no longer has rows to claim.
BEGIN;
INSERT INTO sd.src VALUES ('2024-03-10 00:00+00', '2024-03-10 00:00+00', 1, 11);
SELECT flowpg.create_flow('sd_late', 'sd.by_late', $$
	SELECT date_trunc('day', ts) AS day, count(*) AS n FROM sd.src GROUP BY 1$$,
	mode => 'batching') > 0 AS created;
INSERT INTO sd.src VALUES ('2024-03-11 00:00+00', '2024-03-10 00:00+00', 1, 12);
COMMIT;
SELECT * FROM sd.shared();
SELECT flowpg.drop_flow('sd_min');
SELECT * FROM sd.shared();
SELECT * FROM flush_and_check('sd', 'flow DDL');
SELECT count(*) AS unseen FROM sd.shared();

-- Writers need no rights on the log.
CREATE ROLE regress_sd_writer;
GRANT USAGE ON SCHEMA sd TO regress_sd_writer;
GRANT INSERT ON sd.src TO regress_sd_writer;
SET ROLE regress_sd_writer;
INSERT INTO sd.src VALUES ('2024-03-12 00:00+00', '2024-03-12 00:00+00', 2, 13);
SELECT count(*) FROM flowpg.table_dirty_log;	-- not readable to it
RESET ROLE;
SELECT * FROM sd.shared();
SELECT * FROM flush_and_check('sd', 'unprivileged writer');

-- The worker deletes the rows every flow of theirs has seen (it may have
-- begun already: its poll trims even while flowpg.enabled is off).
CREATE VIEW sd.rows AS SELECT t.* FROM flowpg.table_dirty_log t
 WHERE t.flows && ARRAY(SELECT flow_id FROM flowpg.flows WHERE flow_name LIKE 'sd\_%');
ALTER SYSTEM RESET flowpg.enabled;
SELECT pg_reload_conf();
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN NOT EXISTS (SELECT FROM sd.rows);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT count(*) AS rows_left FROM sd.rows;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'sd\_%' ORDER BY flow_id;
SELECT (SELECT count(*) FROM flowpg.dirty_entries WHERE flow_id NOT IN (SELECT flow_id FROM flowpg.flow)) AS entries_left,
	   (SELECT count(*) FROM flowpg.table_dirty_seen WHERE flow_id NOT IN (SELECT flow_id FROM flowpg.flow)) AS seen_left;
DROP SCHEMA sd CASCADE;
DROP ROLE regress_sd_writer;
