-- Errors that say what went wrong, and one rule for names:
--   1. flush_flow of a failed flow gives the flow's last error;
--   2. NULL is an error naming the argument wherever it means nothing;
--   3. a malformed name, or swapped arguments, name the argument and the
--      form it must have;
--   4. flow names follow PostgreSQL's identifier rules, as sink names do;
--   5. DROP TABLE of a sink (or DROP SCHEMA of its schema) is refused
--      without CASCADE; with CASCADE the flow goes.

CREATE SCHEMA en;
CREATE TABLE en.events (ts timestamptz NOT NULL, k int, d int);
INSERT INTO en.events
SELECT '2024-06-01 00:00+00'::timestamptz + i * interval '7 minutes', i % 3, 1 + i % 5
FROM generate_series(0, 199) i;

-- 1. A streaming flow dividing by zero on a row: the writer keeps its row
-- and the flow is recomputed, which fails; flush_flow says with what.
SELECT flowpg.create_flow('en_ratio', 'en.ratio_sink',
  $$SELECT k, sum(100 / d) AS s FROM en.events GROUP BY k$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('en_ratio') >= 0 AS backfilled;
-- (the flush below must be the worker's: wait for the database's worker)
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity
						   WHERE backend_type = 'flowpg worker' AND datname = current_database());
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
INSERT INTO en.events VALUES ('2024-06-02 00:00+00', 1, 0);
\x on
SELECT * FROM try($$SELECT flowpg.flush_flow('en_ratio')$$);
\x off
SELECT sqlstate, message FROM flowpg.flow_errors WHERE flow_name = 'en_ratio' ORDER BY at DESC LIMIT 1;
-- the error may quote data: a role that cannot act for the owner gets none of it
CREATE ROLE regress_en_other;
GRANT USAGE ON SCHEMA en TO regress_en_other;
SET ROLE regress_en_other;
SELECT code, message, detail FROM try($$SELECT flowpg.flush_flow('en_ratio')$$);
RESET ROLE;
-- fixed, it flushes and is exact again
DELETE FROM en.events WHERE d = 0;
SELECT flowpg.flush_flow('en_ratio') >= 0 AS flushed, flow_mismatches('en_ratio') AS mismatches;

-- 2. NULL arguments.  window_start and window_end NULL mean unbounded.
SELECT flowpg.create_flow('en_hourly', 'en.hourly',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM en.events GROUP BY 1$$,
  mode => 'batching') > 0 AS created;
SELECT flowpg.refresh_flow('en_hourly', NULL, NULL) AS refreshed;
SELECT s.stmt, t.code, t.message
  FROM (VALUES
	($$SELECT flowpg.create_flow(NULL, 'en.x', 'SELECT k, count(*) AS n FROM en.events GROUP BY k')$$),
	($$SELECT flowpg.create_flow('en_x', NULL, 'SELECT k, count(*) AS n FROM en.events GROUP BY k')$$),
	($$SELECT flowpg.create_flow('en_x', 'en.x', NULL)$$),
	($$SELECT flowpg.create_flow('en_x', 'en.x', 'SELECT k, count(*) AS n FROM en.events GROUP BY k', mode => NULL)$$),
	($$SELECT flowpg.create_flow('en_x', 'en.x', 'SELECT k, count(*) AS n FROM en.events GROUP BY k', or_replace => NULL)$$),
	($$SELECT flowpg.create_flow('en_x', 'en.x', 'SELECT k, count(*) AS n FROM en.events GROUP BY k', if_not_exists => NULL)$$),
	($$SELECT flowpg.create_flow('en_x', 'en.x', 'SELECT k, count(*) AS n FROM en.events GROUP BY k', backfill => NULL)$$),
	($$SELECT flowpg.drop_flow(NULL)$$),
	($$SELECT flowpg.drop_flow('en_hourly', if_exists => NULL)$$),
	($$SELECT flowpg.flush_flow(NULL)$$),
	($$SELECT flowpg.refresh_flow(NULL)$$),
	($$SELECT flowpg.window_bounds(NULL, now())$$),
	($$SELECT flowpg.window_bounds('date_trunc(''hour'', $1)', NULL::timestamptz)$$),
	($$SELECT flowpg.flow_window_bounds(NULL, now())$$),
	($$SELECT flowpg.flow_window_bounds('en_hourly', NULL::timestamptz)$$),
	($$SELECT * FROM flowpg.execute(NULL)$$)) s(stmt),
	LATERAL try(s.stmt) t;
-- none of them did anything
SELECT flow_name FROM flowpg.flows WHERE flow_name LIKE 'en\_%' ORDER BY 1;
SELECT to_regclass('en.x') IS NULL AS no_sink;

