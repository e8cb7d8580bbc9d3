-- GreptimeDB's flow statements through flowpg.execute, written the way
-- GreptimeDB's tests (tests/cases/standalone/common/flow) and its
-- flow-computation documentation write them: a source, a flow, rows,
-- ADMIN FLUSH_FLOW, the sink.  Every sink is compared with its flow's query
-- run on the source (flow_mismatches, EXCEPT ALL both ways).
\set VERBOSITY default

-- flows of the other suites are not this file's
CREATE TEMP TABLE flows_before AS SELECT flow_name FROM flowpg.flows;

CREATE FUNCTION sink_columns(sink regclass) RETURNS TABLE (name name, type text)
LANGUAGE sql AS $$
	SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
	 WHERE attrelid = sink AND attnum > 0 AND NOT attisdropped ORDER BY attnum
$$;

---------------------------------------------------------------------------
-- flow_basic: an unaliased sum, date_bin with an origin given as a string
---------------------------------------------------------------------------
CREATE TABLE numbers_input_basic (
    number INT,
    ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (number, ts)
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW test_numbers_basic
SINK TO out_num_cnt_basic
AS
SELECT
    sum(number),
    date_bin(INTERVAL '1 second', ts, '2021-07-01 00:00:00') AS time_window
FROM
    numbers_input_basic
GROUP BY
    time_window;
$$);

-- the columns GreptimeDB gives it: sum(numbers_input_basic.number), time_window, update_at
SELECT * FROM sink_columns('out_num_cnt_basic');

INSERT INTO numbers_input_basic VALUES
    (20, '2021-07-01 00:00:00.200'),
    (22, '2021-07-01 00:00:00.600');

SELECT flow_name, result, affected_rows >= 0 AS counted
FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_numbers_basic')$$);

SELECT "sum(numbers_input_basic.number)", time_window FROM out_num_cnt_basic ORDER BY time_window;

INSERT INTO numbers_input_basic VALUES
    (23, '2021-07-01 00:00:01.000'),
    (24, '2021-07-01 00:00:01.500');

SELECT flow_name, result FROM flowpg.execute($$admin flush_flow('test_numbers_basic')$$);

SELECT "sum(numbers_input_basic.number)", time_window FROM out_num_cnt_basic ORDER BY time_window;
SELECT flow_mismatches('test_numbers_basic');

SELECT flow_name, result FROM flowpg.execute($$SHOW FLOWS LIKE 'test%'$$);
SELECT result FROM flowpg.execute('SHOW CREATE FLOW test_numbers_basic');

-- the definition round-trips: drop the flow, create it again from it
SELECT result AS definition FROM flowpg.execute('SHOW CREATE FLOW test_numbers_basic') \gset
SELECT flow_name, result FROM flowpg.execute('DROP FLOW test_numbers_basic');
SELECT flow_name, result FROM flowpg.execute(:'definition');
SELECT flowpg.flush_flow('test_numbers_basic') >= 0 AS backfilled;
SELECT result = :'definition' AS same_definition
FROM flowpg.execute('SHOW CREATE FLOW test_numbers_basic');
SELECT flow_mismatches('test_numbers_basic');

-- several statements in one text, as in a script
SELECT flow_name, result, affected_rows >= 0 AS counted FROM flowpg.execute($$
ADMIN FLUSH_FLOW('test_numbers_basic');
SHOW FLOWS LIKE 'test%';
COMMENT ON FLOW test_numbers_basic IS 'from a script';
$$);
SELECT comment FROM flowpg.information_schema_flows WHERE flow_name = 'test_numbers_basic';
-- a statement that fails undoes the ones before it (one transaction)
SELECT * FROM flowpg.execute($$
COMMENT ON FLOW test_numbers_basic IS 'not kept';
DROP FLOW no_such_flow;
$$);
SELECT comment FROM flowpg.information_schema_flows WHERE flow_name = 'test_numbers_basic';
SELECT * FROM flowpg.execute($$SHOW FLOWS LIKE 'x' SHOW FLOWS$$);

-- statements in any case, with comments and any whitespace
SELECT flow_name, result FROM flowpg.execute($$
    /* a block comment */ DrOp   -- a line comment
    fLoW
    test_numbers_basic ;
$$);
SELECT flow_name, result FROM flowpg.execute('DROP FLOW IF EXISTS test_numbers_basic');

---------------------------------------------------------------------------
-- The documentation's temperature alerts: date_bin with two arguments
-- (origin: the epoch), an output alias in HAVING, a comma before FROM,
-- a `backquoted` table name
---------------------------------------------------------------------------
CREATE TABLE temp_sensor_data (
    sensor_id INT,
    loc TEXT,
    temperature DOUBLE PRECISION,
    ts TIMESTAMPTZ NOT NULL
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW temp_monitoring
SINK TO temp_alerts
AS
SELECT
    sensor_id,
    loc,
    max(temperature) AS max_temp,
    date_bin('10 seconds'::INTERVAL, ts) AS time_window,
FROM `temp_sensor_data`
GROUP BY
    sensor_id,
    loc,
    time_window
HAVING max_temp > 100;
$$);

