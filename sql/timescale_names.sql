-- What people coming from TimescaleDB reach for: time_bucket in its common
-- forms (TimescaleDB's semantics, the flow's window a date_bin or
-- date_trunc), first(value, time) / last(value, time), hints for its other
-- names; flows over flows shown and flushed as a chain; and the smaller
-- things a DBA meets (ALTER COLUMN TYPE, DROP EXTENSION, a window in a
-- subquery, waiting for a backfill).
CREATE SCHEMA ts;
SET search_path = ts, public;
CREATE TABLE ts.cond (time timestamptz NOT NULL, device text NOT NULL, temp float8 NOT NULL,
					  local_time timestamp NOT NULL, day date NOT NULL, epoch bigint NOT NULL);
INSERT INTO ts.cond
SELECT '2024-03-29 12:00+00'::timestamptz + i * interval '7 minutes', 'd' || (i % 3), (i % 20) / 4.0,
	   '2024-03-29 12:00'::timestamp + i * interval '7 minutes',
	   '2024-03-29'::date + i / 200, 1711713600 + i * 420
  FROM generate_series(0, 2999) i;

-- time_bucket as TimescaleDB computes it: weeks from Monday 2000-01-03,
-- months from 2000-01-01, in UTC (or the zone given), integers by floor
SELECT flowpg.time_bucket('1 week', '2024-03-06 12:00+00'::timestamptz) AS monday,
	   flowpg.time_bucket('1 month', '2024-03-06 12:00+00'::timestamptz) AS month,
	   flowpg.time_bucket('2 months', '2024-03-06 12:00+00'::timestamptz) AS two_months,
	   flowpg.time_bucket('1 day', '2024-03-31 01:30+00'::timestamptz, 'Europe/Berlin') AS berlin_day,
	   flowpg.time_bucket('15 minutes', '2024-03-06 12:07+00'::timestamptz, "offset" => '5 minutes') AS shifted,
	   flowpg.time_bucket('1 hour', '2024-03-06 12:07+00'::timestamptz, '2000-01-01 00:30+00'::timestamptz) AS from_origin;
SELECT flowpg.time_bucket(10, 113) AS b1, flowpg.time_bucket(10, -3) AS b2,
	   flowpg.time_bucket(10, 113, 5) AS b3, flowpg.time_bucket('1 week', '2024-03-06'::date) AS week_of_date;
SELECT flowpg.time_bucket('1 month 2 days', now());

-- in flows: the common forms become date_bin / date_trunc windows
SELECT flowpg.create_flow('ts_' || n, 'ts.b_' || n, q) > 0 AS created
  FROM (VALUES
	('hourly', $$SELECT time_bucket('1 hour', time) AS bucket, device, avg(temp) AS mean,
						first(temp, time) AS first_temp, last(temp, time) AS last_temp
				   FROM ts.cond GROUP BY 1, 2$$),
	('monthly', $$SELECT time_bucket('1 month', time) AS bucket, device, max(temp) AS hi FROM ts.cond GROUP BY 1, 2$$),
	('berlin', $$SELECT time_bucket('1 day', time, 'Europe/Berlin') AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$),
	('offset', $$SELECT time_bucket('15 minutes', time, "offset" => '5 minutes') AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$),
	('origin', $$SELECT time_bucket('1 hour', time, origin => '2000-01-01 00:30+00') AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$),
	('local', $$SELECT time_bucket('1 day', local_time) AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$),
	('date', $$SELECT time_bucket('1 week', day) AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$),
	('two_months', $$SELECT time_bucket('2 months', time) AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$),
	('epoch', $$SELECT time_bucket(3600, epoch) AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$)) f(n, q);
SELECT flow_name, mode, window_expression FROM flowpg.flows WHERE flow_name LIKE 'ts\_%' ORDER BY flow_name;
SELECT flowpg.flush_flow(flow_name) >= 0 AS flushed FROM flowpg.flows WHERE flow_name LIKE 'ts\_%';
SELECT flow_name, flow_mismatches(flow_name) AS mismatches FROM flowpg.flows
 WHERE flow_name LIKE 'ts\_%' ORDER BY flow_name;
-- the windows equal flowpg.time_bucket called as such, and first / last are the
-- values at the earliest and latest time
SELECT (SELECT count(*) FROM (
			SELECT bucket, device, mean, first_temp, last_temp FROM ts.b_hourly
			EXCEPT ALL
			SELECT flowpg.time_bucket('1 hour', time), device, avg(temp),
				   (array_agg(temp ORDER BY time))[1], (array_agg(temp ORDER BY time DESC))[1]
			  FROM ts.cond GROUP BY 1, 2) d) AS hourly_differing,
	   (SELECT count(*) FROM (
			SELECT bucket, n FROM ts.b_berlin
			EXCEPT ALL
			SELECT flowpg.time_bucket('1 day', time, 'Europe/Berlin'), count(*) FROM ts.cond GROUP BY 1) d)
	   AS berlin_differing,
	   (SELECT count(*) FROM (
			SELECT bucket, n FROM ts.b_offset
			EXCEPT ALL
			SELECT flowpg.time_bucket('15 minutes', time, "offset" => '5 minutes'), count(*) FROM ts.cond GROUP BY 1) d)
	   AS offset_differing;
-- changes flow through as in any flow
INSERT INTO ts.cond VALUES ('2024-03-31 00:59:59+00', 'd1', 99, '2024-03-31 00:59:59', '2024-03-31', 1711846799);
DELETE FROM ts.cond WHERE time < '2024-03-29 13:00+00';
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AND flow_mismatches(flow_name) = 0 AS exact
  FROM flowpg.flows WHERE flow_name LIKE 'ts\_%' ORDER BY flow_name;
