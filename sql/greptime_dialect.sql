-- GreptimeDB's dialect, part two: DataFusion's output types for flows from
-- flowpg.execute, DataFusion's Timestamp* casts, hints for GreptimeDB's
-- sketch functions, and the remaining statement forms and outputs.  Flow
-- statements are GreptimeDB's (tests/cases/standalone/common/flow,
-- tests/cases/distributed/flow-tql, the documentation), verbatim; only
-- the tables' DDL is PostgreSQL's.  Sinks are compared with the rows of
-- GreptimeDB's .result files and with the oracle (flow_mismatches).
\set VERBOSITY default

-- tables of their own (greptime.sql has an ngx_access_log too)
CREATE SCHEMA greptime_dialect;
SET search_path = greptime_dialect, public;

CREATE FUNCTION dialect_columns(sink regclass) RETURNS TABLE (name name, type text)
LANGUAGE sql AS $$
	SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
	 WHERE attrelid = sink AND attnum > 0 AND NOT attisdropped ORDER BY attnum
$$;

---------------------------------------------------------------------------
-- 1. flow_insert: (max(byte) - min(byte)) / 30.0 into a DOUBLE sink.  The
-- literal 30.0 is DataFusion's Float64: the output is double precision,
-- which the sink's column is (PostgreSQL's numeric would be refused).
-- (update_at is timestamptz here; GreptimeDB's sinks declare TIMESTAMP.)
---------------------------------------------------------------------------
CREATE TABLE bytes_log (
    byte INT,
    ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE approx_rate (
    rate DOUBLE PRECISION,
    time_window TIMESTAMP,
    update_at TIMESTAMPTZ,
    UNIQUE NULLS NOT DISTINCT (time_window)
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW find_approx_rate SINK TO approx_rate AS
SELECT
    (max(byte) - min(byte)) / 30.0 as rate,
    date_bin(INTERVAL '30 second', ts) as time_window
from
    bytes_log
GROUP BY
    time_window;
$$);
-- still a streaming flow: the cast is over the aggregates' result
SELECT mode FROM flowpg.flows WHERE flow_name = 'find_approx_rate';

INSERT INTO
    bytes_log (ts, byte)
VALUES
    ('2023-01-01 00:00:01', NULL),
    ('2023-01-01 00:00:29', 300);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;

INSERT INTO
    bytes_log (ts, byte)
VALUES
    ('2022-01-01 00:00:01', NULL),
    ('2022-01-01 00:00:29', NULL);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;

INSERT INTO
    bytes_log (ts, byte)
VALUES
    ('2025-01-01 00:00:01', 101),
    ('2025-01-01 00:00:29', 300);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;

INSERT INTO
    bytes_log (ts, byte)
VALUES
    ('2025-01-01 00:00:32', 450),
    ('2025-01-01 00:00:37', 500);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
-- GreptimeDB: NULL, 0.0, 6.633333333333334, 1.6666666666666667
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;
SELECT flow_mismatches('find_approx_rate');

-- SHOW CREATE FLOW shows the query as written; the stored query has the cast
SELECT result FROM flowpg.execute('SHOW CREATE FLOW find_approx_rate');
SELECT query FROM flowpg.flows WHERE flow_name = 'find_approx_rate';

-- the stored query plans to the same tree again (as a restore re-plans it)
SELECT query AS stored FROM flowpg.flows WHERE flow_name = 'find_approx_rate' \gset
SELECT flowpg.create_flow('find_approx_rate_again', 'approx_rate_again', :'stored') IS NOT NULL AS created;
SELECT (SELECT query FROM flowpg.flows WHERE flow_name = 'find_approx_rate')
     = (SELECT query FROM flowpg.flows WHERE flow_name = 'find_approx_rate_again') AS same_query;
SELECT * FROM dialect_columns('approx_rate_again');
SELECT flowpg.drop_flow('find_approx_rate_again');
DROP TABLE approx_rate_again;

-- the native API keeps PostgreSQL's types: the same query outputs numeric
SELECT flowpg.create_flow('native_rate', 'native_rate_sink', $$
SELECT
    (max(byte) - min(byte)) / 30.0 as rate,
    date_bin(INTERVAL '30 second', ts, '1970-01-01') as time_window
from
    bytes_log
GROUP BY
    time_window$$) IS NOT NULL AS created;
SELECT * FROM dialect_columns('native_rate_sink');
SELECT flowpg.drop_flow('native_rate');
DROP TABLE native_rate_sink;

SELECT flow_name, result FROM flowpg.execute('DROP FLOW find_approx_rate');
DROP TABLE approx_rate;

-- flow_ins_default: the source's ts from its default (now)
CREATE TABLE approx_rate (
    rate DOUBLE PRECISION,
    time_window TIMESTAMP,
    update_at TIMESTAMPTZ,
    UNIQUE NULLS NOT DISTINCT (time_window)
);
TRUNCATE bytes_log;
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW find_approx_rate SINK TO approx_rate AS
SELECT
    (max(byte) - min(byte)) / 30.0 as rate,
    date_bin(INTERVAL '30 second', ts) as time_window
from
    bytes_log
GROUP BY
    time_window;
$$);
INSERT INTO
    bytes_log (byte)
VALUES
    (NULL),
    (300);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
-- GreptimeDB: 0.0
SELECT
    rate
FROM
    approx_rate;
SELECT flow_mismatches('find_approx_rate');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW find_approx_rate');
DROP TABLE approx_rate;

---------------------------------------------------------------------------
-- 2. flow_aft_alter: the same rate, with count(byte) as sample_cnt into an
-- INT64 column added to the sink
---------------------------------------------------------------------------
ALTER TABLE bytes_log ADD COLUMN stat INT DEFAULT 200;
TRUNCATE bytes_log;
CREATE TABLE approx_rate (
    rate DOUBLE PRECISION,
    sample_cnt BIGINT DEFAULT 0,
    time_window TIMESTAMP,
    update_at TIMESTAMPTZ,
    UNIQUE NULLS NOT DISTINCT (time_window)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW find_approx_rate SINK TO approx_rate AS
SELECT
    (max(byte) - min(byte)) / 30.0 as rate,
    count(byte) as sample_cnt,
    date_bin(INTERVAL '30 second', ts) as time_window
from
    bytes_log
GROUP BY
    time_window;
$$);
INSERT INTO bytes_log (byte, stat, ts) VALUES
    (0,  200, '2023-01-01 00:00:01'),
    (300,200, '2023-01-01 00:00:29');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
-- GreptimeDB: 10.0, 2, 2023-01-01T00:00:00
SELECT rate, sample_cnt, time_window FROM approx_rate;
SELECT flow_mismatches('find_approx_rate');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW find_approx_rate');
DROP TABLE approx_rate;
DROP TABLE bytes_log;

---------------------------------------------------------------------------
-- 3. sum over int8 is Int64, avg over integers Float64, count Int64, a
-- decimal literal Float64 -- in the outputs (select list, GROUP BY,
-- HAVING); a literal or aggregate with a cast of its own keeps it
---------------------------------------------------------------------------
CREATE TABLE api_hits (host TEXT, hits BIGINT, latency INT, ts TIMESTAMP NOT NULL);
INSERT INTO api_hits VALUES
    ('a', 9000000000, 10, '2024-01-01 00:00:10'),
    ('a', 9000000000, 15, '2024-01-01 00:00:50'),
    ('b', 1, 20, '2024-01-01 00:00:20'),
    ('b', 2, NULL, '2024-01-01 00:01:20');
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW hits_per_minute SINK TO hits_stats AS
SELECT
    host,
    sum(hits) AS total_hits,
    avg(latency) AS avg_latency,
    count(latency),
    sum(hits) / count(*) AS hits_per_row,
    avg(latency) * 1.5 AS slow_latency,
    avg(latency)::numeric(6,2) AS avg_latency_2,
    1.5::numeric AS weight,
    date_bin(INTERVAL '1 minute', ts) AS time_window
FROM api_hits
WHERE latency > 0.5 OR latency IS NULL
GROUP BY host, time_window
HAVING total_hits > 0.5;
$$);
SELECT mode FROM flowpg.flows WHERE flow_name = 'hits_per_minute';
SELECT * FROM dialect_columns('hits_stats');
SELECT flowpg.flush_flow('hits_per_minute') >= 0 AS flushed;
SELECT host, total_hits, avg_latency, "count(api_hits.latency)", hits_per_row, slow_latency,
       avg_latency_2, weight, time_window
  FROM hits_stats ORDER BY host, time_window;
