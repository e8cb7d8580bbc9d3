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

-- flow_sink_schema_mismatch's last case: merge_mode = 'last_non_null' (here
-- the flow's option) does not excuse a sink key the flow does not write
CREATE TABLE lnn_source_mm (device TEXT, val DOUBLE PRECISION, ts timestamp(3) NOT NULL);
CREATE TABLE lnn_sink_mm (
    device TEXT NOT NULL,
    time_window timestamp(3) NOT NULL,
    cnt BIGINT,
    PRIMARY KEY (device, time_window)
);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW lnn_missing_pk_flow
SINK TO lnn_sink_mm WITH (merge_mode = ''last_non_null'') AS
SELECT
    date_bin(INTERVAL ''1 second'', ts) as time_window,
    count(*) as cnt
FROM
    lnn_source_mm
GROUP BY
    time_window')$$);
SELECT count(*) AS left_behind FROM flowpg.flows WHERE flow_name = 'lnn_missing_pk_flow';
DROP TABLE lnn_source_mm, lnn_sink_mm;

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

-- 3. Several flows into one sink (GreptimeDB's merge_mode =
-- 'last_non_null'): each upserts its own columns on the shared key.  A
-- group that goes away leaves its columns NULL; a row goes when no flow's
-- values are left in it.  Checked per flow: its key and value columns of
-- the rows where they are not all NULL equal its query's.
CREATE FUNCTION shared_mismatches(flow text, keys text, vals text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	f record;
	n bigint;
BEGIN
	SELECT sink_table, query INTO STRICT f FROM flowpg.flows WHERE flow_name = flow;
	EXECUTE format('SELECT (SELECT count(*) FROM (SELECT %1$s, %4$s FROM %2$s WHERE NOT ROW(%4$s) IS NULL
	                 EXCEPT ALL SELECT %1$s, %4$s FROM (%3$s) q WHERE NOT ROW(%4$s) IS NULL) d)
	              + (SELECT count(*) FROM (SELECT %1$s, %4$s FROM (%3$s) q WHERE NOT ROW(%4$s) IS NULL
	                 EXCEPT ALL SELECT %1$s, %4$s FROM %2$s WHERE NOT ROW(%4$s) IS NULL) d)',
	               keys, f.sink_table, f.query, vals) INTO n;
	RETURN n;
END $$;

CREATE TABLE readings (device TEXT NOT NULL, v INT, ts timestamp(3) NOT NULL);
CREATE TABLE per_device (
    device TEXT NOT NULL,
    time_window timestamp(3) NOT NULL,
    total BIGINT,
    hi INT,
    n BIGINT,
    update_at timestamptz,
    PRIMARY KEY (device, time_window)
);
INSERT INTO readings VALUES ('a', 1, '2024-01-01 00:00:10'), ('a', 2, '2024-01-01 00:00:20'),
                            ('b', 5, '2024-01-01 00:01:10');
-- a streaming flow writes total and hi
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW dev_sum SINK TO per_device WITH (merge_mode = 'last_non_null') AS
SELECT device, date_bin(INTERVAL '1 minute', ts) AS time_window, sum(v) AS total, max(v) AS hi
FROM readings GROUP BY device, time_window
$$);
-- a batching flow writes n, on the same key
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW dev_count SINK TO per_device EVAL INTERVAL '1 minute' AS
SELECT device, date_bin(INTERVAL '1 minute', ts) AS time_window, count(v) AS n
FROM readings WHERE v < 100 GROUP BY device, time_window
$$);
SELECT flow_name, mode FROM flowpg.flows WHERE flow_name IN ('dev_sum', 'dev_count') ORDER BY flow_name;
SELECT flowpg.flush_flow('dev_sum') >= 0 AS s, flowpg.flush_flow('dev_count') >= 0 AS c;
SELECT device, time_window, total, hi, n FROM per_device ORDER BY 1, 2;
-- rows only one flow has (v >= 100 is not counted), updates, deletes
INSERT INTO readings VALUES ('c', 500, '2024-01-01 00:02:00'), ('a', 3, '2024-01-01 00:00:30');
UPDATE readings SET v = 7 WHERE device = 'b';
SELECT flowpg.flush_flow('dev_sum') >= 0 AS s, flowpg.flush_flow('dev_count') >= 0 AS c;
SELECT device, time_window, total, hi, n FROM per_device ORDER BY 1, 2;
SELECT shared_mismatches('dev_sum', 'device, time_window', 'total, hi') AS sum_mismatches, shared_mismatches('dev_count', 'device, time_window', 'n') AS count_mismatches,
       flowpg.verify_flow('dev_sum') AS sum_verified, flowpg.verify_flow('dev_count') AS count_verified;
