-- Writers ship the source rows of their statements and the worker runs
-- the flows over them: two flows over the same data in two tables, each
-- against the query and the two against each other, with NULLs, NaN, infinities, integer extremes, numeric precision, long
-- texts, FILTER, HAVING, savepoints that roll back, statements of one,
-- a few and many rows in one batch,
-- an overflow inside a transition function, groups that vanish, a user
-- aggregate whose group first gets no input, and rows too big to ship.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA sr;

CREATE TABLE sr.rows_src (ts timestamptz, k int, i4 int4, i8 int8, f8 float8, n numeric, t text, b bool);
CREATE TABLE sr.groups_src (LIKE sr.rows_src);

CREATE FUNCTION sr.flow_query(src text) RETURNS text LANGUAGE sql AS $$
SELECT format($q$SELECT date_trunc('minute', ts) AS minute, k,
		count(*) AS rows_n, count(f8) AS n_f8, sum(f8) AS sum_f8, avg(f8) AS avg_f8,
		min(f8) AS min_f8, max(f8) AS max_f8, sum(i4) AS sum_i4, max(i4) AS max_i4,
		sum(i8) AS sum_i8, min(i8) AS min_i8, avg(n) AS avg_n, sum(n) AS sum_n,
		max(t) AS max_t, min(length(t)) AS min_len, bool_and(b) AS all_b,
		count(*) FILTER (WHERE b) AS n_b, sum(i4) FILTER (WHERE f8 > 0) AS sum_pos,
		flowpg.last_value_by(t, ts) AS last_t
	FROM %s WHERE k <> 13 GROUP BY 1, 2 HAVING count(*) FILTER (WHERE k = 12) = 0$q$, src)
