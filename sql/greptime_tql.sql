-- TQL flows (issue 40, item 2): CREATE FLOW ... EVAL INTERVAL ... AS TQL
-- EVAL (start, end, step [, lookback]) <PromQL> [AS name], translated into
-- a recording rule that evaluates the expression at every step of
-- [start, end] at each tick (now() being the tick) and keeps one row per
-- series and step, earlier ticks' rows too.  GreptimeDB's flow_tql and
-- flow_tql_avg run verbatim (tables translated: TIME INDEX -> NOT NULL,
-- STRING -> text, DOUBLE -> double precision); then PromQL's semantics
-- checked against figures computed by hand.
\set VERBOSITY default
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE TEMP TABLE flows_before AS SELECT flow_name FROM flowpg.flows;
CREATE SCHEMA greptime_tql;
SET search_path = greptime_tql, public;

---------------------------------------------------------------------------
-- flow_tql
---------------------------------------------------------------------------
CREATE TABLE http_requests (ts timestamp(3) NOT NULL, host TEXT, idc TEXT, val DOUBLE PRECISION);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW calc_reqs SINK TO cnt_reqs EVAL INTERVAL '1m' AS
TQL EVAL (now() - '1m'::interval, now(), '5s') count_values("status_code", http_requests);$$);
SELECT source_tables FROM flowpg.flows WHERE flow_name = 'calc_reqs';
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'cnt_reqs'::regclass AND attnum > 0 ORDER BY attnum;
-- (flowpg's ticks are on the EVAL INTERVAL grid, its now() the minute
-- that began: the rows are put before it)
INSERT INTO http_requests VALUES
    (date_trunc('minute', now()) - '17s'::interval, 'host1', 'idc1', 200),
    (date_trunc('minute', now()) - '17s'::interval, 'host2', 'idc1', 200),
    (date_trunc('minute', now()) - '13s'::interval, 'host1', 'idc1', 404),
    (date_trunc('minute', now()) - '7s'::interval, 'host3', 'idc2', 201),
    (date_trunc('minute', now()) - '3s'::interval, 'host4', 'idc2', 500);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_reqs')$$);
-- too much indeterminism (the steps are now()'s): just check the flow ran
SELECT count(*) > 0 AS has_rows FROM cnt_reqs;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW calc_reqs');
DROP TABLE http_requests, cnt_reqs;

CREATE TABLE http_requests_two_vals (ts timestamp(3) NOT NULL, host TEXT, idc TEXT,
                                     val DOUBLE PRECISION, valb DOUBLE PRECISION);
-- two value columns: refused
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_reqs SINK TO cnt_reqs EVAL INTERVAL ''1m'' AS
TQL EVAL (now() - ''1m''::interval, now(), ''5s'') count_values("status_code", http_requests_two_vals);')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_reqs SINK TO cnt_reqs EVAL INTERVAL ''1m'' AS
TQL EVAL (now() - ''1m''::interval, now(), ''5s'') rate(http_requests_two_vals[5m]);')$$);
SELECT count(*) AS left_behind FROM pg_class WHERE relname = 'cnt_reqs';
DROP TABLE http_requests_two_vals;

CREATE TABLE http_requests (ts timestamp(3) NOT NULL, host TEXT, idc TEXT, val DOUBLE PRECISION);
-- a start without now(), a negative duration: refused
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_reqs SINK TO cnt_reqs EVAL INTERVAL ''1m'' AS
TQL EVAL (0, 15, ''5s'') count_values("status_code", http_requests);')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_reqs SINK TO cnt_reqs EVAL INTERVAL ''1m'' AS
TQL EVAL (now() - now(), now()-(now()+''15s''::interval), ''5s'') count_values("status_code", http_requests);')$$);
-- without EVAL INTERVAL: refused
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_reqs SINK TO cnt_reqs AS
TQL EVAL (now() - ''1m''::interval, now(), ''5s'') count_values("status_code", http_requests);')$$);
-- the range from the epoch to 15 s after it (now() - now() is the epoch)
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW calc_reqs SINK TO cnt_reqs EVAL INTERVAL '1m' AS
TQL EVAL (now() - now(), now()-(now()-'15s'::interval), '5s') count_values("status_code", http_requests);$$);
INSERT INTO http_requests VALUES
    ('1970-01-01 00:00:00', 'host1', 'idc1', 200),
    ('1970-01-01 00:00:00', 'host2', 'idc1', 200),
    ('1970-01-01 00:00:00', 'host3', 'idc2', 200),
    ('1970-01-01 00:00:00', 'host4', 'idc2', 401),
    ('1970-01-01 00:00:05', 'host1', 'idc1', 404),
    ('1970-01-01 00:00:05', 'host2', 'idc1', 401),
    ('1970-01-01 00:00:05', 'host3', 'idc2', 404),
    ('1970-01-01 00:00:05', 'host4', 'idc2', 500),
    ('1970-01-01 00:00:10', 'host1', 'idc1', 200),
    ('1970-01-01 00:00:10', 'host2', 'idc1', 200),
    ('1970-01-01 00:00:10', 'host3', 'idc2', 201),
    ('1970-01-01 00:00:10', 'host4', 'idc2', 201),
    ('1970-01-01 00:00:15', 'host1', 'idc1', 500),
    ('1970-01-01 00:00:15', 'host2', 'idc1', 500),
    ('1970-01-01 00:00:15', 'host3', 'idc2', 500),
    ('1970-01-01 00:00:15', 'host4', 'idc2', 500);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_reqs')$$);