-- streaming: new rows combine with the state, exactly
INSERT INTO api_hits VALUES ('a', 1, 16, '2024-01-01 00:00:55'), ('b', 5, 7, '2024-01-01 00:01:30');
DELETE FROM api_hits WHERE host = 'b' AND hits = 1;
SELECT flowpg.flush_flow('hits_per_minute') >= 0 AS flushed;
SELECT host, total_hits, avg_latency, hits_per_row, time_window FROM hits_stats ORDER BY host, time_window;
SELECT flow_mismatches('hits_per_minute');
SELECT query FROM flowpg.flows WHERE flow_name = 'hits_per_minute';

-- a sum beyond Int64 fails the flow's run, as DataFusion's overflows; it is
-- not stored rounded (flush_flow reports the overflow the worker met, or
-- meets it itself when it runs the round first)
INSERT INTO api_hits VALUES ('a', 5000000000000000000, 1, '2024-01-01 00:00:30'),
                            ('a', 5000000000000000000, 1, '2024-01-01 00:00:31');
SELECT code IN ('55000', '22003') AS failed,
	   concat_ws(' ', message, detail) LIKE '%bigint out of range%' AS overflow
  FROM try($$SELECT flowpg.flush_flow('hits_per_minute')$$);
SELECT total_hits FROM hits_stats WHERE host = 'a' ORDER BY time_window;
DELETE FROM api_hits WHERE hits = 5000000000000000000;
SELECT flowpg.flush_flow('hits_per_minute') >= 0 AS flushed;
SELECT flow_mismatches('hits_per_minute');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW hits_per_minute');
DROP TABLE hits_stats;
-- round(x, n) and trunc(x, n) are PostgreSQL's for numeric only: inside
-- them nothing is rewritten (exact decimal rounding, a numeric output)
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW hits_rounded SINK TO hits_rounded_stats AS
SELECT host, round(avg(latency), 2) AS avg_latency, trunc(sum(hits) * 100.0 / count(*), 1) AS pct,
    avg(latency) AS avg_latency_f
