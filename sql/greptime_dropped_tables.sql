-- A flow's source or sink dropped while the flow lives (issue 40, item 4).
-- GreptimeDB accepts it; a flow made through flowpg.execute becomes a
-- pending flow (information_schema_flows shows it, with the reason): a
-- dropped source's flow starts again when a table of that name and shape
-- is created, a dropped sink is created again by a worker once the DROP
-- commits; both backfill the sink.  Both engines.  Flows made with
-- create_flow keep PostgreSQL's rule: the DROP is refused.
\set VERBOSITY default
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE TEMP TABLE flows_before AS SELECT flow_name FROM flowpg.flows;
CREATE SCHEMA greptime_dropped;
SET search_path = greptime_dropped, public;

CREATE TABLE src (host TEXT, v INT, ts timestamp(3) NOT NULL);
INSERT INTO src VALUES ('a', 1, '2024-01-01 00:00:10'), ('b', 2, '2024-01-01 00:01:10');
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW per_min SINK TO per_min_sink AS
SELECT host, date_bin(INTERVAL '1 minute', ts) AS w, sum(v) AS s FROM src GROUP BY host, w
$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW per_min_b SINK TO per_min_b_sink EVAL INTERVAL '1 minute' AS
SELECT host, date_bin(INTERVAL '1 minute', ts) AS w, count(*) AS n FROM src GROUP BY host, w
$$);
SELECT flowpg.flush_flow('per_min') >= 0 AS s, flowpg.flush_flow('per_min_b') >= 0 AS b;
SELECT host, w, s FROM per_min_sink ORDER BY 1, 2;

-- 1. the source goes: both flows pend, their sinks keep their rows
DROP TABLE src;
SELECT flow_name, state, state_reason FROM flowpg.information_schema_flows
 WHERE flow_name IN ('per_min', 'per_min_b') ORDER BY flow_name;
SELECT count(*) AS active FROM flowpg.flows WHERE flow_name IN ('per_min', 'per_min_b');
SELECT host, w, s FROM per_min_sink ORDER BY 1, 2;
-- a table of another shape: the start fails, and says why
CREATE TABLE src (host TEXT, ts timestamp(3) NOT NULL);
SELECT * FROM try($$SELECT flowpg.flush_flow('per_min')$$);
SELECT flow_name, state, state_reason FROM flowpg.information_schema_flows
 WHERE flow_name = 'per_min';
-- the batching flow's query (count(*)) reads no v: it starts over this table
SELECT flowpg.flush_flow('per_min_b') >= 0 AS b;
DROP TABLE src;
-- the table back, with other rows: the flows start, their sinks computed anew
CREATE TABLE src (host TEXT, v INT, ts timestamp(3) NOT NULL);
INSERT INTO src VALUES ('c', 5, '2024-01-01 00:00:20'), ('c', 6, '2024-01-01 00:02:20');
SELECT flowpg.flush_flow('per_min') >= 0 AS s, flowpg.flush_flow('per_min_b') >= 0 AS b;
SELECT flow_name, state FROM flowpg.flows WHERE flow_name IN ('per_min', 'per_min_b') ORDER BY flow_name;
SELECT host, w, s FROM per_min_sink ORDER BY 1, 2;
SELECT flow_mismatches('per_min') AS m, flow_mismatches('per_min_b') AS mb;
INSERT INTO src VALUES ('d', 7, '2024-01-01 00:02:30');
SELECT flowpg.flush_flow('per_min') >= 0 AS s, flowpg.flush_flow('per_min_b') >= 0 AS b;
SELECT flow_mismatches('per_min') AS m, flow_mismatches('per_min_b') AS mb;

-- 2. the sink goes: a worker creates it again and computes it
DROP TABLE per_min_sink;
SELECT flowpg.flush_flow('per_min') >= 0 AS s;
SELECT flow_name, state FROM flowpg.flows WHERE flow_name = 'per_min';
SELECT host, w, s FROM per_min_sink ORDER BY 1, 2;
SELECT flow_mismatches('per_min') AS m;
DROP TABLE per_min_b_sink;
SELECT flowpg.flush_flow('per_min_b') >= 0 AS b;
SELECT flow_mismatches('per_min_b') AS mb;

-- 3. a DROP rolled back leaves the flow as it was
BEGIN;
DROP TABLE src;
ROLLBACK;
SELECT flow_name, state FROM flowpg.flows WHERE flow_name IN ('per_min', 'per_min_b') ORDER BY flow_name;
SELECT count(*) AS pending FROM flowpg.pending_flow WHERE flow_name IN ('per_min', 'per_min_b');

-- 4. a flow made with create_flow: PostgreSQL's rule, the DROP is refused
CREATE TABLE src2 (v INT, ts timestamp(3) NOT NULL);
SELECT flowpg.create_flow('native', 'native_sink', 'SELECT date_bin(''1 minute'', ts, ''2000-01-01'') AS w, count(*) AS n FROM src2 GROUP BY 1') > 0 AS created;
\set VERBOSITY terse
DROP TABLE src2;
DROP TABLE native_sink;
\set VERBOSITY default

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows
 WHERE flow_name NOT IN (SELECT flow_name FROM flows_before) ORDER BY flow_name;
SET client_min_messages = warning;
DROP SCHEMA greptime_dropped CASCADE;
RESET search_path;
