-- One capture for all flows of a table (issue 38): a writer copies each
-- statement's rows once, the columns any flow of the table reads, and the
-- worker runs every flow over them.  Flows of one table reading different
-- columns (a projection of some, a filter on another, every column, a
-- batching flow beside them) against their queries after aborted
-- transactions, savepoints released and rolled back, two-phase commits,
-- updates and deletes, flows created and dropped inside a writer's
-- transaction, and ALTER TABLE of the source with the flows in place (rows
-- stored before an ADD COLUMN ... DEFAULT, then taken back).
SET TimeZone = 'UTC';
SET client_min_messages = warning;
CREATE SCHEMA sc;
-- (spare: a column no flow reads, so that the writer copies a projection
-- of the rows until it is dropped, the rows as stored after)
CREATE TABLE sc.src (ts timestamptz NOT NULL, device int NOT NULL, a int, b float8,
					 c text, d numeric, wide text, spare int);
INSERT INTO sc.src
SELECT '2024-06-01 00:00+00'::timestamptz + i * interval '7 seconds', i % 5, i, i / 4.0,
	   CASE WHEN i % 3 = 0 THEN 'skip' ELSE 'keep' END, i * 1.5, repeat('w', 3000 + i % 7), i
  FROM generate_series(1, 200) i;