SELECT mode FROM flowpg.flows WHERE flow_name = 'temp_monitoring';

INSERT INTO temp_sensor_data VALUES
    (1, 'room1', 98.5, '2022-01-01 10:00:00+00'),
    (2, 'room2', 99.5, '2022-01-01 10:00:01+00');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('temp_monitoring')$$);
SELECT sensor_id, loc, max_temp, time_window FROM temp_alerts ORDER BY 1, 4;

INSERT INTO temp_sensor_data VALUES
    (1, 'room1', 101.5, '2022-01-01 10:00:02+00'),
    (2, 'room2', 102.5, '2022-01-01 10:00:03+00');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('temp_monitoring')$$);
SELECT sensor_id, loc, max_temp, time_window FROM temp_alerts ORDER BY 1, 4;

-- unlike GreptimeDB, an UPDATE or DELETE at the source is exact in the sink
UPDATE temp_sensor_data SET temperature = 100 WHERE sensor_id = 1;
DELETE FROM temp_sensor_data WHERE sensor_id = 2 AND temperature > 102;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('contrib_regression.temp_monitoring')$$);
SELECT sensor_id, loc, max_temp, time_window FROM temp_alerts ORDER BY 1, 4;
SELECT flow_mismatches('temp_monitoring');

-- windows are anchored at the epoch, as GreptimeDB's two-argument date_bin
SELECT window_expression FROM flowpg.flows WHERE flow_name = 'temp_monitoring';

---------------------------------------------------------------------------
-- SELECT DISTINCT without aggregates: a flow grouping by its columns;
-- in the native API too
---------------------------------------------------------------------------
CREATE TABLE ngx_access_log (
    client TEXT,
    country TEXT,
    access_time TIMESTAMP NOT NULL
);
INSERT INTO ngx_access_log VALUES
    ('cli1', 'b', '2022-01-01 00:00:00'),
    ('cli2', 'b', '2022-01-01 00:00:01'),
    ('cli3', 'c', '2022-01-01 01:00:02');

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW calc_ngx_country
SINK TO ngx_country
AS
SELECT DISTINCT
    country,
    date_bin(INTERVAL '1 hour', access_time) AS time_window
FROM ngx_access_log
GROUP BY
    country,
    time_window;
$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW distinct_basic SINK TO distinct_basic_out AS SELECT DISTINCT country AS dis FROM ngx_access_log;
$$);
SELECT flowpg.create_flow('distinct_native', 'distinct_native_out',
                          'SELECT DISTINCT country, client FROM ngx_access_log') > 0 AS created;
INSERT INTO ngx_access_log VALUES ('cli4', 'd', '2022-01-01 01:30:00'), ('cli1', 'b', '2022-01-01 02:00:00');
DELETE FROM ngx_access_log WHERE client = 'cli3';
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_ngx_country')$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('distinct_basic')$$);
SELECT flowpg.flush_flow('distinct_native') >= 0 AS flushed;
SELECT country, time_window FROM ngx_country ORDER BY 2, 1;
SELECT dis FROM distinct_basic_out ORDER BY 1;
SELECT flow_name, query FROM flowpg.flows WHERE flow_name = 'distinct_native';
SELECT flow_mismatches('calc_ngx_country'), flow_mismatches('distinct_basic'),
       flow_mismatches('distinct_native');

---------------------------------------------------------------------------
-- count(1), count(*), ::double and names of unaliased outputs
---------------------------------------------------------------------------
CREATE TABLE numbers_input_df_func (number INT, ts TIMESTAMP NOT NULL);
INSERT INTO numbers_input_df_func
SELECT i % 7 - 3, '2021-07-01 00:00:00'::timestamp + i * interval '250 milliseconds'
FROM generate_series(1, 40) i;

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW test_numbers_df_func
SINK TO out_num_cnt_df_func
AS
SELECT
    count(1),
    COUNT(*),
    sum(abs(number)),
    avg(number::double),
    date_trunc('second', ts) AS time_window
FROM numbers_input_df_func
GROUP BY time_window;
$$);
SELECT * FROM sink_columns('out_num_cnt_df_func');
INSERT INTO numbers_input_df_func VALUES (100, '2021-07-01 00:00:03.100');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_numbers_df_func')$$);
SELECT "count(Int64(1))", "count(*)", "sum(abs(numbers_input_df_func.number))",
       "avg(numbers_input_df_func.number)"
FROM out_num_cnt_df_func WHERE time_window = '2021-07-01 00:00:03';
SELECT flow_mismatches('test_numbers_df_func');

-- DataFusion's type names only where PostgreSQL has no such type
CREATE DOMAIN string AS text;
SELECT flowpg.create_flow('own_string', 'own_string_out',
    'SELECT number::string AS s, count(*) AS n FROM numbers_input_df_func GROUP BY 1') > 0 AS created;
