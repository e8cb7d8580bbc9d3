-- The flow's pinned search_path is the one its functions run under, in
-- writers and in the worker, as when its owner runs the query: aggregates
-- whose support functions are SQL functions naming their types unqualified
-- (postgresql-15-unit's avg(unit)) and user functions calling each other
-- unqualified work in both engines.  Extension aggregates with internal
-- states (postgresql-15-hll) stream.  A schema on that path in which other
-- roles can create objects draws a warning.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA ext;
CREATE EXTENSION unit SCHEMA ext;
CREATE EXTENSION hll SCHEMA ext;
CREATE SCHEMA lib;
SET search_path = public, lib, ext;
CREATE FUNCTION lib.inner_bucket(v int) RETURNS int LANGUAGE sql IMMUTABLE
	AS 'SELECT v / 10';
-- calls inner_bucket unqualified: resolved with the caller's search_path
CREATE FUNCTION lib.bucket(v int) RETURNS int LANGUAGE sql IMMUTABLE
	AS 'SELECT inner_bucket(v) * 10';

CREATE TABLE measures (ts timestamptz, sensor int, reading unit, visitor int);
CREATE FUNCTION load_measures(first int, last int) RETURNS void LANGUAGE sql
	SET search_path = public, ext AS $$
INSERT INTO measures
SELECT '2024-05-01 00:00+00'::timestamptz + i * interval '53 seconds', i % 4,
	   ((i % 97) || ' m')::unit, (i * 7) % 500
FROM generate_series(first, last) i $$;
SELECT load_measures(1, 2000);

-- avg(unit) has no combine function: batching, with SQL support functions.
SELECT flowpg.create_flow('unit_avg', 'unit_hourly',
  $$SELECT sensor, date_trunc('hour', ts) AS hour, avg(reading) AS mean, sum(reading) AS total
	  FROM measures GROUP BY 1, 2$$) > 0 AS created;
-- hll aggregates have combine and serialization functions: streaming.
SELECT flowpg.create_flow('hll_visitors', 'visitors_hourly',
  $$SELECT sensor, date_trunc('hour', ts) AS hour, hll_add_agg(hll_hash_integer(visitor)) AS visitors,
		   count(*) AS n
	  FROM measures GROUP BY 1, 2$$) > 0 AS created;
-- a user function calling another unqualified, as key and in an argument
SELECT flowpg.create_flow('buckets', 'visitor_buckets',
  $$SELECT bucket(visitor) AS b, date_trunc('day', ts) AS day, count(*) AS n,
		   sum(bucket(sensor * 37)) AS s
	  FROM measures GROUP BY 1, 2$$) > 0 AS created;
SELECT flow_name, mode FROM flowpg.flows
 WHERE flow_name IN ('unit_avg', 'hll_visitors', 'buckets') ORDER BY 1;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name IN ('unit_avg', 'hll_visitors', 'buckets') ORDER BY 1;

-- Writers with another search_path, and the worker, evaluate under the pinned one.
SET search_path = public;
SELECT load_measures(2001, 4000);
UPDATE measures SET visitor = visitor + 1 WHERE sensor = 2 AND ts < '2024-05-01 06:00+00';
DELETE FROM measures WHERE sensor = 3 AND ts > '2024-05-01 20:00+00';
SELECT flowpg.flush_flow('unit_avg') >= 0 AS flushed, flowpg.flush_flow('hll_visitors') >= 0 AS flushed,
	   flowpg.flush_flow('buckets') >= 0 AS flushed;
SET search_path = public, lib, ext;
SELECT flow_mismatches('unit_avg') AS unit_mismatches, flow_mismatches('buckets') AS bucket_mismatches;
-- hll has no equality operator: compare its bytes
SELECT count(*) AS hll_mismatches FROM (
	(SELECT sensor, hour, visitors::text, n FROM visitors_hourly
	 EXCEPT ALL
	 SELECT sensor, date_trunc('hour', ts), hll_add_agg(hll_hash_integer(visitor))::text, count(*)
	   FROM measures GROUP BY 1, 2)
	UNION ALL
	(SELECT sensor, date_trunc('hour', ts), hll_add_agg(hll_hash_integer(visitor))::text, count(*)
	   FROM measures GROUP BY 1, 2
	 EXCEPT ALL
	 SELECT sensor, hour, visitors::text, n FROM visitors_hourly)) d;
SELECT round(sum(hll_cardinality(visitors))) > 0 AS counted FROM visitors_hourly;

-- pg_temp comes last on the pinned path: a writer's temporary table does
-- not take the place of the table a flow's function names unqualified.
CREATE TABLE public.weights (k int, w int);
INSERT INTO public.weights SELECT k, k * 10 FROM generate_series(0, 3) k;
CREATE FUNCTION lib.weight(v int) RETURNS int LANGUAGE sql STABLE
	AS 'SELECT w FROM weights WHERE k = v';
SELECT flowpg.create_flow('weighted', 'weighted_sensors',
  $$SELECT sensor, count(*) AS n, sum(weight(sensor)) AS weight FROM measures GROUP BY 1$$) > 0 AS created;
SELECT flowpg.flush_flow('weighted') >= 0 AS backfilled;
SELECT s FROM flowpg.flow, unnest(settings) s WHERE flow_name = 'weighted' AND s LIKE 'search_path=%';
CREATE TEMP TABLE weights (k int, w int);
INSERT INTO weights SELECT k, -1 FROM generate_series(0, 3) k;
SELECT load_measures(4001, 4100);
DROP TABLE pg_temp.weights;
SELECT flowpg.flush_flow('weighted') >= 0 AS flushed, flow_mismatches('weighted') AS mismatches;

-- A schema on the path where others may create objects: a warning.
CREATE SCHEMA open_area;
GRANT CREATE ON SCHEMA open_area TO PUBLIC;
SET search_path = open_area, public, lib, ext;
SET client_min_messages = notice;
SELECT flowpg.create_flow('warned', 'warned_sink',
  $$SELECT sensor, count(*) AS n FROM public.measures GROUP BY 1$$) > 0 AS created;
SET client_min_messages = warning;
SET search_path = public;

SELECT flowpg.drop_flow(f) FROM unnest(ARRAY['unit_avg', 'hll_visitors', 'buckets', 'warned', 'weighted']) f;
DROP TABLE measures, unit_hourly, visitors_hourly, visitor_buckets, open_area.warned_sink,
	weighted_sensors, public.weights;
DROP FUNCTION load_measures(int, int);
DROP EXTENSION unit;
DROP EXTENSION hll;
DROP SCHEMA ext, lib, open_area CASCADE;
