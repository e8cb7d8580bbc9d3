-- create_flow, the flows view, sink creation, replace and drop.
-- Stable output: UTC, ISO dates.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- A streaming-capable query: auto picks streaming.
SELECT flowpg.create_flow('per_minute', 'metrics_per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n,
		   sum(value) AS total, avg(value) AS mean, min(value) AS lo, max(value) AS hi
	  FROM metrics GROUP BY device, date_trunc('minute', ts)$$) > 0 AS created;
SELECT flowpg.flush_flow('per_minute') >= 0 AS backfilled;
SELECT flow_name, owner, mode, source_tables, sink_table, time_column,
	   window_expression, expire_after, eval_interval, comment, state
  FROM flowpg.flows;
SELECT query FROM flowpg.flows WHERE flow_name = 'per_minute';
SELECT flow_definition FROM flowpg.flows WHERE flow_name = 'per_minute';

-- The sink: one column per output, update_at, a unique index on the keys.
SELECT attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute
 WHERE attrelid = 'metrics_per_minute'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;
SELECT pg_get_indexdef(indexrelid) FROM pg_index
 WHERE indrelid = 'metrics_per_minute'::regclass;

-- Backfill computed the sink from the existing rows (NULL keys included).
SELECT count(*) > 0 AS has_rows, flow_mismatches('per_minute') AS mismatches
  FROM metrics_per_minute;
SELECT count(*) AS null_device_groups FROM metrics_per_minute WHERE device IS NULL;

-- count(DISTINCT) cannot be combined: auto picks batching.
SELECT flowpg.create_flow('distinct_devices', 'devices_per_hour',
  $$SELECT date_bin('1 hour', ts, '2000-01-01') AS hour,
		   count(DISTINCT device) AS devices, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median
	  FROM metrics GROUP BY 1$$,
  comment => 'devices seen per hour') > 0 AS created;
SELECT flowpg.flush_flow('distinct_devices') >= 0 AS backfilled;
SELECT flow_name, mode, window_expression, comment FROM flowpg.flows ORDER BY flow_id;
SELECT flow_mismatches('distinct_devices') AS mismatches;

-- eval_interval makes auto choose batching; HAVING and WHERE are kept.
SELECT flowpg.create_flow('busy_devices', 'busy_devices',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n
	  FROM metrics WHERE value > 10 GROUP BY device, date_trunc('hour', ts)
	HAVING count(*) > 12$$,
  eval_interval => '1 minute') > 0 AS created;
SELECT flowpg.flush_flow('busy_devices') >= 0 AS backfilled;
SELECT mode, eval_interval FROM flowpg.flows WHERE flow_name = 'busy_devices';
SELECT flow_mismatches('busy_devices') AS mismatches;

-- A flow without a time window: streaming, one row per group.
SELECT flowpg.create_flow('per_device', 'per_device',
  $$SELECT device, count(*) AS n, max(ts) AS last_seen FROM metrics GROUP BY device$$) > 0 AS created;
SELECT flowpg.flush_flow('per_device') >= 0 AS backfilled;
SELECT mode, time_column, window_expression FROM flowpg.flows WHERE flow_name = 'per_device';
SELECT flow_mismatches('per_device') AS mismatches;

-- A global aggregate: no GROUP BY, so no unique index on the sink.
SELECT flowpg.create_flow('totals', 'totals',
  $$SELECT count(*) AS n, sum(value) AS total FROM metrics$$) > 0 AS created;
SELECT flowpg.flush_flow('totals') >= 0 AS backfilled;
SELECT n, total FROM totals;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'totals'::regclass;

-- A non-aggregate flow (filter + projection) runs in streaming mode only.
SELECT flowpg.create_flow('hot_readings', 'hot_readings',
  $$SELECT ts, device, value FROM metrics WHERE value > 99$$) > 0 AS created;
SELECT flowpg.flush_flow('hot_readings') >= 0 AS backfilled;
SELECT mode FROM flowpg.flows WHERE flow_name = 'hot_readings';
SELECT flow_mismatches('hot_readings') AS mismatches;

