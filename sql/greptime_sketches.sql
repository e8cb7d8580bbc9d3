-- GreptimeDB's sketch aggregates (issue 40, item 5): hll / hll_merge /
-- hll_count and uddsketch_state / uddsketch_merge / uddsketch_calc, with
-- bytea states that roll up: a flow over a sink of states, in both engines.
-- GreptimeDB's flow_step_aggr runs its flow statements verbatim through
-- flowpg.execute; tables are translated (STRING -> text, BINARY -> bytea,
-- TIMESTAMP -> timestamp(3), TIMESTAMP(0) -> timestamp(0), TIME INDEX ->
-- NOT NULL, a sink's PRIMARY KEY + TIME INDEX -> a unique key), and the
-- rows inserted are written as PostgreSQL writes them.  The figures are
-- GreptimeDB's .result figures.
\set VERBOSITY default
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE TEMP TABLE flows_before AS SELECT flow_name FROM flowpg.flows;
CREATE SCHEMA greptime_sketches;
-- the sinks are read with flowpg's functions, as GreptimeDB's tests read them
SET search_path = greptime_sketches, public, flowpg;

---------------------------------------------------------------------------
-- flow_step_aggr: distinct users per url and 10 s, then per minute
---------------------------------------------------------------------------
CREATE TABLE access_log (
    "url" TEXT,
    user_id BIGINT,
    ts timestamp(3) NOT NULL
);
CREATE TABLE access_log_10s (
    "url" TEXT,
    time_window timestamp(3) NOT NULL,
    state bytea,
    UNIQUE NULLS NOT DISTINCT ("url", time_window)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW calc_access_log_10s SINK TO access_log_10s
AS
SELECT
    "url",
    date_bin('10s'::INTERVAL, ts) AS time_window,
    hll(user_id) AS state
FROM
    access_log
GROUP BY
    "url",
    time_window;
$$);
INSERT INTO access_log VALUES
        ('/dashboard', 1, '2025-03-04 00:00:00'),
        ('/dashboard', 1, '2025-03-04 00:00:01'),
        ('/dashboard', 2, '2025-03-04 00:00:05'),
        ('/not_found', 3, '2025-03-04 00:00:11'),
        ('/dashboard', 4, '2025-03-04 00:00:15');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_access_log_10s')$$);
-- GreptimeDB: 3 rows
SELECT "url", time_window FROM access_log_10s ORDER BY time_window, "url";
-- GreptimeDB: /dashboard 00:00:00 2, /dashboard 00:00:10 1, /not_found 00:00:10 1
SELECT "url", time_window, hll_count(state) FROM access_log_10s ORDER BY time_window, "url";
-- GreptimeDB: /dashboard 3, /not_found 1 (date_bin's origin is
-- GreptimeDB's default, which PostgreSQL's date_bin needs given)
SELECT
    "url",
    date_bin('1 minute'::INTERVAL, time_window, '1970-01-01') AS time_window_1m,
    hll_count(hll_merge(state)) as uv_per_min
FROM
    access_log_10s
GROUP BY
    "url",
    time_window_1m
ORDER BY
    time_window_1m, "url";
SELECT flow_mismatches('calc_access_log_10s') AS mismatches;
-- the same rollup kept by a flow over the sink of sketches (streaming)
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW calc_access_log_1m SINK TO access_log_1m AS
SELECT "url", date_bin('1 minute'::INTERVAL, time_window) AS time_window_1m, hll_merge(state) AS state
FROM access_log_10s GROUP BY "url", time_window_1m;
$$);
INSERT INTO access_log VALUES ('/dashboard', 5, '2025-03-04 00:00:42'), ('/dashboard', 2, '2025-03-04 00:00:43');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_access_log_1m')$$);
SELECT "url", time_window_1m, hll_count(state) AS uv FROM access_log_1m ORDER BY 1, 2;
SELECT flow_mismatches('calc_access_log_1m') AS mismatches;

---------------------------------------------------------------------------
-- flow_step_aggr: p99 per 5 s with uddsketch_state, filtered in WHERE
---------------------------------------------------------------------------
CREATE TABLE percentile_base (
    "id" INT PRIMARY KEY,
    "value" DOUBLE PRECISION,
    ts timestamp(0) NOT NULL
);
CREATE TABLE percentile_5s (
    "percentile_state" bytea,
    time_window timestamp(0) NOT NULL PRIMARY KEY
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW calc_percentile_5s SINK TO percentile_5s
AS
SELECT
    uddsketch_state(128, 0.01, "value") AS "value",
    date_bin('5 seconds'::INTERVAL, ts) AS time_window
FROM
    percentile_base
WHERE
    "value" > 0 AND "value" < 70
GROUP BY
    time_window;
$$);
INSERT INTO percentile_base ("id", "value", ts)
SELECT i, i * 10.0, '1970-01-01'::timestamp + i * interval '1 second' FROM generate_series(1, 10) i;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_percentile_5s')$$);
-- GreptimeDB: 00:00:00 40.04777053326359, 00:00:05 59.745049810145126
SELECT
    time_window,
    uddsketch_calc(0.99, "percentile_state") AS p99
FROM
    percentile_5s
ORDER BY
    time_window;
SELECT flow_mismatches('calc_percentile_5s') AS mismatches;
SELECT flowpg.drop_flow('calc_percentile_5s');
DROP TABLE percentile_5s, percentile_base;