SELECT * FROM sink_columns('own_string_out');
SELECT flowpg.drop_flow('own_string');
DROP TABLE own_string_out;
DROP DOMAIN string;

-- CASE, NOT, IS NULL and a negation named as DataFusion names them
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW df_names SINK TO df_names_out AS
SELECT sum(CASE WHEN number > 0 THEN 1 END), count(-number), bool_or(NOT number IS NULL),
       date_trunc('second', ts) AS w
FROM numbers_input_df_func n GROUP BY w
$$);
SELECT flowpg.flush_flow('df_names') >= 0 AS backfilled;
SELECT name FROM sink_columns('df_names_out');
SELECT flow_mismatches('df_names');
-- two outputs GreptimeDB would name alike; a name longer than PostgreSQL's
-- 63 bytes, and an expression flowpg cannot name
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW dup_names SINK TO dup_names_out AS
SELECT sum(number) AS "sum(numbers_input_df_func.number)", sum(number) FROM numbers_input_df_func
$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW unnamed SINK TO unnamed_out AS
SELECT sum(CASE WHEN number > 0 THEN 1 ELSE 0 END) FROM numbers_input_df_func
$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW unnamed SINK TO unnamed_out AS
SELECT count(*), number BETWEEN 1 AND 2 FROM numbers_input_df_func GROUP BY 2
$$);
-- (a time window without an alias: DataFusion names its interval constant)
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW unnamed SINK TO unnamed_out AS
SELECT count(*), date_bin(INTERVAL '1 minute', ts) FROM numbers_input_df_func GROUP BY 2
$$);
-- a temporary type exists in this session only
CREATE DOMAIN pg_temp.small_int AS int;
SELECT flowpg.create_flow('temp_type', 'temp_type_out',
    'SELECT number::pg_temp.small_int AS n, count(*) AS c FROM numbers_input_df_func GROUP BY 1');

---------------------------------------------------------------------------
-- EXPIRE AFTER and EVAL INTERVAL in GreptimeDB's forms; COMMENT
---------------------------------------------------------------------------
CREATE TABLE metric_src (host TEXT, v DOUBLE PRECISION, ts TIMESTAMPTZ NOT NULL);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW e_cast SINK TO e_cast_out EXPIRE AFTER '1 hour'::INTERVAL
AS SELECT host, sum(v) AS s, date_trunc('minute', ts) AS m FROM metric_src GROUP BY host, m$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW e_keyword SINK TO e_keyword_out EXPIRE AFTER INTERVAL '1m'
AS SELECT host, sum(v) AS s, date_trunc('minute', ts) AS m FROM metric_src GROUP BY host, m$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW e_plain SINK TO e_plain_out EXPIRE AFTER '10 minute'
AS SELECT host, sum(v) AS s, date_trunc('minute', ts) AS m FROM metric_src GROUP BY host, m$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW e_short SINK TO e_short_out EXPIRE AFTER '1h' COMMENT 'hourly, kept an hour'
AS SELECT host, sum(v) AS s, date_trunc('minute', ts) AS m FROM metric_src GROUP BY host, m$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW e_days SINK TO e_days_out EXPIRE AFTER (('7days'::INTERVAL)) EVAL INTERVAL '30s'
AS SELECT host, sum(v) AS s, date_trunc('minute', ts) AS m FROM metric_src GROUP BY host, m$$);
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name LIKE 'e\_%' ORDER BY flow_name;
SELECT flow_name, expire_after, comment, options
FROM flowpg.information_schema_flows WHERE flow_name LIKE 'e\_%' ORDER BY flow_name;
SELECT flow_name, mode, eval_interval FROM flowpg.flows WHERE flow_name = 'e_days';
SELECT result FROM flowpg.execute('SHOW CREATE FLOW e_days');

-- COMMENT ON FLOW sets and clears it
SELECT flow_name, result FROM flowpg.execute($$COMMENT ON FLOW e_plain IS 'ten minutes'$$);
SELECT flow_name, comment FROM flowpg.information_schema_flows WHERE flow_name = 'e_plain';
SELECT flow_name, result FROM flowpg.execute($$COMMENT ON FLOW e_short IS NULL$$);
SELECT flow_name, comment FROM flowpg.information_schema_flows WHERE flow_name = 'e_short';
SELECT result FROM flowpg.execute('SHOW CREATE FLOW e_plain');