-- 3. Malformed names and swapped arguments.
\x on
SELECT * FROM try($$SELECT flowpg.create_flow('My Flow', 'en.m5_sink', 'SELECT k, count(*) AS n FROM en.events GROUP BY k')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('en.my_flow', 'en.m5_sink', 'SELECT k, count(*) AS n FROM en.events GROUP BY k')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('en_m5', 'My Sink', 'SELECT k, count(*) AS n FROM en.events GROUP BY k')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('en_m5', 'a.b.c.d', 'SELECT k, count(*) AS n FROM en.events GROUP BY k')$$);
-- the query where the sink goes, the sink where the query goes
SELECT * FROM try($$SELECT flowpg.create_flow('en_m5', 'SELECT k, count(*) AS n FROM en.events GROUP BY k', 'm5_sink')$$);
-- a sink name where the query goes
SELECT * FROM try($$SELECT flowpg.create_flow('en_m5', 'en.m5_sink', 'm5_sink')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('en_m5', 'en.m5_sink', 'en.m5_sink')$$);
-- other syntax errors keep PostgreSQL's message alone
SELECT * FROM try($$SELECT flowpg.create_flow('en_m5', 'en.m5_sink', 'SELECT k, count(* AS n FROM en.events GROUP BY k')$$);
SELECT * FROM try($$SELECT flowpg.flush_flow('My Flow')$$);
SELECT * FROM try($$SELECT flowpg.drop_flow('')$$);
\x off
-- the position still points into the query
SELECT flowpg.create_flow('en_m5', 'en.m5_sink', 'm5_sink');
SELECT flow_name FROM flowpg.flows WHERE flow_name LIKE 'en\_%' ORDER BY 1;
SELECT count(*) AS leftover_sinks FROM pg_class WHERE relname IN ('m5_sink', 'x');

-- 4. Names.  Unquoted, a flow name is folded to lower case, as the sink's.
SELECT flowpg.create_flow('En_MixedFlow', 'en.En_MixedSink',
  $$SELECT k, count(*) AS n FROM en.events GROUP BY k$$) > 0 AS created;
SELECT flow_name, sink_table FROM flowpg.flows WHERE flow_name ILIKE 'en\_mixed%';
SELECT flowpg.flush_flow('en_mixedflow') >= 0 AS lower, flowpg.flush_flow('EN_MIXEDFLOW') >= 0 AS upper,
	   flowpg.flush_flow('"en_mixedflow"') >= 0 AS quoted, flowpg.flush_flow(' En_MixedFlow ') >= 0 AS blanks;
SELECT flowpg.refresh_flow('En_MixedFlow') >= 0 AS refreshed, flow_mismatches('en_mixedflow') AS mismatches;
SELECT * FROM try($$SELECT flowpg.flush_flow('"En_MixedFlow"')$$);
SELECT flowpg.drop_flow('En_MixedFlow');
-- Double-quoted, a name keeps its case, spaces and dots.
SELECT flowpg.create_flow('"En Mixed.Flow"', 'en."En Mixed.Sink"',
  $$SELECT date_trunc('hour', ts) AS hour, k, count(*) AS n FROM en.events GROUP BY 1, 2$$) > 0 AS created;
SELECT flow_name, sink_table FROM flowpg.flows WHERE flow_name ILIKE 'en mixed%';
SELECT flowpg.flush_flow('"En Mixed.Flow"') >= 0 AS flushed, flow_mismatches('En Mixed.Flow') AS mismatches;
SELECT * FROM flowpg.flow_window_bounds('"En Mixed.Flow"', '2024-06-01 10:20+00'::timestamptz);
\x on
-- the unquoted spelling does not reach it, and says how to
SELECT * FROM try($$SELECT flowpg.flush_flow('En Mixed.Flow')$$);
SELECT * FROM try($$SELECT flowpg.drop_flow('"en mixed.flow"')$$);
\x off
SELECT flowpg.drop_flow('"En Mixed.Flow"');
-- A name is truncated to 63 bytes, wherever it is given.
SELECT flowpg.create_flow('en_' || repeat('x', 70), 'en.long_sink',
  $$SELECT k, count(*) AS n FROM en.events GROUP BY k$$) > 0 AS created;
