-- The time window: found by probing a monotonic expression.
-- Stable output: UTC, ISO dates.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- window_bounds(expression over $1, value) -> [window_start, window_end)
SELECT * FROM flowpg.window_bounds($$date_trunc('hour', $1)$$, '2024-05-01 10:20:30+00'::timestamptz);
SELECT * FROM flowpg.window_bounds($$date_trunc('hour', $1)$$, '2024-05-01 10:00:00+00'::timestamptz);
SELECT * FROM flowpg.window_bounds($$date_trunc('month', $1)$$, '2024-02-10 00:00:00'::timestamp);
-- date_bin with an origin that is not on the hour
SELECT * FROM flowpg.window_bounds($$date_bin('15 minutes', $1, '2020-01-01 00:07:00+00')$$, '2024-05-01 10:20:00+00'::timestamptz);
SELECT * FROM flowpg.window_bounds($$date_bin('15 minutes', $1, '2020-01-01 00:07:00+00')$$, '2024-05-01 10:07:00+00'::timestamptz);
-- casts
SELECT * FROM flowpg.window_bounds($$$1::date$$, '2024-05-01 10:20:00'::timestamp);
SELECT * FROM flowpg.window_bounds($$date_trunc('week', $1)::date$$, '2024-05-01'::date);
-- identity: every value is its own window
SELECT * FROM flowpg.window_bounds($$$1$$, '2024-05-01 10:20:00'::timestamp);
-- integer epochs
SELECT * FROM flowpg.window_bounds($$$1 / 300 * 300$$, 1714558800 + 123);
SELECT * FROM flowpg.window_bounds($$($1 / 60000)::int$$, 1714558800123::bigint);
SELECT * FROM flowpg.window_bounds($$to_timestamp($1 - $1 % 3600)$$, 1714558800 + 4000);
-- a user SQL function
CREATE FUNCTION shift_start(t timestamptz) RETURNS timestamptz
	LANGUAGE sql IMMUTABLE
	RETURN date_bin('8 hours', t, '2000-01-01 06:00:00+00');
SELECT * FROM flowpg.window_bounds($$shift_start($1)$$, '2024-05-01 05:59:59.999999+00'::timestamptz);
SELECT * FROM flowpg.window_bounds($$shift_start($1)$$, '2024-05-01 06:00:00+00'::timestamptz);
-- a constant expression is one window for everything
SELECT * FROM flowpg.window_bounds($$$1 * 0$$, 42);

-- Non-monotonic expressions are rejected, saying where.
SELECT * FROM flowpg.window_bounds($$extract(minute FROM $1)$$, '2024-05-01 10:20:00+00'::timestamptz);
SELECT * FROM flowpg.window_bounds($$-$1$$, 5);
SELECT * FROM flowpg.window_bounds($$date_part('dow', $1)$$, '2024-05-01'::date);
-- Other bad input.
SELECT * FROM flowpg.window_bounds($$NULLIF($1, $1)$$, 5);
SELECT * FROM flowpg.window_bounds($$upper($1)$$, 'abc'::text);
SELECT * FROM flowpg.window_bounds($$$1 FROM pg_class$$, 5);
SELECT * FROM flowpg.window_bounds($$$1 + (random() * 10)::int$$, 5);
SELECT * FROM flowpg.window_bounds($$$1::text$$, 5);

-- A flow finds its window among the GROUP BY expressions.
CREATE TABLE readings (at timestamp, epoch bigint, day date, sensor int, reading numeric);
INSERT INTO readings
SELECT '2024-05-01 00:00'::timestamp + i * interval '17 minutes',
	   1714521600 + i * 1020, '2024-05-01'::date + i / 50, i % 3, i
FROM generate_series(0, 499) i;

SELECT flowpg.create_flow('by_shift', 'readings_by_shift',
  $$SELECT sensor, shift_start(at::timestamptz) AS shift, sum(reading) AS total
	  FROM readings GROUP BY sensor, shift_start(at::timestamptz)$$) > 0 AS created;
SELECT flowpg.create_flow('by_epoch', 'readings_by_epoch',
  $$SELECT sensor, epoch / 3600 * 3600 AS hour, count(*) AS n FROM readings GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.create_flow('by_day', 'readings_by_day',
  $$SELECT day, sensor, max(reading) AS top FROM readings GROUP BY day, sensor$$) > 0 AS created;
SELECT flowpg.create_flow('by_week', 'readings_by_week',
  $$SELECT sensor, date_trunc('week', at)::date AS week, avg(reading) AS mean FROM readings GROUP BY 1, 2$$) > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name LIKE 'by\_%' ORDER BY flow_id;
SELECT flow_name, time_column, window_expression FROM flowpg.flows
 WHERE flow_name LIKE 'by\_%' ORDER BY flow_id;
SELECT flow_name, flow_mismatches(flow_name) AS mismatches FROM flowpg.flows
 WHERE flow_name LIKE 'by\_%' ORDER BY flow_id;

-- flow_window_bounds probes a flow's own window expression.
SELECT * FROM flowpg.flow_window_bounds('by_shift', '2024-05-01 13:00:00'::timestamp);
SELECT * FROM flowpg.flow_window_bounds('by_epoch', 1714521600::bigint + 5000);
SELECT * FROM flowpg.flow_window_bounds('by_day', '2024-05-03'::date);
SELECT * FROM flowpg.flow_window_bounds('by_week', '2024-05-03 10:00'::timestamp);
SELECT * FROM flowpg.flow_window_bounds('by_epoch', 5);
SELECT * FROM flowpg.flow_window_bounds('per_device', now());
SELECT * FROM flowpg.flow_window_bounds('no_such_flow', now());
