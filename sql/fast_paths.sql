-- The streaming engine's fast paths against the generic ones: aggregates
-- computed inline (count, sum, min and max over float8, int4, int8 and
-- timestamps, avg of int4 and float8) against the same flow with
-- flowpg.inline_aggregates off and
-- against the query itself (PostgreSQL's own aggregates), over NULLs, NaN,
-- infinities, extremes and groups that empty; the window cache (a row in
-- a known window is not evaluated) against the window expression, across
-- window edges, before 1970, at infinity and for windows of varying width;
-- and a bulk statement that goes to the recompute at once.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA fp;

CREATE TABLE fp.inline_src (ts timestamptz, k int, i4 int4, i8 int8, f8 float8, t timestamptz);
CREATE TABLE fp.generic_src (LIKE fp.inline_src);

-- the same flow over each table; the generic one is compiled with
-- inline_aggregates off in this session
CREATE FUNCTION fp.flow_query(src text) RETURNS text LANGUAGE sql AS $$
SELECT format($q$SELECT date_trunc('minute', ts) AS minute, k,
		count(*) AS n, count(f8) AS n_f8, sum(f8) AS sum_f8, min(f8) AS min_f8, max(f8) AS max_f8,
		sum(i4) AS sum_i4, min(i4) AS min_i4, max(i4) AS max_i4,
		count(i8) AS n_i8, min(i8) AS min_i8, max(i8) AS max_i8,
		min(t) AS min_t, max(t) AS max_t, avg(f8) AS avg_f8, avg(i4) AS avg_i4
	FROM %s GROUP BY 1, 2$q$, src)
$$;
SELECT flowpg.create_flow('fp_inline', 'fp.inline_sink', fp.flow_query('fp.inline_src'), mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('fp_generic', 'fp.generic_sink', fp.flow_query('fp.generic_src'), mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('fp_inline') >= 0 AS backfilled, flowpg.flush_flow('fp_generic') >= 0 AS backfilled;

-- edge values: NULLs, NaN, infinities, the int4/int8 extremes, infinite times
CREATE FUNCTION fp.load(src text, first int, last int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format($i$INSERT INTO %s
	SELECT '2024-05-01 00:00+00'::timestamptz + i * interval '7 seconds', i %% 4,
		   CASE i %% 9 WHEN 0 THEN NULL WHEN 1 THEN 2147483647 WHEN 2 THEN -2147483648 ELSE i END,
		   CASE i %% 8 WHEN 0 THEN NULL WHEN 1 THEN 9223372036854775807 WHEN 2 THEN -9223372036854775808 ELSE i * 1000003 END,
		   CASE i %% 11 WHEN 0 THEN NULL WHEN 1 THEN 'NaN' WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'
				WHEN 4 THEN -0.0 ELSE i / 2.0 END,
		   CASE i %% 10 WHEN 0 THEN NULL WHEN 1 THEN 'infinity' WHEN 2 THEN '-infinity'
				ELSE '2024-01-01 00:00+00'::timestamptz + i * interval '1 hour' END
	FROM generate_series(%s, %s) i$i$, src, first, last);
END $$;
SELECT fp.load('fp.inline_src', 1, 400);
SELECT fp.load('fp.inline_src', 401, 800);
SET flowpg.inline_aggregates = off;
SELECT fp.load('fp.generic_src', 1, 400);
SELECT fp.load('fp.generic_src', 401, 800);
RESET flowpg.inline_aggregates;
-- rows one at a time, in savepoints, some rolled back
BEGIN;
INSERT INTO fp.inline_src VALUES ('2024-05-01 00:00:30+00', 7, NULL, NULL, 'NaN', NULL);
SAVEPOINT a;
INSERT INTO fp.inline_src VALUES ('2024-05-01 00:00:31+00', 7, 5, 5, 1.5, 'infinity');
ROLLBACK TO a;
INSERT INTO fp.inline_src VALUES ('2024-05-01 00:00:32+00', 7, -5, -5, '-Infinity', '-infinity');
COMMIT;
SELECT flowpg.flush_flow('fp_inline') >= 0 AS flushed, flowpg.flush_flow('fp_generic') >= 0 AS flushed;
SELECT flow_mismatches('fp_inline') AS inline_vs_query, flow_mismatches('fp_generic') AS generic_vs_query;
-- the two paths agree with each other row for row
SELECT count(*) AS inline_vs_generic FROM (
	(SELECT minute, k, n, n_f8, sum_f8, min_f8, max_f8, sum_i4, min_i4, max_i4, n_i8, min_i8, max_i8,
			min_t, max_t, avg_f8, avg_i4 FROM fp.inline_sink WHERE k <> 7
	 EXCEPT ALL
	 SELECT minute, k, n, n_f8, sum_f8, min_f8, max_f8, sum_i4, min_i4, max_i4, n_i8, min_i8, max_i8,
			min_t, max_t, avg_f8, avg_i4 FROM fp.generic_sink)
	UNION ALL
	(SELECT minute, k, n, n_f8, sum_f8, min_f8, max_f8, sum_i4, min_i4, max_i4, n_i8, min_i8, max_i8,
			min_t, max_t, avg_f8, avg_i4 FROM fp.generic_sink
	 EXCEPT ALL
	 SELECT minute, k, n, n_f8, sum_f8, min_f8, max_f8, sum_i4, min_i4, max_i4, n_i8, min_i8, max_i8,
			min_t, max_t, avg_f8, avg_i4 FROM fp.inline_sink WHERE k <> 7)) d;
-- what the edges made of them
SELECT k, n, n_f8, sum_f8, min_f8, max_f8, min_i4, max_i4, min_i8, max_i8, min_t, max_t
  FROM fp.inline_sink WHERE minute = '2024-05-01 00:00+00' ORDER BY k;

-- groups whose aggregated values all vanish, and groups that vanish
DELETE FROM fp.inline_src WHERE k = 1 AND ts < '2024-05-01 00:30+00';
UPDATE fp.inline_src SET f8 = NULL, i4 = NULL, i8 = NULL, t = NULL WHERE k = 2;
DELETE FROM fp.inline_src WHERE k = 3;
SELECT flowpg.flush_flow('fp_inline') >= 0 AS flushed;
SELECT flow_mismatches('fp_inline') AS after_emptying;
SELECT k, count(*) AS groups, sum(n) AS n, sum(n_f8) AS n_f8, max(sum_f8) AS sum_f8, max(max_i4) AS max_i4
  FROM fp.inline_sink GROUP BY k ORDER BY k;

-- numeric overflow inside an inline function (in the worker): the
-- writer's statement succeeds, the flow records the error (as its
-- recompute meets it too), and is exact again once the row is gone
INSERT INTO fp.inline_src VALUES ('2024-05-01 01:00+00', 9, 1, 1, 1.5e308, NULL),
	('2024-05-01 01:00:01+00', 9, 1, 1, 1.5e308, NULL);
SELECT count(*) AS rows_kept FROM fp.inline_src WHERE k = 9;
SELECT flowpg.flush_flow('fp_inline');
SELECT state, failures > 0 AS failed FROM flowpg.flow_stats WHERE flow_name = 'fp_inline';
SELECT sqlstate, message FROM flowpg.flow_errors WHERE flow_name = 'fp_inline' ORDER BY at DESC LIMIT 1;
DELETE FROM fp.inline_src WHERE k = 9;
SELECT flowpg.flush_flow('fp_inline') >= 0 AS flushed;
SELECT flow_mismatches('fp_inline') AS after_overflow;

-- avg, variance and stddev of float8 inline (float8_accum's update, in
-- place): each group's rows in one statement into new groups, so that the
-- worker's rows go through the transition in the order the query's do,
-- with values whose sums and squares round (tenths, tiny and huge ones),
-- NaN and infinities; inline and generic against the query, bit for bit
CREATE TABLE fp.var_src (k int, x float8);
CREATE TABLE fp.var_generic_src (LIKE fp.var_src);
CREATE FUNCTION fp.var_query(src text) RETURNS text LANGUAGE sql AS $$
SELECT format($q$SELECT k, count(x) AS n, avg(x) AS mean, var_pop(x) AS vp, var_samp(x) AS vs,
		stddev_pop(x) AS sp, stddev_samp(x) AS ss
	FROM %s GROUP BY 1$q$, src)
$$;
SELECT flowpg.create_flow('fp_var', 'fp.var_sink', fp.var_query('fp.var_src'), mode => 'streaming') > 0 AS created;
SET flowpg.inline_aggregates = off;
SELECT flowpg.create_flow('fp_var_generic', 'fp.var_generic_sink', fp.var_query('fp.var_generic_src'),
						  mode => 'streaming') > 0 AS created;
RESET flowpg.inline_aggregates;
SELECT line FROM flowpg.explain_flow('fp_var') AS e(line) WHERE line ~ '^    Path: ';
CREATE FUNCTION fp.var_rows(src text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format($i$INSERT INTO %s
	SELECT 1, i / 10.0 FROM generate_series(1, 997) i
	UNION ALL SELECT 2, CASE WHEN i %% 2 = 0 THEN 1e-300 * i ELSE 1e150 / i END FROM generate_series(1, 301) i
	UNION ALL SELECT 3, (i * 7919 %% 1000) / 3.0 - 111.1 FROM generate_series(1, 503) i
	UNION ALL SELECT 4, x FROM unnest('{1.5, NaN, 2.5}'::float8[]) x
	UNION ALL SELECT 5, x FROM unnest('{Infinity, 1, 2}'::float8[]) x
	UNION ALL SELECT 6, x FROM unnest('{-Infinity, Infinity}'::float8[]) x
	UNION ALL SELECT 7, x FROM unnest('{NaN}'::float8[]) x
	UNION ALL SELECT 8, 42.125
	UNION ALL SELECT 9, NULL$i$, src);
END $$;
SELECT fp.var_rows('fp.var_src');
SET flowpg.inline_aggregates = off;
SELECT fp.var_rows('fp.var_generic_src');
RESET flowpg.inline_aggregates;
SELECT flowpg.flush_flow('fp_var') >= 0 AS flushed, flowpg.flush_flow('fp_var_generic') >= 0 AS flushed;
SELECT flow_mismatches('fp_var') AS inline_vs_query, flow_mismatches('fp_var_generic') AS generic_vs_query;
SELECT k, n, mean, vp, ss FROM fp.var_sink WHERE k >= 4 ORDER BY k;
-- finite inputs whose squares overflow: the error float8_accum raises
INSERT INTO fp.var_src VALUES (10, 1e300), (10, -1e300);
SELECT count(*) AS rows_kept FROM fp.var_src WHERE k = 10;
SELECT flowpg.flush_flow('fp_var');
SELECT sqlstate, message FROM flowpg.flow_errors WHERE flow_name = 'fp_var' ORDER BY at DESC LIMIT 1;
DELETE FROM fp.var_src WHERE k = 10;
SELECT flowpg.flush_flow('fp_var') >= 0 AS flushed;
SELECT flow_mismatches('fp_var') AS after_overflow;

-- the window cache: rows out of order across window edges, before 1970
-- (negative ordinals), at infinity, with windows of fixed width (date_bin
-- with an odd stride and origin) and of varying width (calendar months)
CREATE TABLE fp.times (ts timestamptz, v int);
SELECT flowpg.create_flow('fp_bins', 'fp.bins', $$
	SELECT date_bin('17 seconds', ts, '1969-12-31 23:59:58+00') AS bin, count(*) AS n, sum(v) AS total
	  FROM fp.times GROUP BY 1$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('fp_months', 'fp.months', $$
	SELECT date_trunc('month', ts) AS month, count(*) AS n, max(v) AS hi
	  FROM fp.times GROUP BY 1$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('fp_bins') >= 0 AS backfilled, flowpg.flush_flow('fp_months') >= 0 AS backfilled;
INSERT INTO fp.times
SELECT '1969-12-31 23:50:00+00'::timestamptz + ((i * 7919) % 2000) * interval '1 second', i
  FROM generate_series(1, 3000) i;
INSERT INTO fp.times
SELECT '2023-11-15 00:00+00'::timestamptz + ((i * 104729) % 400) * interval '1 day' + i * interval '1 second', i
  FROM generate_series(1, 3000) i;
INSERT INTO fp.times VALUES ('infinity', 1), ('-infinity', 2), (NULL, 3),
	('1969-12-31 23:59:58+00', 4), ('1969-12-31 23:59:57.999999+00', 5),
	('2024-03-01 00:00:00+00', 6), ('2024-02-29 23:59:59.999999+00', 7);
SELECT flowpg.flush_flow('fp_bins') >= 0 AS flushed, flowpg.flush_flow('fp_months') >= 0 AS flushed;
SELECT flow_mismatches('fp_bins') AS bins, flow_mismatches('fp_months') AS months;
SELECT month, n FROM fp.months WHERE month IS NULL OR month < '1970-01-01' OR month >= '2024-02-01'
 ORDER BY month NULLS FIRST LIMIT 8;

-- a statement of more rows than a quarter of the queue holds goes to the
-- recompute at once: exact, and counted as a fallback
SELECT fallbacks AS fallbacks_before FROM flowpg.flow_stats WHERE flow_name = 'fp_bins' \gset
INSERT INTO fp.times
SELECT '2025-01-01 00:00+00'::timestamptz + i * interval '1 second', i FROM generate_series(1, 70000) i;
SELECT fallbacks > :fallbacks_before AS fell_back FROM flowpg.flow_stats WHERE flow_name = 'fp_bins';
SELECT flowpg.flush_flow('fp_bins') >= 0 AS flushed;
SELECT flow_mismatches('fp_bins') AS after_bulk;

SELECT flowpg.drop_flow(f) FROM unnest(ARRAY['fp_inline', 'fp_generic', 'fp_bins', 'fp_months']) f;
DROP SCHEMA fp CASCADE;