-- GreptimeDB: 3.0 00:00:00 200.0 | 1.0 00:00:00 401.0 | 1.0 00:00:05 401.0 |
-- 2.0 00:00:05 404.0 | 1.0 00:00:05 500.0 | 2.0 00:00:10 200.0 |
-- 2.0 00:00:10 201.0 | 4.0 00:00:15 500.0
SELECT "count(http_requests.val)", ts, status_code FROM cnt_reqs ORDER BY ts, status_code;
SELECT flowpg.verify_flow('calc_reqs') AS mismatches;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW calc_reqs');
DROP TABLE http_requests, cnt_reqs;

-- rate over a range selector, with a matcher and with __name__
CREATE TABLE http_requests_total (host TEXT, job TEXT, instance TEXT, byte DOUBLE PRECISION,
                                  ts timestamp(3) NOT NULL);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW calc_rate
SINK TO rate_reqs
EVAL INTERVAL '1m' AS
TQL EVAL (now() - '1m'::interval, now(), '30s') rate(http_requests_total{job="my_service"}[1m]);$$);
SELECT attname FROM pg_attribute WHERE attrelid = 'rate_reqs'::regclass AND attnum > 0 ORDER BY attnum;
INSERT INTO http_requests_total VALUES
    ('localhost', 'my_service', 'instance1', 100, date_trunc('minute', now()) - '1min'::interval),
    ('localhost', 'my_service', 'instance1', 200, date_trunc('minute', now()) - '45s'::interval),
    ('remotehost', 'my_service', 'instance1', 300, date_trunc('minute', now()) - '30s'::interval),
    ('remotehost', 'their_service', 'instance1', 300, date_trunc('minute', now()) - '15s'::interval),
    ('localhost', 'my_service', 'instance1', 400, date_trunc('minute', now()));
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_rate')$$);
SELECT count(*) > 0 AS has_rows, bool_and(job = 'my_service') AS only_my_service FROM rate_reqs;
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW calc_rate_by_matcher
SINK TO rate_reqs_by_matcher
EVAL INTERVAL '1m' AS
TQL EVAL (now() - '1m'::interval, now(), '30s') rate({__name__="http_requests_total",job="my_service"}[1m]);$$);
SELECT source_tables FROM flowpg.flows WHERE flow_name = 'calc_rate_by_matcher';
SELECT flow_name, result FROM flowpg.execute('DROP FLOW calc_rate_by_matcher');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW calc_rate');
DROP TABLE http_requests_total, rate_reqs, rate_reqs_by_matcher;