FROM api_hits GROUP BY host;
$$);
SELECT * FROM dialect_columns('hits_rounded_stats');
SELECT flowpg.flush_flow('hits_rounded') >= 0 AS flushed;
SELECT host, avg_latency, pct, avg_latency_f FROM hits_rounded_stats ORDER BY host;
SELECT flow_mismatches('hits_rounded');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW hits_rounded');
DROP TABLE hits_rounded_stats;
-- round(x) too: float8's rounds half to even, DataFusion's (and numeric's)
-- half away from zero; 2.5 rounds to 3
CREATE TABLE halves (k int, i int);
INSERT INTO halves VALUES (1, 2), (1, 3);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW halves_rounded SINK TO halves_rounded_out AS
SELECT k, round(avg(i)) AS r, round(sum(i) / 2.0) AS r2 FROM halves GROUP BY k;
$$);
SELECT flowpg.flush_flow('halves_rounded') >= 0 AS flushed;
SELECT k, r, r2 FROM halves_rounded_out;
SELECT flow_mismatches('halves_rounded');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW halves_rounded');
-- a batching flow's flush with nothing to do works in a read-only
-- transaction (it records nothing)
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW halves_hourly SINK TO halves_hourly_out EVAL INTERVAL '1h' AS
SELECT k, count(*) AS n FROM halves GROUP BY k;
$$);
SELECT flowpg.flush_flow('halves_hourly') >= 0 AS flushed;
BEGIN READ ONLY;
SELECT flowpg.flush_flow('halves_hourly') AS rows_written;
COMMIT;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW halves_hourly');
DROP TABLE halves_rounded_out, halves_hourly_out, halves;
DROP TABLE api_hits;