-- what is not TimescaleDB's to compute in a flow says what to do instead
SELECT flowpg.create_flow('ts_gapfill', 'ts.gapfill',
  $$SELECT time_bucket_gapfill('1 hour', time) AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$);
SELECT flowpg.create_flow('ts_mixed', 'ts.mixed',
  $$SELECT time_bucket('1 month 2 days', time) AS bucket, count(*) AS n FROM ts.cond GROUP BY 1$$);

-- Flows over flows: which read which, and a flush of the top flushes the chain.
SELECT flowpg.create_flow('ts_daily', 'ts.daily',
  $$SELECT time_bucket('1 day', bucket) AS day, device, max(hi) AS hi FROM ts.b_monthly GROUP BY 1, 2$$,
  mode => 'batching') > 0 AS created;
SELECT flowpg.create_flow('ts_top', 'ts.top',
  $$SELECT date_trunc('year', day) AS year, max(hi) AS hi FROM ts.daily GROUP BY 1$$) > 0 AS created;
SELECT flow_name, upstream_flow_name, via_table FROM flowpg.flow_dependencies
 WHERE flow_name LIKE 'ts\_%' ORDER BY flow_name;
INSERT INTO ts.cond VALUES ('2024-04-02 10:00+00', 'd2', 123.5, '2024-04-02 10:00', '2024-04-02', 1712052000);
SELECT flowpg.flush_flow('ts_top') >= 0 AS flushed;
SELECT hi AS top_sees_the_new_row FROM ts.top;
SELECT flow_mismatches('ts_monthly') AS monthly, flow_mismatches('ts_daily') AS daily,
	   flow_mismatches('ts_top') AS top;

-- ALTER COLUMN TYPE of a column flows read: refused, naming every flow and the way out
ALTER TABLE ts.cond ALTER COLUMN temp TYPE numeric;
ALTER TABLE ts.cond ALTER COLUMN device TYPE varchar(10);
-- the way out: drop the flows (their sinks stay), alter, create them again
SELECT flowpg.drop_flow(f) FROM unnest(ARRAY['ts_top', 'ts_daily', 'ts_monthly', 'ts_hourly']) f;
ALTER TABLE ts.cond ALTER COLUMN temp TYPE numeric;
SELECT flowpg.create_flow('ts_monthly', 'ts.b_monthly',
  $$SELECT time_bucket('1 month', time) AS bucket, device, max(temp)::float8 AS hi FROM ts.cond GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.flush_flow('ts_monthly') >= 0 AS flushed, flow_mismatches('ts_monthly') AS mismatches;

-- A time window computed in a subquery is not one flowpg can see: it says so.
SELECT flowpg.create_flow('ts_sub', 'ts.sub',
  $$SELECT w, count(*) AS n FROM (SELECT date_trunc('hour', time) AS w FROM ts.cond) s GROUP BY w$$,
  mode => 'batching');
SELECT flowpg.create_flow('ts_sub', 'ts.sub',
  $$SELECT date_trunc('hour', s.time) AS w, count(*) AS n FROM (SELECT time FROM ts.cond) s GROUP BY 1$$,
  mode => 'batching');

-- DROP EXTENSION without CASCADE: how many flows, and what CASCADE keeps
-- (other suites' flows may exist too: the count is masked).
DO $$
DECLARE message text; detail text; hint text;
BEGIN
	DROP EXTENSION flowpg;
EXCEPTION WHEN dependent_objects_still_exist THEN
	GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RAISE WARNING '%', regexp_replace(message, '[0-9]+ flows exist', 'N flows exist')
		USING DETAIL = CASE WHEN detail LIKE 'Flows: %' THEN 'Flows: ...' ELSE detail END, HINT = hint;
END $$;

-- Waiting for a backfill: not in the creating transaction, else until it is done.
BEGIN;
SELECT flowpg.create_flow('ts_wait', 'ts.wait',
  $$SELECT date_trunc('hour', time) AS hour, count(*) AS n FROM ts.cond GROUP BY 1$$, mode => 'batching') > 0 AS created;
SELECT flowpg.wait_for_backfill('ts_wait');
ROLLBACK;
SELECT flowpg.create_flow('ts_wait', 'ts.wait',
  $$SELECT date_trunc('hour', time) AS hour, count(*) AS n FROM ts.cond GROUP BY 1$$, mode => 'batching') > 0 AS created;
SELECT flowpg.wait_for_backfill('ts_wait', '60 s');
SELECT count(*) AS backfills_left FROM flowpg.flow_backfills WHERE flow_name = 'ts_wait';
SELECT flow_mismatches('ts_wait') AS mismatches;
-- flush_flow completing a backfill returns the rows the backfill wrote
-- (in the creating transaction, where no worker can have done it already)
BEGIN;
SELECT flowpg.create_flow('ts_count', 'ts.count',
  $$SELECT date_trunc('hour', time) AS hour, count(*) AS n FROM ts.cond GROUP BY 1$$, mode => 'batching') > 0 AS created;
SELECT flowpg.flush_flow('ts_count') AS flushed \gset
SELECT :flushed = count(*) AS rows_of_the_backfill FROM ts.count;
COMMIT;

-- freshness in milliseconds, as exact as the interval it comes from
SELECT bool_and(freshness_ms IS NULL OR freshness_ms = round(freshness_ms::numeric, 3)) AS exact_ms
  FROM flowpg.flow_stats;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'ts\_%';
RESET search_path;
