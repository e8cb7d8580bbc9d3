-- GreptimeDB's creation semantics as an opt-in (issue 40, item 6):
-- flowpg.execute_backfill = off makes a flow that flowpg.execute creates
-- without WITH (backfill = ...) compute only the windows its source's
-- changes touch after its creation, and CREATE OR REPLACE keep the sink's
-- rows; verify_flow then checks the windows the flow wrote since.  Off by
-- default: the sink is then not the query's result.  GreptimeDB's
-- flow_flush and flow_rebuild run their statements verbatim (tables
-- translated; a source with PRIMARY KEY + TIME INDEX replaces a row of the
-- same key, so its INSERTs are upserts).
\set VERBOSITY default
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE TEMP TABLE flows_before AS SELECT flow_name FROM flowpg.flows;
CREATE SCHEMA greptime_creation;
SET search_path = greptime_creation;
-- the NOTICE of verify_flow names the time the flow took effect
SET client_min_messages = warning;
SET flowpg.execute_backfill = off;

---------------------------------------------------------------------------
-- flow_flush: the rows already there are not computed
---------------------------------------------------------------------------
CREATE TABLE numbers_input_basic (
    "number" INT,
    ts timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE ("number", ts)
);
INSERT INTO numbers_input_basic VALUES
    (20, '2021-07-01 00:00:00.200'),
    (22, '2021-07-01 00:00:00.600');
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW test_numbers_basic SINK TO out_num_cnt_basic AS
SELECT
    sum(number),
    date_bin(INTERVAL '1 second', ts, '2021-07-01 00:00:00.1') as time_window
FROM
    numbers_input_basic
GROUP BY
    time_window;
$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_numbers_basic')$$);
-- GreptimeDB: no rows
SELECT "sum(numbers_input_basic.number)", time_window FROM out_num_cnt_basic;
-- a change touches the window: it is computed whole, old rows included
INSERT INTO numbers_input_basic VALUES (1, '2021-07-01 00:00:00.900'), (5, '2021-07-01 00:00:03.000');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_numbers_basic')$$);
SELECT "sum(numbers_input_basic.number)", time_window FROM out_num_cnt_basic ORDER BY time_window;
-- verify_flow checks the windows the flow wrote, and finds a wrong one
SELECT flowpg.verify_flow('test_numbers_basic') AS mismatches;
UPDATE out_num_cnt_basic SET "sum(numbers_input_basic.number)" = 0 WHERE time_window = '2021-07-01 00:00:02.1';
SELECT flowpg.verify_flow('test_numbers_basic') AS mismatches;
-- OR REPLACE keeps the sink's rows; the new query computes what is touched
SELECT flow_name, result FROM flowpg.execute($$
CREATE OR REPLACE FLOW test_numbers_basic SINK TO out_num_cnt_basic AS
SELECT
    sum(number) * 10,
    date_bin(INTERVAL '1 second', ts, '2021-07-01 00:00:00.1') as time_window
FROM
    numbers_input_basic
GROUP BY
    time_window;
$$);
SELECT time_window FROM out_num_cnt_basic ORDER BY time_window;
INSERT INTO numbers_input_basic VALUES (7, '2021-07-01 00:00:05.000');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_numbers_basic')$$);
SELECT "sum(numbers_input_basic.number)", time_window FROM out_num_cnt_basic ORDER BY time_window;
SELECT flowpg.verify_flow('test_numbers_basic') AS mismatches;
SELECT flowpg.drop_flow('test_numbers_basic');
DROP TABLE numbers_input_basic, out_num_cnt_basic;

-- the default computes the rows already there, and WITH (backfill = ...) wins
RESET flowpg.execute_backfill;
CREATE TABLE nums (n INT, ts timestamp(3) NOT NULL);
INSERT INTO nums VALUES (20, '2021-07-01 00:00:00.200');
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW f_default SINK TO f_default_out AS
SELECT sum(n) AS s, date_bin(INTERVAL '1 second', ts) AS w FROM nums GROUP BY w$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW f_off SINK TO f_off_out WITH (backfill = false) AS
SELECT sum(n) AS s, date_bin(INTERVAL '1 second', ts) AS w FROM nums GROUP BY w$$);
SELECT flowpg.flush_flow('f_default') >= 0 AS a, flowpg.flush_flow('f_off') >= 0 AS b;
SELECT (SELECT count(*) FROM f_default_out) AS default_rows, (SELECT count(*) FROM f_off_out) AS off_rows;
SELECT flowpg.drop_flow('f_default'), flowpg.drop_flow('f_off');
DROP TABLE nums, f_default_out, f_off_out;
SET flowpg.execute_backfill = off;

---------------------------------------------------------------------------
-- flow_rebuild: the source dropped and created again under the flow, the
-- flow dropped and created again over its sink
---------------------------------------------------------------------------
CREATE TABLE input_basic (
    "number" INT,
    ts timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE ("number", ts)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW test_wildcard_basic sink TO out_basic EVAL INTERVAL '1m' AS
SELECT
    COUNT(*) as wildcard
FROM
    input_basic;
$$);
INSERT INTO input_basic VALUES (23, '2021-07-01 00:00:01.000'), (24, '2021-07-01 00:00:01.500')
ON CONFLICT ("number", ts) DO NOTHING;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_wildcard_basic')$$);
-- GreptimeDB: 2
SELECT wildcard FROM out_basic;
DROP TABLE input_basic;
CREATE TABLE input_basic (
    "number" INT,
    ts timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE ("number", ts)
);
INSERT INTO input_basic VALUES (23, '2021-07-01 00:00:01.000'), (24, '2021-07-01 00:00:01.500')
ON CONFLICT ("number", ts) DO NOTHING;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_wildcard_basic')$$);
-- GreptimeDB: 2 (there, the flow keeps reading the dropped table; here it
-- follows the new one, which has 2 rows)
SELECT wildcard FROM out_basic;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW test_wildcard_basic');
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW test_wildcard_basic sink TO out_basic EVAL INTERVAL '1m' AS
SELECT
    COUNT(*) as wildcard
FROM
    input_basic;
$$);
INSERT INTO input_basic VALUES (23, '2021-07-01 00:00:01.000'), (24, '2021-07-01 00:00:01.500'),
    (25, '2021-07-01 00:00:01.700')
ON CONFLICT ("number", ts) DO NOTHING;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_wildcard_basic')$$);
-- GreptimeDB: 3, and 3 rows
SELECT wildcard FROM out_basic;
SELECT count(*) FROM input_basic;
SELECT flowpg.verify_flow('test_wildcard_basic') AS mismatches;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows
 WHERE flow_name NOT IN (SELECT flow_name FROM flows_before) ORDER BY flow_name;
SET client_min_messages = warning;
DROP SCHEMA greptime_creation CASCADE;
RESET search_path;
RESET flowpg.execute_backfill;