---------------------------------------------------------------------------
-- 4. DataFusion's timestamp casts
---------------------------------------------------------------------------
-- flow_more_usecase: a TimestampNanosecond origin (exact in microseconds)
CREATE TABLE api_requests (
  "timestamp" TIMESTAMP NOT NULL,
  request_id TEXT NOT NULL,
  upstream_id TEXT NOT NULL,
  application_id TEXT NULL,
  url TEXT NOT NULL,
  method TEXT NOT NULL,
  status_code INTEGER NOT NULL,
  request_headers JSON NULL,
  request_body TEXT NULL,
  response_headers JSON NULL,
  response_body TEXT NULL,
  latency_ms INTEGER NOT NULL,
  client_ip TEXT NULL,
  user_agent TEXT NULL
);
CREATE TABLE api_request_volume_upstream_stats (
  upstream_id TEXT NOT NULL,
  time_window TIMESTAMP NOT NULL,
  request_count BIGINT NOT NULL,
  update_at TIMESTAMPTZ,
  UNIQUE NULLS NOT DISTINCT (upstream_id, time_window)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW api_request_volume_by_upstream
SINK TO api_request_volume_upstream_stats
AS
SELECT
    upstream_id,
    date_bin(INTERVAL '1 hour', timestamp, '2024-01-01 00:00:00'::TimestampNanosecond) AS time_window,
    COUNT(*) AS request_count
FROM api_requests
GROUP BY upstream_id, time_window;
$$);
INSERT INTO api_requests (timestamp, request_id, upstream_id, url, method, status_code, latency_ms)
VALUES ('2024-01-01 10:20:00', 'r1', 'u1', '/', 'GET', 200, 5),
       ('2024-01-01 10:59:59.999999', 'r2', 'u1', '/', 'GET', 200, 5),
       ('2024-01-01 11:00:00', 'r3', 'u1', '/', 'GET', 200, 5);
SELECT flowpg.flush_flow('api_request_volume_by_upstream') >= 0 AS flushed;
SELECT upstream_id, time_window, request_count FROM api_request_volume_upstream_stats ORDER BY 2;
SELECT flow_mismatches('api_request_volume_by_upstream');
SELECT window_expression FROM flowpg.flows WHERE flow_name = 'api_request_volume_by_upstream';
SELECT flow_name, result FROM flowpg.execute('DROP FLOW api_request_volume_by_upstream');

-- a nanosecond PostgreSQL cannot hold: refused, nothing created
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW ns_flow SINK TO ns_sink AS
SELECT upstream_id, date_bin(INTERVAL ''1 hour'', timestamp, ''2024-01-01 00:00:00.000000001''::TimestampNanosecond) AS time_window,
    COUNT(*) AS request_count FROM api_requests GROUP BY upstream_id, time_window')$$);
SELECT count(*) AS left_behind FROM flowpg.flows WHERE flow_name = 'ns_flow';
SELECT to_regclass('ns_sink') AS no_sink;
-- ... under TimestampSecond and TimestampMillisecond too, whose truncation
-- would come after PostgreSQL rounded the literal to the microsecond
SELECT code, message FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW ns_flow SINK TO ns_sink AS
SELECT upstream_id, date_bin(INTERVAL ''1 hour'', timestamp, ''2024-01-01 00:00:00.9999996''::TimestampSecond) AS time_window,
    COUNT(*) AS request_count FROM api_requests GROUP BY upstream_id, time_window')$$);
SELECT code, message FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW ns_flow SINK TO ns_sink AS
SELECT upstream_id, ''2024-01-01 00:00:00.9999996''::TimestampMillisecond AS t, COUNT(*) AS request_count
  FROM api_requests GROUP BY upstream_id')$$);
SELECT count(*) AS left_behind FROM flowpg.flows WHERE flow_name = 'ns_flow';
DROP TABLE api_request_volume_upstream_stats;
DROP TABLE api_requests;

-- flow_rebuild: `time`::TimestampSecond truncates to the second, as
-- DataFusion's cast (PostgreSQL's timestamp(0) alone would round 59.6 up);
-- the sink is flowpg's here (GreptimeDB's case matches its sink by position)
CREATE TABLE api_log (
  "time" TIMESTAMP(3) NOT NULL,
  "key" TEXT NULL,
  status_code SMALLINT NULL,
  method TEXT NULL,
  path TEXT NULL,
  raw_query TEXT NULL,
  user_agent TEXT NULL,
  client_ip TEXT NULL,
  duration INT NULL,
  "count" INT NULL
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW IF NOT EXISTS api_stats_flow
SINK TO api_stats AS
SELECT date_trunc('minute', `time`::TimestampSecond) AS `time1`, `key`, count(*), sum(`count`)
FROM api_log
GROUP BY `time1`, `key`;
$$);
SELECT * FROM dialect_columns('api_stats');
INSERT INTO api_log ("time", "key", status_code, method, path, "count")
VALUES ('1970-01-01 00:00:00', '1', 0, 'GET', '/lightning/v1/query', 1),
       ('1970-01-01 00:00:59.6', '1', 0, 'GET', '/lightning/v1/query', 1),
       ('1970-01-01 00:00:00', '2', 0, 'GET', '/lightning/v1/query', 1);
