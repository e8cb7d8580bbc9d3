-- The streaming engine: partial aggregates computed by the writers, merged
-- by the worker, upserted into the sink.  Every flow is checked against its
-- query run on the source (flow_mismatches) after flush_flow.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA st;

-- Values are whole numbers (or halves) so that sums do not depend on the
-- order rows are added in.
CREATE TABLE st.readings (
	ts timestamptz,
	device int,
	site text,
	tag uuid,
	price numeric,
	small int2,
	big int8,
	f4 float4,
	f8 float8,
	flag boolean,
	bits int4,
	dur interval,
	day date
);
CREATE FUNCTION st.load(first int, last int) RETURNS void LANGUAGE sql AS $$
INSERT INTO st.readings
SELECT '2024-05-01 00:00+00'::timestamptz + i * interval '37 seconds',
	   CASE WHEN i % 13 = 0 THEN NULL ELSE i % 5 END,
	   CASE WHEN i % 17 = 0 THEN NULL ELSE 'site-' || (i % 3) END,
	   ('00000000-0000-0000-0000-00000000000' || (i % 4))::uuid,
	   CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 100) * 1.25 END,
	   (i % 50)::int2,
	   i::int8 * 1000003,
	   (i % 64)::float4 / 2,
	   CASE WHEN i % 19 = 0 THEN NULL ELSE (i % 1000)::float8 END,
	   CASE WHEN i % 23 = 0 THEN NULL ELSE i % 3 <> 0 END,
	   i % 1024,
	   (i % 90) * interval '1 second',
	   date '2024-05-01' + (i % 7)
FROM generate_series(first, last) i
$$;
SELECT st.load(1, 3000);

-- Every aggregate family with a combine function, per device and minute.
SELECT flowpg.create_flow('st_all', 'st.all_aggs', $$
	SELECT date_trunc('minute', ts) AS minute, device,
		   count(*) AS n, count(price) AS n_price,
		   sum(small) AS sum2, sum(device) AS sum4, sum(big) AS sum8, sum(price) AS sum_num,
		   sum(f4) AS sum_f4, sum(f8) AS sum_f8, sum(dur) AS sum_dur,
		   avg(small) AS avg2, avg(device) AS avg4, avg(big) AS avg8, avg(price) AS avg_num,
		   avg(f8) AS avg_f8, avg(dur) AS avg_dur,
		   min(price) AS min_num, max(price) AS max_num, min(site) AS min_text,
		   max(site) AS max_text, min(ts) AS first_ts, max(day) AS last_day,
		   min(tag::text) AS min_tag,
		   stddev(f8) AS sd, stddev_pop(f8) AS sdp, variance(price) AS var_num,
		   var_pop(big) AS vp8, var_samp(small) AS vs2,
		   bool_and(flag) AS all_flag, bool_or(flag) AS any_flag, every(flag) AS every_flag,
		   bit_and(bits) AS band, bit_or(bits) AS bor, bit_xor(bits) AS bxor,
		   corr(f8, small) AS corr, covar_pop(f8, small) AS cov, regr_slope(f8, small) AS slope
	  FROM st.readings GROUP BY 1, 2$$) > 0 AS created;
SELECT mode FROM flowpg.flows WHERE flow_name = 'st_all';
SELECT flowpg.flush_flow('st_all') >= 0 AS flushed, flow_mismatches('st_all') AS mismatches;

-- Keys of several types, NULLs among them, WHERE and HAVING, date_bin.
SELECT flowpg.create_flow('st_keys', 'st.by_keys', $$
	SELECT date_bin('15 minutes', ts, '2024-01-01') AS slot, site, tag, price, count(*) AS n,
		   sum(f8) AS total
	  FROM st.readings WHERE device IS DISTINCT FROM 3
	 GROUP BY 1, 2, 3, 4 HAVING count(*) > 1$$) > 0 AS created;
SELECT flowpg.flush_flow('st_keys') >= 0 AS flushed, flow_mismatches('st_keys') AS mismatches;

-- A timestamptz key that is not the window, without any window.
SELECT flowpg.create_flow('st_nowindow', 'st.per_site', $$
	SELECT site, count(*) AS n, max(ts) AS last_seen, sum(price) AS revenue
	  FROM st.readings GROUP BY site$$) > 0 AS created;
SELECT flowpg.create_flow('st_total', 'st.total', $$
	SELECT count(*) AS n, sum(f8) AS total, min(ts) AS first_seen FROM st.readings$$) > 0 AS created;