SELECT length(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'en\_xxx%';
SELECT flowpg.flush_flow('en_' || repeat('x', 64)) >= 0 AS flushed;
SELECT flowpg.drop_flow('en_' || repeat('x', 61));
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name LIKE 'en\_xxx%';
-- The GreptimeDB front end reads names with PostgreSQL's scanner: the same rule.
SELECT * FROM flowpg.execute($$CREATE FLOW En_GtFlow SINK TO en.En_GtSink AS
  SELECT k, count(*) AS n FROM en.events GROUP BY k$$);
SELECT flow_name FROM flowpg.execute($$SHOW FLOWS LIKE 'en\_gt%'$$);
SELECT * FROM flowpg.execute($$ADMIN FLUSH_FLOW('En_GtFlow')$$);
SELECT * FROM flowpg.execute($$ADMIN FLUSH_FLOW('contrib_regression.EN_GTFLOW')$$);
SELECT flowpg.flush_flow('En_GtFlow') >= 0 AS flushed, flow_mismatches('en_gtflow') AS mismatches;
SELECT * FROM flowpg.execute($$DROP FLOW En_GtFlow$$);
SELECT * FROM flowpg.execute($$CREATE FLOW "En_GtFlow" SINK TO en."En_GtSink" AS
  SELECT k, count(*) AS n FROM en.events GROUP BY k$$);
SELECT * FROM flowpg.execute($$ADMIN FLUSH_FLOW('"En_GtFlow"')$$);
SELECT flowpg.flush_flow('"En_GtFlow"') >= 0 AS flushed;
SELECT * FROM flowpg.execute($$DROP FLOW En_GtFlow$$);
SELECT * FROM flowpg.execute($$DROP FLOW "En_GtFlow"$$);
SELECT flow_name FROM flowpg.flows WHERE flow_name ILIKE 'en\_%' ORDER BY 1;
DROP TABLE en.en_mixedsink, en."En Mixed.Sink", en.long_sink, en.en_gtsink, en."En_GtSink";

-- 5. A sink cannot be dropped without CASCADE (its flow's view depends on it).
CREATE SCHEMA en_sinks;
SELECT flowpg.create_flow('en_drop', 'en_sinks.per_hour',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM en.events GROUP BY 1$$) > 0 AS created;
SELECT pg_describe_object(classid, objid, objsubid) AS dependent, deptype
  FROM pg_depend WHERE refobjid = 'en_sinks.per_hour'::regclass AND classid = 'pg_class'::regclass ORDER BY 1;
SELECT code FROM try($$DROP TABLE en_sinks.per_hour$$);
DROP TABLE en_sinks.per_hour;
SELECT code FROM try($$DROP SCHEMA en_sinks$$);
DROP SCHEMA en_sinks;
-- TRUNCATE is still allowed: the flow recomputes
TRUNCATE en_sinks.per_hour;
SELECT flowpg.flush_flow('en_drop') >= 0 AS flushed, flow_mismatches('en_drop') AS mismatches;
-- replaced onto another sink, the dependency moves with the flow
SELECT flowpg.create_flow('en_drop', 'en_sinks.per_hour_2',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM en.events GROUP BY 1$$, or_replace => true) > 0 AS replaced;
DROP TABLE en_sinks.per_hour;
SELECT code FROM try($$DROP TABLE en_sinks.per_hour_2$$);
SELECT flowpg.flush_flow('en_drop') >= 0 AS flushed, flow_mismatches('en_drop') AS mismatches;
-- with CASCADE, the flow goes with its sink: catalog row, view, capture triggers
SET client_min_messages = notice;
DROP TABLE en_sinks.per_hour_2 CASCADE;
RESET client_min_messages;
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name = 'en_drop';
SELECT to_regclass('flowpg_flows.en_drop') IS NULL AS view_gone;
-- the source's capture triggers stay for its other flows; with those gone too, they go
SELECT count(*) AS capture_triggers FROM pg_trigger WHERE tgrelid = 'en.events'::regclass AND tgname LIKE 'flowpg\_%';
SELECT flowpg.drop_flow('en_hourly');
-- DROP SCHEMA CASCADE of a sink's schema drops the flow too
SELECT flowpg.create_flow('en_schema', 'en_sinks.by_k',
  $$SELECT k, count(*) AS n FROM en.events GROUP BY k$$) > 0 AS created;
SET client_min_messages = notice;
DROP SCHEMA en_sinks CASCADE;
DROP TABLE en.ratio_sink CASCADE;
RESET client_min_messages;
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name LIKE 'en\_%';
SELECT count(*) AS capture_triggers FROM pg_trigger WHERE tgrelid = 'en.events'::regclass AND tgname LIKE 'flowpg\_%';
-- drop_flow takes the dependency along: the sink drops as any table
SELECT flowpg.create_flow('en_plain', 'en.plain_sink',
  $$SELECT k, count(*) AS n FROM en.events GROUP BY k$$) > 0 AS created;
SELECT flowpg.drop_flow('en_plain');
DROP TABLE en.plain_sink;
-- Without the dependency (as after pg_upgrade, which does not carry it), a
-- dropped sink still takes its flow along; the update from 0.1 and
-- _repair_dependencies record it for the flows that lack it.
SELECT flowpg.create_flow('en_plain', 'en.plain_sink',
  $$SELECT k, count(*) AS n FROM en.events GROUP BY k$$) > 0 AS created;
SELECT flowpg._repair_dependencies() AS recorded;
DELETE FROM pg_depend WHERE classid = 'pg_class'::regclass AND objid = 'flowpg_flows.en_plain'::regclass
   AND refobjid = 'en.plain_sink'::regclass;
BEGIN;
SET LOCAL client_min_messages = notice;
DROP TABLE en.plain_sink;
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name = 'en_plain';
ROLLBACK;
SELECT flowpg._repair_dependencies() AS recorded;
SELECT code FROM try($$DROP TABLE en.plain_sink$$);
SELECT flowpg.drop_flow('en_plain');

DROP SCHEMA en CASCADE;
DROP ROLE regress_en_other;
