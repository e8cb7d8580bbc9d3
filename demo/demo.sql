-- flowpg demo: continuous aggregates ("flows") over a metrics table.
-- Run by scripts/demo.sh (psql -X -v ON_ERROR_STOP=1) in a fresh database
-- "flowpg_demo" where CREATE EXTENSION flowpg has already been done.

\set QUIET on
SET timezone = 'UTC';
\pset footer off
\set QUIET off

\echo
\echo '=============================================================================='
\echo ' 1. A source table: metrics(ts, device, value)'
\echo '    3 hours of readings, one every 15 seconds, from 4 devices (2880 rows)'
\echo '=============================================================================='
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value float8 NOT NULL);

-- Deterministic readings in steps of 0.25 (sums stay exact in float8).
INSERT INTO metrics (ts, device, value)
SELECT timestamptz '2024-01-01 00:00:00+00' + s * interval '15 seconds',
       d,
       round((50 + 30 * sin(s / 40.0 + d) + ((s * 7 + d * 13) % 11)) * 4) / 4
  FROM generate_series(0, 719) AS s, generate_series(1, 4) AS d;

SELECT count(*) AS rows, count(DISTINCT device) AS devices,
       min(ts) AS first_reading, max(ts) AS last_reading,
       min(value) AS lowest, max(value) AS highest
  FROM metrics;

\echo
\echo '=============================================================================='
\echo ' 2. Flow "per_minute": count/sum/avg/min/max per device and minute'
\echo '    mode => auto: flowpg picks streaming when the query fits its operator graph'
\echo '=============================================================================='
SELECT flowpg.create_flow(
    'per_minute', 'metrics_per_minute',
    $$SELECT device, date_trunc('minute', ts) AS minute,
             count(*) AS n, sum(value) AS total, avg(value) AS mean,
             min(value) AS lo, max(value) AS hi
        FROM metrics
       GROUP BY device, date_trunc('minute', ts)$$,
    comment => 'per device, per minute') AS flow_id;

\echo
\echo '=============================================================================='
\echo ' 3. Flow "hot_5min": 5-minute date_bin windows whose peak went above 85 (HAVING)'
\echo '=============================================================================='
SELECT flowpg.create_flow(
    'hot_5min', 'metrics_hot_5min',
    $$SELECT device,
             date_bin('5 minutes', ts, timestamptz '2024-01-01 00:00:00+00') AS bucket,
             count(*) AS n, avg(value) AS mean, max(value) AS peak
        FROM metrics
       GROUP BY device, date_bin('5 minutes', ts, timestamptz '2024-01-01 00:00:00+00')
      HAVING max(value) > 85$$,
    comment => 'windows with a peak above 85') AS flow_id;

\echo
\echo '=============================================================================='
\echo ' 4. Flow "device_totals": a batching flow without a time window,'
\echo '    re-evaluated every 30 seconds (eval_interval)'
\echo '=============================================================================='
SELECT flowpg.create_flow(
    'device_totals', 'device_totals',
    $$SELECT device, count(*) AS n, sum(value) AS total, max(ts) AS last_seen
        FROM metrics
       GROUP BY device$$,
    mode => 'batching',
    eval_interval => '30 seconds',
    comment => 'running totals per device') AS flow_id;

\echo
\echo '=============================================================================='
\echo ' 5. The flows (flowpg.flows)'
\echo '=============================================================================='
\set QUIET on
\x on
\set QUIET off
SELECT flow_id, flow_name, owner, mode, source_tables, sink_table,
       time_column, window_expression, expire_after, eval_interval,
       comment, state, flow_definition
  FROM flowpg.flows
 ORDER BY flow_id;
\set QUIET on
\x off
\set QUIET off

\echo
\echo '=============================================================================='
\echo ' 6. The sinks: ordinary tables, filled from the existing rows (backfill)'
\echo '=============================================================================='
SELECT sink, rows
  FROM (VALUES ('metrics_per_minute', (SELECT count(*) FROM metrics_per_minute)),
               ('metrics_hot_5min',   (SELECT count(*) FROM metrics_hot_5min)),
               ('device_totals',      (SELECT count(*) FROM device_totals))) AS v(sink, rows);

\echo
\echo '--- metrics_per_minute: the first 8 rows'
SELECT device, minute, n, total, round(mean::numeric, 2) AS mean, lo, hi
  FROM metrics_per_minute
 ORDER BY minute, device
 LIMIT 8;

\echo
\echo '--- metrics_hot_5min: the first 8 rows (only windows with a peak above 85)'
SELECT device, bucket, n, round(mean::numeric, 2) AS mean, peak
  FROM metrics_hot_5min
 ORDER BY bucket, device
 LIMIT 8;

\echo
\echo '--- device_totals'
SELECT device, n, total, last_seen
  FROM device_totals
 ORDER BY device;

\echo
\echo '=============================================================================='
\echo ' 7. Each sink equals its flow query run directly on metrics'
\echo '    (rows in one and not the other, both directions of EXCEPT ALL; 0 = exact)'
\echo '=============================================================================='
WITH q AS (SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total,
                  avg(value) AS mean, min(value) AS lo, max(value) AS hi
             FROM metrics GROUP BY device, date_trunc('minute', ts)),
     s AS (SELECT device, minute, n, total, mean, lo, hi FROM metrics_per_minute),
     h AS (SELECT device, date_bin('5 minutes', ts, timestamptz '2024-01-01 00:00:00+00') AS bucket,
                  count(*) AS n, avg(value) AS mean, max(value) AS peak
             FROM metrics GROUP BY 1, 2 HAVING max(value) > 85),
     hs AS (SELECT device, bucket, n, mean, peak FROM metrics_hot_5min),
     t AS (SELECT device, count(*) AS n, sum(value) AS total, max(ts) AS last_seen
             FROM metrics GROUP BY device),
     tt AS (SELECT device, n, total, last_seen FROM device_totals)