SELECT flowpg.create_flow('st_outputs', 'st.outputs', $$
	SELECT date_trunc('hour', ts) AS hour, device % 2 AS parity,
		   count(*) * 2 AS doubled, sum(f8) / nullif(count(f8), 0) AS mean,
		   date_trunc('hour', ts) + interval '1 hour' AS hour_end
	  FROM st.readings GROUP BY 1, 2$$) > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name IN ('st_nowindow', 'st_total', 'st_outputs') ORDER BY flow_id;

-- Flows without aggregates append projected rows.
SELECT flowpg.create_flow('st_rows', 'st.big_rows', $$
	SELECT ts, device, f8 * 2 AS doubled FROM st.readings WHERE f8 > 900$$) > 0 AS created;
SELECT flowpg.flush_flow('st_rows') >= 0 AS backfilled;

-- A user-defined aggregate with a combine function, and one with an
-- internal state and serialization functions.
CREATE AGGREGATE st.total_of(int8) (sfunc = int8pl, stype = int8, combinefunc = int8pl,
									initcond = '0');
CREATE AGGREGATE st.mean_of(numeric) (sfunc = numeric_avg_accum, stype = internal,
	finalfunc = numeric_avg, combinefunc = numeric_avg_combine,
	serialfunc = numeric_avg_serialize, deserialfunc = numeric_avg_deserialize);
SELECT flowpg.create_flow('st_custom', 'st.custom', $$
	SELECT date_trunc('hour', ts) AS hour, st.total_of(big) AS total, st.mean_of(price) AS mean
	  FROM st.readings GROUP BY 1$$) > 0 AS created;
SELECT mode FROM flowpg.flows WHERE flow_name = 'st_custom';
SELECT flowpg.flush_flow('st_custom') >= 0 AS backfilled;

-- New rows: single statements, several statements, COPY.
SELECT st.load(3001, 3600);
BEGIN;
SELECT st.load(3601, 3700);
SELECT st.load(3701, 3800);
COMMIT;
COPY st.readings (ts, device, site, price, f8) FROM stdin;
2024-05-01 10:00:00+00	1	site-1	5	10
2024-05-01 10:00:01+00	\N	\N	\N	\N
2024-05-01 10:00:02+00	2	site-x	7.5	950
\.

-- Rolled back: a whole transaction, and savepoints.
BEGIN;
SELECT st.load(5001, 5100);
ROLLBACK;
BEGIN;
SELECT st.load(5101, 5110);
SAVEPOINT a;
SELECT st.load(5111, 5200);
ROLLBACK TO SAVEPOINT a;
SAVEPOINT b;
SELECT st.load(5201, 5210);
RELEASE SAVEPOINT b;
SAVEPOINT c;
SAVEPOINT d;
SELECT st.load(5211, 5220);
RELEASE SAVEPOINT d;
ROLLBACK TO SAVEPOINT c;
COMMIT;
-- an error inside a PL/pgSQL block rolls back its subtransaction
DO $$
BEGIN
	PERFORM st.load(6001, 6010);
	BEGIN
		PERFORM st.load(6011, 6020);
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN NULL;
	END;
END $$;

SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'st\_%' ORDER BY flow_name;

-- Updates, deletes and TRUNCATE go through the recompute of their windows.
UPDATE st.readings SET f8 = f8 + 1, site = 'moved' WHERE device = 2 AND ts < '2024-05-01 03:00+00';
DELETE FROM st.readings WHERE device = 4 AND ts BETWEEN '2024-05-01 05:00+00' AND '2024-05-01 06:00+00';
INSERT INTO st.readings (ts, device, f8) VALUES ('2024-05-01 05:30+00', 4, 999);
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'st\_%' ORDER BY flow_name;

-- A group whose HAVING stops holding leaves the sink; one that starts to
-- hold enters it.
CREATE TABLE st.small (k int, v int);
SELECT flowpg.create_flow('st_having', 'st.having', $$
	SELECT k, count(*) AS n, sum(v) AS total FROM st.small GROUP BY k
	HAVING count(*) < 3 AND sum(v) > 1$$) > 0 AS created;
INSERT INTO st.small VALUES (1, 1), (1, 2), (2, 1), (NULL, 5);
SELECT flowpg.flush_flow('st_having') >= 0 AS flushed, flow_mismatches('st_having') AS mismatches;
SELECT k, n, total FROM st.having ORDER BY k NULLS FIRST;
INSERT INTO st.small VALUES (1, 3), (2, 4);
SELECT flowpg.flush_flow('st_having') >= 0 AS flushed, flow_mismatches('st_having') AS mismatches;
SELECT k, n, total FROM st.having ORDER BY k NULLS FIRST;