---------------------------------------------------------------------------
-- flow_tql_avg
---------------------------------------------------------------------------
CREATE TABLE sensor_readings ("value" DOUBLE PRECISION, ts timestamp(3) NOT NULL, sensor TEXT, loc TEXT);
CREATE TABLE sensor_readings_avg ("value" DOUBLE PRECISION, ts timestamp(3) NOT NULL, sensor TEXT,
                                  UNIQUE NULLS NOT DISTINCT (sensor, ts));
INSERT INTO sensor_readings VALUES (20, date_trunc('minute', now()) - '30s'::interval, 'test', 'A');
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW sensor_readings_avg_flow
SINK TO sensor_readings_avg
EVAL INTERVAL '1m' AS
TQL EVAL (now() - '1m'::interval, now(), '1m')
avg by(sensor) (sensor_readings) AS value;$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('sensor_readings_avg_flow')$$);
-- GreptimeDB: 20.0 | TS | test
SELECT value, sensor FROM sensor_readings_avg ORDER BY ts DESC LIMIT 1;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW sensor_readings_avg_flow');
INSERT INTO sensor_readings VALUES (30, date_trunc('minute', now()) - '40s'::interval, 'test', 'B');
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW sensor_readings_avg_flow
SINK TO sensor_readings_avg
EVAL INTERVAL '1m' AS
TQL EVAL (now() - '1m'::interval, now(), '1m') (sum by(sensor) (sensor_readings) / count by(sensor) (sensor_readings)) AS value;$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('sensor_readings_avg_flow')$$);
-- GreptimeDB: 25.0 | TS | test
SELECT value, sensor FROM sensor_readings_avg ORDER BY ts DESC LIMIT 1;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW sensor_readings_avg_flow');
-- vectors of different labels: refused
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW sensor_odd SINK TO sensor_odd_out EVAL INTERVAL ''1m'' AS
TQL EVAL (now() - ''1m''::interval, now(), ''1m'') sum by(sensor) (sensor_readings) / sum by(loc) (sensor_readings)')$$);
-- flow_sink_schema_mismatch's TQL case: the sink lacks the sensor label
CREATE TABLE tql_sink_mm ("value" DOUBLE PRECISION, ts timestamp(3) NOT NULL);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW tql_mismatch_flow
SINK TO tql_sink_mm
EVAL INTERVAL ''1m'' AS
TQL EVAL (now() - ''1m''::interval, now(), ''1m'')
avg by(sensor) (sensor_readings) AS value;')$$);
DROP TABLE sensor_readings, sensor_readings_avg, tql_sink_mm;

---------------------------------------------------------------------------
-- flow_tql_cte: TQL in WITH, its simplest shape only
---------------------------------------------------------------------------
CREATE TABLE metric_cte (ts timestamp(3) NOT NULL, val DOUBLE PRECISION);
INSERT INTO metric_cte VALUES
  ('1970-01-01 00:00:00', 0), ('1970-01-01 00:00:05', 1),
  ('1970-01-01 00:00:10', 2), ('1970-01-01 00:00:15', 3);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW calc_cte SINK TO metric_cte_sink EVAL INTERVAL '1m' AS
WITH tql (ts, the_value) AS (
  TQL EVAL (now() - now(), now() - (now() - '15s'::interval), '5s') metric_cte
)
SELECT * FROM tql;$$);
CREATE TABLE tql (ts timestamp(3) NOT NULL, val DOUBLE PRECISION);
INSERT INTO tql VALUES
  ('1970-01-01 00:00:00', 10), ('1970-01-01 00:00:05', 20),
  ('1970-01-01 00:00:10', 30), ('1970-01-01 00:00:15', 40);
