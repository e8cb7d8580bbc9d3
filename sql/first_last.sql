-- Ordered first / last values: flowpg.first_value_by(value, key) and
-- flowpg.last_value_by(value, key), the aggregates GreptimeDB's
-- first_value(x ORDER BY k) / last_value(x ORDER BY k) become.  Their order
-- is ORDER BY key, value (both ASC NULLS LAST): every sink is compared with
-- its flow's query (flow_mismatches) and with an independent formula,
-- (array_agg(value ORDER BY key, value))[1] and [count(*)], in both engines.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
\set VERBOSITY default
CREATE SCHEMA fl;

---------------------------------------------------------------------------
-- The aggregates on their own
---------------------------------------------------------------------------
CREATE TABLE fl.few (g int, x text, k int);
INSERT INTO fl.few VALUES
	(1, 'b', 1), (1, 'a', 1), (1, 'c', 2),		-- tie on the first key: 'a' < 'b'
	(2, NULL, 5), (2, 'z', 1), (2, 'y', 5),		-- tie on the last key: 'y', NULL last
	(3, 'p', NULL), (3, 'q', 3), (3, NULL, NULL), -- NULL keys sort last
	(4, NULL, 1), (4, NULL, 2),					-- NULL values are values
	(5, 'only', NULL);							-- every key NULL
SELECT g, flowpg.first_value_by(x, k) AS first, flowpg.last_value_by(x, k) AS last,
	   (array_agg(x ORDER BY k, x))[1] AS first_formula,
	   (array_agg(x ORDER BY k, x))[count(*)] AS last_formula
  FROM fl.few GROUP BY g ORDER BY g;
-- no rows: NULL, as every aggregate but count
SELECT flowpg.first_value_by(x, k) IS NULL AS first_null, flowpg.last_value_by(x, k) IS NULL AS last_null
  FROM fl.few WHERE false;
-- the value and the key of any types; a literal key is resolved as usual
SELECT flowpg.last_value_by(k, x) AS int_by_text, flowpg.first_value_by(x, k::numeric) AS text_by_numeric,
	   flowpg.last_value_by(k::float8, date '2024-01-01' + k) AS float_by_date,
	   flowpg.first_value_by(x, 'same') AS text_by_literal
  FROM fl.few WHERE x IS NOT NULL AND k IS NOT NULL;
-- values equal under their ordering but stored differently: their bytes
-- decide, whatever the order of the rows
SELECT flowpg.last_value_by(v, 1) AS a, flowpg.first_value_by(v, 1) AS b
  FROM (VALUES (1.0), (1.00)) r(v);
SELECT flowpg.last_value_by(v, 1) AS a, flowpg.first_value_by(v, 1) AS b
  FROM (VALUES (1.00), (1.0)) r(v);
-- a value type without a btree ordering: ties are broken by its stored bytes
SELECT flowpg.first_value_by(p, 1)::text AS first_point, flowpg.last_value_by(p, 1)::text AS last_point
  FROM (VALUES (point '(2,1)'), (point '(1,2)'), (point '(1,2)')) v(p);
-- the same in any order of the rows
SELECT flowpg.first_value_by(p, 1)::text AS first_point, flowpg.last_value_by(p, 1)::text AS last_point
  FROM (VALUES (point '(1,2)'), (point '(2,1)')) v(p);
-- the key needs an ordering
SELECT * FROM try($$SELECT flowpg.first_value_by(x, point(k, k)) FROM fl.few$$);

-- parallel aggregation combines partial states (serialized between processes)
CREATE TABLE fl.big AS
SELECT i % 7 AS g, 'v' || (i * 7919 % 1009) AS x, (i::bigint * 104729 % 5003) / 10 AS k
  FROM generate_series(1, 60000) i;
ANALYZE fl.big;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT count(*) AS mismatches FROM (
	SELECT g, flowpg.first_value_by(x, k) AS f, flowpg.last_value_by(x, k) AS l FROM fl.big GROUP BY g
	EXCEPT
	SELECT g, (array_agg(x ORDER BY k, x))[1], (array_agg(x ORDER BY k, x))[count(*)] FROM fl.big GROUP BY g) d;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