-- intervals GreptimeDB refuses
SELECT * FROM flowpg.execute($$CREATE FLOW e_bad SINK TO e_bad_out EXPIRE AFTER '1 month' AS SELECT count(*) AS n FROM metric_src$$);
SELECT * FROM flowpg.execute($$CREATE FLOW e_bad SINK TO e_bad_out EVAL INTERVAL '-5 s' AS SELECT count(*) AS n FROM metric_src$$);
SELECT * FROM flowpg.execute($$CREATE FLOW e_bad SINK TO e_bad_out EXPIRE AFTER 'later' AS SELECT count(*) AS n FROM metric_src$$);
-- "1M": a month to GreptimeDB, a minute to PostgreSQL
SELECT * FROM flowpg.execute($$CREATE FLOW e_bad SINK TO e_bad_out EXPIRE AFTER '1M' AS SELECT count(*) AS n FROM metric_src$$);
-- clauses in GreptimeDB's order only
SELECT * FROM flowpg.execute($$CREATE FLOW e_bad SINK TO e_bad_out EVAL INTERVAL '1m' EXPIRE AFTER '1h' AS SELECT count(*) AS n FROM metric_src$$);

---------------------------------------------------------------------------
-- OR REPLACE, IF NOT EXISTS, existing and missing flows
---------------------------------------------------------------------------
INSERT INTO metric_src VALUES ('a', 1, now()), ('b', 2, now());
SELECT * FROM flowpg.execute($$CREATE FLOW e_plain SINK TO e_plain_out AS SELECT count(*) AS n FROM metric_src$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW IF NOT EXISTS e_plain SINK TO e_plain_out AS SELECT count(*) AS n FROM metric_src$$);
SELECT * FROM flowpg.execute($$CREATE OR REPLACE FLOW IF NOT EXISTS e_plain SINK TO e_plain_out AS SELECT count(*) AS n FROM metric_src$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE OR REPLACE FLOW e_plain SINK TO e_plain_out EXPIRE AFTER '10 minute'
AS SELECT host, sum(v) AS s, date_trunc('minute', ts) AS m FROM metric_src WHERE host = 'a' GROUP BY host, m$$);
SELECT flowpg.flush_flow('e_plain') >= 0 AS backfilled;
SELECT host, s FROM e_plain_out;
SELECT flow_mismatches('e_plain');
SELECT * FROM flowpg.execute('DROP FLOW no_such_flow');
SELECT * FROM flowpg.execute($$ADMIN FLUSH_FLOW('no_such_flow')$$);
SELECT * FROM flowpg.execute('SHOW CREATE FLOW no_such_flow');
SELECT * FROM flowpg.execute($$COMMENT ON FLOW no_such_flow IS 'x'$$);
SELECT flow_name, result FROM flowpg.execute($$SHOW FLOWS LIKE 'e\_%'$$);

---------------------------------------------------------------------------
-- WITH options
---------------------------------------------------------------------------
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW w_batching SINK TO w_batching_out
WITH (mode = 'batching', experimental_enable_incremental_read = 'true')
AS SELECT host, count(*) AS n, date_trunc('hour', ts) AS h FROM metric_src GROUP BY host, h$$);
SELECT flow_name, options FROM flowpg.information_schema_flows WHERE flow_name = 'w_batching';
SELECT result FROM flowpg.execute('SHOW CREATE FLOW w_batching');
SELECT * FROM flowpg.execute($$CREATE FLOW w_bad SINK TO w_bad_out WITH (access_key_id = 'x') AS SELECT count(*) AS n FROM metric_src$$);
SELECT * FROM flowpg.execute($$CREATE FLOW w_bad SINK TO w_bad_out WITH (defer_on_missing_source = 'perhaps') AS SELECT count(*) AS n FROM metric_src$$);
SELECT * FROM flowpg.execute($$CREATE FLOW w_bad SINK TO w_bad_out WITH (flow_type = 'streaming') AS SELECT count(*) AS n FROM metric_src$$);
SELECT * FROM flowpg.execute($$CREATE FLOW w_bad SINK TO w_bad_out WITH (mode = 'fast') AS SELECT count(*) AS n FROM metric_src$$);
SELECT * FROM flowpg.execute($$CREATE FLOW w_bad SINK TO w_bad_out WITH (mode = 'batching', mode = 'streaming') AS SELECT count(*) AS n FROM metric_src$$);
-- experimental_enable_incremental_read needs append-only sources, as in
-- GreptimeDB: a table with a primary key (or a unique index) replaces rows
CREATE TABLE keyed_src (host TEXT PRIMARY KEY, v DOUBLE PRECISION, ts TIMESTAMPTZ NOT NULL);
SELECT * FROM flowpg.execute($$CREATE FLOW w_bad SINK TO w_bad_out WITH (experimental_enable_incremental_read = 'true') AS SELECT count(*) AS n FROM keyed_src$$);
SELECT count(*) AS left_behind FROM pg_class WHERE relname = 'w_bad_out';
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW w_keyed SINK TO w_keyed_out WITH (experimental_enable_incremental_read = 'false') AS SELECT count(*) AS n FROM keyed_src$$);
SELECT flowpg.drop_flow('w_keyed');
DROP TABLE keyed_src, w_keyed_out;