-- refused as GreptimeDB refuses them: the CTE's name in another case, a
-- column list, a filter, another CTE beside
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_cte_case SINK TO metric_cte_join_sink EVAL INTERVAL ''1m'' AS
WITH "TQL"(ts, the_value) AS (
  TQL EVAL (now() - now(), now() - (now() - ''15s''::interval), ''5s'') metric_cte
)
SELECT * FROM TQL;')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_cte_non_star SINK TO metric_cte_non_star_sink EVAL INTERVAL ''1m'' AS
WITH tql(ts, the_value) AS (
  TQL EVAL (now() - now(), now() - (now() - ''15s''::interval), ''5s'') metric_cte
)
SELECT ts FROM tql;')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_cte_filter SINK TO metric_cte_filter_sink EVAL INTERVAL ''1m'' AS
WITH tql(ts, the_value) AS (
  TQL EVAL (now() - now(), now() - (now() - ''15s''::interval), ''5s'') metric_cte
)
SELECT * FROM tql WHERE ts > 0::timestamp;')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW calc_cte_mixed SINK TO metric_cte_mixed_sink EVAL INTERVAL ''1m'' AS
WITH s1 AS (SELECT 1),
     tql(ts, the_value) AS (
       TQL EVAL (now() - now(), now() - (now() - ''15s''::interval), ''5s'') metric_cte
     )
SELECT * FROM tql;')$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW calc_cte_case SINK TO metric_cte_join_sink EVAL INTERVAL '1m' AS
WITH "TQL"(ts, the_value) AS (
  TQL EVAL (now() - now(), now() - (now() - '15s'::interval), '5s') metric_cte
)
SELECT * FROM "TQL";$$);
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'metric_cte_sink'::regclass AND attnum > 0 ORDER BY attnum;
SELECT source_tables FROM flowpg.flows WHERE flow_name IN ('calc_cte', 'calc_cte_case') ORDER BY flow_name;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_cte')$$);
-- GreptimeDB: 00:00:00 0.0 | 00:00:05 1.0 | 00:00:10 2.0 | 00:00:15 3.0
SELECT ts, the_value FROM metric_cte_sink ORDER BY ts;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_cte_case')$$);
SELECT ts, the_value FROM metric_cte_join_sink ORDER BY ts;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW calc_cte');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW calc_cte_case');
DROP TABLE metric_cte, tql, metric_cte_sink, metric_cte_join_sink;

---------------------------------------------------------------------------
-- flow_tql_missing_value_sink_schema: the pre-created sink lacks the value
---------------------------------------------------------------------------
CREATE SCHEMA source_schema;
CREATE SCHEMA sink_schema;
CREATE TABLE source_schema.metric_input (
  namespace TEXT NULL,
  app TEXT NULL,
  greptime_timestamp timestamp(3) NOT NULL,
  greptime_value DOUBLE PRECISION NULL
);
INSERT INTO source_schema.metric_input VALUES
  ('ns', 'app-a', '2026-01-23T03:40:00Z', 10.0),
  ('ns', 'app-a', '2026-01-23T03:50:00Z', 20.0);
CREATE TABLE sink_schema.missing_value_sink (
  namespace TEXT NULL,
  app TEXT NULL,
  greptime_timestamp timestamp(3) NOT NULL,
  UNIQUE NULLS NOT DISTINCT (namespace, app, greptime_timestamp)
);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW missing_value_flow
SINK TO sink_schema.missing_value_sink
EVAL INTERVAL ''3600 s''
AS TQL EVAL (
  date_bin(''2m''::interval, now() - ''2m''::interval),
  date_bin(''2m''::interval, now() - ''2m''::interval),
  ''1h''
)
  avg by (namespace, app) (
    avg_over_time(metric_input{__schema__="source_schema"}[1h])
  );')$$);
SELECT count(*) AS left_behind FROM flowpg.flows WHERE flow_name = 'missing_value_flow';
DROP SCHEMA source_schema, sink_schema CASCADE;