-- device and a; b filtered on c; every column; a projection; batching
SELECT flowpg.create_flow('sc_a', 'sc.by_a', $$
	SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(a) AS sa, max(a) AS ma
	  FROM sc.src GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('sc_b', 'sc.by_b', $$
	SELECT date_trunc('hour', ts) AS hour, count(*) AS n, sum(b) AS sb
	  FROM sc.src WHERE c = 'keep' GROUP BY 1$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('sc_all', 'sc.by_all', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(a) AS sa, count(b) AS nb,
		   max(c) AS mc, sum(d) AS sd, max(length(wide)) AS lw
	  FROM sc.src GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('sc_batch', 'sc.by_batch', $$
	SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(a) AS sa
	  FROM sc.src GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
SELECT flowpg.flush_flow(f) >= 0 AS backfilled
  FROM unnest(ARRAY['sc_a', 'sc_b', 'sc_all', 'sc_batch']) f;


-- statements of one, a few and many rows; an aborted transaction
INSERT INTO sc.src VALUES ('2024-06-01 01:00+00', 1, 7, 0.5, 'keep', 1, 'x');
INSERT INTO sc.src SELECT '2024-06-01 01:00+00'::timestamptz + i * interval '3 seconds', i % 5, i, -i, 'keep', i, 'y'
  FROM generate_series(1, 300) i;
BEGIN;
INSERT INTO sc.src VALUES ('2024-06-01 01:30+00', 2, 1000, 1000, 'keep', 1000, 'aborted');
ROLLBACK;
SELECT * FROM flush_and_check('sc', 'inserts');

-- savepoints: released, rolled back, nested
BEGIN;
INSERT INTO sc.src VALUES ('2024-06-01 02:00+00', 1, 1, 1, 'keep', 1, 'top');
SAVEPOINT s1;
INSERT INTO sc.src VALUES ('2024-06-01 02:00+00', 1, 2, 2, 'keep', 2, 'released');
SAVEPOINT s2;
INSERT INTO sc.src VALUES ('2024-06-01 02:00+00', 1, 400, 400, 'keep', 4, 'rolled back');
UPDATE sc.src SET a = a + 1000 WHERE ts < '2024-06-01 00:05+00';
ROLLBACK TO SAVEPOINT s2;
INSERT INTO sc.src VALUES ('2024-06-01 02:00+00', 1, 3, 3, 'skip', 3, 'after');
RELEASE SAVEPOINT s1;
SAVEPOINT s3;
DELETE FROM sc.src WHERE device = 4 AND ts < '2024-06-01 00:10+00';
ROLLBACK TO SAVEPOINT s3;
COMMIT;
SELECT * FROM flush_and_check('sc', 'savepoints');

-- two-phase: committed, rolled back
BEGIN;
INSERT INTO sc.src VALUES ('2024-06-01 03:00+00', 3, 5, 5, 'keep', 5, 'prepared');
PREPARE TRANSACTION 'sc_p1';
BEGIN;
INSERT INTO sc.src VALUES ('2024-06-01 03:00+00', 3, 6, 6, 'keep', 6, 'prepared, rolled back');
PREPARE TRANSACTION 'sc_p2';
COMMIT PREPARED 'sc_p1';
ROLLBACK PREPARED 'sc_p2';
SELECT * FROM flush_and_check('sc', 'two-phase');

-- updates and deletes through the shared capture (sc_b's float sum does not
-- retract: its windows are recomputed, the others' rows are taken back)
UPDATE sc.src SET a = a * 2, b = b + 1, c = 'keep' WHERE device = 2;
DELETE FROM sc.src WHERE device = 3 AND a % 2 = 0;
UPDATE sc.src SET ts = ts + interval '1 hour' WHERE device = 0 AND a < 50;
SELECT * FROM flush_and_check('sc', 'changes');

-- a flow created and one dropped inside a writer's transaction
BEGIN;
INSERT INTO sc.src VALUES ('2024-06-01 04:00+00', 1, 10, 10, 'keep', 10, 'before create');
SELECT flowpg.create_flow('sc_late', 'sc.late', $$
	SELECT device, count(*) AS n, sum(d) AS sd FROM sc.src GROUP BY 1$$, mode => 'streaming') > 0 AS created;
INSERT INTO sc.src VALUES ('2024-06-01 04:00+00', 1, 11, 11, 'keep', 11, 'after create');
SELECT flowpg.drop_flow('sc_batch');
INSERT INTO sc.src VALUES ('2024-06-01 04:00+00', 2, 12, 12, 'keep', 12, 'after drop');
COMMIT;
SELECT * FROM flush_and_check('sc', 'flow DDL in the writer''s transaction');

-- ALTER TABLE with the flows in place: a column no flow reads dropped, one
-- added with a default (rows stored before it are read with it), then
-- those old rows taken back
ALTER TABLE sc.src DROP COLUMN spare;
ALTER TABLE sc.src ADD COLUMN e int NOT NULL DEFAULT 7;
SELECT flowpg.create_flow('sc_e', 'sc.by_e', $$
	SELECT device, sum(e) AS se, count(*) AS n FROM sc.src GROUP BY 1$$, mode => 'streaming') > 0 AS created;
SELECT * FROM flush_and_check('sc', 'altered');
INSERT INTO sc.src (ts, device, a, b, c, d, e) VALUES ('2024-06-01 05:00+00', 1, 1, 1, 'keep', 1, 100);
DELETE FROM sc.src WHERE ts < '2024-06-01 00:03+00';
UPDATE sc.src SET a = a + 1 WHERE device = 1 AND ts < '2024-06-01 00:30+00';
SELECT * FROM flush_and_check('sc', 'old rows taken back');
SELECT device, se, n FROM sc.by_e ORDER BY device;

-- the queue holds a transaction's rows once for all the flows: the
-- server's queue_bytes counts them once, the database's (its flows' sum)
-- once per flow.  Rounds 30 s apart, the last one just run (flush_flow),
-- keep the statement's batch queued while flowpg.memory is read.
SELECT count(*) AS streaming_flows FROM flowpg.flows WHERE flow_name LIKE 'sc\_%' AND mode = 'streaming';
ALTER SYSTEM SET flowpg.flush_interval = '30s';
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SELECT flowpg.flush_flow(flow_name) >= 0 AS flushed FROM flowpg.flows WHERE flow_name LIKE 'sc\_%';
INSERT INTO sc.src (ts, device, a, b, c, d, e)
SELECT '2024-06-01 06:00+00'::timestamptz + i * interval '1 second', i % 5, i, i, 'keep', i, i
  FROM generate_series(1, 2000) i;
SELECT round(d.queue_bytes::numeric / NULLIF(s.queue_bytes, 0), 1) AS flows_per_copy
  FROM flowpg.memory d, flowpg.memory s WHERE d.scope = 'database' AND s.scope = 'server';
ALTER SYSTEM RESET flowpg.flush_interval;
SELECT pg_reload_conf();
SELECT * FROM flush_and_check('sc', 'queued once');

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'sc\_%';
DROP SCHEMA sc CASCADE;
