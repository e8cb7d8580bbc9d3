-- Categorical GROUP BY keys: an expression that is not monotonic in its
-- column (shop_id % 4, extract(dow FROM ts)) is an ordinary key, never an
-- error.  The time window is the first monotonic candidate; with none the
-- flow has no window.  Every flow is checked against its query.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA cat;
CREATE TABLE cat.orders (created_at timestamptz, shop_id int, country text, amount numeric);
INSERT INTO cat.orders
SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '17 minutes', i % 7,
	   CASE WHEN i % 11 = 0 THEN NULL ELSE 'c' || (i % 3) END, i % 100
FROM generate_series(1, 2000) i;

-- The issue's examples, in both engines.
SELECT flowpg.create_flow('cat_mod', 'cat.by_mod',
  $$SELECT shop_id % 4 AS bucket, count(*) AS n, sum(amount) AS total
	  FROM cat.orders GROUP BY shop_id % 4$$) > 0 AS created;
SELECT flowpg.create_flow('cat_dow', 'cat.by_dow',
  $$SELECT extract(dow FROM created_at)::int AS dow, count(*) AS n
	  FROM cat.orders GROUP BY extract(dow FROM created_at)::int$$) > 0 AS created;
SELECT flowpg.create_flow('cat_text', 'cat.by_text',
  $$SELECT (shop_id % 4)::text AS bucket, count(*) AS n
	  FROM cat.orders GROUP BY (shop_id % 4)::text$$) > 0 AS created;
-- a non-monotonic time expression before the proper window
SELECT flowpg.create_flow('cat_hour_day', 'cat.by_hour_day',
  $$SELECT country, extract(hour FROM created_at)::int AS hour_of_day,
		   date_trunc('day', created_at) AS day, count(*) AS n, sum(amount) AS total
	  FROM cat.orders
	 GROUP BY country, extract(hour FROM created_at)::int, date_trunc('day', created_at)$$)
	   > 0 AS created;
SELECT flowpg.create_flow('cat_hour_day_b', 'cat.by_hour_day_b',
  $$SELECT country, extract(hour FROM created_at)::int AS hour_of_day,
		   date_trunc('day', created_at) AS day, count(*) AS n, sum(amount) AS total
	  FROM cat.orders
	 GROUP BY country, extract(hour FROM created_at)::int, date_trunc('day', created_at)$$,
  mode => 'batching') > 0 AS created;
-- an integer key that fails for values the source never holds
SELECT flowpg.create_flow('cat_div', 'cat.by_div',
  $$SELECT 100 / (shop_id - 5) AS weird, count(*) AS n
	  FROM cat.orders WHERE shop_id <> 5 GROUP BY 1$$) > 0 AS created;
-- a categorical key with an integer epoch window after it
SELECT flowpg.create_flow('cat_mod_epoch', 'cat.by_mod_epoch',
  $$SELECT shop_id % 3 AS bucket,
		   (extract(epoch FROM created_at)::bigint / 3600 * 3600) AS hour, count(*) AS n
	  FROM cat.orders GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled
  FROM flowpg.flows WHERE flow_name LIKE 'cat\_%' ORDER BY flow_name;

SELECT flow_name, mode, time_column, window_expression
  FROM flowpg.flows WHERE flow_name LIKE 'cat\_%' ORDER BY flow_name;
SELECT indexdef FROM pg_indexes WHERE schemaname = 'cat' AND tablename = 'by_hour_day';

-- Changes of every kind; the worker and the flushes replan from the stored
-- tree with the stored window.
INSERT INTO cat.orders
SELECT '2024-01-05 00:00+00'::timestamptz + i * interval '13 minutes', i % 9, 'c' || (i % 4), i
FROM generate_series(1, 500) i;
UPDATE cat.orders SET shop_id = shop_id + 1, created_at = created_at + interval '3 hours'
 WHERE amount < 30;
DELETE FROM cat.orders WHERE country = 'c2' AND amount > 80;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed,
	   flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'cat\_%' ORDER BY flow_name;

-- Only the window's windows are recomputed: a refresh of one day.
SELECT flowpg.refresh_flow('cat_hour_day_b', '2024-01-02 00:00+00', '2024-01-03 00:00+00') AS rows;
SELECT * FROM flowpg.flow_window_bounds('cat_hour_day', '2024-01-02 10:00+00'::timestamptz);
SELECT * FROM flowpg.flow_window_bounds('cat_mod', 5);

-- Without a window: expire_after is a clear error, batching needs eval_interval.
SELECT flowpg.create_flow('cat_bad', 'cat.bad',
  $$SELECT shop_id % 4 AS bucket, count(*) AS n FROM cat.orders GROUP BY 1$$,
  expire_after => '1 day');
SELECT flowpg.create_flow('cat_bad', 'cat.bad',
  $$SELECT extract(dow FROM created_at)::int AS dow, count(*) AS n FROM cat.orders GROUP BY 1$$,
  mode => 'batching');
SELECT flowpg.create_flow('cat_evald', 'cat.by_dow_b',
  $$SELECT extract(dow FROM created_at)::int AS dow, count(*) AS n FROM cat.orders GROUP BY 1$$,
  mode => 'batching', eval_interval => '1 minute') > 0 AS created;
SELECT flowpg.flush_flow('cat_evald') >= 0 AS flushed, flow_mismatches('cat_evald') AS mismatches;
SELECT to_regclass('cat.bad') IS NULL AS no_sink_left;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'cat\_%';
DROP SCHEMA cat CASCADE;