SELECT flowpg.flush_flow('api_stats_flow') >= 0 AS flushed;
-- GreptimeDB (one row per key at the epoch): 1 | 1 | 1 and 2 | 1 | 1; here key 1 has two rows in its minute
SELECT time1, key, "count(*)", "sum(api_log.count)" FROM api_stats ORDER BY key;
SELECT flow_mismatches('api_stats_flow');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW api_stats_flow');
DROP TABLE api_stats;
-- TimestampMillisecond, TimestampMicrosecond
SELECT flowpg.create_flow('ms_flow', 'ms_sink', $$SELECT "key", "time"::TimestampMillisecond AS t_ms,
    "time"::TimestampMicrosecond AS t_us, count(*) FROM api_log GROUP BY 1, 2, 3$$) IS NOT NULL AS created;
SELECT * FROM dialect_columns('ms_sink');
SELECT flowpg.flush_flow('ms_flow') >= 0 AS flushed;
SELECT flow_mismatches('ms_flow');
SELECT flowpg.drop_flow('ms_flow');
DROP TABLE ms_sink;
DROP TABLE api_log;

---------------------------------------------------------------------------
-- 5. GreptimeDB's sketch functions are flowpg's (greptime_sketches has
-- them at work); a state of another type is PostgreSQL's error.  Functions
-- flowpg does not have: PostgreSQL's error, with a hint naming what to use
-- (found on the parse tree)
---------------------------------------------------------------------------
CREATE TABLE access_log (user_id TEXT, latency DOUBLE PRECISION, ts TIMESTAMP NOT NULL);
SELECT flow_name, result FROM flowpg.execute('CREATE FLOW uv SINK TO uv_sink AS
SELECT date_bin(INTERVAL ''1 minute'', ts) AS time_window, hll(user_id) AS state
FROM access_log GROUP BY time_window');
SELECT format_type(atttypid, atttypmod) AS state_type FROM pg_attribute
 WHERE attrelid = 'uv_sink'::regclass AND attname = 'state';
SELECT flowpg.drop_flow('uv');
DROP TABLE uv_sink;
CREATE TABLE uv_states (state TEXT, ts TIMESTAMP);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW uv SINK TO uv_sink AS
SELECT hll_count(hll_merge(state)) AS uv FROM uv_states')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW p99 SINK TO p99_sink AS
SELECT uddsketch_merge(128, 0.01, state) AS state FROM uv_states')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW p99 SINK TO p99_sink AS
SELECT approx_percentile_cont(latency, 0.99) AS p99 FROM access_log')$$);
-- the native API too; another error of the query keeps its own hint
SELECT * FROM try($$SELECT flowpg.create_flow('p99', 'p99_sink', 'SELECT approx_percentile_cont(latency, 0.99) AS p99 FROM access_log')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('p99', 'p99_sink', 'SELECT no_such_function(latency) AS f, hll(user_id) AS s FROM access_log')$$);
SELECT count(*) AS left_behind FROM flowpg.flows WHERE flow_name IN ('uv', 'p99');
DROP TABLE uv_states;
DROP TABLE access_log;

---------------------------------------------------------------------------
-- 6. Statement forms
---------------------------------------------------------------------------
CREATE TABLE numbers_input_show (number INT, ts TIMESTAMP NOT NULL DEFAULT '2024-01-01');

-- SINK TO 'name': a name in single quotes, as GreptimeDB's parser takes it
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW IF NOT EXISTS filter_numbers_quoted
SINK TO 'test_tsid_output'
AS SELECT number FROM numbers_input_show WHERE number > 10;
$$);
SELECT sink_table FROM flowpg.flows WHERE flow_name = 'filter_numbers_quoted';

