/* flowpg--0.1--0.2.sql: ALTER EXTENSION flowpg UPDATE from 0.1. */

\echo Use "ALTER EXTENSION flowpg UPDATE TO '0.2'" to load this file. \quit

/*
 * 0.2: online backfill (src/backfill.c).  create_flow no longer computes
 * the sink in its own transaction: the worker does it afterwards, in
 * pieces, and the flows show 'backfilling' meanwhile.  Flows of 0.1 were
 * backfilled when they were created: their sinks and catalog rows stay as
 * they are; their capture triggers are brought to this version's set and
 * states (those of flows made by early 0.1 builds fired in every session
 * and lacked the row trigger for logical replication).
 */
CREATE TABLE flowpg.flow_backfill (
	flow_id			bigint PRIMARY KEY,
	started_at		timestamptz NOT NULL DEFAULT now(),
	time_lo			bigint,				/* time ordinals, as in dirty_log */
	time_hi			bigint,
	done_until		bigint,
	pieces_done		int NOT NULL DEFAULT 0,
	pieces_total	int,				/* known after the first piece */
	rows_written	bigint NOT NULL DEFAULT 0
);

REVOKE ALL ON flowpg.flow_backfill FROM PUBLIC;
/* flowpg's functions act as the catalog's owner (catalog.c), who may not be the updating role */
DO $$
BEGIN
	EXECUTE pg_catalog.format('ALTER TABLE flowpg.flow_backfill OWNER TO %I',
		(SELECT c.relowner::regrole::text FROM pg_catalog.pg_class c WHERE c.oid = 'flowpg.flow'::regclass));
END $$;

/*
 * 0.2: operating flows.  pause_flow's flag; the time of each flow's last
 * successful run (the runs of 0.1 that did not fail last count as one).
 */
ALTER TABLE flowpg.flow ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE flowpg.flow_run ADD COLUMN last_success_at timestamptz;
UPDATE flowpg.flow_run SET last_success_at = last_run_at
 WHERE runs > 0 AND consecutive_failures = 0;
/* flows.mode_reason: 0.1 did not keep why auto chose the mode */
UPDATE flowpg.flow
   SET options = options || '{"mode_reason": "chosen by mode => ''auto'' under flowpg 0.1, which did not keep the reason"}'
 WHERE options->>'requested_mode' = 'auto';

/*
 * Operating flows.  pause_flow: the flow keeps capturing changes but
 * nothing writes its sink; resume_flow catches up (src/pause.c).
 */