-- Explicit modes.
SELECT flowpg.create_flow('per_minute_batch', 'metrics_per_minute_batch',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n
	  FROM metrics GROUP BY device, date_trunc('minute', ts)$$,
  mode => 'batching') > 0 AS created;
SELECT mode, flow_definition FROM flowpg.flows WHERE flow_name = 'per_minute_batch';

-- backfill => false leaves a new sink empty.
SELECT flowpg.create_flow('no_backfill', 'no_backfill',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n
	  FROM metrics GROUP BY 1, 2$$, backfill => false) > 0 AS created;
SELECT count(*) FROM no_backfill;

-- if_not_exists keeps the existing flow and returns its id.
SELECT flowpg.create_flow('no_backfill', 'other_sink', 'SELECT 1 AS x FROM metrics',
						  if_not_exists => true)
	 = (SELECT flow_id FROM flowpg.flows WHERE flow_name = 'no_backfill') AS same_id;
SELECT to_regclass('other_sink') IS NULL AS no_sink_created;

-- or_replace keeps the id and the sink, and recomputes it.
SELECT flow_id AS old_id FROM flowpg.flows WHERE flow_name = 'no_backfill' \gset
SELECT flowpg.create_flow('no_backfill', 'no_backfill',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n
	  FROM metrics WHERE device < 5 GROUP BY 1, 2$$, or_replace => true) = :old_id AS same_id;
SELECT flowpg.flush_flow('no_backfill') >= 0 AS backfilled;
SELECT count(*) > 0 AS has_rows, flow_mismatches('no_backfill') AS mismatches FROM no_backfill;
SELECT query FROM flowpg.flows WHERE flow_name = 'no_backfill';

