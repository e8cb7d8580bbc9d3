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
	   CASE WHEN st.state = 'active' AND b.flow_id IS NOT NULL THEN 'backfilling'
			ELSE st.state END AS state,
	   /* a failure's message can quote data: only for roles that may act for the owner */
	   CASE WHEN st.state = 'active' AND b.flow_id IS NOT NULL AND f.mode = 'streaming'
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
									THEN f.options->>'written_query' ELSE q.query END) AS flow_definition
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
	   CASE WHEN st.state = 'active' AND b.flow_id IS NOT NULL THEN 'backfilling'
			WHEN st.state = 'active' AND s.status = 'recovering' THEN 'recovering'
			ELSE st.state END AS state,
	   coalesce(r.rows_in, 0) AS rows_in,
	   coalesce(r.rows_out, 0) AS rows_out,
	   coalesce(r.runs, 0) AS runs,
	   coalesce(r.failures, 0) AS failures,
	   r.last_run_at,
	   r.last_run_duration,
	   r.next_run_at,
	   /* the worker (or the session, for an inline flush) of the last run */
	   coalesce(s.last_worker_pid, r.last_worker_pid) AS worker_pid,
	   coalesce(d.pending, 0) AS pending,
	   d.pending_rows,
	   /* the oldest change not in the sink: logged dirty, or queued */
	   CASE WHEN d.oldest IS NULL AND s.oldest_queued_at IS NULL THEN interval '0'
			ELSE pg_catalog.clock_timestamp() - LEAST(d.oldest, s.oldest_queued_at) END AS lag,
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
	   s.last_flush_at
FROM flowpg.flow f
CROSS JOIN LATERAL flowpg._flow_state(f.state, f.state_reason) AS st
LEFT JOIN LATERAL flowpg._stream_stats(f.flow_id) s ON f.mode = 'streaming'
LEFT JOIN flowpg.flow_run r USING (flow_id)
LEFT JOIN flowpg.flow_backfill b USING (flow_id)
LEFT JOIN (SELECT flow_id, count(*) AS pending, sum(nrows) AS pending_rows,
				  min(logged_at) AS oldest
			 FROM flowpg.dirty_log GROUP BY flow_id) d USING (flow_id);

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

GRANT SELECT ON flowpg.flow_backfills TO PUBLIC;

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