CREATE FUNCTION flowpg.pause_flow(flow_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'flowpg_pause_flow'
LANGUAGE C VOLATILE;

CREATE FUNCTION flowpg.resume_flow(flow_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'flowpg_resume_flow'
LANGUAGE C VOLATILE;

/*
 * A streaming flow's rounds not yet in flowpg.flow_run, the last round's
 * own timing, a failed flow's next attempt, and what memory limits took.
 */
CREATE FUNCTION flowpg._stream_live(flow_id bigint,
	OUT runs bigint, OUT rows_in bigint, OUT rows_out bigint,
	OUT last_round_at timestamptz, OUT last_round_duration interval,
	OUT retry_at timestamptz, OUT degraded boolean, OUT degrades bigint,
	OUT evictions bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'flowpg_stream_live'
LANGUAGE C STRICT VOLATILE;

/* What each backend does for a flow of this database now (src/progress.c). */
CREATE FUNCTION flowpg._flow_progress(
	OUT pid int, OUT flow_id bigint, OUT command text, OUT phase text,
	OUT started_at timestamptz, OUT phase_started_at timestamptz,
	OUT windows_done bigint, OUT windows_total bigint,
	OUT rows_read bigint, OUT rows_written bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'flowpg_progress'
LANGUAGE C VOLATILE;

/* This database's streaming state, the server's, and its fair share. */
CREATE FUNCTION flowpg._database_memory(
	OUT state_bytes bigint, OUT server_state_bytes bigint, OUT state_share bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'flowpg_database_memory'
LANGUAGE C VOLATILE;

CREATE OR REPLACE VIEW flowpg.flows AS
SELECT f.flow_id,
	   f.flow_name,
	   f.owner::text AS owner,
	   f.mode,
	   f.source_tables,
	   f.sink_table,
	   q.query,
	   a.attname::text AS time_column,
	   f.window_expr AS window_expression,
	   f.expire_after,
	   f.eval_interval,
	   f.comment,
	   CASE WHEN f.paused AND st.state <> 'update needed' THEN 'paused'
			WHEN st.state = 'active' AND b.flow_id IS NOT NULL THEN 'backfilling'
			ELSE st.state END AS state,
	   /* a failure's message can quote data: only for roles that may act for the owner */
	   CASE WHEN f.paused AND st.state <> 'update needed'
			THEN 'paused by pause_flow: changes are captured, the sink is not written; '
				 || 'resume_flow catches up'
			WHEN st.state = 'active' AND b.flow_id IS NOT NULL AND f.mode = 'streaming'
			THEN 'computing the sink from the rows the source held at creation: '
				 || 'loading the state from the source, then writing every group'
			WHEN st.state = 'active' AND b.flow_id IS NOT NULL
			THEN 'computing the sink from the rows the source held at creation: '
				 || b.pieces_done || ' of ' || coalesce(b.pieces_total::text, '?')
				 || ' pieces done (flowpg.flow_backfills)'
			WHEN st.state <> 'failed' OR pg_catalog.pg_has_role(f.owner, 'USAGE')
			THEN st.state_reason
			ELSE 'the last run failed; the flow''s owner finds the error in flowpg.flow_errors'
	   END AS state_reason,
	   f.created_at,
	   f.updated_at,
	   flowpg._flow_definition(f.flow_name, f.sink_table, f.expire_after, f.eval_interval,
							   f.comment, f.options,
							   CASE WHEN f.options->>'canonical_query' = f.query
									THEN f.options->>'written_query' ELSE q.query END) AS flow_definition,
	   /* why mode => 'auto' chose the engine; NULL when the mode was asked for */
	   f.options->>'mode_reason' AS mode_reason
FROM flowpg.flow f
CROSS JOIN LATERAL flowpg._deparse_query(f.flow_id) AS q(query)
CROSS JOIN LATERAL flowpg._flow_state(f.state, f.state_reason) AS st
LEFT JOIN flowpg.flow_backfill b ON b.flow_id = f.flow_id
LEFT JOIN pg_catalog.pg_attribute a
	   ON a.attrelid = f.time_table AND a.attnum = f.time_column;

CREATE OR REPLACE VIEW flowpg.flow_stats AS
SELECT f.flow_id,
	   f.flow_name,
	   f.mode,
	   CASE WHEN f.paused AND st.state <> 'update needed' THEN 'paused'
			WHEN st.state = 'active' AND b.flow_id IS NOT NULL THEN 'backfilling'
			WHEN st.state = 'active' AND s.status = 'recovering' THEN 'recovering'
			ELSE st.state END AS state,
	   /* a streaming flow's rounds since the last record included: up to now */
	   coalesce(r.rows_in, 0) + coalesce(l.rows_in, 0) AS rows_in,
	   coalesce(r.rows_out, 0) + coalesce(l.rows_out, 0) AS rows_out,
	   coalesce(r.runs, 0) + coalesce(l.runs, 0) + coalesce(r.failures, 0) AS runs,
	   coalesce(r.failures, 0) AS failures,
	   GREATEST(r.last_run_at, l.last_round_at) AS last_run_at,
	   /* the last run's own duration: a round's, a refresh's */
	   CASE WHEN l.last_round_at > r.last_run_at OR r.last_run_at IS NULL
			THEN l.last_round_duration ELSE r.last_run_duration END AS last_run_duration,
	   /* a streaming flow runs when changes come; when it failed, its next attempt */
	   CASE WHEN f.paused THEN NULL
			WHEN f.mode = 'streaming' THEN l.retry_at
			ELSE r.next_run_at END AS next_run_at,
	   /* the worker (or the session, for an inline flush) of the last run */
	   coalesce(s.last_worker_pid, r.last_worker_pid) AS worker_pid,
	   coalesce(d.pending, 0) AS pending,
	   d.pending_rows,
	   g.lag,
	   s.state_groups,
	   s.state_bytes,
	   s.state_refills,
	   s.state_repairs,
	   s.queued_batches AS queue_depth,
	   s.queued_bytes AS queue_bytes,
	   s.batches_applied,
	   s.batches_dropped,
	   s.fallbacks,
	   s.freshness,
	   s.last_flush_at,
	   coalesce(r.runs, 0) + coalesce(l.runs, 0) AS successes,
	   GREATEST(r.last_success_at, l.last_round_at) AS last_success_at,
	   /* a run in progress now (flowpg.flow_progress has its details) */
	   p.started_at AS running_since,
	   p.pid AS running_pid,
	   p.command AS running_command,
	   /* the intervals as numbers, for dashboards */
	   pg_catalog.date_part('epoch', g.lag)::float8 AS lag_seconds,
	   (pg_catalog.date_part('epoch', s.freshness) * 1000)::float8 AS freshness_ms
FROM flowpg.flow f
CROSS JOIN LATERAL flowpg._flow_state(f.state, f.state_reason) AS st
LEFT JOIN LATERAL flowpg._stream_stats(f.flow_id) s ON f.mode = 'streaming'
LEFT JOIN LATERAL flowpg._stream_live(f.flow_id) l ON f.mode = 'streaming'
LEFT JOIN LATERAL (SELECT p.started_at, p.pid, p.command FROM flowpg._flow_progress() p
				   WHERE p.flow_id = f.flow_id ORDER BY p.started_at LIMIT 1) p ON true
LEFT JOIN flowpg.flow_run r ON r.flow_id = f.flow_id
LEFT JOIN flowpg.flow_backfill b ON b.flow_id = f.flow_id
LEFT JOIN (SELECT dl.flow_id, count(*) AS pending, sum(dl.nrows) AS pending_rows,
				  min(dl.logged_at) AS oldest
			 FROM flowpg.dirty_log dl GROUP BY dl.flow_id) d ON d.flow_id = f.flow_id
/* the oldest change not in the sink: logged dirty, or queued */
CROSS JOIN LATERAL (SELECT CASE WHEN d.oldest IS NULL AND s.oldest_queued_at IS NULL THEN interval '0'
								ELSE pg_catalog.clock_timestamp() - LEAST(d.oldest, s.oldest_queued_at)
						   END AS lag) g;

CREATE VIEW flowpg.flow_backfills AS
SELECT f.flow_id,
	   f.flow_name,
	   b.started_at,
	   b.pieces_done,
	   b.pieces_total,
	   CASE WHEN b.pieces_total > 0
			THEN round(b.pieces_done::numeric / b.pieces_total, 3) END AS progress,
	   b.rows_written,
	   pg_catalog.clock_timestamp() - b.started_at AS running_for
FROM flowpg.flow_backfill b
JOIN flowpg.flow f USING (flow_id);

/*
 * flowpg.flow_progress: one row per backfill, refresh, recompute or
 * streaming round in progress, as pg_stat_progress_* has for PostgreSQL's
 * own commands.  Counts are NULL where they are not known yet.
 */
CREATE VIEW flowpg.flow_progress AS
SELECT p.pid,
	   f.flow_id,
	   f.flow_name,
	   f.mode,
	   p.command,
	   p.phase,
	   p.started_at,
	   p.phase_started_at,
	   p.windows_done,
	   p.windows_total,
	   p.rows_read,
	   p.rows_written,
	   pg_catalog.clock_timestamp() - p.started_at AS running_for
FROM flowpg._flow_progress() p
JOIN flowpg.flow f ON f.flow_id = p.flow_id;

/*
 * flowpg.memory: streaming state and queued batches in shared memory
 * against flowpg.state_memory and flowpg.queue_memory -- for the server,
 * this database (whose state limit is its fair share of state_memory now)
 * and each streaming flow -- and what the limits took from the state.
 */
CREATE VIEW flowpg.memory AS
WITH flows AS (
	SELECT f.flow_id, f.flow_name, s.state_groups, s.state_bytes, s.queued_batches,
		   s.queued_bytes, s.fallbacks, l.degraded, l.degrades, l.evictions
	FROM flowpg.flow f
	CROSS JOIN LATERAL flowpg._stream_stats(f.flow_id) s
	CROSS JOIN LATERAL flowpg._stream_live(f.flow_id) l
	WHERE f.mode = 'streaming')
SELECT 'server'::text AS scope, NULL::text AS database, NULL::bigint AS flow_id,
	   NULL::text AS flow_name,
	   m.server_state_bytes AS state_bytes,
	   pg_catalog.pg_size_bytes(pg_catalog.current_setting('flowpg.state_memory', true)) AS state_limit,
	   NULL::bigint AS state_groups,
	   NULL::bigint AS queue_bytes,
	   pg_catalog.pg_size_bytes(pg_catalog.current_setting('flowpg.queue_memory', true)) AS queue_limit,
	   NULL::bigint AS queue_batches,
	   NULL::bigint AS degraded_flows, NULL::bigint AS degrades, NULL::bigint AS evictions,
	   NULL::bigint AS fallbacks
FROM flowpg._database_memory() m
UNION ALL
SELECT 'database', pg_catalog.current_database()::text, NULL, NULL,
	   m.state_bytes, m.state_share,
	   (SELECT sum(state_groups)::bigint FROM flows),
	   (SELECT coalesce(sum(queued_bytes), 0)::bigint FROM flows),
	   pg_catalog.pg_size_bytes(pg_catalog.current_setting('flowpg.queue_memory', true)),
	   (SELECT coalesce(sum(queued_batches), 0)::bigint FROM flows),
	   (SELECT count(*) FILTER (WHERE degraded) FROM flows),
	   (SELECT coalesce(sum(degrades), 0)::bigint FROM flows),
	   (SELECT coalesce(sum(evictions), 0)::bigint FROM flows),
	   (SELECT coalesce(sum(fallbacks), 0)::bigint FROM flows)
FROM flowpg._database_memory() m
UNION ALL
SELECT 'flow', pg_catalog.current_database()::text, flow_id, flow_name, state_bytes, NULL, state_groups, queued_bytes, NULL,
	   queued_batches, degraded::int, degrades, evictions, fallbacks
FROM flows;

GRANT SELECT ON flowpg.flow_progress, flowpg.memory TO PUBLIC;

GRANT SELECT ON flowpg.flow_backfills TO PUBLIC;

/*
 * verify_flow: the number of rows in which the sink and the flow's query
 * differ, counted both ways, floats within a relative tolerance (verify.c).
 * It only reads; _floats_within is its comparison of two floats.
 */
CREATE FUNCTION flowpg.verify_flow(flow_name text, tolerance float8 DEFAULT 0)
RETURNS bigint
AS 'MODULE_PATHNAME', 'flowpg_verify_flow'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

CREATE FUNCTION flowpg._floats_within(a float8, b float8, tolerance float8)
RETURNS boolean
AS 'MODULE_PATHNAME', 'flowpg_floats_within'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

/*
 * explain_flow: the flow's mode and why, window, keys, the path of each
 * aggregate, its capture triggers, its streaming state, and the plans of
 * the statements a refresh of one window runs (with analyze, its query
 * run under EXPLAIN ANALYZE, the sink untouched), a line a row.  ANALYZE
 * is a reserved word: named, the argument is written "analyze" => true.
 */
CREATE FUNCTION flowpg.explain_flow(flow_name text, "analyze" boolean DEFAULT false)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'flowpg_explain_flow'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

/*
 * Brings every flow's capture triggers to this version's set and states
 * (src/capture.c); the update scripts run it, so that flows made by an
 * older release capture as new ones do.
 */
CREATE FUNCTION flowpg._repair_capture()
RETURNS int
AS 'MODULE_PATHNAME', 'flowpg_repair_capture'
LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION flowpg._repair_capture() FROM PUBLIC;

SELECT flowpg._repair_capture();

/*
 * 0.2: flow names follow PostgreSQL's rules for identifiers, and NULL
 * arguments that mean nothing are errors naming the argument: the
 * functions that were STRICT (returning NULL) take NULL now.  Flows keep
 * their names: one with upper case or other characters that need quoting
 * is reached by its double-quoted name.
 */
CREATE OR REPLACE FUNCTION flowpg.flush_flow(flow_name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'flowpg_flush_flow'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

CREATE OR REPLACE FUNCTION flowpg.window_bounds(expression text, value anyelement,
												OUT window_start anyelement,
												OUT window_end anyelement)
AS 'MODULE_PATHNAME', 'flowpg_window_bounds'
LANGUAGE C CALLED ON NULL INPUT STABLE;

CREATE OR REPLACE FUNCTION flowpg.flow_window_bounds(flow_name text, value anyelement,
													 OUT window_start anyelement,
													 OUT window_end anyelement)
AS 'MODULE_PATHNAME', 'flowpg_flow_window_bounds'
LANGUAGE C CALLED ON NULL INPUT STABLE;

/*
 * 0.2: a sink is refused to DROP TABLE without CASCADE, by a dependency of
 * its flow's view in flowpg_flows on it; the flows of 0.1 get it here.
 */
CREATE FUNCTION flowpg._repair_dependencies()
RETURNS int
AS 'MODULE_PATHNAME', 'flowpg_repair_dependencies'
LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION flowpg._repair_dependencies() FROM PUBLIC;

SELECT flowpg._repair_dependencies();