---------------------------------------------------------------------------
-- Syntax errors point into the statement and say what was expected
---------------------------------------------------------------------------
SELECT * FROM flowpg.execute('CREATE FLOW f SINKK TO out AS SELECT 1');
SELECT * FROM flowpg.execute('CREATE FLOW f SINKK/* a comment */TO out AS SELECT 1');
SELECT * FROM flowpg.execute('CREATE FLOW f SINK TO out');
SELECT * FROM flowpg.execute('CREATE FLOW f SINK TO out AS');
SELECT * FROM flowpg.execute('SHOW FLOWS extra');
SELECT * FROM flowpg.execute('SHOW TABLES');
SELECT * FROM flowpg.execute('ADMIN FLUSH_FLOW(');
SELECT * FROM flowpg.execute($$CREATE FLOW f SINK TO out AS SELECT count(*) FROM metric_src WHERE host = 'unterminated$$);
SELECT * FROM flowpg.execute($$CREATE FLOW f SINK TO out AS SELECT count(*) AS n FROM metric_src WHERE hots = 'a'$$);
SELECT * FROM flowpg.execute(NULL);
SELECT * FROM flowpg.execute($$ADMIN FLUSH_FLOW('other_database.temp_monitoring')$$);
SELECT * FROM flowpg.execute($$CREATE FLOW f SINK TO other_database.public.out AS SELECT count(*) AS n FROM metric_src$$);
-- a WITH query is not a missing table (the flow is refused for want of
-- eval_interval, not deferred)
SELECT * FROM flowpg.execute($$CREATE FLOW f SINK TO out AS WITH recent AS (SELECT * FROM metric_src) SELECT count(*) AS n FROM recent$$);
SELECT * FROM flowpg.execute($$CREATE FLOW f SINK TO out AS EXPLAIN SELECT 1$$);
-- nothing was left behind by the failed statements
SELECT count(*) FROM pg_class WHERE relname IN ('out', 'w_bad_out', 'e_bad_out', 'dup_names_out', 'unnamed_out');
SELECT count(*) FROM flowpg.information_schema_flows WHERE flow_name IN ('f', 'w_bad', 'e_bad', 'dup_names', 'unnamed');

---------------------------------------------------------------------------
-- Pending flows: defer_on_missing_source waits for the table, visibly
---------------------------------------------------------------------------
-- A worker starts them, not the DDL that made the table; flush_flow waits
-- for its attempt and says why a flow is still pending.
CREATE FUNCTION pending_attempted(f text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM flowpg.flush_flow(f);
	RETURN 'started';
EXCEPTION WHEN object_not_in_prerequisite_state THEN
	RETURN 'pending';
END $$;
SELECT * FROM flowpg.execute($$
CREATE FLOW pending_without_defer SINK TO pending_out
AS SELECT device, count(*) AS n, date_bin(INTERVAL '1 minute', ts) AS w FROM later_table GROUP BY device, w$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW pending_flow SINK TO pending_out
WITH (defer_on_missing_source = true)
AS SELECT device, count(*) AS n, date_bin(INTERVAL '1 minute', ts) AS w FROM later_table GROUP BY device, w$$);
SELECT flow_name, flow_id IS NULL AS no_id, source_table_ids, options, state, state_reason
FROM flowpg.information_schema_flows WHERE flow_name = 'pending_flow';
SELECT flow_name, result FROM flowpg.execute($$SHOW FLOWS LIKE 'pending%'$$);
SELECT * FROM flowpg.execute($$ADMIN FLUSH_FLOW('pending_flow')$$);
SELECT flowpg.create_flow('pending_flow', 'other_out', 'SELECT count(*) AS n FROM metric_src');
SELECT count(*) FROM pg_class WHERE relname = 'pending_out';
-- the table appears: the flow starts, over the rows it already has
CREATE TABLE later_table AS
SELECT i % 3 AS device, '2024-01-01 00:00:00+00'::timestamptz + i * interval '7 seconds' AS ts
FROM generate_series(1, 100) i;
SELECT pending_attempted('pending_flow');
SELECT flow_name, mode, state FROM flowpg.information_schema_flows WHERE flow_name = 'pending_flow';
INSERT INTO later_table VALUES (9, '2024-01-01 00:00:00+00');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('pending_flow')$$);
SELECT flow_mismatches('pending_flow');
SELECT n FROM pending_out WHERE device = 9;

-- a pending flow that cannot start stays pending and says why
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW pending_broken SINK TO pending_broken_out EXPIRE AFTER '1h' WITH (defer_on_missing_source = 'TRUE')
AS SELECT count(*) AS n FROM later_table_2$$);
CREATE TABLE later_table_2 (a int);
SELECT pending_attempted('pending_broken');
SELECT flow_name, state, state_reason FROM flowpg.information_schema_flows WHERE flow_name = 'pending_broken';
SELECT flow_name, result FROM flowpg.execute('DROP FLOW pending_broken');
SELECT count(*) FROM flowpg.information_schema_flows WHERE flow_name = 'pending_broken';