---------------------------------------------------------------------------
-- PromQL by hand: steps at 60, 90 and 120 s after the epoch, ranges and
-- lookback of 60 s.
---------------------------------------------------------------------------
CREATE TABLE reqs (ts timestamp(3) NOT NULL, job TEXT, inst TEXT, v DOUBLE PRECISION);
INSERT INTO reqs VALUES
  -- api/a: a counter 0, 10, 20, 30, 40, 50, 60, 70, 80 every 15 s from 0 s
  ('1970-01-01 00:00:00', 'api', 'a', 0), ('1970-01-01 00:00:15', 'api', 'a', 10),
  ('1970-01-01 00:00:30', 'api', 'a', 20), ('1970-01-01 00:00:45', 'api', 'a', 30),
  ('1970-01-01 00:01:00', 'api', 'a', 40), ('1970-01-01 00:01:15', 'api', 'a', 50),
  ('1970-01-01 00:01:30', 'api', 'a', 60), ('1970-01-01 00:01:45', 'api', 'a', 70),
  ('1970-01-01 00:02:00', 'api', 'a', 80),
  -- api/b: 100, 110, then a reset to 5, 15 (at 30, 45, 60, 75 s)
  ('1970-01-01 00:00:30', 'api', 'b', 100), ('1970-01-01 00:00:45', 'api', 'b', 110),
  ('1970-01-01 00:01:00', 'api', 'b', 5), ('1970-01-01 00:01:15', 'api', 'b', 15),
  -- web/c: one sample, at 50 s
  ('1970-01-01 00:00:50', 'web', 'c', 7);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW by_hand SINK TO by_hand_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '120s'::interval, '30s', '60s') increase(reqs[1m]) AS inc;$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('by_hand')$$);
-- a at 60 s: samples 15..60 s (10, 20, 30, 40): 30 over 45 s, extrapolated
-- to the range's start (15 s away, < 1.1 x 15 s; the zero point, 45 x 10 /
-- 30 = 15 s away, is not nearer): 30 x 60 / 45 = 40; so at every step, 40.
-- b at 60 s: 100, 110, 5: 5 - 100 + 110 = 15 over 30 s; the start 30 s away
-- (> 16.5 s): 7.5 s; zero point 30 x 100 / 15 = 200 s: 15 x 37.5 / 30 = 18.75.
-- b at 90 s: 110, 5, 15 (45..75 s): 15 - 110 + 110 = 15 over 30 s; start 15
-- s away: all of it; end 15 s away: all of it: 15 x 60 / 30 = 30.
-- b at 120 s: 15 alone (75 s): no row.  c: one sample: no rows.
SELECT inst, ts, inc FROM by_hand_out ORDER BY inst, ts;
SELECT flowpg.verify_flow('by_hand') AS mismatches;
-- instant selectors, staleness and aggregations: the latest sample within
-- 60 s.  sum by (job): at 60 s api = 40 + 5 = 45, web = 7 (50 s); at 90 s
-- api = 60 + 15 = 75, web = 7 (50 s, 40 s old); at 120 s api = 80 + 15 = 95
-- (b's 75 s is 45 s old), web: 70 s old, stale: no row.
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW sum_by_job SINK TO sum_by_job_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '120s'::interval, '30s', '60s') sum by (job) (reqs) * 2;$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('sum_by_job')$$);
SELECT job, ts, "sum(reqs.v)" FROM sum_by_job_out ORDER BY job, ts;
-- without (inst): the same groups
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW max_without SINK TO max_without_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '120s'::interval, '30s', '60s') max without (inst) (reqs{job=~"a.*"}) / 0;$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('max_without')$$);
SELECT job, ts, "max(reqs.v)" FROM max_without_out ORDER BY job, ts;
-- histogram_quantile: buckets of one histogram at 60 s (instant, within
-- the lookback): le 0.1: 10, 0.5: 30, 1: 40, +Inf: 50.  q = 0.5: rank 25,
-- in (0.1, 0.5]: 0.1 + 0.4 x (25 - 10) / 20 = 0.4; q = 0.9: rank 45, in
-- the +Inf bucket: the bound below it, 1; q = 0.05: 0.1 x 2.5 / 10 =
-- 0.025.  Series "b" has no +Inf bucket: NaN.
CREATE TABLE lat (ts timestamp(3) NOT NULL, le TEXT, series TEXT, v DOUBLE PRECISION);
INSERT INTO lat VALUES
  ('1970-01-01 00:01:00', '0.1', 'a', 10), ('1970-01-01 00:01:00', '0.5', 'a', 30),
  ('1970-01-01 00:01:00', '1', 'a', 40), ('1970-01-01 00:01:00', '+Inf', 'a', 50),
  ('1970-01-01 00:01:00', '0.1', 'b', 1), ('1970-01-01 00:01:00', '1', 'b', 2);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW q50 SINK TO q50_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s', '60s') histogram_quantile(0.5, lat) AS q;
