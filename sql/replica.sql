-- Sessions in the replica role -- logical replication appliers, and any
-- session with session_replication_role = replica -- fire only row
-- triggers; flowpg captures them with a row trigger enabled for replicas
-- only, while ordinary sessions go through the statement triggers, so
-- every change counts once.  Both engines, every kind of change.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA rep;
CREATE TABLE rep.events (ts timestamptz, kind int, amount numeric);
CREATE TABLE rep.parted (ts timestamptz, kind int, amount numeric) PARTITION BY LIST (kind);
CREATE TABLE rep.parted_low PARTITION OF rep.parted FOR VALUES IN (0, 1, 2);
CREATE TABLE rep.parted_high PARTITION OF rep.parted FOR VALUES IN (3, 4, 5, 6);
INSERT INTO rep.events SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '1 minute', i % 7, i
  FROM generate_series(1, 500) i;
INSERT INTO rep.parted SELECT * FROM rep.events;
SELECT flowpg.create_flow('rep_s', 'rep.events_s',
  $$SELECT kind, date_trunc('hour', ts) AS hour, count(*) AS n, sum(amount) AS total
	  FROM rep.events GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('rep_b', 'rep.events_b',
  $$SELECT kind, date_trunc('hour', ts) AS hour, count(*) AS n, sum(amount) AS total
	  FROM rep.events GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
SELECT flowpg.create_flow('rep_p', 'rep.parted_s',
  $$SELECT kind, date_trunc('hour', ts) AS hour, count(*) AS n, sum(amount) AS total
	  FROM rep.parted GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.create_flow('rep_rows', 'rep.big_rows',
  $$SELECT ts, kind, amount FROM rep.events WHERE amount > 480$$) > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled
  FROM flowpg.flows WHERE flow_name LIKE 'rep\_%' ORDER BY flow_name;
SELECT c.relname, string_agg(t.tgname || ':' || t.tgenabled::text, ' ' ORDER BY t.tgname) AS triggers
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = 'rep'::regnamespace AND t.tgname LIKE 'flowpg%'
 GROUP BY c.relname ORDER BY c.relname;

SET session_replication_role = replica;
INSERT INTO rep.events SELECT '2024-01-02 00:00+00'::timestamptz + i * interval '1 minute', i % 7, 1000 + i
  FROM generate_series(1, 300) i;
INSERT INTO rep.parted SELECT * FROM rep.events WHERE ts >= '2024-01-02';
UPDATE rep.events SET amount = amount + 1, ts = ts + interval '2 hours' WHERE kind = 3;
DELETE FROM rep.events WHERE kind = 5;
UPDATE rep.parted SET kind = 6 WHERE kind = 1 AND amount < 100;	-- moves rows across partitions
DELETE FROM rep.parted_low WHERE amount > 1200;
BEGIN;
INSERT INTO rep.events VALUES ('2024-01-03 00:00+00', 1, 1);
SAVEPOINT s;
INSERT INTO rep.events VALUES ('2024-01-03 00:00+00', 2, 2);
ROLLBACK TO s;
INSERT INTO rep.events VALUES ('2024-01-03 00:00+00', 3, 3);
COMMIT;
BEGIN;
INSERT INTO rep.events VALUES ('2024-01-04 00:00+00', 4, 4);
ROLLBACK;
TRUNCATE rep.parted_high;
RESET session_replication_role;

-- ordinary sessions still go through the statement triggers, once
INSERT INTO rep.events VALUES ('2024-01-05 00:00+00', 1, 500);
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'rep\_%' ORDER BY flow_name;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'rep\_%';
DROP SCHEMA rep CASCADE;