-- a pending flow starts as its owner: a table the owner may not read keeps
-- it pending, until a GRANT lets it start
CREATE ROLE regress_greptime_owner;
GRANT CREATE ON SCHEMA public TO regress_greptime_owner;
SET ROLE regress_greptime_owner;
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW owned_pending SINK TO owned_pending_out WITH (defer_on_missing_source = true)
AS SELECT count(*) AS n FROM admins_table$$);
RESET ROLE;
CREATE TABLE admins_table (a int);
INSERT INTO admins_table VALUES (1), (2);
SELECT pending_attempted('owned_pending');
SELECT flow_name, state, state_reason FROM flowpg.information_schema_flows WHERE flow_name = 'owned_pending';
GRANT SELECT, TRIGGER ON admins_table TO regress_greptime_owner;
SELECT pending_attempted('owned_pending');
SELECT flow_name, owner, state FROM flowpg.flows WHERE flow_name = 'owned_pending';
SELECT n FROM owned_pending_out;
SELECT flow_mismatches('owned_pending');
-- ... and only over tables of roles its owner acts as
CREATE ROLE regress_greptime_other;
GRANT CREATE ON SCHEMA public TO regress_greptime_other;
SET ROLE regress_greptime_owner;
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW trusting_pending SINK TO trusting_out WITH (defer_on_missing_source = true)
AS SELECT count(*) AS n FROM others_table$$);
SET ROLE regress_greptime_other;
CREATE TABLE others_table (a int);
GRANT SELECT, TRIGGER ON others_table TO regress_greptime_owner;
RESET ROLE;
SELECT pending_attempted('trusting_pending');
SELECT flow_name, state, state_reason FROM flowpg.information_schema_flows WHERE flow_name = 'trusting_pending';
SET ROLE regress_greptime_owner;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW owned_pending');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW trusting_pending');
DROP TABLE owned_pending_out;
RESET ROLE;

-- The trust goes one way: the objects' owner must be able to act as the
-- flow's owner, not the other way round.  A superuser's pending flow over a
-- table an ordinary role creates later, with a cast that would make her
-- superuser if it ran with the flow's rights: refused, the cast never runs.
CREATE SCHEMA mal AUTHORIZATION regress_greptime_other;
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW admin_pending SINK TO public.admin_pending_out WITH (defer_on_missing_source = true)
AS SELECT device, sum(value) AS s FROM mal.events GROUP BY device$$);
SET ROLE regress_greptime_other;
CREATE TYPE mal.ct AS (x int);
CREATE FUNCTION mal.ct_int(mal.ct) RETURNS int LANGUAGE plpgsql STABLE AS $f$
BEGIN
	BEGIN
		EXECUTE 'ALTER ROLE regress_greptime_other SUPERUSER';
	EXCEPTION WHEN insufficient_privilege THEN
		NULL;
	END;
	RETURN ($1).x;
END $f$;
CREATE CAST (mal.ct AS int4) WITH FUNCTION mal.ct_int(mal.ct) AS IMPLICIT;
CREATE TABLE mal.events (ts timestamptz, device int, value mal.ct);
INSERT INTO mal.events VALUES (now(), 1, row(5)::mal.ct);
RESET ROLE;
SELECT pending_attempted('admin_pending');
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_greptime_other';
SELECT flow_name, state, state_reason FROM flowpg.information_schema_flows WHERE flow_name = 'admin_pending';
SELECT count(*) FROM pg_class WHERE relname = 'admin_pending_out';
-- the table alone, of a role that cannot act as the superuser: refused too
ALTER TABLE mal.events ALTER COLUMN value TYPE int USING (value).x;
SELECT pending_attempted('admin_pending');
SELECT flow_name, state, state_reason FROM flowpg.information_schema_flows WHERE flow_name = 'admin_pending';
-- once the table is the superuser's, it starts
ALTER TABLE mal.events OWNER TO CURRENT_USER;
SELECT pending_attempted('admin_pending');
SELECT flow_mismatches('admin_pending');
SELECT flowpg.drop_flow('admin_pending');
DROP TABLE admin_pending_out;
DROP SCHEMA mal CASCADE;

-- A group role: a member's pending flow over a table another member creates
-- as the group is that member's code under the flow owner's rights: refused.
CREATE ROLE regress_greptime_team;
GRANT regress_greptime_team TO regress_greptime_owner, regress_greptime_other;
CREATE SCHEMA team AUTHORIZATION regress_greptime_team;
SET ROLE regress_greptime_owner;
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW team_pending SINK TO public.team_pending_out WITH (defer_on_missing_source = true)
AS SELECT device, count(*) AS n FROM team.events GROUP BY device$$);
SET ROLE regress_greptime_other;
SET ROLE regress_greptime_team;
CREATE TABLE team.events (ts timestamptz, device int);
RESET ROLE;
SELECT pending_attempted('team_pending');
SELECT flow_name, state, state_reason FROM flowpg.information_schema_flows WHERE flow_name = 'team_pending';
SET ROLE regress_greptime_owner;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW team_pending');
RESET ROLE;
DROP SCHEMA team CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_greptime_owner, regress_greptime_other;
DROP TABLE admins_table, others_table;
DROP ROLE regress_greptime_owner, regress_greptime_other, regress_greptime_team;

