-- flowpg.verify_flow(flow_name, tolerance): the oracle as a function.  It
-- counts the rows in which a sink and its flow's query differ, both ways,
-- over the flow's output columns only, within the windows the flow
-- maintains (expire_after), floats within a relative tolerance, types
-- without equality by their text.  It reads and changes nothing: a sink
-- edited by hand stays wrong through flush_flow until refresh_flow.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
-- the worker runs: a streaming flow's flush_flow asks it for its changes
-- (without a worker it recomputes the sink, which would repair it)
SHOW flowpg.enabled;
CREATE SCHEMA vf;

-- The SQLSTATE and message of a statement's error.
CREATE FUNCTION vf.error_of(stmt text) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN code = 'OK' THEN 'no error' ELSE code || ': ' || message END FROM try(stmt)
$$;

-- Waits until the worker has backfilled the flow (it is active): a
-- streaming backfill that flush_flow completed inline would have the
-- worker reload the state later and rewrite the sink, undoing the hand
-- edits below.
CREATE FUNCTION vf.settle(flow text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..600 LOOP
		IF (SELECT state FROM flowpg.flows WHERE flow_name = flow) = 'active' THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;

-- The source: one day of readings of 20 devices every 13 seconds (as in
-- 00_setup, but this test's own, which no other test changes).  The values
-- are quarters, so that float sums do not depend on the order of the rows.
CREATE TABLE vf.metrics (ts timestamptz NOT NULL, device int, value float8);
INSERT INTO vf.metrics
SELECT '2024-03-01 00:00:00+00'::timestamptz + i * interval '13 seconds',
	   CASE WHEN i % 97 = 0 THEN NULL ELSE i % 20 END,
	   CASE WHEN i % 89 = 0 THEN NULL ELSE (i * 7919 % 1000) / 4.0 END
FROM generate_series(0, 6645) i;

------------------------------------------------------------------------------
-- A batching and a streaming flow; exact outputs (counts, max of floats).
------------------------------------------------------------------------------
SELECT flowpg.create_flow('vf_batch', 'vf.batch_hourly',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, count(value) AS n_value,
		   max(value) AS top FROM vf.metrics GROUP BY 1, 2$$,
  mode => 'batching') > 0 AS created;
SELECT vf.settle('vf_batch') AS settled;
SELECT flowpg.create_flow('vf_stream', 'vf.stream_hourly',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(device) AS total
	  FROM vf.metrics GROUP BY 1, 2$$,
  mode => 'streaming') > 0 AS created;
SELECT vf.settle('vf_stream') AS settled;
SELECT flow_name, mode FROM flowpg.flows WHERE flow_name LIKE 'vf\_%' ORDER BY flow_name;
-- the second flush of the streaming flow is the worker's: its state is loaded
SELECT flowpg.flush_flow('vf_batch') >= 0 AS flushed, flowpg.flush_flow('vf_stream') >= 0 AS flushed;
SELECT flowpg.flush_flow('vf_stream') >= 0 AS flushed;
SELECT count(*) AS groups FROM vf.batch_hourly;
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream,
	   flow_mismatches('vf_batch') AS batch_oracle, flow_mismatches('vf_stream') AS stream_oracle;

-- Rows deleted from the sink by hand: exactly that many differ.
WITH d AS (DELETE FROM vf.batch_hourly WHERE device = 1 RETURNING 1)
SELECT count(*) AS deleted FROM d;
WITH d AS (DELETE FROM vf.stream_hourly WHERE device = 1 RETURNING 1)
SELECT count(*) AS deleted FROM d;
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream,
	   flow_mismatches('vf_batch') AS batch_oracle, flow_mismatches('vf_stream') AS stream_oracle;
-- verify_flow changed nothing: the rows are still missing, nothing is pending
SELECT (SELECT count(*) FROM vf.batch_hourly) AS batch_rows,
	   (SELECT count(*) FROM vf.stream_hourly) AS stream_rows,
	   (SELECT count(*) FROM flowpg.flow_stats WHERE flow_name LIKE 'vf\_%' AND pending > 0) AS pending;
-- flush_flow writes what changed in the source since the last run, and
-- nothing did: it does not repair the sink.
SELECT flowpg.flush_flow('vf_batch') AS written, flowpg.flush_flow('vf_stream') AS written;
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream;
-- refresh_flow recomputes from the source: repaired
SELECT flowpg.refresh_flow('vf_batch') AS written, flowpg.refresh_flow('vf_stream') AS written;
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream;
-- (after a refresh the streaming flow's worker reloads its state from the
-- source and writes its groups again: that is done before the next edit)
SELECT flowpg.flush_flow('vf_stream') >= 0 AS reloaded;

-- One value changed by hand: its row is in the sink and not in the
-- result, the right one the other way round.
UPDATE vf.batch_hourly SET n = n + 1 WHERE device = 2 AND hour = '2024-03-01 05:00+00';
UPDATE vf.stream_hourly SET total = total + 1 WHERE device = 2 AND hour = '2024-03-01 05:00+00';
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream;
-- the sink's own column is not compared
UPDATE vf.batch_hourly SET update_at = '2000-01-01' WHERE device = 3;
SELECT flowpg.verify_flow('vf_batch') AS batch;
SELECT flowpg.flush_flow('vf_batch') AS written, flowpg.flush_flow('vf_stream') AS written;
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream;
SELECT flowpg.refresh_flow('vf_batch') > 0 AS refreshed, flowpg.refresh_flow('vf_stream') > 0 AS refreshed;
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream;
SELECT flowpg.flush_flow('vf_stream') >= 0 AS reloaded;

-- The query runs over the source as this statement sees it: rows of an
-- open transaction, which no flow has seen yet, differ.  One new group
-- (a row of the result only) and one changed group (a row each way).
BEGIN;
INSERT INTO vf.metrics VALUES ('2024-03-05 00:00+00', 7, 1.5);
UPDATE vf.metrics SET device = 8 WHERE ts = '2024-03-01 00:00:13+00';
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream;
ROLLBACK;
SELECT flowpg.verify_flow('vf_batch') AS batch, flowpg.verify_flow('vf_stream') AS stream;

------------------------------------------------------------------------------
-- Floats: exact with tolerance 0, within a relative tolerance otherwise.
------------------------------------------------------------------------------
SELECT flowpg.create_flow('vf_float', 'vf.float_hourly',
  $$SELECT device, date_trunc('hour', ts) AS hour, avg(value) AS mean, sum(value) AS total
	  FROM vf.metrics GROUP BY 1, 2$$,
  mode => 'batching') > 0 AS created;
SELECT vf.settle('vf_float') AS settled;
SELECT flowpg.flush_flow('vf_float') >= 0 AS flushed;
SELECT flowpg.verify_flow('vf_float') AS exact, flowpg.verify_flow('vf_float', 1e-9) AS tolerant;
-- a change of about 1e-12 of the value
UPDATE vf.float_hourly SET mean = mean * (1 + 1e-12) WHERE device = 4 AND hour = '2024-03-01 07:00+00';
SELECT flowpg.verify_flow('vf_float') AS exact, flowpg.verify_flow('vf_float', 1e-9) AS tolerant,
	   flowpg.verify_flow('vf_float', 1e-14) AS too_strict;
-- a second column of the same row off by 1e-3: the pair is no twin
UPDATE vf.float_hourly SET total = total * 1.001 WHERE device = 4 AND hour = '2024-03-01 07:00+00';
SELECT flowpg.verify_flow('vf_float', 1e-9) AS tolerant, flowpg.verify_flow('vf_float', 0.01) AS loose;
-- a NULL only matches a NULL
UPDATE vf.float_hourly SET total = NULL WHERE device = 4 AND hour = '2024-03-01 07:00+00';
SELECT flowpg.verify_flow('vf_float', 0.01) AS loose;
SELECT flowpg.refresh_flow('vf_float') > 0 AS refreshed;
SELECT flowpg.verify_flow('vf_float') AS exact;
-- the other columns are exact whatever the tolerance
UPDATE vf.float_hourly SET device = 99 WHERE device = 5 AND hour = '2024-03-01 00:00+00';
SELECT flowpg.verify_flow('vf_float', 1e-6) AS tolerant, flowpg.verify_flow('vf_float', 1e6) AS huge;
SELECT flowpg.refresh_flow('vf_float') > 0 AS refreshed;
SELECT flowpg.verify_flow('vf_float') AS exact;

-- Values that are not sums of powers of two: a streaming flow merges
-- partial sums in another order than the query adds the rows, and a
-- refresh restricted to the changed windows may be planned otherwise than
-- the whole query (a sort instead of a hash): a tolerance absorbs that.
SELECT flowpg.create_flow('vf_float_stream', 'vf.float_stream_hourly',
  $$SELECT device, date_trunc('hour', ts) AS hour, avg(value) AS mean, sum(value) AS total,
		   stddev(value) AS sd FROM vf.metrics GROUP BY 1, 2$$,
  mode => 'streaming') > 0 AS created;
SELECT vf.settle('vf_float_stream') AS settled;
SELECT flowpg.flush_flow('vf_float_stream') >= 0 AS flushed;
INSERT INTO vf.metrics
SELECT '2024-03-01 00:00:05+00'::timestamptz + i * interval '61 seconds', i % 20, i % 7 + 0.1
FROM generate_series(0, 1000) i;
SELECT flowpg.flush_flow('vf_float_stream') >= 0 AS flushed, flowpg.flush_flow('vf_float') >= 0 AS flushed;
SELECT flowpg.verify_flow('vf_float_stream', 1e-9) AS stream_tolerant,
	   flowpg.verify_flow('vf_float', 1e-9) AS batch_tolerant;

-- The comparison of two floats (a and b match when
-- |a - b| <= tolerance * greatest(|a|, |b|)).
SELECT a, b, t, flowpg._floats_within(a, b, t) AS within
  FROM (VALUES (1::float8, 1 + 1e-12::float8, 1e-9::float8), (1, 1.1, 1e-9), (1, 1.1, 0.1), (-1, 1, 1),
			   (0, 1e-300, 0.5), ('NaN', 'NaN', 0), ('NaN', 1, 1),
			   ('Infinity', 'Infinity', 0), ('Infinity', 1e308, 1), ('-Infinity', 'Infinity', 1e9),
			   (1e308, -1e308, 10), (NULL, NULL, 0), (NULL, 1, 1)) v(a, b, t);

------------------------------------------------------------------------------
-- Types without an equality operator are compared by their text: hll
-- (postgresql-15-hll) in a streaming flow, json in a batching one.
------------------------------------------------------------------------------
CREATE EXTENSION hll SCHEMA vf;
SELECT flowpg.create_flow('vf_hll', 'vf.hll_hourly',
  $$SELECT device, date_trunc('hour', ts) AS hour, vf.hll_add_agg(vf.hll_hash_integer(device)) AS devices
	  FROM vf.metrics GROUP BY 1, 2$$,
  mode => 'streaming') > 0 AS created;
SELECT vf.settle('vf_hll') AS settled;
SELECT flowpg.create_flow('vf_json', 'vf.json_hourly',
  $$SELECT device, date_trunc('hour', ts) AS hour, json_agg(value ORDER BY ts) AS vals
	  FROM vf.metrics GROUP BY 1, 2$$,
  mode => 'batching') > 0 AS created;
SELECT vf.settle('vf_json') AS settled;
SELECT flowpg.flush_flow('vf_hll') >= 0 AS flushed, flowpg.flush_flow('vf_json') >= 0 AS flushed;
SELECT flowpg.verify_flow('vf_hll') AS hll, flowpg.verify_flow('vf_json') AS json;
UPDATE vf.hll_hourly SET devices = vf.hll_empty() WHERE device = 9 AND hour = '2024-03-01 10:00+00';
-- the same json with other white space is other text
UPDATE vf.json_hourly SET vals = ('[ ' || vals::text || ' ]')::json WHERE device = 9;
SELECT count(*) AS edited FROM vf.json_hourly WHERE device = 9;
SELECT flowpg.verify_flow('vf_hll') AS hll, flowpg.verify_flow('vf_json') AS json;
SELECT flowpg.refresh_flow('vf_hll') > 0 AS refreshed, flowpg.refresh_flow('vf_json') > 0 AS refreshed;
SELECT flowpg.verify_flow('vf_hll') AS hll, flowpg.verify_flow('vf_json') AS json;

------------------------------------------------------------------------------
-- An existing sink with another typmod and collation: outputs are compared
-- as the sink holds them (cast as the INSERT into the sink casts them).
------------------------------------------------------------------------------
CREATE TABLE vf.cast_sink (dev text COLLATE "C", hour timestamptz, n bigint, mean numeric(12, 3),
						   update_at timestamptz);
CREATE UNIQUE INDEX ON vf.cast_sink (hour, dev) NULLS NOT DISTINCT;
SELECT flowpg.create_flow('vf_cast', 'vf.cast_sink',
  $$SELECT 'd' || device AS dev, date_trunc('hour', ts) AS hour, count(*) AS n,
		   avg(value)::numeric AS mean FROM vf.metrics GROUP BY 1, 2$$,
  mode => 'batching') > 0 AS created;
SELECT vf.settle('vf_cast') AS settled;
SELECT flowpg.flush_flow('vf_cast') >= 0 AS flushed;
SELECT min(scale(mean)), max(scale(mean)) FROM vf.cast_sink;
SELECT flowpg.verify_flow('vf_cast') AS exact;
-- numeric is not float: no tolerance
UPDATE vf.cast_sink SET mean = mean + 0.001 WHERE dev = 'd11';
SELECT flowpg.verify_flow('vf_cast') AS exact, flowpg.verify_flow('vf_cast', 0.5) AS tolerant;

------------------------------------------------------------------------------
-- The comparison names its parts s and q: a flow's query naming a table s
-- (unqualified, on the search_path) still reads that table.
------------------------------------------------------------------------------
CREATE TABLE public.s (ts timestamptz, k int);
INSERT INTO public.s SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '10 minutes', i % 3
FROM generate_series(1, 50) i;
SELECT flowpg.create_flow('vf_names', 'vf.q',
  $$SELECT k, date_trunc('hour', ts) AS h, count(*) AS n FROM s GROUP BY 1, 2$$) > 0 AS created;
SELECT vf.settle('vf_names') AS settled;
SELECT query FROM flowpg.flows WHERE flow_name = 'vf_names';
SELECT flowpg.flush_flow('vf_names') >= 0 AS flushed;
SELECT flowpg.verify_flow('vf_names') AS mismatches;
DELETE FROM vf.q WHERE k = 1;
SELECT flowpg.verify_flow('vf_names') AS mismatches;
SELECT flowpg.drop_flow('vf_names');
DROP TABLE public.s;

------------------------------------------------------------------------------
-- expire_after: only the windows the flow maintains are compared, as the
-- refresh recomputes them; expired windows keep their rows as they were.
------------------------------------------------------------------------------
CREATE TABLE vf.recent (ts timestamptz NOT NULL, v int);
SELECT date_trunc('hour', now()) - interval '3 days' AS old_hour,
	   date_trunc('hour', now()) - interval '2 hours' AS new_hour \gset
INSERT INTO vf.recent VALUES (:'old_hour', 1), (:'old_hour', 2), (:'new_hour', 3);
-- maintained whole first, so that the old window has a sink row
SELECT flowpg.create_flow('vf_recent', 'vf.recent_hourly',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total FROM vf.recent GROUP BY 1$$,
  mode => 'batching') > 0 AS created;
SELECT vf.settle('vf_recent') AS settled;
SELECT flowpg.flush_flow('vf_recent') >= 0 AS flushed;
SELECT flowpg.create_flow('vf_recent', 'vf.recent_hourly',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total FROM vf.recent GROUP BY 1$$,
  mode => 'batching', expire_after => '1 day', or_replace => true) > 0 AS replaced;
SELECT flowpg.flush_flow('vf_recent') >= 0 AS flushed;
-- the old window's rows change: its sink row stays, and is not counted
UPDATE vf.recent SET v = v * 10 WHERE ts = :'old_hour';
SELECT flowpg.flush_flow('vf_recent') AS written;
SELECT hour = :'old_hour' AS old, n, total FROM vf.recent_hourly ORDER BY hour;
SELECT flowpg.verify_flow('vf_recent') AS maintained, flow_mismatches('vf_recent') AS whole_oracle;
-- a hand edit in an expired window is not counted, one in a maintained one is
UPDATE vf.recent_hourly SET n = 99 WHERE hour = :'old_hour';
SELECT flowpg.verify_flow('vf_recent') AS maintained;
UPDATE vf.recent_hourly SET n = 99 WHERE hour = :'new_hour';
SELECT flowpg.verify_flow('vf_recent') AS maintained;
SELECT flowpg.refresh_flow('vf_recent') AS written;
SELECT flowpg.verify_flow('vf_recent') AS maintained;
-- a streaming flow created with expire_after backfills the old window too
-- (its history), which then stays as it was: the row added to it is not in
-- the sink, and verify_flow does not count it
SELECT flowpg.create_flow('vf_recent_stream', 'vf.recent_stream_hourly',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total FROM vf.recent GROUP BY 1$$,
  mode => 'streaming', expire_after => '1 day') > 0 AS created;
SELECT vf.settle('vf_recent_stream') AS settled;
SELECT flowpg.flush_flow('vf_recent_stream') >= 0 AS flushed;
INSERT INTO vf.recent VALUES (:'old_hour', 4), (:'new_hour', 5);
SELECT flowpg.flush_flow('vf_recent_stream') >= 0 AS flushed;
SELECT hour = :'old_hour' AS old, n, total FROM vf.recent_stream_hourly ORDER BY hour;
SELECT flowpg.verify_flow('vf_recent_stream') AS maintained,
	   flow_mismatches('vf_recent_stream') AS whole_oracle;

------------------------------------------------------------------------------
-- Who may verify: the owner, or a role that may act for it.  The query
-- runs as the owner, whoever calls: current_user in it is the owner's name.
------------------------------------------------------------------------------
CREATE ROLE regress_vf_owner;
CREATE ROLE regress_vf_member IN ROLE regress_vf_owner;
CREATE ROLE regress_vf_other;
GRANT USAGE, CREATE ON SCHEMA vf TO regress_vf_owner;
GRANT USAGE ON SCHEMA vf TO regress_vf_member, regress_vf_other;
CREATE TABLE vf.owned (ts timestamptz, k int);
ALTER TABLE vf.owned OWNER TO regress_vf_owner;
INSERT INTO vf.owned SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '7 minutes', i % 3
FROM generate_series(0, 99) i;
SET ROLE regress_vf_owner;
SELECT flowpg.create_flow('vf_owned', 'vf.owned_hourly',
  $$SELECT k, date_trunc('hour', ts) AS hour, current_user::text AS who, count(*) AS n
	  FROM vf.owned GROUP BY 1, 2, 3$$) > 0 AS created;
SELECT vf.settle('vf_owned') AS settled;
SELECT flowpg.flush_flow('vf_owned') >= 0 AS flushed;
SELECT flowpg.verify_flow('vf_owned') AS owner;
SELECT DISTINCT who FROM vf.owned_hourly;
DELETE FROM vf.owned_hourly WHERE k = 0 AND hour = '2024-03-01 01:00+00';
SET ROLE regress_vf_member;
SELECT flowpg.verify_flow('vf_owned') AS member;
SET ROLE regress_vf_other;
SELECT vf.error_of($$SELECT flowpg.verify_flow('vf_owned')$$) AS other;
RESET ROLE;
SELECT flowpg.verify_flow('vf_owned') AS superuser;

------------------------------------------------------------------------------
-- Errors.
------------------------------------------------------------------------------
SELECT vf.error_of($$SELECT flowpg.verify_flow('no_such_flow')$$) AS unknown;
SELECT vf.error_of($$SELECT flowpg.verify_flow(NULL)$$) AS null_name;
SELECT vf.error_of($$SELECT flowpg.verify_flow('')$$) AS empty_name;
SELECT vf.error_of($$SELECT flowpg.verify_flow('vf_batch', NULL)$$) AS null_tolerance;
SELECT vf.error_of($$SELECT flowpg.verify_flow('vf_batch', -0.5)$$) AS negative;
SELECT vf.error_of($$SELECT flowpg.verify_flow('vf_batch', 'NaN')$$) AS nan;
\set VERBOSITY default
SELECT flowpg.verify_flow('vf_batch', -1);
SELECT flowpg.verify_flow('vf_batch', NULL);

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'vf\_%' ORDER BY flow_id;
DROP SCHEMA vf CASCADE;
DROP ROLE regress_vf_owner, regress_vf_member, regress_vf_other;