-- An existing, compatible sink is used as it is.
CREATE TABLE my_sink (hour timestamptz, device int, n bigint, note text DEFAULT 'x');
CREATE UNIQUE INDEX ON my_sink (device, hour) NULLS NOT DISTINCT;
SELECT flowpg.create_flow('into_my_sink', 'my_sink',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n FROM metrics GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.flush_flow('into_my_sink') >= 0 AS backfilled;
SELECT count(*) > 0 AS has_rows, count(*) FILTER (WHERE note = 'x') = count(*) AS defaults_kept
  FROM my_sink;

-- A schema-qualified sink name with quoting.
CREATE SCHEMA "Sinks";
SELECT flowpg.create_flow('quoted', '"Sinks"."Per Hour"',
  $$SELECT date_trunc('hour', ts) AS "Hour", count(*) AS "N" FROM metrics GROUP BY 1$$) > 0 AS created;
SELECT flowpg.flush_flow('quoted') >= 0 AS backfilled;
SELECT sink_table FROM flowpg.flows WHERE flow_name = 'quoted';
SELECT flow_mismatches('quoted') AS mismatches;

-- expire_after: windows that end before now() - expire_after (the horizon)
-- are not maintained, but the backfill computes the whole history:
-- rollups outlive their raw rows.  backfill_from limits the history (never
-- the maintained windows).
CREATE TABLE recent (ts timestamptz, v int);
INSERT INTO recent SELECT now() - i * interval '1 hour', i FROM generate_series(0, 47) i;
SELECT flowpg.create_flow('recent_hours', 'recent_hours',
  $$SELECT date_trunc('hour', ts) AS hour, sum(v) AS total FROM recent GROUP BY 1$$,
  expire_after => '1 day') > 0 AS created;
SELECT flowpg.create_flow('recent_from', 'recent_from',
  $$SELECT date_trunc('hour', ts) AS hour, sum(v) AS total FROM recent GROUP BY 1$$,
  expire_after => '1 day', backfill_from => now() - interval '30 hours') > 0 AS created;
SELECT flowpg.create_flow('recent_late_from', 'recent_late_from',
  $$SELECT date_trunc('hour', ts) AS hour, sum(v) AS total FROM recent GROUP BY 1$$,
  expire_after => '1 day', backfill_from => now()) > 0 AS created;
SELECT flowpg.flush_flow(f) >= 0 AS backfilled
  FROM unnest(ARRAY['recent_hours', 'recent_from', 'recent_late_from']) f;
SELECT count(*) = 48 AS whole_history,
	   min(hour) = date_trunc('hour', now() - interval '47 hours') AS from_the_oldest_row
  FROM recent_hours;
SELECT min(hour) = date_trunc('hour', now() - interval '30 hours') AS from_backfill_from
  FROM recent_from;
SELECT min(hour) = date_trunc('hour', now() - interval '1 day') AS maintained_windows_all
  FROM recent_late_from;
SELECT flow_name, horizon = date_trunc('hour', now() - interval '1 day') AS horizon
  FROM flowpg.flows WHERE flow_name LIKE 'recent%' ORDER BY flow_name;
SELECT expire_after, flow_definition FROM flowpg.flows WHERE flow_name = 'recent_hours';
SELECT flowpg.drop_flow(f) FROM unnest(ARRAY['recent_from', 'recent_late_from']) f;
-- backfill_from is about the history of expire_after
SELECT flowpg.create_flow('recent_bad', 'recent_bad',
  $$SELECT date_trunc('hour', ts) AS hour, sum(v) AS total FROM recent GROUP BY 1$$,
  backfill_from => now() - interval '30 hours');
SELECT flowpg.create_flow('recent_bad', 'recent_bad',
  $$SELECT date_trunc('hour', ts) AS hour, sum(v) AS total FROM recent GROUP BY 1$$,
  expire_after => '1 day', backfill => false, backfill_from => now() - interval '30 hours');
SELECT to_regclass('recent_bad') IS NULL AS nothing_left;

-- drop_flow removes the flow, never the sink.
SELECT flowpg.drop_flow('per_minute_batch');
SELECT count(*) AS flows_left FROM flowpg.flows WHERE flow_name = 'per_minute_batch';
SELECT to_regclass('metrics_per_minute_batch') IS NOT NULL AS sink_kept;
SELECT flowpg.drop_flow('per_minute_batch', if_exists => true);
SELECT flow_name FROM flowpg.flows ORDER BY flow_id;

-- A flow created over a sink that still holds another flow's rows (drop_flow
-- keeps the sink): the backfill replaces them all, in both engines, also
-- when the worker does it.
CREATE TABLE reuse_src (ts timestamptz NOT NULL, k int NOT NULL, v int NOT NULL);
INSERT INTO reuse_src SELECT '2024-01-01'::timestamptz + i * interval '13 minutes', i % 4, i
  FROM generate_series(1, 300) i;
SELECT flowpg.create_flow('reuse_' || m, 'reuse_sink_' || m,
  $$SELECT k, date_trunc('hour', ts) AS hour, count(*) AS n FROM reuse_src GROUP BY 1, 2$$,
  mode => m) > 0 AS created
  FROM unnest(ARRAY['streaming', 'batching']) m;
SELECT flowpg.flush_flow('reuse_' || m) >= 0 AS flushed FROM unnest(ARRAY['streaming', 'batching']) m;
SELECT flowpg.drop_flow('reuse_' || m) FROM unnest(ARRAY['streaming', 'batching']) m;
-- the new query keeps only k = 0: the other keys' rows must go
SELECT flowpg.create_flow('reuse_' || m, 'reuse_sink_' || m,
  $$SELECT k, date_trunc('hour', ts) AS hour, count(*) AS n FROM reuse_src WHERE k = 0 GROUP BY 1, 2$$,
  mode => m) > 0 AS created
  FROM unnest(ARRAY['streaming', 'batching']) m;
-- the worker's backfill, then a flush that has nothing of the backfill left
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN NOT EXISTS (SELECT 1 FROM flowpg.flows WHERE flow_name LIKE 'reuse\_%' AND state <> 'active');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT flow_name, state, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'reuse\_%' ORDER BY 1;