-- HAVING names a column when the FROM list has one of that name (here
-- through the alias's column list), as PostgreSQL reads it
SELECT flowpg.create_flow('having_column', 'having_column_out',
    $$SELECT s.k AS grp, count(*) AS n, sum(s.v) AS k
        FROM (SELECT number % 3 AS a, number AS b FROM numbers_input_df_func) AS s(k, v)
       GROUP BY s.k HAVING k > 0$$, eval_interval => '1 hour') > 0 AS created;
SELECT flowpg.flush_flow('having_column') >= 0 AS backfilled;
SELECT grp, n FROM having_column_out ORDER BY grp;
SELECT flow_mismatches('having_column');

---------------------------------------------------------------------------
-- EVAL INTERVAL: ticks at multiples of it since the epoch, now() is the tick
---------------------------------------------------------------------------
CREATE TABLE requests (path TEXT, latency_ms INT, ts TIMESTAMPTZ NOT NULL);
INSERT INTO requests
SELECT '/p' || (i % 3), i, now() - i * interval '1 minute' FROM generate_series(1, 120) i;

-- now() needs a tick: refused without EVAL INTERVAL and in streaming mode
SELECT * FROM flowpg.execute($$
CREATE FLOW last_hour SINK TO last_hour_out
AS SELECT path, count(*) AS n FROM requests WHERE ts > now() - INTERVAL '1 hour' GROUP BY path$$);
SELECT * FROM flowpg.execute($$
CREATE FLOW last_hour SINK TO last_hour_out EVAL INTERVAL '2 s' WITH (mode = 'streaming')
AS SELECT path, count(*) AS n FROM requests WHERE ts > now() - INTERVAL '1 hour' GROUP BY path$$);
SELECT flowpg.create_flow('last_hour_native', 'last_hour_native_out',
    $$SELECT path, count(*) AS n FROM requests WHERE ts > current_timestamp - interval '1 hour' GROUP BY path$$);

-- the time literals PostgreSQL reads once, at creation, are refused
SELECT flowpg.create_flow('moment', 'moment_out',
    $$SELECT path, count(*) AS n FROM requests WHERE ts > 'now'::timestamptz - interval '1 hour' GROUP BY path$$,
    eval_interval => '1 minute');
SELECT * FROM flowpg.execute($$
CREATE FLOW moment SINK TO moment_out EVAL INTERVAL '1m'
AS SELECT path, count(*) AS n FROM requests WHERE ts::date = 'today' GROUP BY path$$);
-- ... but not the same words as text
SELECT flowpg.create_flow('moment', 'moment_out',
    $$SELECT path, count(*) AS n FROM requests WHERE path <> 'now' AND path <> 'nowhere' GROUP BY path$$) > 0 AS created;
SELECT flowpg.drop_flow('moment');
DROP TABLE moment_out;
-- age(ts) reads the date of now(): a tick's
SELECT flowpg.create_flow('aged', 'aged_out',
    $$SELECT path, count(*) AS n FROM requests WHERE age(ts) < interval '1 day' GROUP BY path$$);
SELECT flowpg.create_flow('aged', 'aged_out',
    $$SELECT path, count(*) AS n FROM requests WHERE age(ts) < interval '1 day' GROUP BY path$$,
    eval_interval => '1 minute') > 0 AS created;
SELECT flowpg.flush_flow('aged') >= 0 AS backfilled;
SELECT query FROM flowpg.flows WHERE flow_name = 'aged';
SELECT flow_mismatches('aged');
SELECT flowpg.drop_flow('aged');

-- a recording rule, and a flow without aggregates, on a schedule
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW last_hour SINK TO last_hour_out EVAL INTERVAL '2 s'
AS SELECT path, count(*) AS n, max(latency_ms) AS worst
FROM requests WHERE ts > now() - INTERVAL '1 hour' GROUP BY path$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW slow_recent SINK TO slow_recent_out EVAL INTERVAL '2 s'
AS SELECT path, latency_ms, ts FROM requests WHERE ts > now() - INTERVAL '10 minutes' AND latency_ms > 5$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW tick_time SINK TO tick_time_out EVAL INTERVAL '2 s'
AS SELECT date_trunc('second', now()) AS ts, count(latency_ms) AS value_count
FROM requests GROUP BY date_trunc('second', now())$$);
SELECT flow_name, mode FROM flowpg.flows WHERE flow_name IN ('last_hour', 'slow_recent', 'tick_time') ORDER BY 1;
-- (tick_time is not flushed: its sink is looked at after its ticks only)
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name IN ('last_hour', 'slow_recent') ORDER BY 1;
SELECT path, n, worst FROM last_hour_out ORDER BY path;
SELECT count(*) FROM slow_recent_out;
-- the first ticks: whole multiples of 2 seconds since the epoch
SELECT date_part('epoch', next_run_at)::numeric % 2 AS off_tick FROM flowpg.flow_stats WHERE flow_name = 'last_hour';
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN (SELECT count(*) FROM flowpg.flow_stats
				   WHERE flow_name IN ('last_hour', 'tick_time') AND runs >= 2) = 2;
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT flow_name, runs >= 2 AS ticked, date_part('epoch', next_run_at)::numeric % 2 AS off_tick
FROM flowpg.flow_stats WHERE flow_name IN ('last_hour', 'tick_time') ORDER BY 1;
-- the sink holds now() as the tick's time, not the worker transaction's
-- (a recording rule: a row per tick, every one of them on a tick)
SELECT DISTINCT date_part('epoch', ts)::numeric % 2 AS off_tick, value_count FROM tick_time_out;
-- a DELETE is in the sink after the next tick, or a flush
DELETE FROM requests WHERE latency_ms < 10;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('last_hour')$$);
SELECT path, n, worst FROM last_hour_out ORDER BY path;
SELECT flow_mismatches('last_hour'), flow_mismatches('slow_recent');
-- with EVAL INTERVAL and without now(), a flow without aggregates is
-- recomputed on the first tick after a change
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW slow_all SINK TO slow_all_out EVAL INTERVAL '1 hour'
AS SELECT path, latency_ms FROM requests WHERE latency_ms > 100$$);
SELECT mode FROM flowpg.flows WHERE flow_name = 'slow_all';
INSERT INTO requests VALUES ('/new', 500, now());
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('slow_all')$$);
SELECT count(*) FROM slow_all_out WHERE path = '/new';
SELECT flow_mismatches('slow_all');
-- refresh_flow of a range of a now() flow recomputes it all, at one instant
SELECT flowpg.refresh_flow('last_hour', now() - interval '5 minutes', now()) >= 0 AS refreshed;
SELECT flow_mismatches('last_hour');