-- Replacing the flow: the worker starts the new definition over.
SELECT flowpg.create_flow('st_having', 'st.having', $$
	SELECT k, count(*) AS n, sum(v) AS total FROM st.small GROUP BY k
	HAVING count(*) < 4$$, or_replace => true) > 0 AS replaced;
INSERT INTO st.small VALUES (1, 7), (3, 1);
SELECT flowpg.flush_flow('st_having') >= 0 AS flushed, flow_mismatches('st_having') AS mismatches;
SELECT k, n, total FROM st.having ORDER BY k NULLS FIRST;

-- The stats show the engine's work.
SELECT flow_name, state, state_groups > 0 AS has_state, state_bytes > 0 AS has_bytes,
	   batches_applied > 0 AS applied, batches_dropped > 0 AS dropped, queue_depth,
	   freshness IS NOT NULL AS fresh
  FROM flowpg.flow_stats WHERE flow_name IN ('st_all', 'st_rows', 'st_custom') ORDER BY flow_name;

-- Without the worker, flush_flow recomputes the sink itself.
ALTER SYSTEM SET flowpg.enabled = off;
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SELECT st.load(7001, 7100);
SELECT flowpg.flush_flow('st_all') > 0 AS recomputed, flow_mismatches('st_all') AS mismatches;
ALTER SYSTEM RESET flowpg.enabled;
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SELECT st.load(7101, 7200);
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'st\_%' ORDER BY flow_name;

-- refresh_flow rewrites the sink in the caller's session; the worker then
-- reloads its state, and later rows still add up.
SELECT flowpg.refresh_flow('st_all') > 0 AS refreshed, flow_mismatches('st_all') AS mismatches;
SELECT st.load(7201, 7300);
SELECT flowpg.flush_flow('st_all') >= 0 AS flushed, flow_mismatches('st_all') AS mismatches;

-- The sink is fresh without flush_flow within a fraction of a second.
SELECT st.load(8001, 8001);
DO $$
BEGIN
	FOR i IN 1..100 LOOP
		EXIT WHEN flow_mismatches('st_total') = 0;
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT flow_mismatches('st_total') AS mismatches_without_flush;

-- What streaming refuses runs in batching mode under mode => 'auto'.
SELECT flowpg.create_flow('st_refused', 'st.refused', $$
	SELECT date_trunc('hour', ts) AS hour, string_agg(site, ',' ORDER BY site) AS sites
	  FROM st.readings GROUP BY 1$$) > 0 AS created;
SELECT mode FROM flowpg.flows WHERE flow_name = 'st_refused';
SELECT flowpg.create_flow('st_refused2', 'st.refused2', $$
	SELECT date_trunc('hour', ts) AS hour, count(DISTINCT site) AS sites
	  FROM st.readings GROUP BY 1$$, mode => 'streaming');
SELECT flowpg.create_flow('st_refused3', 'st.refused3', $$
	SELECT date_trunc('hour', ts) AS hour, percentile_cont(0.5) WITHIN GROUP (ORDER BY f8) AS med
	  FROM st.readings GROUP BY 1$$, mode => 'streaming');

-- A deferrable unique index cannot serve the upserts.
CREATE TABLE st.deferred (hour timestamptz, n bigint);
ALTER TABLE st.deferred ADD UNIQUE (hour) DEFERRABLE;
SELECT flowpg.create_flow('st_deferred', 'st.deferred', $$
	SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM st.readings GROUP BY 1$$);
SELECT count(*) AS flows_left FROM flowpg.flows WHERE flow_name = 'st_deferred';

-- An error in the flow's own expressions does not fail the writer: the
-- flow is recomputed instead, and the recompute reports the error.
CREATE TABLE st.ratios (k int, d int);
SELECT flowpg.create_flow('st_ratio', 'st.ratio_sink', $$
	SELECT k, sum(100 / d) AS s FROM st.ratios GROUP BY k$$) > 0 AS created;
SELECT flowpg.flush_flow('st_ratio') >= 0 AS backfilled;
INSERT INTO st.ratios VALUES (1, 5), (1, 0);
SELECT count(*) AS rows_kept FROM st.ratios;
SELECT flowpg.flush_flow('st_ratio');
SELECT message FROM flowpg.flow_errors WHERE flow_name = 'st_ratio' LIMIT 1;
DELETE FROM st.ratios WHERE d = 0;
INSERT INTO st.ratios VALUES (2, 10);
SELECT flowpg.flush_flow('st_ratio') >= 0 AS flushed, flow_mismatches('st_ratio') AS mismatches;
SELECT k, s FROM st.ratio_sink ORDER BY k;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'st\_%';
DROP SCHEMA st CASCADE;