---------------------------------------------------------------------------
-- flow_step_aggr: the same with NULLs in the state, and a second level
-- (10 s) merging the 5 s states; here the second level is batching
---------------------------------------------------------------------------
CREATE TABLE percentile_base (
    "id" INT PRIMARY KEY,
    "value" DOUBLE PRECISION,
    ts timestamp(0) NOT NULL
);
CREATE TABLE percentile_5s (
    "percentile_state" bytea,
    time_window timestamp(0) NOT NULL PRIMARY KEY
);
CREATE TABLE percentile_10s (
    "percentile_state" bytea,
    time_window timestamp(0) NOT NULL PRIMARY KEY
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW calc_percentile_5s SINK TO percentile_5s
AS
SELECT
    uddsketch_state(128, 0.01, CASE WHEN "value" > 0 AND "value" < 70 THEN "value" ELSE NULL END) AS "value",
    date_bin('5 seconds'::INTERVAL, ts) AS time_window
FROM
    percentile_base
GROUP BY
    time_window;
$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW calc_percentile_10s SINK TO percentile_10s EVAL INTERVAL '1 minute'
AS
SELECT
    uddsketch_merge(128, 0.01, percentile_state),
    date_bin('10 seconds'::INTERVAL, time_window) AS time_window
FROM
    percentile_5s
GROUP BY
    date_bin('10 seconds'::INTERVAL, time_window);
$$);
INSERT INTO percentile_base ("id", "value", ts)
SELECT i, i * 10.0, '1970-01-01'::timestamp + i * interval '1 second' FROM generate_series(1, 10) i;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_percentile_5s')$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_percentile_10s')$$);
-- GreptimeDB: 00:00:00 40.04777053326359, 00:00:05 59.745049810145126, 00:00:10 NULL
SELECT time_window, uddsketch_calc(0.99, percentile_state) AS p99 FROM percentile_5s ORDER BY time_window;
-- GreptimeDB: 00:00:00 59.745049810145126, 00:00:10 NULL
SELECT time_window, uddsketch_calc(0.99, percentile_state) AS p99 FROM percentile_10s ORDER BY time_window;
SELECT flow_mismatches('calc_percentile_5s') AS m5, flow_mismatches('calc_percentile_10s') AS m10;

---------------------------------------------------------------------------
-- Checks by hand: HyperLogLog counts distinct values exactly while few,
-- within its error when many, and merging equals one sketch of all;
-- UDDSketch within its relative error, collapsing when out of buckets,
-- merges equal to the sketch of all values, negative values and zero.
---------------------------------------------------------------------------
SELECT hll_count(hll(x)) AS of_200, hll_count(hll(x::text)) AS of_200_texts,
       hll_count(hll(NULL::int)) AS of_nulls
  FROM generate_series(1, 200) x;
SELECT abs(hll_count(hll(x)) - 200000) < 200000 * 0.03 AS within_3_percent
  FROM generate_series(1, 200000) x;
SELECT (SELECT hll(x) FROM generate_series(1, 30000) x)
     = (SELECT hll_merge(s) FROM (SELECT hll(x) AS s FROM generate_series(1, 30000) x GROUP BY x % 13) q)
       AS merged_is_whole;
SELECT q, abs(uddsketch_calc(q, s) - percentile_disc(q) WITHIN GROUP (ORDER BY v)) <= 0.01 * percentile_disc(q) WITHIN GROUP (ORDER BY v) AS within_1_percent
  FROM (SELECT uddsketch_state(1000, 0.01, v) AS s FROM generate_series(1, 5000) v) st,
       generate_series(1, 5000) v, unnest(ARRAY[0.1, 0.5, 0.9, 0.99]) q
 GROUP BY q, s ORDER BY q;
SELECT uddsketch_calc(0.5, (SELECT uddsketch_state(10, 0.01, v) FROM generate_series(1, 5000) v))
     = uddsketch_calc(0.5, (SELECT uddsketch_merge(10, 0.01, s) FROM (SELECT uddsketch_state(10, 0.01, v) AS s FROM generate_series(1, 5000) v GROUP BY v % 7) q))
       AS merged_is_whole;
SELECT round(uddsketch_calc(0.5, s)::numeric, 3) AS median_of_few_buckets
  FROM (SELECT uddsketch_state(10, 0.01, v) AS s FROM generate_series(1, 5000) v) q;
SELECT q, round(uddsketch_calc(q, s)::numeric, 6) AS value
  FROM (SELECT uddsketch_state(128, 0.01, v) AS s FROM unnest(ARRAY[-8, -2, 0, 0, 3, 9]::float8[]) v) st,
       unnest(ARRAY[0, 0.2, 0.4, 0.6, 0.8, 1]) q ORDER BY q;
SELECT uddsketch_calc(0.5, uddsketch_state(128, 0.01, v)) AS of_nulls FROM (VALUES (NULL::float8)) t(v);
SELECT * FROM try($$SELECT uddsketch_merge(64, 0.01, s) FROM (SELECT uddsketch_state(128, 0.01, 1.0) AS s) q$$);
SELECT * FROM try($$SELECT uddsketch_calc(1.5, uddsketch_state(128, 0.01, 1.0))$$);
SELECT * FROM try($$SELECT hll_count('\x00'::bytea)$$);

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows
 WHERE flow_name NOT IN (SELECT flow_name FROM flows_before) ORDER BY flow_name;
SET client_min_messages = warning;
DROP SCHEMA greptime_sketches CASCADE;
RESET search_path;