---------------------------------------------------------------------------
-- Sinks of GreptimeDB's shape: __ts_placeholder for flows without a window
---------------------------------------------------------------------------
CREATE TABLE out_basic_wildcard (
    wildcard BIGINT,
    update_at TIMESTAMPTZ,
    __ts_placeholder TIMESTAMP(3) NOT NULL,
    PRIMARY KEY (__ts_placeholder)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW test_wildcard_basic SINK TO out_basic_wildcard AS
SELECT COUNT(*) as wildcard FROM numbers_input_df_func;
$$);
CREATE TABLE out_distinct_basic (
    dis INT,
    update_at TIMESTAMPTZ,
    __ts_placeholder TIMESTAMP(3) NOT NULL,
    PRIMARY KEY (dis, __ts_placeholder)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW test_distinct_basic SINK TO out_distinct_basic AS
SELECT DISTINCT number as dis FROM numbers_input_df_func;
$$);
INSERT INTO numbers_input_df_func VALUES (20, '2021-07-01 00:00:09'), (22, '2021-07-01 00:00:09');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_wildcard_basic')$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('test_distinct_basic')$$);
SELECT wildcard, __ts_placeholder FROM out_basic_wildcard;
SELECT dis, __ts_placeholder FROM out_distinct_basic ORDER BY dis;
SELECT flow_mismatches('test_wildcard_basic'), flow_mismatches('test_distinct_basic');

---------------------------------------------------------------------------
-- The views GreptimeDB users look at
---------------------------------------------------------------------------
SELECT flow_name, state_size >= 0 AS has_size, table_catalog = current_database() AS catalog_ok,
       comment, expire_after, source_table_ids = json_build_array('temp_sensor_data'::regclass::oid)::text AS ids_ok,
       sink_table_name, options, created_time <= updated_time AS times_ok,
       last_execution_time IS NOT NULL AS executed, source_table_names, mode
FROM flowpg.information_schema_flows WHERE flow_name = 'temp_monitoring';
SELECT array_agg(column_name::text ORDER BY ordinal_position)
FROM information_schema.columns WHERE table_schema = 'flowpg' AND table_name = 'information_schema_flow_statistics';
SELECT flow_name, (result::json->>'uptime_seconds')::bigint >= 0 AS up,
       result::json->>'last_execution_time' IS NOT NULL AS executed
FROM flowpg.execute($$SHOW FLOW STATUS LIKE 'temp%'$$);

SELECT e.flow_name, e.result
FROM (SELECT flow_name FROM flowpg.information_schema_flows
      WHERE flow_name NOT IN (SELECT flow_name FROM flows_before) ORDER BY 1) f,
     LATERAL flowpg.execute('DROP FLOW ' || quote_ident(f.flow_name)) e;
SELECT count(*) FROM flowpg.information_schema_flows
WHERE flow_name NOT IN (SELECT flow_name FROM flows_before);
