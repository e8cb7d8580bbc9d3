-- explain_flow: a flow's mode and why, its window and a sample of it, its
-- keys, the path each aggregate takes, its capture triggers, its streaming
-- state, and the plans of what a refresh of one window executes; with
-- analyze, that window's query under EXPLAIN ANALYZE without writing the
-- sink.  A streaming flow, a batching one (percentile_cont forces it), one
-- over a join, one with expire_after and one with eval_interval over
-- now().  Costs and timings vary from run to run and are cut out; the
-- sample window is the one of the source's newest row, which does not
-- move with the clock.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE ROLE regress_explain_owner LOGIN;
CREATE ROLE regress_explain_other LOGIN;
CREATE ROLE regress_explain_member LOGIN IN ROLE regress_explain_owner;
CREATE SCHEMA ex AUTHORIZATION regress_explain_owner;
SET ROLE regress_explain_owner;
CREATE TABLE ex.src (ts timestamptz NOT NULL, device int, value float8);
CREATE INDEX ON ex.src (ts);
INSERT INTO ex.src
SELECT '2024-03-01 00:00:00+00'::timestamptz + i * interval '37 seconds', i % 5, i * 1.5
FROM generate_series(0, 999) i;
CREATE TABLE ex.dev (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO ex.dev SELECT i, 'device ' || i FROM generate_series(0, 4) i;
ANALYZE ex.src, ex.dev;

-- the lines, numbered, without what varies from run to run
CREATE FUNCTION ex.explain(flow text, with_analyze boolean DEFAULT false)
RETURNS TABLE (n bigint, line text) LANGUAGE sql AS $$
SELECT n, regexp_replace(regexp_replace(regexp_replace(line,
		'  \(cost=[^)]*\)', ''),
		'actual time=[0-9.]+\.\.[0-9.]+ ', 'actual '),
		'Memory( Usage)?: [0-9]+kB', 'Memory: NkB', 'g')
FROM flowpg.explain_flow(flow, with_analyze) WITH ORDINALITY AS e(line, n)
WHERE line !~ '^ *(Planning|Execution) Time: '
$$;
-- what comes before the plans
CREATE FUNCTION ex.explain_head(flow text) RETURNS SETOF text LANGUAGE sql AS $$
SELECT line FROM ex.explain(flow)
WHERE n <= (SELECT min(n) FROM ex.explain(flow) WHERE line ~ '^  (Delete|Insert): ')
ORDER BY n
$$;

-- streaming, requested
SELECT flowpg.create_flow('ex_stream', 'ex.stream_sink',
	$$SELECT date_trunc('minute', ts) AS minute, device, count(*) AS n, sum(value) AS total,
			 avg(value) AS mean, max(ts) AS last_ts
	  FROM ex.src WHERE value >= 0 GROUP BY 1, 2 HAVING count(*) > 0$$,
	mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('ex_stream') >= 0 AS flushed;
-- a row for the worker, which then holds the state (once it has loaded it
-- and applied the row: a flush may also have recomputed the sink itself)
INSERT INTO ex.src VALUES ('2024-03-01 10:16:30+00', 1, 1.0);
SELECT flowpg.flush_flow('ex_stream') >= 0 AS flushed;
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN (SELECT s.status = 'active' AND s.queued_batches = 0 AND s.state_groups > 0
					 FROM flowpg.flows f, flowpg._stream_stats(f.flow_id) s
					WHERE f.flow_name = 'ex_stream');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT flow_mismatches('ex_stream') AS mismatches;
SELECT regexp_replace(line, '^Streaming state: [0-9]+ groups, [0-9]+ bytes', 'Streaming state: N groups, N bytes') AS explain
FROM ex.explain('ex_stream') ORDER BY n;
-- the state holds a group per sink row of the windows it keeps
SELECT (regexp_match(line, '^Streaming state: ([0-9]+) groups'))[1]::bigint =
	   (SELECT count(*) FROM ex.stream_sink
		 WHERE minute >= (SELECT state_from FROM flowpg.flow_stats WHERE flow_name = 'ex_stream'))
	   AS groups_are_sink_rows,
	   (regexp_match(line, ', ([0-9]+) bytes'))[1]::bigint > 0 AS has_bytes
FROM ex.explain('ex_stream') WHERE line ~ '^Streaming state: ';
-- the inline paths follow flowpg.inline_aggregates, as the graph does
RESET ROLE;
SET flowpg.inline_aggregates = off;
SELECT line FROM ex.explain('ex_stream') WHERE line ~ '^    Path: ' ORDER BY n;
RESET flowpg.inline_aggregates;

-- batching, chosen by auto: percentile_cont is an ordered-set aggregate;
-- why auto chose it is the catalog's mode_reason
SET ROLE regress_explain_owner;
SELECT flowpg.create_flow('ex_batch', 'ex.batch_sink',
	$$SELECT date_bin('15 minutes', ts, '2024-01-01') AS slot, device,
			 percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median, count(*) AS n
	  FROM ex.src GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.flush_flow('ex_batch') >= 0 AS flushed;
SELECT flow_mismatches('ex_batch') AS mismatches;
SELECT line AS explain FROM ex.explain('ex_batch') ORDER BY n;
-- analyze: the query of that window, run; neither the DELETE nor the
-- INSERT of the sink, whose rows and locks are as before (the counts of
-- pg_stat_xact_user_tables include earlier transactions' not yet reported)
BEGIN;
SELECT n_tup_ins + n_tup_upd + n_tup_del AS sink_writes_before FROM pg_stat_xact_user_tables
 WHERE relid = 'ex.batch_sink'::regclass \gset
SELECT line AS explain FROM ex.explain('ex_batch', true)
WHERE n >= (SELECT min(n) FROM ex.explain('ex_batch') WHERE line ~ '^  Insert: ') ORDER BY n;
SELECT n_tup_ins + n_tup_upd + n_tup_del - :sink_writes_before AS sink_writes
  FROM pg_stat_xact_user_tables WHERE relid = 'ex.batch_sink'::regclass;
SELECT count(*) AS sink_locks FROM pg_locks
 WHERE pid = pg_backend_pid() AND relation = 'ex.batch_sink'::regclass;
COMMIT;
SELECT flow_mismatches('ex_batch') AS mismatches;
-- under the flow's pinned settings, whatever the caller's
SET TimeZone = 'Asia/Tokyo';
SELECT line AS explain FROM ex.explain('ex_batch') WHERE line ~ '^  Sample window: ';
SET TimeZone = 'UTC';
-- as the owner: without its right to read the source, explain_flow fails
-- as the refresh would, even for a superuser
\set VERBOSITY terse
BEGIN;
REVOKE SELECT ON ex.src FROM regress_explain_owner;
RESET ROLE;
SELECT count(*) FROM flowpg.explain_flow('ex_batch');
ROLLBACK;
-- the same for the sink, whose statements are explained in a subtransaction
BEGIN;
SET ROLE regress_explain_owner;
REVOKE INSERT ON ex.batch_sink FROM regress_explain_owner;
RESET ROLE;
SELECT count(*) FROM flowpg.explain_flow('ex_batch');
ROLLBACK;
\set VERBOSITY default
SET ROLE regress_explain_owner;

-- a join of two tables: auto chose batching; each source has its capture
SELECT flowpg.create_flow('ex_join', 'ex.join_sink',
	$$SELECT date_trunc('hour', s.ts) AS hour, d.name, count(*) AS n, sum(s.value) AS total
	  FROM ex.src s JOIN ex.dev d ON d.id = s.device WHERE d.id < 4 GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.flush_flow('ex_join') >= 0 AS flushed;
SELECT flow_mismatches('ex_join') AS mismatches;
SELECT * FROM ex.explain_head('ex_join');

-- expire_after: the sample window (of 2024) is expired, so the refresh
-- explained is of the window of now(); its times vary and are cut out
SELECT flowpg.create_flow('ex_expire', 'ex.expire_sink',
	$$SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM ex.src GROUP BY 1$$,
	mode => 'streaming', expire_after => '1 day') > 0 AS created;
SELECT regexp_replace(line, '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}[+-][0-9]{2}', 'T', 'g') AS explain
FROM unnest(ARRAY(SELECT ex.explain_head('ex_expire'))) line
WHERE line ~ '^(Mode|Window|  Sample|  Expire|Recompute|  The sample)';

-- eval_interval over now(), no time window: every tick recomputes it whole
SELECT flowpg.create_flow('ex_tick', 'ex.tick_sink',
	$$SELECT device, count(*) AS n, count(*) FILTER (WHERE ts <= now()) AS past
	  FROM ex.src GROUP BY device$$, eval_interval => '1 minute') > 0 AS created;
SELECT flowpg.flush_flow('ex_tick') >= 0 AS flushed;
SELECT flow_mismatches('ex_tick') AS mismatches;
SELECT line AS explain FROM ex.explain('ex_tick') ORDER BY n;

-- who may: the owner and its members; nobody else
SET ROLE regress_explain_member;
SELECT count(*) > 0 AS explained FROM flowpg.explain_flow('ex_stream');
SET ROLE regress_explain_other;
SELECT count(*) FROM flowpg.explain_flow('ex_stream');
\set VERBOSITY sqlstate
SELECT count(*) FROM flowpg.explain_flow('ex_stream');
\set VERBOSITY default
RESET ROLE;

-- bad arguments
SELECT count(*) FROM flowpg.explain_flow('no_such_flow');
SELECT count(*) FROM flowpg.explain_flow(NULL);
SELECT count(*) FROM flowpg.explain_flow('');
SELECT count(*) FROM flowpg.explain_flow('ex_batch', NULL);
-- positional or quoted: ANALYZE is a reserved word
SELECT count(*) > 0 AS explained FROM flowpg.explain_flow('ex_batch', "analyze" => true);

SELECT flowpg.drop_flow(f) FROM unnest(ARRAY['ex_stream', 'ex_batch', 'ex_join', 'ex_expire', 'ex_tick']) f;
DROP SCHEMA ex CASCADE;
DROP ROLE regress_explain_member;
DROP ROLE regress_explain_other;
DROP ROLE regress_explain_owner;