$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW q90 SINK TO q90_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s', '60s') histogram_quantile(0.9, lat) AS q;
$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW q05 SINK TO q05_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s', '60s') histogram_quantile(0.05, lat) AS q;
$$);
SELECT flowpg.flush_flow('q50') >= 0 AS a, flowpg.flush_flow('q90') >= 0 AS b, flowpg.flush_flow('q05') >= 0 AS c;
SELECT 'q50' AS flow, series, ts, q FROM q50_out UNION ALL SELECT 'q90', series, ts, q FROM q90_out
UNION ALL SELECT 'q05', series, ts, q FROM q05_out ORDER BY 1, 2;
-- over time, a at 60 s: samples 10, 20, 30, 40 (15..60 s): avg 25, the
-- population's stddev sqrt((15^2 + 5^2 + 5^2 + 15^2) / 4) = 11.180340,
-- the 0.5 quantile 25 (linear), present 1
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW over_time SINK TO over_time_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s') avg_over_time(reqs{inst="a"}[1m]) AS x;$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW sd_time SINK TO sd_time_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s') stddev_over_time(reqs{inst="a"}[1m]) AS x;$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW q_time SINK TO q_time_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s') quantile_over_time(0.5, reqs{inst="a"}[1m]) AS x;$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW p_time SINK TO p_time_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s') present_over_time(reqs{inst="a"}[1m]) AS x;$$);
SELECT flowpg.flush_flow(f) >= 0 AS flushed FROM unnest(ARRAY['over_time', 'sd_time', 'q_time', 'p_time']) f;
SELECT (SELECT x FROM over_time_out) AS avg, round((SELECT x FROM sd_time_out)::numeric, 6) AS stddev,
       (SELECT x FROM q_time_out) AS median, (SELECT x FROM p_time_out) AS present;
-- * before +: sum(x) + 2 * count(x) at 60 s for api: 45 + 2 x 2 = 49;
-- sum(x) / count(x) - 1: 45 / 2 - 1 = 21.5
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW prec SINK TO prec_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s', '60s') sum by (job) (reqs{job="api"}) + 2 * count by (job) (reqs{job="api"}) AS p;$$);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW prec2 SINK TO prec2_out EVAL INTERVAL '1m' AS
TQL EVAL (now() - now() + '60s'::interval, now() - now() + '60s'::interval, '30s', '60s') sum by (job) (reqs{job="api"}) / count by (job) (reqs{job="api"}) - 1 AS p;$$);
SELECT flowpg.flush_flow('prec') >= 0 AS a, flowpg.flush_flow('prec2') >= 0 AS b;
SELECT (SELECT p FROM prec_out) AS sum_plus_2_count, (SELECT p FROM prec2_out) AS avg_minus_1;
-- refused: what the translation does not have yet
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW no SINK TO no_out EVAL INTERVAL ''1m'' AS
TQL EVAL (now() - ''1m''::interval, now(), ''30s'') topk(3, reqs)')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW no SINK TO no_out EVAL INTERVAL ''1m'' AS
TQL EVAL (now() - ''1m''::interval, now(), ''30s'') reqs offset 1m')$$);

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows
 WHERE flow_name NOT IN (SELECT flow_name FROM flows_before) ORDER BY flow_name;
SET client_min_messages = warning;
DROP SCHEMA greptime_tql CASCADE;
RESET search_path;
