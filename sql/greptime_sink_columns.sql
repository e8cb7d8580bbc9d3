-- Who fills a sink's columns (issue 40, item 3).  An output named
-- update_at is the flow's, an ordinary column: flowpg fills update_at only
-- when the sink has one and no output writes it.  Through flowpg.execute a
-- pre-created sink column that the flow does not write and that has no
-- default is refused at CREATE, naming it, as GreptimeDB refuses it
-- (create_flow keeps PostgreSQL's rule: such a column is NULL).
\set VERBOSITY default
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE TEMP TABLE flows_before AS SELECT flow_name FROM flowpg.flows;
CREATE SCHEMA greptime_sink_columns;
SET search_path = greptime_sink_columns, public;

CREATE TABLE bytes_log (byte INT, ts timestamp(3) NOT NULL);
INSERT INTO bytes_log VALUES (NULL, '2023-01-01 00:00:01'), (300, '2023-01-01 00:00:31');

-- 1. update_at written by the flow (GreptimeDB's flow_last_non_null writes
-- a constant there): a sink flowpg creates gets no update_at of its own
SELECT flowpg.create_flow('own_update_at', 'own_update_at_sink',
  $$SELECT date_bin('30 s', ts, '2000-01-01') AS time_window, max(byte) AS hi,
           TIMESTAMP '2023-01-01 00:00:10' AS update_at
      FROM bytes_log GROUP BY 1$$) > 0 AS created;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'own_update_at_sink'::regclass AND attnum > 0 ORDER BY attnum;
INSERT INTO bytes_log VALUES (5, '2023-01-01 00:00:02');
SELECT flowpg.flush_flow('own_update_at') >= 0 AS flushed;
SELECT * FROM own_update_at_sink ORDER BY time_window;
SELECT flow_mismatches('own_update_at') AS mismatches, flowpg.verify_flow('own_update_at') AS verified;

-- through flowpg.execute into a GreptimeDB-shaped sink whose update_at the
-- flow writes (the value the flow gives, not the time of the write)
CREATE TABLE approx_rate (
    rate DOUBLE PRECISION NULL,
    time_window timestamp(3) NOT NULL PRIMARY KEY,
    update_at timestamp(3)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW find_approx_rate SINK TO approx_rate AS
SELECT
    (max(byte) - min(byte)) / 30.0 as rate,
    date_bin(INTERVAL '30 second', ts) as time_window,
    TIMESTAMP '2023-01-01 00:00:10' as update_at
from
    bytes_log
GROUP BY
    time_window;
$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
SELECT * FROM approx_rate ORDER BY time_window;
SELECT flowpg.verify_flow('find_approx_rate') AS verified;

-- and in the batching engine
SELECT flowpg.create_flow('own_update_at_b', 'own_update_at_b_sink',
  $$SELECT date_bin('30 s', ts, '2000-01-01') AS time_window, count(*) AS n,
           max(ts)::timestamptz AS update_at
      FROM bytes_log GROUP BY 1$$, eval_interval => '1 minute') > 0 AS created;
INSERT INTO bytes_log VALUES (7, '2023-01-01 00:00:45');
SELECT flowpg.flush_flow('own_update_at_b') >= 0 AS flushed;
SELECT * FROM own_update_at_b_sink ORDER BY time_window;
SELECT flowpg.verify_flow('own_update_at_b') AS verified;

-- 2. GreptimeDB's flow_sink_schema_mismatch: the sink lacks an output
CREATE TABLE source_mm ("number" INT, extra TEXT, ts timestamp(3) NOT NULL);
CREATE TABLE sink_mm ("number" INT, time_window timestamp(3) NOT NULL, cnt BIGINT);
SELECT * FROM flowpg.execute($$
CREATE FLOW mismatch_flow SINK TO sink_mm AS
SELECT
    "number",
    extra,
    date_bin(INTERVAL '1 second', ts) as time_window,
    count(*) as cnt
FROM
    source_mm
GROUP BY
    "number", extra, time_window;
$$);

-- a sink column the flow does not write, without a default: refused,
-- named; nothing is left behind
CREATE TABLE extra_col (
    time_window timestamp(3) NOT NULL PRIMARY KEY,
    cnt BIGINT,
    note TEXT,
    update_at timestamp(3)
);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW extra_flow SINK TO extra_col AS SELECT date_bin(INTERVAL ''1 minute'', ts) AS time_window, count(*) AS cnt FROM bytes_log GROUP BY time_window')$$);
SELECT count(*) AS left_behind FROM flowpg.flows WHERE flow_name = 'extra_flow';
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'extra_col'::regclass;
-- with a default, it is filled by it, as GreptimeDB fills it
ALTER TABLE extra_col ALTER COLUMN note SET DEFAULT 'from a flow';
SELECT flow_name, result FROM flowpg.execute('CREATE FLOW extra_flow SINK TO extra_col AS SELECT date_bin(INTERVAL ''1 minute'', ts) AS time_window, count(*) AS cnt FROM bytes_log GROUP BY time_window');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('extra_flow')$$);
SELECT time_window, cnt, note, update_at IS NOT NULL AS filled FROM extra_col ORDER BY time_window;
-- create_flow keeps PostgreSQL's rule: a nullable column is NULL
CREATE TABLE extra_col2 (time_window timestamp(3) NOT NULL PRIMARY KEY, cnt BIGINT, note TEXT);
SELECT flowpg.create_flow('extra_flow2', 'extra_col2', $$SELECT date_bin('1 minute', ts, '2000-01-01') AS time_window, count(*) AS cnt FROM bytes_log GROUP BY 1$$) > 0 AS created;
SELECT flowpg.flush_flow('extra_flow2') >= 0 AS flushed;
SELECT * FROM extra_col2 ORDER BY time_window;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows
 WHERE flow_name NOT IN (SELECT flow_name FROM flows_before) ORDER BY flow_name;
SET client_min_messages = warning;
DROP SCHEMA greptime_sink_columns CASCADE;
RESET search_path;