$$;
SELECT flowpg.create_flow('sr_rows', 'sr.rows_sink', sr.flow_query('sr.rows_src'), mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('sr_groups', 'sr.groups_sink', sr.flow_query('sr.groups_src'), mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('sr_rows') >= 0 AS backfilled, flowpg.flush_flow('sr_groups') >= 0 AS backfilled;

CREATE FUNCTION sr.load(src text, first int, last int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format($i$INSERT INTO %s
	SELECT '2024-05-01 00:00+00'::timestamptz + i * interval '3 seconds', i %% 14,
		   CASE i %% 9 WHEN 0 THEN NULL WHEN 1 THEN 2147483647 WHEN 2 THEN -2147483648 ELSE i END,
		   CASE i %% 8 WHEN 0 THEN NULL WHEN 1 THEN 9223372036854775807 WHEN 2 THEN -9223372036854775808 ELSE i::int8 * 1000003 END,
		   CASE i %% 11 WHEN 0 THEN NULL WHEN 1 THEN 'NaN' WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'
				WHEN 4 THEN -0.0 ELSE i / 3.0 END,
		   CASE i %% 7 WHEN 0 THEN NULL WHEN 1 THEN 1e-30 WHEN 2 THEN 123456789.123456789 WHEN 3 THEN 'NaN'
				ELSE i / 7.0 END,
		   CASE i %% 6 WHEN 0 THEN NULL WHEN 1 THEN (SELECT string_agg(md5((i * 31 + j)::text), '') FROM generate_series(1, 100) j)
				ELSE 'v' || i END,
		   CASE i %% 5 WHEN 0 THEN NULL ELSE i %% 3 <> 0 END
	FROM generate_series(%s, %s) i$i$, src, first, last);
END $$;

-- statements of a few rows, one row, and many
CREATE FUNCTION sr.load_all(src text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sr.load(src, 1, 90);
	PERFORM sr.load(src, 91, 91);
	PERFORM sr.load(src, 92, 1500);
END $$;
SELECT sr.load_all('sr.rows_src');
SELECT sr.load_all('sr.groups_src');

-- savepoints: released, rolled back, nested
CREATE FUNCTION sr.savepoints(src text, inner_ship text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sr.load(src, 2001, 2040);
	BEGIN						-- a subtransaction, released
		PERFORM sr.load(src, 2041, 2080);
		BEGIN
			PERFORM sr.load(src, 2081, 2120);
			RAISE EXCEPTION 'roll back the innermost';
		EXCEPTION WHEN raise_exception THEN
			NULL;
		END;
		PERFORM sr.load(src, 2121, 2130);
	EXCEPTION WHEN division_by_zero THEN
		NULL;
	END;
	BEGIN
		PERFORM sr.load(src, 2131, 2160);
		RAISE EXCEPTION 'roll back this one';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
	PERFORM sr.load(src, 2161, 2170);
END $$;
SELECT sr.savepoints('sr.rows_src', 'groups');
SELECT sr.savepoints('sr.groups_src', 'rows');
-- a transaction that rolls back ships nothing
BEGIN;
SELECT sr.load('sr.rows_src', 3001, 3100);
ROLLBACK;

SELECT flowpg.flush_flow('sr_rows') >= 0 AS flushed, flowpg.flush_flow('sr_groups') >= 0 AS flushed;
SELECT flow_mismatches('sr_rows') AS rows_vs_query, flow_mismatches('sr_groups') AS groups_vs_query;
SELECT count(*) AS sink_rows FROM sr.rows_sink;
-- the two ways agree row for row (the sources hold the same rows)
\set cols 'minute, k, rows_n, n_f8, sum_f8, avg_f8, min_f8, max_f8, sum_i4, max_i4, sum_i8, min_i8, avg_n, sum_n, max_t, min_len, all_b, n_b, sum_pos, last_t'
SELECT count(*) AS rows_vs_groups FROM (
	(SELECT :cols FROM sr.rows_sink EXCEPT ALL SELECT :cols FROM sr.groups_sink)
	UNION ALL
	(SELECT :cols FROM sr.groups_sink EXCEPT ALL SELECT :cols FROM sr.rows_sink)) d;
-- what the edges made of them
SELECT k, sum(rows_n) AS rows_n, max(max_i4) AS max_i4, min(min_i8) AS min_i8,
	   sum(n_b) AS n_b, bool_and(all_b) AS all_b, min(min_len) AS min_len
  FROM sr.rows_sink GROUP BY k ORDER BY k;
SELECT minute, k, n_f8, sum_f8, avg_f8, min_f8, max_f8, avg_n, sum_n
  FROM sr.rows_sink WHERE minute = '2024-05-01 00:00+00' ORDER BY k;

-- groups that vanish, and values that all vanish (the recompute's path)
DELETE FROM sr.rows_src WHERE k = 1;
UPDATE sr.rows_src SET f8 = NULL, n = NULL, t = NULL WHERE k = 2;
SELECT flowpg.flush_flow('sr_rows') >= 0 AS flushed;
SELECT flow_mismatches('sr_rows') AS after_vanishing;
SELECT count(*) AS k1_groups FROM sr.rows_sink WHERE k = 1;
-- and rows shipped into those groups again afterwards
INSERT INTO sr.rows_src VALUES ('2024-05-01 00:00:01+00', 1, 1, 1, 1, 1, 'back', true),
	('2024-05-01 00:00:02+00', 2, 2, 2, 'NaN', 2, 'again', NULL);
SELECT flowpg.flush_flow('sr_rows') >= 0 AS flushed;
SELECT flow_mismatches('sr_rows') AS after_return;

-- an overflow inside a transition function: the worker's transition meets
-- it and sends the rows to the recompute.  The writer's statement
-- succeeds, the flow records the error its recompute meets too, and is
-- exact again once the rows are gone.
INSERT INTO sr.groups_src VALUES ('2024-05-01 02:00+00', 9, 1, 1, 1.5e308, 1, 'x', true),
	('2024-05-01 02:00:01+00', 9, 1, 1, 1.5e308, 1, 'x', true);
INSERT INTO sr.rows_src VALUES ('2024-05-01 02:00+00', 9, 1, 1, 1.5e308, 1, 'x', true),
	('2024-05-01 02:00:01+00', 9, 1, 1, 1.5e308, 1, 'x', true);
SELECT count(*) AS rows_kept FROM sr.rows_src WHERE ts >= '2024-05-01 02:00+00';
SELECT flowpg.flush_flow('sr_rows');
SELECT flowpg.flush_flow('sr_groups');
SELECT DISTINCT flow_name, sqlstate, message FROM flowpg.flow_errors
 WHERE flow_name IN ('sr_rows', 'sr_groups') ORDER BY flow_name;
DELETE FROM sr.rows_src WHERE ts >= '2024-05-01 02:00+00';
DELETE FROM sr.groups_src WHERE ts >= '2024-05-01 02:00+00';
SELECT flowpg.flush_flow('sr_rows') >= 0 AS flushed, flowpg.flush_flow('sr_groups') >= 0 AS flushed;
SELECT flow_mismatches('sr_rows') AS rows_after_overflow, flow_mismatches('sr_groups') AS groups_after_overflow;

-- the automatic choice: transactions of one group per row, then of one
-- group for many rows, exact throughout
CREATE TABLE sr.auto_src (ts timestamptz, k int, v float8);
SELECT flowpg.create_flow('sr_auto', 'sr.auto_sink', $$
	SELECT date_trunc('minute', ts) AS minute, k, count(*) AS n, sum(v) AS total, max(v) AS hi
	  FROM sr.auto_src GROUP BY 1, 2$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('sr_auto') >= 0 AS backfilled;
DO $$
BEGIN
	FOR r IN 1..40 LOOP
		INSERT INTO sr.auto_src SELECT '2024-06-01'::timestamptz + (r * 100 + i) * interval '1 minute', i, i * r
		  FROM generate_series(1, 50) i;
		COMMIT;
	END LOOP;
	FOR r IN 1..40 LOOP
		INSERT INTO sr.auto_src SELECT '2024-06-02'::timestamptz + r * interval '1 minute', 1, i
		  FROM generate_series(1, 200) i;
		COMMIT;
	END LOOP;
END $$;
SELECT flowpg.flush_flow('sr_auto') >= 0 AS flushed;
SELECT flow_mismatches('sr_auto') AS auto_vs_query, count(*) AS groups, sum(n) AS n FROM sr.auto_sink;

-- a user aggregate with a strict transition function, no initial value and
-- a combine function that is not strict: a group whose first batch (in
-- groups) had only NULL inputs for it, then rows that have values
CREATE FUNCTION sr.greatest_of(a int, b int) RETURNS int IMMUTABLE CALLED ON NULL INPUT
	LANGUAGE sql AS $$SELECT CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE greatest(a, b) END$$;
CREATE AGGREGATE sr.top(int) (sfunc = int4larger, stype = int4, combinefunc = sr.greatest_of);
CREATE TABLE sr.top_src (k int, v int);
SELECT flowpg.create_flow('sr_top', 'sr.top_sink', $$
	SELECT k, sr.top(v) AS top, count(*) AS n FROM sr.top_src GROUP BY k$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('sr_top') >= 0 AS backfilled;
INSERT INTO sr.top_src VALUES (1, NULL), (2, NULL);
SELECT flowpg.flush_flow('sr_top') >= 0 AS flushed;
INSERT INTO sr.top_src VALUES (1, 5), (2, NULL), (2, 7);
SELECT flowpg.flush_flow('sr_top') >= 0 AS flushed;
SELECT flow_mismatches('sr_top') AS top_vs_query;
SELECT k, top, n FROM sr.top_sink ORDER BY k;
-- the same group without input twice, combined at commit (a savepoint)
BEGIN;
INSERT INTO sr.top_src VALUES (3, NULL);
SAVEPOINT s;
INSERT INTO sr.top_src VALUES (3, NULL);
RELEASE s;
COMMIT;
SELECT flowpg.flush_flow('sr_top') >= 0 AS flushed;
INSERT INTO sr.top_src VALUES (3, 9);
SELECT flowpg.flush_flow('sr_top') >= 0 AS flushed;
SELECT flow_mismatches('sr_top') AS top_after_savepoint;
SELECT k, top, n FROM sr.top_sink WHERE k = 3;

-- rows too big to ship (a few megabytes of arguments in one transaction) go
-- to the recompute instead, exactly
SELECT fallbacks AS fallbacks_before FROM flowpg.flow_stats WHERE flow_name = 'sr_rows' \gset
INSERT INTO sr.rows_src
SELECT '2024-05-01 03:00+00'::timestamptz + i * interval '1 second', 5, i, i, i, i,
	   (SELECT string_agg(md5((i * 7919 + j)::text), '') FROM generate_series(1, 4000) j), true
  FROM generate_series(1, 40) i;
SELECT fallbacks > :fallbacks_before AS fell_back FROM flowpg.flow_stats WHERE flow_name = 'sr_rows';
SELECT flowpg.flush_flow('sr_rows') >= 0 AS flushed;
SELECT flow_mismatches('sr_rows') AS after_big_rows;

SELECT flowpg.drop_flow(f) FROM unnest(ARRAY['sr_rows', 'sr_groups', 'sr_auto', 'sr_top']) f;
DROP SCHEMA sr CASCADE;