SELECT 'per_minute' AS flow,
       (SELECT count(*) FROM (SELECT * FROM q EXCEPT ALL SELECT * FROM s) a)
     + (SELECT count(*) FROM (SELECT * FROM s EXCEPT ALL SELECT * FROM q) b) AS differing_rows
UNION ALL
SELECT 'hot_5min',
       (SELECT count(*) FROM (SELECT * FROM h EXCEPT ALL SELECT * FROM hs) a)
     + (SELECT count(*) FROM (SELECT * FROM hs EXCEPT ALL SELECT * FROM h) b)
UNION ALL
SELECT 'device_totals',
       (SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL SELECT * FROM tt) a)
     + (SELECT count(*) FROM (SELECT * FROM tt EXCEPT ALL SELECT * FROM t) b);

\echo
\echo '=============================================================================='
\echo ' 8. New rows arrive: 2 more minutes of readings, a late reading for 00:00,'
\echo '    and a correction (UPDATE) -- nobody calls flush_flow.  The streaming'
\echo '    flows get the new rows within flowpg.flush_interval (100 ms); the UPDATE'
\echo '    and the batching flow go through the recompute of the dirty windows'
\echo '    (flowpg.min_refresh_interval = 1s)'
\echo '=============================================================================='
INSERT INTO metrics (ts, device, value)
SELECT timestamptz '2024-01-01 03:00:00+00' + s * interval '15 seconds', d, 60 + d
  FROM generate_series(0, 7) AS s, generate_series(1, 4) AS d;
INSERT INTO metrics VALUES ('2024-01-01 00:00:05+00', 1, 99.75);
UPDATE metrics SET value = value + 1 WHERE device = 2 AND ts < '2024-01-01 00:01:00+00';

SELECT flow_name, pending, pending_rows FROM flowpg.flow_stats ORDER BY flow_id;

\echo '... waiting for the worker (at most 20 s)'
\set QUIET on
DO $$
BEGIN
    FOR i IN 1..200 LOOP
        EXIT WHEN i > 5 AND NOT EXISTS (SELECT 1 FROM flowpg.flow_stats
                                         WHERE pending > 0 OR coalesce(queue_depth, 0) > 0);
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
\set QUIET off

SELECT flow_name, mode, runs, rows_in, rows_out, pending, last_run_duration, failures
  FROM flowpg.flow_stats ORDER BY flow_id;

\echo
\echo '--- the streaming engine: state held by the worker, batches applied, freshness'
SELECT flow_name, state, state_groups, state_bytes, queue_depth, batches_applied,
       fallbacks, freshness
  FROM flowpg.flow_stats WHERE mode = 'streaming' ORDER BY flow_id;

\echo
\echo '--- metrics_per_minute: the new minutes and the corrected first minute'
SELECT device, minute, n, total, mean, lo, hi
  FROM metrics_per_minute
 WHERE minute IN ('2024-01-01 00:00:00+00', '2024-01-01 03:00:00+00', '2024-01-01 03:01:00+00')
 ORDER BY minute, device;

\echo
\echo '--- device_totals (eval_interval 30 s: it may not have run yet; flush it)'
SELECT flowpg.flush_flow('device_totals') AS rows_written;
SELECT device, n, total, last_seen FROM device_totals ORDER BY device;

\echo
\echo '--- pg_stat_activity: the flowpg background workers'
SELECT backend_type, application_name, datname
  FROM pg_stat_activity WHERE backend_type LIKE 'flowpg%' ORDER BY backend_type;

\echo
\echo '=============================================================================='
\echo ' 9. The same through GreptimeDB''s flow statements (flowpg.execute)'
\echo '=============================================================================='
SELECT * FROM flowpg.execute($$
CREATE FLOW peak_per_device
SINK TO peak_per_device
COMMENT 'peak per device and 10 minutes'
AS
SELECT
    device,
    max(value),
    date_bin(INTERVAL '10 minutes', ts) AS time_window,
FROM metrics
GROUP BY device, time_window;
$$);

SELECT * FROM flowpg.execute($$SHOW FLOWS$$);
SELECT result AS "Create Flow" FROM flowpg.execute($$SHOW CREATE FLOW peak_per_device$$);
SELECT * FROM flowpg.execute($$ADMIN FLUSH_FLOW('peak_per_device')$$);

\echo
\echo '--- peak_per_device (its column named as GreptimeDB names it): the first 4 rows'
SELECT device, "max(metrics.value)", time_window
  FROM peak_per_device ORDER BY time_window, device LIMIT 4;

\echo
\echo '--- equal to its query (0 = exact)'
WITH q AS (SELECT device, max(value) AS peak, date_bin('10 minutes', ts, timestamptz '1970-01-01 00:00:00+00') AS w
             FROM metrics GROUP BY 1, 3),
     s AS (SELECT device, "max(metrics.value)", time_window FROM peak_per_device)
SELECT (SELECT count(*) FROM (SELECT * FROM q EXCEPT ALL SELECT * FROM s) a)
     + (SELECT count(*) FROM (SELECT * FROM s EXCEPT ALL SELECT * FROM q) b) AS differing_rows;

\echo
\echo '--- flowpg.information_schema_flows, in GreptimeDB''s column names'
SELECT flow_name, flow_id, table_catalog, comment, expire_after, sink_table_name,
       options, source_table_names
  FROM flowpg.information_schema_flows ORDER BY flow_id;
