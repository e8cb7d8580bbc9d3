-- What a flow could never do is refused where it is asked for, not found
-- at every run: a query nested too deeply to be planned is refused at
-- creation.  A writer's row whose group key the flow could not keep fails
-- the flow, naming the cause, until the row is gone.
SET client_min_messages = warning;
CREATE SCHEMA lim;
CREATE TABLE lim.src (ts timestamptz NOT NULL, k text, v int);
CREATE INDEX ON lim.src (ts);

-- A 5,000-term expression: planning it exhausts the stack (54001).
SELECT format('SELECT date_trunc(''hour'', ts) AS h, sum(v %s) AS s FROM lim.src GROUP BY 1',
			  string_agg('+ 1', ' ')) AS deep_query
  FROM generate_series(1, 5000) \gset
SELECT code, message, detail, hint
  FROM try(format('SELECT flowpg.create_flow(%L, %L, %L, mode => %L)',
				  'deep_streaming', 'lim.deep_streaming', :'deep_query', 'streaming'));
SELECT code, message
  FROM try(format('SELECT flowpg.create_flow(%L, %L, %L, mode => %L)',
				  'deep_batching', 'lim.deep_batching', :'deep_query', 'batching'));
-- nothing left behind
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name LIKE 'deep%';
SELECT count(*) AS sinks FROM pg_class WHERE relname LIKE 'deep%';
-- 300 terms are fine
SELECT format('SELECT date_trunc(''hour'', ts) AS h, sum(v %s) AS s FROM lim.src GROUP BY 1',
			  string_agg('+ 1', ' ')) AS long_query
  FROM generate_series(1, 300) \gset
SELECT flowpg.create_flow('long_terms', 'lim.long_terms', :'long_query', mode => 'streaming') > 0 AS created;

-- Group keys: a row whose key the flow could not keep (past the state's
-- 64 kB, or the sink's unique index) is the writer's to write -- the
-- writer runs no flow's expression -- and the flow's to refuse: the worker
-- meets it before it changes the state, sends its windows to the
-- recompute, which fails naming the cause; deleting the row is how the
-- flow recovers.
SELECT flowpg.create_flow('by_key', 'lim.by_key',
	'SELECT date_trunc(''hour'', ts) AS h, k, count(*) AS n, sum(v) AS s FROM lim.src GROUP BY 1, 2',
	mode => 'streaming') > 0 AS created;
INSERT INTO lim.src VALUES ('2024-03-01 00:10+00', 'small', 1);
CREATE FUNCTION lim.incompressible(n int) RETURNS text LANGUAGE sql
RETURN (SELECT string_agg(md5(i::text), '') FROM generate_series(1, n) i);
-- 1.28 MB: past the state's 64 kB
INSERT INTO lim.src VALUES ('2024-03-01 00:20+00', lim.incompressible(40000), 1);
SELECT code <> 'OK' AS flush_failed FROM try($$SELECT flowpg.flush_flow('by_key')$$);
DO $$ BEGIN
	FOR i IN 1..100 LOOP
		EXIT WHEN EXISTS (SELECT FROM flowpg.flow_errors WHERE flow_name = 'by_key');
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT sqlstate FROM flowpg.flow_errors WHERE flow_name = 'by_key' ORDER BY at DESC LIMIT 1;
DELETE FROM lim.src WHERE length(k) > 1000;
SELECT flowpg.flush_flow('by_key') >= 0 AS flushed, flow_mismatches('by_key') AS oracle;
-- 3.2 kB that do not compress: past the index's 2,704 bytes
INSERT INTO lim.src VALUES ('2024-03-01 00:20+00', lim.incompressible(100), 1);
SELECT code <> 'OK' AS flush_failed FROM try($$SELECT flowpg.flush_flow('by_key')$$);
DELETE FROM lim.src WHERE length(k) > 1000;
SELECT flowpg.flush_flow('by_key') >= 0 AS flushed, flow_mismatches('by_key') AS oracle;
-- in a savepoint rolled back, such a row never reaches the flow
BEGIN;
INSERT INTO lim.src VALUES ('2024-03-01 00:30+00', 'before', 2);
SAVEPOINT s;
INSERT INTO lim.src
	SELECT '2024-03-01 00:40+00', CASE WHEN i = 500 THEN lim.incompressible(100) ELSE 'bulk' || i % 7 END, i
	  FROM generate_series(1, 1000) i;
ROLLBACK TO SAVEPOINT s;
INSERT INTO lim.src VALUES ('2024-03-01 00:50+00', 'after', 3);
COMMIT;
-- a large value that compresses well fits the index: taken and kept exactly
INSERT INTO lim.src VALUES ('2024-03-01 00:20+00', repeat('x', 50000), 1);
SELECT flowpg.flush_flow('by_key') >= 0 AS flushed;
SELECT h, left(k, 8) AS k, length(k) AS length, n, s FROM lim.by_key ORDER BY length, k;
SELECT state, flowpg.verify_flow('by_key') AS verify, flow_mismatches('by_key') AS oracle
  FROM flowpg.flows WHERE flow_name = 'by_key';
SELECT flowpg.flush_flow('long_terms') >= 0 AS flushed, flowpg.verify_flow('long_terms') AS verify;

-- A row already in the source with such a key (here before the flow):
-- the flow fails on it, naming the cause, and deleting the row -- never
-- refused, though the writer takes the row back -- is how it recovers.
CREATE TABLE lim.old_src (ts timestamptz NOT NULL, k text);
INSERT INTO lim.old_src VALUES ('2024-03-01 00:10+00', 'small'), ('2024-03-01 00:10+00', lim.incompressible(100));
SELECT flowpg.create_flow('old_key', 'lim.old_key',
	'SELECT date_trunc(''hour'', ts) AS h, k, count(*) AS n FROM lim.old_src GROUP BY 1, 2',
	mode => 'streaming') > 0 AS created;
SELECT code FROM try($$SELECT flowpg.flush_flow('old_key')$$);
DELETE FROM lim.old_src WHERE length(k) > 1000;
SELECT flowpg.refresh_flow('old_key') >= 0 AS refreshed, flowpg.flush_flow('old_key') >= 0 AS flushed;
SELECT state, flowpg.verify_flow('old_key') AS verify FROM flowpg.flows WHERE flow_name = 'old_key';

SELECT flowpg.drop_flow('by_key'), flowpg.drop_flow('long_terms'), flowpg.drop_flow('old_key');
DROP SCHEMA lim CASCADE;