---------------------------------------------------------------------------
-- Flows in both engines
---------------------------------------------------------------------------
-- ts is the window; at, seq and day are order keys with ties and NULLs;
-- site, price, f8 and at are values with NULLs.
CREATE TABLE fl.src (
	ts timestamptz NOT NULL,
	device int,
	at timestamptz,
	seq int,
	day date,
	site text,
	price numeric,
	f8 float8
);
CREATE FUNCTION fl.load(first int, last int, salt int) RETURNS void LANGUAGE sql AS $$
INSERT INTO fl.src
SELECT '2024-05-01 00:00+00'::timestamptz + i * interval '47 seconds',
	   i % 4,
	   CASE WHEN i % 29 = 0 THEN NULL
			ELSE '2024-05-01 00:00+00'::timestamptz + (i / 3) * interval '2 minutes' END,
	   CASE WHEN i % 31 = 0 THEN NULL ELSE (i * salt) % 40 END,
	   CASE WHEN i % 37 = 0 THEN NULL ELSE date '2024-05-01' + (i % 5) END,
	   CASE WHEN i % 11 = 0 THEN NULL ELSE 'site-' || ((i * salt) % 6) END,
	   CASE WHEN i % 13 = 0 THEN NULL ELSE ((i * salt) % 100) * 1.25 END,
	   CASE WHEN i % 17 = 0 THEN NULL ELSE ((i * salt) % 1000)::float8 END
  FROM generate_series(first, last) i
$$;
SELECT fl.load(1, 2000, 7);

-- one query, run by both engines
SELECT $$
	SELECT date_trunc('hour', ts) AS hour, device,
		   flowpg.first_value_by(site, at) AS first_site,
		   flowpg.last_value_by(site, at) AS last_site,
		   flowpg.first_value_by(price, seq) AS first_price,
		   flowpg.last_value_by(price, seq) AS last_price,
		   flowpg.last_value_by(at, site) AS at_by_site,
		   flowpg.first_value_by(f8, price) AS f8_by_price,
		   flowpg.last_value_by(seq, day) AS seq_by_day,
		   count(*) AS n
	  FROM fl.src GROUP BY 1, 2$$ AS flow_query \gset

-- the independent formula of the same outputs
CREATE VIEW fl.formula AS
SELECT date_trunc('hour', ts) AS hour, device,
	   (array_agg(site ORDER BY at, site))[1] AS first_site,
	   (array_agg(site ORDER BY at, site))[count(*)] AS last_site,
	   (array_agg(price ORDER BY seq, price))[1] AS first_price,
	   (array_agg(price ORDER BY seq, price))[count(*)] AS last_price,
	   (array_agg(at ORDER BY site, at))[count(*)] AS at_by_site,
	   (array_agg(f8 ORDER BY price, f8))[1] AS f8_by_price,
	   (array_agg(seq ORDER BY day, seq))[count(*)] AS seq_by_day,
	   count(*) AS n
  FROM fl.src GROUP BY 1, 2;