-- c's only reading goes: its row goes (no flow has values in it); a's
-- readings become uncounted: n goes NULL, total and hi stay
DELETE FROM readings WHERE device = 'c';
UPDATE readings SET v = v + 1000 WHERE device = 'a';
SELECT flowpg.flush_flow('dev_sum') >= 0 AS s, flowpg.flush_flow('dev_count') >= 0 AS c;
SELECT device, time_window, total, hi, n FROM per_device ORDER BY 1, 2;
SELECT shared_mismatches('dev_sum', 'device, time_window', 'total, hi') AS sum_mismatches, shared_mismatches('dev_count', 'device, time_window', 'n') AS count_mismatches,
       flowpg.verify_flow('dev_sum') AS sum_verified, flowpg.verify_flow('dev_count') AS count_verified;
-- a TRUNCATE of the shared sink recomputes both flows
TRUNCATE per_device;
SELECT flowpg.flush_flow('dev_sum') >= 0 AS s, flowpg.flush_flow('dev_count') >= 0 AS c;
SELECT device, time_window, total, hi, n FROM per_device ORDER BY 1, 2;
SELECT shared_mismatches('dev_sum', 'device, time_window', 'total, hi') + shared_mismatches('dev_count', 'device, time_window', 'n') AS mismatches;
-- explain_flow shows the batching flow's three statements
SELECT count(*) FILTER (WHERE line LIKE '%Then, the sink being shared: DELETE%') AS cleanup_lines
  FROM flowpg.explain_flow('dev_count') line;

-- refused: two flows writing one column (GreptimeDB's flow_last_non_null
-- writes update_at from both of its flows), other keys, a projection
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW dev_hi SINK TO per_device AS SELECT device, date_bin(INTERVAL ''1 minute'', ts) AS time_window, max(v) AS hi FROM readings GROUP BY device, time_window')$$);
ALTER TABLE per_device ADD COLUMN n2 BIGINT, ADD COLUMN v2 INT;
SELECT * FROM try($$SELECT flowpg.create_flow('dev_other_key', 'per_device', 'SELECT device, count(*) AS n2 FROM readings GROUP BY device')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('dev_rows', 'per_device', 'SELECT device, ts AS time_window, v AS v2 FROM readings')$$);
-- a value column with a default could not tell "no group" from a value
ALTER TABLE per_device ADD COLUMN lo INT DEFAULT 0;
SELECT * FROM try($$SELECT flowpg.create_flow('dev_lo', 'per_device', 'SELECT device, date_bin(''1 minute'', ts, ''2001-01-01'') AS time_window, min(v) AS lo FROM readings GROUP BY 1, 2')$$);
SELECT count(*) AS refused_left_behind FROM flowpg.flows WHERE flow_name IN ('dev_hi', 'dev_other_key', 'dev_rows', 'dev_lo');
-- without merge_mode, flowpg.execute refuses the columns the flow does not fill
CREATE TABLE per_device2 (device TEXT NOT NULL, time_window timestamp(3) NOT NULL, total BIGINT, n BIGINT,
                          PRIMARY KEY (device, time_window));
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW dev2 SINK TO per_device2 AS SELECT device, date_bin(INTERVAL ''1 minute'', ts) AS time_window, sum(v) AS total FROM readings GROUP BY device, time_window')$$);

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows
 WHERE flow_name NOT IN (SELECT flow_name FROM flows_before) ORDER BY flow_name;
SET client_min_messages = warning;
DROP SCHEMA greptime_sink_columns CASCADE;
RESET search_path;