-- the docs' SHOW FLOWS LIKE "filter%" (a double-quoted pattern)
SELECT flow_name FROM flowpg.execute($$show flows like "filter%";$$);
SELECT flow_name FROM flowpg.execute($$SHOW FLOWS LIKE "no""such%"$$);
SELECT flow_name, result FROM flowpg.execute('DROP FLOW filter_numbers_quoted');
DROP TABLE test_tsid_output;

-- tsid_on_phy: a TQL flow (with SINK TO 'name') using histogram_quantile
-- over a table this suite does not have (greptime_tql has TQL flows)
SELECT * FROM try($$SELECT * FROM flowpg.execute($q$
CREATE FLOW IF NOT EXISTS test_tsid
SINK TO 'test_tsid_output'
EVAL INTERVAL '3600 s'
AS
TQL EVAL (
  timestamp '2026-01-23 03:10:00+00' + (now() - now()),
  timestamp '2026-01-23 03:50:00+00' + (now() - now()),
  '1m'
)
histogram_quantile(
  0.50,
  sum by (le, tag4, tag5) (
    avg_over_time(test_tsid[30m])
  )
);
$q$)$$);
-- flow_tql_flownode_addrs (a unit PostgreSQL's scanner cannot read: 5s):
-- the TQL text is not scanned as SQL; its table does not exist here, and
-- the second form lacks EVAL INTERVAL
SELECT * FROM try($$SELECT * FROM flowpg.execute($q$
CREATE FLOW calc_reqs SINK TO cnt_reqs EVAL INTERVAL '1m' AS
TQL EVAL (now() - '1m'::interval, now(), '5s') count_values("status_code", http_requests);
$q$)$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute($q$
CREATE FLOW calc_reqs SINK TO cnt_reqs AS TQL EVAL (0, 15, 5s) count_values("status_code", http_requests);
$q$)$$);
-- an output named tql is no TQL flow: the query's own error is said
SELECT code, message FROM try($$SELECT * FROM flowpg.execute($q$
CREATE FLOW calc_reqs SINK TO cnt_reqs AS SELECT k AS tql, 'abc FROM t
$q$)$$);
SELECT count(*) AS left_behind FROM flowpg.flows WHERE flow_name IN ('test_tsid', 'calc_reqs');

-- show_create_flow: an unknown option is that, whatever its value
SELECT * FROM try($$SELECT * FROM flowpg.execute($q$
CREATE FLOW invalid_flow_option_show
SINK TO out_num_cnt_show
WITH (access_key_id = [true])
AS SELECT number AS n1 FROM numbers_input_show where number > 10;
$q$)$$);
-- a known option still wants a value
SELECT * FROM try($$SELECT * FROM flowpg.execute($q$
CREATE FLOW invalid_flow_option_show SINK TO out_num_cnt_show
WITH (defer_on_missing_source = [true]) AS SELECT number AS n1 FROM numbers_input_show
$q$)$$);
SELECT to_regclass('out_num_cnt_show') AS no_sink;

-- options as GreptimeDB prints them: compact JSON, matched with LIKE
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW filter_numbers_show SINK TO out_num_cnt_show EVAL INTERVAL '1m' AS
SELECT number FROM numbers_input_show WHERE number > 10;
$$);
SELECT options, options LIKE '%"flow_type":"batching"%' AS matches
  FROM flowpg.information_schema_flows WHERE flow_name = 'filter_numbers_show';

-- a pending flow's definition in an active flow's layout
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW pending_show
SINK TO out_pending_show
WITH (defer_on_missing_source = true)
AS SELECT number AS n1 FROM numbers_input_later where number > 10;
$$);
SELECT result FROM flowpg.execute('SHOW CREATE FLOW pending_show');
SELECT options FROM flowpg.information_schema_flows WHERE flow_name = 'pending_show';
-- once it starts, the same text
SELECT result AS pending_definition FROM flowpg.execute('SHOW CREATE FLOW pending_show') \gset
CREATE TABLE numbers_input_later (number INT, ts TIMESTAMP);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('pending_show')$$);
SELECT result = :'pending_definition' AS same_definition FROM flowpg.execute('SHOW CREATE FLOW pending_show');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW pending_show');
DROP TABLE out_pending_show;
DROP TABLE numbers_input_later;
-- a sink in another schema, and every clause
CREATE SCHEMA dialect_other;
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW pending_every SINK TO dialect_other.pending_sink EXPIRE AFTER '2h' EVAL INTERVAL '30s'
COMMENT 'waits' WITH (defer_on_missing_source = 'true', mode = 'batching')
AS SELECT count(*) AS n FROM not_yet;
$$);
SELECT result FROM flowpg.execute('SHOW CREATE FLOW pending_every');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW pending_every');
DROP SCHEMA dialect_other;