CREATE FUNCTION fl.formula_mismatches(sink regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM (
		(SELECT hour, device, first_site, last_site, first_price, last_price, at_by_site,
				f8_by_price, seq_by_day, n FROM %1$s EXCEPT ALL SELECT * FROM fl.formula)
		UNION ALL
		(SELECT * FROM fl.formula EXCEPT ALL
		 SELECT hour, device, first_site, last_site, first_price, last_price, at_by_site,
				f8_by_price, seq_by_day, n FROM %1$s)) d', sink) INTO n;
	RETURN n;
END $$;
-- both checks at once, for both flows
CREATE FUNCTION fl.check() RETURNS TABLE (flow text, flushed boolean, mismatches bigint,
										  formula_mismatches bigint, groups bigint)
LANGUAGE sql AS $$
	SELECT f, flowpg.flush_flow(f) >= 0, flow_mismatches(f), fl.formula_mismatches(s::regclass),
		   (SELECT count(*) FROM fl.formula)
	  FROM (VALUES ('fl_streaming', 'fl.sink_streaming'), ('fl_batching', 'fl.sink_batching')) v(f, s)
$$;

SELECT flowpg.create_flow('fl_streaming', 'fl.sink_streaming', :'flow_query',
						  mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('fl_batching', 'fl.sink_batching', :'flow_query',
						  mode => 'batching') > 0 AS created;
SELECT flow_name, mode FROM flowpg.flows WHERE flow_name LIKE 'fl\_%' ORDER BY flow_name;
-- the sink's columns have the values' types
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'fl.sink_streaming'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT * FROM fl.check();
-- some of what the sinks hold: NULL values and NULL keys among them
SELECT count(*) FILTER (WHERE last_site IS NULL) > 0 AS null_last_sites,
	   count(*) FILTER (WHERE first_price IS NULL) > 0 AS null_first_prices,
	   count(*) FILTER (WHERE at_by_site IS NULL) > 0 AS null_at_values
  FROM fl.sink_streaming;

-- more rows: new groups, and rows that move the first and last of old ones
SELECT fl.load(1500, 3500, 11);
INSERT INTO fl.src VALUES
	('2024-05-01 00:10+00', 1, '2024-04-01 00:00+00', -5, '2024-01-01', 'aaa-earliest', 0.5, -1),
	('2024-05-01 00:11+00', 1, '2024-04-01 00:00+00', -5, '2024-01-01', 'aaa-earliest', 0.5, -1),
	('2024-05-01 00:12+00', 2, NULL, NULL, NULL, NULL, NULL, NULL),
	('2024-05-01 00:13+00', 2, NULL, NULL, NULL, 'zzz', 999, 1e300);
SELECT * FROM fl.check();
SELECT first_site, first_price FROM fl.sink_streaming
 WHERE hour = '2024-05-01 00:00+00' AND device = 1;

-- a rolled-back insert leaves no trace
BEGIN;
INSERT INTO fl.src VALUES ('2024-05-01 00:20+00', 3, '2000-01-01 00:00+00', -100, '2000-01-01',
						   'rolled-back', -1, -1);
ROLLBACK;
SELECT * FROM fl.check();
SELECT count(*) AS rolled_back_rows FROM fl.sink_streaming WHERE first_site = 'rolled-back';

-- UPDATE and DELETE: the streaming engine recomputes the windows they touch
UPDATE fl.src SET site = 'updated', at = '2024-01-01 00:00+00'
 WHERE ts < '2024-05-01 02:00+00' AND device = 0 AND seq = 3;
DELETE FROM fl.src WHERE site = 'aaa-earliest';
DELETE FROM fl.src WHERE ts >= '2024-05-01 05:00+00' AND ts < '2024-05-01 06:00+00' AND seq > 20;
SELECT * FROM fl.check();
SELECT first_site, first_price FROM fl.sink_streaming
 WHERE hour = '2024-05-01 00:00+00' AND device = 1;
SELECT DISTINCT first_site FROM fl.sink_streaming
 WHERE hour < '2024-05-01 02:00+00' AND device = 0;

-- streaming state memory counts the values the states hold
SELECT flowpg.create_flow('fl_small', 'fl.sink_small', $$
	SELECT device, flowpg.last_value_by(site, ts) AS v FROM fl.src GROUP BY device$$,
	mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('fl_wide', 'fl.sink_wide', $$
	SELECT device, flowpg.last_value_by(repeat('x', 2000) || site, ts) AS v FROM fl.src GROUP BY device$$,
	mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('fl_small') >= 0 AS flushed, flow_mismatches('fl_small') AS mismatches;
SELECT flowpg.flush_flow('fl_wide') >= 0 AS flushed, flow_mismatches('fl_wide') AS mismatches;
-- (states are built from the rows written after the backfill)
SELECT fl.load(3600, 3640, 3);
SELECT flowpg.flush_flow('fl_small') >= 0 AS flushed, flow_mismatches('fl_small') AS mismatches;
SELECT flowpg.flush_flow('fl_wide') >= 0 AS flushed, flow_mismatches('fl_wide') AS mismatches;
SELECT flow_name, state_groups, state_bytes >= 2000 * state_groups AS holds_the_values
  FROM flowpg.memory WHERE flow_name IN ('fl_small', 'fl_wide') ORDER BY flow_name;
SELECT (SELECT state_bytes FROM flowpg.memory WHERE flow_name = 'fl_wide') -
	   (SELECT state_bytes FROM flowpg.memory WHERE flow_name = 'fl_small') >= 4 * 2000 AS wide_counted;

---------------------------------------------------------------------------
-- GreptimeDB's spelling: first_value / last_value (x ORDER BY k)
---------------------------------------------------------------------------
-- create_flow too: PostgreSQL would refuse the call (a window function
-- without OVER), so nothing valid changes its meaning.  DESC swaps first
-- and last; the stored query names the aggregates.
SELECT flowpg.create_flow('fl_spelled', 'fl.sink_spelled', $$
	SELECT device, last_value(site ORDER BY at) AS last_site,
		   first_value(site ORDER BY at DESC) AS last_site_desc,
		   first_value(price ORDER BY seq ASC NULLS LAST) AS first_price,
		   last_value(price ORDER BY seq DESC NULLS FIRST) AS first_price_desc
	  FROM fl.src GROUP BY device$$, mode => 'streaming') > 0 AS created;
SELECT query FROM flowpg.flows WHERE flow_name = 'fl_spelled';
SELECT flowpg.flush_flow('fl_spelled') >= 0 AS flushed, flow_mismatches('fl_spelled') AS mismatches;
SELECT count(*) AS formula_mismatches
  FROM fl.sink_spelled s
  JOIN (SELECT device, (array_agg(site ORDER BY at, site))[count(*)] AS last_site,
			   (array_agg(price ORDER BY seq, price))[1] AS first_price
		  FROM fl.src GROUP BY device) q USING (device)
 WHERE s.last_site IS DISTINCT FROM q.last_site OR s.last_site_desc IS DISTINCT FROM q.last_site
	OR s.first_price IS DISTINCT FROM q.first_price OR s.first_price_desc IS DISTINCT FROM q.first_price;
-- the window function stays the window function (which a flow refuses)
SELECT code, message FROM try($$SELECT flowpg.create_flow('fl_window', 'fl.sink_window',
	'SELECT device, last_value(site) OVER (ORDER BY at) AS v FROM fl.src')$$);
-- so does someone's own aggregate called last_value
CREATE FUNCTION fl.keep_last(anyelement, anyelement) RETURNS anyelement
	LANGUAGE sql IMMUTABLE AS 'SELECT $2';
CREATE AGGREGATE fl.last_value(anyelement) (SFUNC = fl.keep_last, STYPE = anyelement);
SET search_path = fl, pg_catalog, public;
SELECT flowpg.create_flow('fl_theirs', 'fl.sink_theirs', $$
	SELECT date_trunc('hour', ts) AS hour, device, last_value(seq ORDER BY seq) AS v
	  FROM fl.src GROUP BY 1, 2$$,
	mode => 'batching') > 0 AS created;
SELECT query FROM flowpg.flows WHERE flow_name = 'fl_theirs';
SELECT flowpg.flush_flow('fl_theirs') >= 0 AS flushed, flow_mismatches('fl_theirs') AS mismatches;
RESET search_path;

-- errors, in both APIs, leave nothing behind
SELECT * FROM try($$SELECT flowpg.create_flow('fl_bad', 'fl.sink_bad',
	'SELECT device, last_value(site ORDER BY at, seq) AS v FROM fl.src GROUP BY device')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('fl_bad', 'fl.sink_bad',
	'SELECT device, first_value(site) AS v FROM fl.src GROUP BY device')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('fl_bad', 'fl.sink_bad',
	'SELECT device, first_value(site ORDER BY at NULLS FIRST) AS v FROM fl.src GROUP BY device')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('fl_bad', 'fl.sink_bad',
	'SELECT device, first_value(DISTINCT site ORDER BY site) AS v FROM fl.src GROUP BY device')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('fl_bad', 'fl.sink_bad',
	'SELECT device, last_value(site ORDER BY point(seq, seq)) AS v FROM fl.src GROUP BY device')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('fl_bad', 'fl.sink_bad',
	'SELECT device, flowpg.last_value_by(site, ROW(at, seq)) AS v FROM fl.src GROUP BY device')$$);
-- in a subquery too, when the flow is created
SELECT * FROM try($$SELECT flowpg.create_flow('fl_bad', 'fl.sink_bad',
	'SELECT s.device, s.v FROM (SELECT device, last_value(site ORDER BY point(seq, seq)) AS v
							   FROM fl.src GROUP BY device) s', eval_interval => '1 minute')$$);
SELECT * FROM try($$SELECT flowpg.execute('CREATE FLOW fl_bad SINK TO fl.sink_bad AS
	SELECT device, last_value(site ORDER BY at, seq) AS v FROM fl.src GROUP BY device')$$);
SELECT * FROM try($$SELECT flowpg.execute('CREATE FLOW fl_bad SINK TO fl.sink_bad AS
	SELECT device, last_value(site) FROM fl.src GROUP BY device')$$);
SELECT count(*) AS flows FROM flowpg.flows WHERE flow_name = 'fl_bad';
SELECT to_regclass('fl.sink_bad') IS NULL AS no_sink;
-- the error points at the call
\set VERBOSITY default
SELECT flowpg.create_flow('fl_bad', 'fl.sink_bad',
	'SELECT device, last_value(site ORDER BY at, seq) AS v FROM fl.src GROUP BY device');

---------------------------------------------------------------------------
-- GreptimeDB's cases through flowpg.execute
---------------------------------------------------------------------------
-- aggregate/first_last (from DuckDB's test_last): unaliased calls with
-- ORDER BY are named as DataFusion names them
CREATE TABLE five (i INTEGER, ts TIMESTAMP NOT NULL);
INSERT INTO five VALUES (1, 'epoch'::timestamp + interval '1 second'),
	(2, 'epoch'::timestamp + interval '2 seconds'), (3, 'epoch'::timestamp + interval '3 seconds'),
	(4, 'epoch'::timestamp + interval '4 seconds'), (5, 'epoch'::timestamp + interval '5 seconds');
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW five_last SINK TO five_last_sink AS
SELECT i % 3 AS g, last_value(i ORDER BY i DESC) FROM five GROUP BY g;
$$);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW five_first SINK TO five_first_sink AS
SELECT i % 3 AS g, first_value(i ORDER BY i DESC) FROM five GROUP BY g;
$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('five_last')$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('five_first')$$);
-- GreptimeDB: 0 3 | 1 1 | 2 2, and 0 3 | 1 4 | 2 5
SELECT g, "last_value(five.i) ORDER BY [five.i DESC NULLS FIRST]" FROM five_last_sink ORDER BY g;
SELECT g, "first_value(five.i) ORDER BY [five.i DESC NULLS FIRST]" FROM five_first_sink ORDER BY g;
SELECT flow_mismatches('five_last') AS last_mismatches, flow_mismatches('five_first') AS first_mismatches;

CREATE TABLE strings (s VARCHAR, g INTEGER, ts TIMESTAMP NOT NULL);
INSERT INTO strings VALUES ('apple', 1, 'epoch'::timestamp + interval '1 second'),
	('banana', 1, 'epoch'::timestamp + interval '2 seconds'),
	('cherry', 2, 'epoch'::timestamp + interval '3 seconds'),
	('date', 2, 'epoch'::timestamp + interval '4 seconds'),
	('elderberry', 3, 'epoch'::timestamp + interval '5 seconds');
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW strings_last SINK TO strings_last_sink AS
SELECT g, last_value(s ORDER BY s), first_value(s ORDER BY s), last_value(s ORDER BY ts) FROM strings GROUP BY g;
$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('strings_last')$$);
-- GreptimeDB: banana, date, elderberry and apple, cherry, elderberry
SELECT g, "last_value(strings.s) ORDER BY [strings.s ASC NULLS LAST]" AS last_s,
	   "first_value(strings.s) ORDER BY [strings.s ASC NULLS LAST]" AS first_s,
	   "last_value(strings.s) ORDER BY [strings.ts ASC NULLS LAST]" AS last_by_ts
  FROM strings_last_sink ORDER BY g;
-- NULL values: GreptimeDB's last_value(s) of group 1 is the NULL of the last row
INSERT INTO strings VALUES (NULL, 1, 'epoch'::timestamp + interval '6 seconds'),
	('fig', NULL, 'epoch'::timestamp + interval '7 seconds');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('strings_last')$$);
SELECT g, "last_value(strings.s) ORDER BY [strings.s ASC NULLS LAST]" AS last_s,
	   "first_value(strings.s) ORDER BY [strings.s ASC NULLS LAST]" AS first_s,
	   "last_value(strings.s) ORDER BY [strings.ts ASC NULLS LAST]" AS last_by_ts
  FROM strings_last_sink ORDER BY g;
SELECT flow_mismatches('strings_last') AS mismatches;

-- window/latest_per_series: the ordered aggregate variant, as a flow
-- (GreptimeDB's ORDER BY and LIMIT are the reading of the sink's)
CREATE TABLE netflow_raw (
    greptime_timestamp TIMESTAMP NOT NULL,
    src TEXT,
    dst_port INT,
    dst_addr TEXT,
    byte_count DOUBLE PRECISION,
    flow_id INT,
    PRIMARY KEY (src, dst_port, greptime_timestamp)
);
INSERT INTO netflow_raw VALUES
    ('epoch'::timestamp + interval '1 second', 'source-a', 80, 'target-80-old', 100.0, 1),
    ('epoch'::timestamp + interval '5 seconds', 'source-a', 80, 'target-80-new', 500.0, 2),
    ('epoch'::timestamp + interval '2 seconds', 'source-a', 443, 'target-443-old', 200.0, 3),
    ('epoch'::timestamp + interval '7 seconds', 'source-a', 443, 'target-443-new', 700.0, 4),
    ('epoch'::timestamp + interval '3 seconds', 'source-a', 22, 'target-22-only', 300.0, 5),
    ('epoch'::timestamp + interval '4 seconds', 'source-a', 8080, 'target-8080-only', 400.0, 6),
    ('epoch'::timestamp + interval '8 seconds', 'source-b', 9999, 'target-other-src', 999.0, 7);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW latest_per_port SINK TO latest_per_port_sink AS
SELECT
    dst_port,
    last_value(greptime_timestamp ORDER BY greptime_timestamp) AS latest_ts,
    last_value(dst_addr ORDER BY greptime_timestamp) AS latest_dst_addr,
    last_value(byte_count ORDER BY greptime_timestamp) AS latest_byte_count,
    last_value(flow_id ORDER BY greptime_timestamp) AS latest_flow_id
FROM netflow_raw
WHERE src = 'source-a'
  AND greptime_timestamp >= '1970-01-01T00:00:02'::timestamp
GROUP BY dst_port;
$$);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('latest_per_port')$$);
SELECT mode FROM flowpg.flows WHERE flow_name = 'latest_per_port';
-- GreptimeDB: 443 00:00:07 target-443-new 700 4 | 80 00:00:05 target-80-new 500 2 |
-- 8080 00:00:04 target-8080-only 400 6
SELECT dst_port, latest_ts, latest_dst_addr, latest_byte_count, latest_flow_id
  FROM latest_per_port_sink ORDER BY latest_ts DESC, dst_port LIMIT 3;
SELECT flow_mismatches('latest_per_port') AS mismatches;
-- a row of the source updated: port 8080's latest moves
UPDATE netflow_raw SET greptime_timestamp = 'epoch'::timestamp + interval '9 seconds',
	   dst_addr = 'target-8080-moved'
 WHERE flow_id = 6;
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('latest_per_port')$$);
SELECT dst_port, latest_ts, latest_dst_addr, latest_byte_count, latest_flow_id
  FROM latest_per_port_sink ORDER BY latest_ts DESC, dst_port LIMIT 3;
SELECT flow_mismatches('latest_per_port') AS mismatches;

-- flow/flow_batch_join_subquery, verbatim but for the source tables' DDL
-- (GreptimeDB's database flow_join_fixture is a schema here)
CREATE SCHEMA flow_join_fixture;
CREATE TABLE flow_join_fixture."left_samples" (
    source_id TEXT,
    left_value DOUBLE PRECISION,
    event_ts TIMESTAMP,
    observed_at TIMESTAMP NOT NULL
);
CREATE TABLE flow_join_fixture."right_samples" (
    source_id TEXT,
    right_value DOUBLE PRECISION,
    sample_kind TEXT,
    event_ts TIMESTAMP,
    observed_at TIMESTAMP NOT NULL
);
SELECT flow_name, result FROM flowpg.execute($$
-- Verify batching flow creation accepts aggregate subqueries joined by LEFT JOIN.
CREATE FLOW flow_batch_join_subquery SINK TO flow_batch_join_sink
EVAL INTERVAL '5m' AS
SELECT
    l.source_id,
    l.measure_name,
    l.bucket_time,
    l.left_event_ts,
    l.left_value,
    r.right_event_ts,
    r.right_value
FROM (
    SELECT
        source_id,
        'sample' AS measure_name,
        date_trunc('minute', now()) AS bucket_time,
        max(event_ts) AS left_event_ts,
        last_value(left_value ORDER BY observed_at) AS left_value
    FROM
        flow_join_fixture."left_samples"
    WHERE
        observed_at BETWEEN date_trunc('minute', now()) - INTERVAL '5 minutes'
            AND date_trunc('minute', now())
    GROUP BY
        source_id
) l
LEFT JOIN (
    SELECT
        source_id,
        'sample' AS measure_name,
        date_trunc('minute', now()) AS bucket_time,
        max(event_ts) AS right_event_ts,
        last_value(right_value ORDER BY observed_at) AS right_value
    FROM
        flow_join_fixture."right_samples"
    WHERE
        observed_at BETWEEN date_trunc('minute', now()) - INTERVAL '5 minutes'
            AND date_trunc('minute', now())
        AND sample_kind = 'primary'
    GROUP BY
        source_id
) r ON l.source_id = r.source_id AND l.bucket_time = r.bucket_time;
$$);
-- GreptimeDB: true | true | true
SELECT
    source_table_names LIKE '%left_samples%' AS has_left_source,
    source_table_names LIKE '%right_samples%' AS has_right_source,
    options LIKE '%"flow_type":"batching"%' AS is_batching_flow
FROM
    flowpg.information_schema_flows
WHERE
    flow_name = 'flow_batch_join_subquery';
SELECT mode FROM flowpg.flows WHERE flow_name = 'flow_batch_join_subquery';
INSERT INTO flow_join_fixture."left_samples" VALUES
    ('source-a', 0.12, date_trunc('minute', now()), date_trunc('minute', now()));
INSERT INTO flow_join_fixture."right_samples" VALUES
    ('source-a', 100.5, 'primary', date_trunc('minute', now()), date_trunc('minute', now()));
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('flow_batch_join_subquery')$$);
-- GreptimeDB: source-a | sample | 0.12 | 100.5
SELECT source_id, measure_name, left_value, right_value FROM flow_batch_join_sink ORDER BY source_id;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW flow_batch_join_subquery');
DROP TABLE flow_batch_join_sink;
DROP TABLE flow_join_fixture."left_samples";
DROP TABLE flow_join_fixture."right_samples";
DROP SCHEMA flow_join_fixture;

-- clean up
SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows
 WHERE flow_name IN ('fl_streaming', 'fl_batching', 'fl_small', 'fl_wide', 'fl_spelled', 'fl_theirs',
					 'five_last', 'five_first', 'strings_last', 'latest_per_port')
 ORDER BY flow_name;
DROP SCHEMA fl CASCADE;
DROP TABLE five, five_last_sink, five_first_sink, strings, strings_last_sink, netflow_raw,
	latest_per_port_sink;
