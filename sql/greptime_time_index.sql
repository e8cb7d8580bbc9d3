-- Sinks whose time index is GreptimeDB's TIMESTAMP (milliseconds): a
-- timestamp(3) key column (issue 40, item 1).  A window written into a
-- timestamp(p) key is accepted when every window value is a multiple of
-- 10^(6-p) microseconds, so the column's rounding changes no key; casts
-- that could merge keys stay refused.  GreptimeDB's cases (tests/cases/
-- standalone/common/flow: flow_basic, flow_more_usecase, flow_user_guide)
-- run their flow statements verbatim; tables are translated: TIMESTAMP ->
-- timestamp(3), TIMESTAMP(9) -> timestamp(6), TIME INDEX -> NOT NULL, a
-- sink's PRIMARY KEY + TIME INDEX -> a unique key.
\set VERBOSITY default
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE TEMP TABLE flows_before AS SELECT flow_name FROM flowpg.flows;
CREATE SCHEMA greptime_time_index;
SET search_path = greptime_time_index, public;

---------------------------------------------------------------------------
-- flow_basic: find_approx_rate, date_bin(INTERVAL '30 second', ts) into a
-- TIMESTAMP time index; the first rate comes from one non-NULL byte.
---------------------------------------------------------------------------
CREATE TABLE bytes_log (
    byte INT,
    ts timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE approx_rate (
    rate DOUBLE PRECISION,
    time_window timestamp(3) NOT NULL PRIMARY KEY,
    update_at timestamp(3)
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
INSERT INTO bytes_log VALUES
    (NULL, '2023-01-01 00:00:01'),
    (300, '2023-01-01 00:00:29');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
-- GreptimeDB: 0.0 | 2023-01-01T00:00:00
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;
INSERT INTO bytes_log VALUES
    (NULL, '2022-01-01 00:00:01'),
    (NULL, '2022-01-01 00:00:29');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
-- GreptimeDB: (NULL) | 2022-01-01T00:00:00, then 0.0 | 2023-01-01T00:00:00
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;
SELECT flow_mismatches('find_approx_rate') AS mismatches,
       (SELECT count(*) FROM approx_rate WHERE update_at IS NULL) AS without_update_at;

---------------------------------------------------------------------------
-- flow_basic: calc_android_log_abnormal, TIMESTAMP(9) (nanoseconds) time
-- index: timestamp(6), which keeps every PostgreSQL value.
---------------------------------------------------------------------------
CREATE TABLE android_log (
    log TEXT,
    ts timestamp(6) NOT NULL
);
CREATE TABLE android_log_abnormal (
    crash BIGINT NULL,
    fatal BIGINT NULL,
    backtrace BIGINT NULL,
    anr BIGINT NULL,
    time_window timestamp(6) NOT NULL PRIMARY KEY,
    update_at timestamp(3)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW calc_android_log_abnormal
SINK TO android_log_abnormal
AS
SELECT
    sum(case when `log` LIKE '%am_crash%' then 1 else 0 end) as crash,
    sum(case when `log` LIKE '%FATAL EXCEPTION%' then 1 else 0 end) as fatal,
    sum(case when `log` LIKE '%backtrace%' then 1 else 0 end) as backtrace,
    sum(case when `log` LIKE '%am_anr%' then 1 else 0 end) as anr,
    date_bin(INTERVAL '5 minutes', ts) as time_window,
FROM android_log
GROUP BY
    time_window;
$$);
INSERT INTO android_log VALUES
    ('am_crash', '2021-07-01 00:01:01.000'),
    ('asas.backtrace.ssss', '2021-07-01 00:01:01.000');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_android_log_abnormal')$$);
-- GreptimeDB: 1 | 0 | 1 | 0
SELECT crash, fatal, backtrace, anr FROM android_log_abnormal;
INSERT INTO android_log VALUES
    ('FATAL EXCEPTION', '2021-07-01 00:01:01.000'),
    ('mamam_anraaaa', '2021-07-01 00:01:01.000');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_android_log_abnormal')$$);
-- GreptimeDB: 1 | 1 | 1 | 1
SELECT crash, fatal, backtrace, anr FROM android_log_abnormal;
SELECT flow_mismatches('calc_android_log_abnormal') AS mismatches;

---------------------------------------------------------------------------
-- flow_more_usecase: an hourly date_bin with a TimestampNanosecond origin
-- into a TIMESTAMP time index (GreptimeDB's test inserts no rows; these
-- are ours).
---------------------------------------------------------------------------
CREATE TABLE api_requests (
  "timestamp" timestamp(3) NOT NULL,
  request_id TEXT NOT NULL,
  upstream_id TEXT NOT NULL,
  latency_ms INTEGER NOT NULL
);
CREATE TABLE api_request_volume_upstream_stats (
  upstream_id TEXT NOT NULL,
  time_window timestamp(3) NOT NULL,
  request_count BIGINT NOT NULL,
  UNIQUE (upstream_id, time_window)
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
INSERT INTO api_requests VALUES
    ('2024-03-01 10:15:00.125', 'r1', 'u1', 10),
    ('2024-03-01 10:59:59.999', 'r2', 'u1', 12),
    ('2024-03-01 11:00:00.000', 'r3', 'u1', 9),
    ('2024-03-01 10:30:00.500', 'r4', 'u2', 30);
SELECT flowpg.flush_flow('api_request_volume_by_upstream') >= 0 AS flushed;
SELECT * FROM api_request_volume_upstream_stats ORDER BY upstream_id, time_window;
SELECT flow_mismatches('api_request_volume_by_upstream') AS mismatches;

---------------------------------------------------------------------------
-- flow_user_guide: ngx_aggregation, a 1-minute date_bin into a TIMESTAMP
-- time index with PRIMARY KEY (status).
---------------------------------------------------------------------------
CREATE TABLE ngx_access_log (
    client TEXT NULL,
    ua_platform TEXT NULL,
    referer TEXT NULL,
    method TEXT NULL,
    endpoint TEXT NULL,
    trace_id TEXT NULL,
    protocol TEXT NULL,
    status SMALLINT NULL,
    size DOUBLE PRECISION NULL,
    agent TEXT NULL,
    access_time timestamp(3) NOT NULL
);
CREATE TABLE ngx_statistics (
    status SMALLINT NULL,
    total_logs BIGINT NULL,
    min_size DOUBLE PRECISION NULL,
    max_size DOUBLE PRECISION NULL,
    avg_size DOUBLE PRECISION NULL,
    high_size_count BIGINT NULL,
    time_window timestamp(3) NOT NULL,
    update_at timestamp(3) NULL,
    UNIQUE NULLS NOT DISTINCT (status, time_window)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW ngx_aggregation SINK TO ngx_statistics COMMENT 'Aggregate statistics for ngx_access_log' AS
SELECT
    status,
    count(client) AS total_logs,
    min(size) as min_size,
    max(size) as max_size,
    avg(size) as avg_size,
    sum(
        case
            when `size` > 550 then 1
            else 0
        end
    ) as high_size_count,
    date_bin(INTERVAL '1 minutes', access_time) as time_window,
FROM
    ngx_access_log
GROUP BY
    status,
    time_window;
$$);
INSERT INTO ngx_access_log VALUES
    ('android', 'Android', 'referer', 'GET', '/api/v1', 'trace_id', 'HTTP', 200, 1000, 'agent', '2021-07-01 00:00:01.000'),
    ('ios', 'iOS', 'referer', 'GET', '/api/v1', 'trace_id', 'HTTP', 200, 500, 'agent', '2021-07-01 00:00:30.500'),
    ('android', 'Android', 'referer', 'GET', '/api/v1', 'trace_id', 'HTTP', 200, 600, 'agent', '2021-07-01 00:01:01.000'),
    ('ios', 'iOS', 'referer', 'GET', '/api/v1', 'trace_id', 'HTTP', 404, 700, 'agent', '2021-07-01 00:01:01.500');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('ngx_aggregation')$$);
-- GreptimeDB: 200 | 2 | 500.0 | 1000.0 | 750.0 | 1 | 2021-07-01T00:00:00
--             200 | 1 | 600.0 | 600.0 | 600.0 | 1 | 2021-07-01T00:01:00
--             404 | 1 | 700.0 | 700.0 | 700.0 | 1 | 2021-07-01T00:01:00
SELECT status, total_logs, min_size, max_size, avg_size, high_size_count, time_window
  FROM ngx_statistics ORDER BY status, time_window;
SELECT flow_mismatches('ngx_aggregation') AS mismatches;

---------------------------------------------------------------------------
-- The keys rule, window by window, in both engines.  Accepted: every
-- window value is a multiple of the column's unit.
---------------------------------------------------------------------------
CREATE TABLE readings (ts timestamp(6) NOT NULL, tz_ts timestamptz NOT NULL, v int);
INSERT INTO readings
SELECT '2024-05-01 00:00:00'::timestamp + i * interval '1.000789 s',
       '2024-05-01 00:00:00+00'::timestamptz + i * interval '1.000789 s', i
  FROM generate_series(0, 400) i;
-- date_trunc to the millisecond: 3 digits, so timestamp(3)
CREATE TABLE k_ms (w timestamp(3) NOT NULL PRIMARY KEY, n bigint);
SELECT flowpg.create_flow('k_ms', 'k_ms', 'SELECT date_trunc(''milliseconds'', ts) AS w, count(*) AS n FROM readings GROUP BY 1') > 0 AS created;
-- date_trunc to the second, a constant interval added: none, so timestamp(0)
CREATE TABLE k_sec (w timestamp(0) NOT NULL PRIMARY KEY, n bigint);
SELECT flowpg.create_flow('k_sec', 'k_sec', 'SELECT date_trunc(''second'', ts) + interval ''1 day 30 seconds'' AS w, count(*) AS n FROM readings GROUP BY 1', eval_interval => '1 minute') > 0 AS created;
-- a date_bin whose stride and origin are whole milliseconds
CREATE TABLE k_bin (w timestamp(3) NOT NULL PRIMARY KEY, n bigint);
SELECT flowpg.create_flow('k_bin', 'k_bin', 'SELECT date_bin(''2.5 s'', ts, ''2024-01-01 00:00:00.250'') AS w, count(*) AS n FROM readings GROUP BY 1') > 0 AS created;
-- timestamptz truncated in a zone, then read as local time there
CREATE TABLE k_zone (w timestamp(0) NOT NULL PRIMARY KEY, n bigint);
SELECT flowpg.create_flow('k_zone', 'k_zone', 'SELECT date_trunc(''minute'', tz_ts, ''Asia/Kathmandu'') AT TIME ZONE ''Asia/Kathmandu'' AS w, count(*) AS n FROM readings GROUP BY 1') > 0 AS created;
-- timestamp(6) changes no value of PostgreSQL's: any key
CREATE TABLE k_us (ts timestamp(6) NOT NULL PRIMARY KEY, n bigint);
SELECT flowpg.create_flow('k_us', 'k_us', 'SELECT ts, count(*) AS n FROM readings GROUP BY 1') > 0 AS created;
INSERT INTO readings VALUES ('2024-05-01 01:00:00.999999', '2024-05-01 01:00:00.999999+00', -1);
SELECT f, flowpg.flush_flow(f) >= 0 AS flushed, flow_mismatches(f) AS mismatches
  FROM unnest(ARRAY['k_ms', 'k_sec', 'k_bin', 'k_zone', 'k_us']) f;
SELECT (SELECT count(*) FROM k_ms) AS ms_rows, (SELECT count(*) FROM k_sec) AS sec_rows,
       (SELECT count(*) FROM k_bin) AS bin_rows, (SELECT count(*) FROM k_zone) AS zone_rows;

-- Refused: keys the column's rounding could merge
CREATE TABLE r_raw (ts timestamp(3) NOT NULL PRIMARY KEY, n bigint);
SELECT * FROM try($$SELECT flowpg.create_flow('r_raw', 'r_raw', 'SELECT ts, count(*) AS n FROM readings GROUP BY 1')$$);
CREATE TABLE r_bin (w timestamp(3) NOT NULL PRIMARY KEY, n bigint);
SELECT * FROM try($$SELECT flowpg.create_flow('r_bin', 'r_bin', 'SELECT date_bin(''1.5 ms'', ts, ''2000-01-01'') AS w, count(*) AS n FROM readings GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('r_bin', 'r_bin', 'SELECT date_bin(''1 s'', ts, ''2000-01-01 00:00:00.0005'') AS w, count(*) AS n FROM readings GROUP BY 1')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('r_bin', 'r_bin', 'SELECT date_trunc(''second'', ts) + interval ''0.1 ms'' AS w, count(*) AS n FROM readings GROUP BY 1')$$);
CREATE TABLE r_trunc (w timestamp(0) NOT NULL PRIMARY KEY, n bigint);
SELECT * FROM try($$SELECT flowpg.create_flow('r_trunc', 'r_trunc', 'SELECT date_trunc(''milliseconds'', ts) AS w, count(*) AS n FROM readings GROUP BY 1')$$);
-- nothing was left behind by the refusals
SELECT count(*) AS refused_flows FROM flowpg.flows WHERE flow_name IN ('r_raw', 'r_bin', 'r_trunc');

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows
 WHERE flow_name NOT IN (SELECT flow_name FROM flows_before) ORDER BY flow_name;
DROP SCHEMA greptime_time_index CASCADE;
RESET search_path;