-- flow_view: last_execution_time is set by CREATE (its backfill), CREATE OR
-- REPLACE and ADMIN FLUSH_FLOW, with or without new rows
CREATE TABLE ngx_access_log ( ip_address TEXT, http_method TEXT, request TEXT, status_code SMALLINT, body_bytes_sent INT, user_agent TEXT, response_size INT, ts TIMESTAMP);
CREATE TABLE user_agent_statistics ( user_agent TEXT, total_count BIGINT, update_at TIMESTAMPTZ, __ts_placeholder TIMESTAMP, PRIMARY KEY (user_agent));
INSERT INTO ngx_access_log VALUES ('192.168.1.1', 'GET', '/index.html', 200, 512, 'Mozilla/5.0', 1024, '2023-10-01T10:00:00Z'), ('192.168.1.2', 'POST', '/submit', 201, 256, 'curl/7.68.0', 512, '2023-10-01T10:01:00Z'), ('192.168.1.1', 'GET', '/about.html', 200, 128, 'Mozilla/5.0', 256, '2023-10-01T10:02:00Z'), ('192.168.1.3', 'GET', '/contact', 404, 64, 'curl/7.68.0', 128, '2023-10-01T10:03:00Z');
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW user_agent_flow SINK TO user_agent_statistics EVAL INTERVAL '1m' AS SELECT user_agent, COUNT(user_agent) AS total_count FROM ngx_access_log GROUP BY user_agent;$$);
SELECT created_time <= updated_time, created_time IS NOT NULL, source_table_names FROM flowpg.information_schema_flows WHERE flow_name = 'user_agent_flow';
SELECT flow_name, result FROM flowpg.execute($$CREATE OR REPLACE FLOW user_agent_flow SINK TO user_agent_statistics EVAL INTERVAL '1m' AS SELECT user_agent, COUNT(user_agent)+123 AS total_count FROM ngx_access_log GROUP BY user_agent;$$);
SELECT created_time < updated_time, created_time IS NOT NULL, updated_time IS NOT NULL, source_table_names FROM flowpg.information_schema_flows WHERE flow_name = 'user_agent_flow';
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('user_agent_flow')$$);
SELECT created_time < last_execution_time, created_time IS NOT NULL, last_execution_time IS NOT NULL, source_table_names FROM flowpg.information_schema_flows WHERE flow_name = 'user_agent_flow';
SELECT user_agent, total_count FROM user_agent_statistics ORDER BY 1;
SELECT flow_mismatches('user_agent_flow');
-- a flush with nothing new is an execution too (not a run: runs stays)
SELECT last_execution_time AS before, runs AS runs_before
  FROM flowpg.information_schema_flows JOIN flowpg.flow_stats USING (flow_name)
 WHERE flow_name = 'user_agent_flow' \gset
SELECT pg_sleep(0.01);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('user_agent_flow')$$);
SELECT i.last_execution_time > :'before' AS advanced, s.runs = :runs_before AS runs_unchanged,
       f.last_execution_time = i.last_execution_time AS statistics_agree
  FROM flowpg.information_schema_flows i
  JOIN flowpg.flow_stats s USING (flow_name)
  JOIN flowpg.information_schema_flow_statistics f USING (flow_name)
 WHERE flow_name = 'user_agent_flow';
SELECT flow_name, result FROM flowpg.execute('DROP FLOW user_agent_flow');
SELECT count(*) AS stats_left FROM flowpg.flow_run WHERE flow_id NOT IN (SELECT flow_id FROM flowpg.flow);
DROP TABLE user_agent_statistics;
DROP TABLE ngx_access_log;

SELECT flow_name, result FROM flowpg.execute('DROP FLOW filter_numbers_show');
DROP TABLE out_num_cnt_show;
DROP TABLE numbers_input_show;
DROP FUNCTION dialect_columns(regclass);
RESET search_path;
DROP SCHEMA greptime_dialect;
