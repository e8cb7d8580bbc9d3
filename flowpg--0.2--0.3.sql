/* flowpg--0.2--0.3.sql: ALTER EXTENSION flowpg UPDATE from 0.2. */

\echo Use "ALTER EXTENSION flowpg UPDATE TO '0.3'" to load this file. \quit

/*
 * flowpg--0.3.sql, the script a fresh install runs, is built by make from
 * 0.2's script followed by this one, so a fresh install and an updated one
 * run the same statements for what 0.3 adds (test/t/036_fresh_install.pl).
 *
 * 0.3: GreptimeDB fidelity, part two (issue 22).
 */

/*
 * first_value_by(value, key) and last_value_by(value, key): the value of
 * the first / last row in the order ORDER BY key, value (both ASC NULLS
 * LAST), as aggregates that combine -- DataFusion's
 * first_value(value ORDER BY key) and last_value(value ORDER BY key), to
 * which flowpg's GreptimeDB dialect rewrites those calls (src/first_last.c).
 */
CREATE FUNCTION flowpg._first_value_by_trans(internal, anyelement, anycompatible)
RETURNS internal
AS 'MODULE_PATHNAME', 'flowpg_first_value_by_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION flowpg._last_value_by_trans(internal, anyelement, anycompatible)
RETURNS internal
AS 'MODULE_PATHNAME', 'flowpg_last_value_by_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION flowpg._first_value_by_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'flowpg_first_value_by_combine'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION flowpg._last_value_by_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'flowpg_last_value_by_combine'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION flowpg._first_last_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'flowpg_first_last_serialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION flowpg._first_last_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'flowpg_first_last_deserialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION flowpg._first_last_final(internal, anyelement, anycompatible)
RETURNS anyelement
AS 'MODULE_PATHNAME', 'flowpg_first_last_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE flowpg.first_value_by(value anyelement, key anycompatible) (
	SFUNC = flowpg._first_value_by_trans,
	STYPE = internal,
	SSPACE = 64,
	COMBINEFUNC = flowpg._first_value_by_combine,
	SERIALFUNC = flowpg._first_last_serialize,
	DESERIALFUNC = flowpg._first_last_deserialize,
	FINALFUNC = flowpg._first_last_final,
	FINALFUNC_EXTRA,
	FINALFUNC_MODIFY = READ_ONLY,
	PARALLEL = SAFE
);

CREATE AGGREGATE flowpg.last_value_by(value anyelement, key anycompatible) (
	SFUNC = flowpg._last_value_by_trans,
	STYPE = internal,
	SSPACE = 64,
	COMBINEFUNC = flowpg._last_value_by_combine,
	SERIALFUNC = flowpg._first_last_serialize,
	DESERIALFUNC = flowpg._first_last_deserialize,
	FINALFUNC = flowpg._first_last_final,
	FINALFUNC_EXTRA,
	FINALFUNC_MODIFY = READ_ONLY,
	PARALLEL = SAFE
);

COMMENT ON AGGREGATE flowpg.first_value_by(anyelement, anycompatible) IS
	'the value of the first row in the order of key (ASC NULLS LAST; ties: the smallest value, NULL last)';
COMMENT ON AGGREGATE flowpg.last_value_by(anyelement, anycompatible) IS
	'the value of the last row in the order of key (ASC NULLS LAST; ties: the greatest value, NULL last)';

/*
 * Recording rules (flows grouping by now(), src/batching/refresh.c): the time their
 * query was last evaluated at, which verify_flow checks the sink against.
 */
ALTER TABLE flowpg.flow_run ADD COLUMN last_tick timestamptz;

/*
 * GreptimeDB's statements and outputs (issue 22, part 6).
 *
 * last_execution_time: the last time the flow ran, or a flush found its
 * sink up to date (a batching flow's flush with nothing to run, or one that
 * only completed the backfill, is not a run: flow_stats.runs does not count
 * it; it is kept here).  A streaming flow's flushes and the end of its
 * backfill are in shared memory (flow_stats.last_flush_at).
 */
ALTER TABLE flowpg.flow_run ADD COLUMN last_flushed_at timestamptz;

/*
 * A flow's statistics and errors go with it (src/metadata/stats.c): a
 * worker recording a run while drop_flow deleted the flow could leave its
 * row behind.  Rows 0.2 left so are removed first.
 */
DELETE FROM flowpg.flow_run r WHERE NOT EXISTS (SELECT FROM flowpg.flow f WHERE f.flow_id = r.flow_id);
DELETE FROM flowpg.flow_error e WHERE NOT EXISTS (SELECT FROM flowpg.flow f WHERE f.flow_id = e.flow_id);
ALTER TABLE flowpg.flow_run ADD FOREIGN KEY (flow_id) REFERENCES flowpg.flow ON DELETE CASCADE;
ALTER TABLE flowpg.flow_error ADD FOREIGN KEY (flow_id) REFERENCES flowpg.flow ON DELETE CASCADE;
CREATE INDEX ON flowpg.flow_error (flow_id);

/* jsonb as GreptimeDB prints JSON: {"flow_type":"streaming"}, keys in byte order. */
CREATE FUNCTION flowpg._compact_json(j jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT
RETURN '{' || coalesce((SELECT pg_catalog.string_agg(pg_catalog.to_json(e.key)::text || ':' || e.value::text, ','
												   ORDER BY e.key COLLATE "C")
						 FROM pg_catalog.jsonb_each(j) e), '') || '}';

/* A pending flow's statement, parsed: its sink schema-qualified, EVAL INTERVAL, query (greptime.c). */
CREATE FUNCTION flowpg._pending_flow_parts(statement text, settings text[],
	OUT sink text, OUT eval_interval interval, OUT query text)
RETURNS record
AS 'MODULE_PATHNAME', 'flowpg_pending_flow_parts'
LANGUAGE C STRICT STABLE;

/* flowpg._flow_definition's layout, for a pending flow (its sink may not exist yet). */
CREATE FUNCTION flowpg._pending_flow_definition(flow_name text, sink text, expire_after interval,
												eval_interval interval, comment text, options jsonb,
												query text)
RETURNS text
LANGUAGE sql STABLE
RETURN 'CREATE FLOW IF NOT EXISTS ' || pg_catalog.quote_ident(flow_name)
	   || E'\nSINK TO ' || sink
	   || coalesce(E'\nEXPIRE AFTER ' || flowpg._interval_literal(expire_after), '')
	   || coalesce(E'\nEVAL INTERVAL ' || flowpg._interval_literal(eval_interval), '')
	   || coalesce(E'\nCOMMENT ' || pg_catalog.quote_literal(comment), '')
	   || coalesce((SELECT E'\nWITH (' || pg_catalog.string_agg(o.key || ' = ' || pg_catalog.quote_literal(o.value), ', ' ORDER BY o.key) || ')'
					FROM pg_catalog.jsonb_each_text(options) o), '')
	   || E'\nAS ' || query;

CREATE OR REPLACE VIEW flowpg.information_schema_flows AS
SELECT f.flow_name,
	   f.flow_id,
	   coalesce(s.state_bytes, 0) AS state_size,
	   pg_catalog.current_database()::text AS table_catalog,
	   f.flow_definition,
	   coalesce(f.comment, '') AS comment,
	   pg_catalog.date_part('epoch', f.expire_after)::bigint AS expire_after,
	   (SELECT pg_catalog.json_agg(t::oid ORDER BY o)::text
		  FROM unnest(f.source_tables) WITH ORDINALITY AS u(t, o)) AS source_table_ids,
	   (SELECT pg_catalog.current_database() || '.' || n.nspname || '.' || c.relname
		  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		 WHERE c.oid = f.sink_table) AS sink_table_name,
	   CASE WHEN s.worker_pid IS NULL THEN '{}'
			ELSE pg_catalog.json_build_object('0', s.worker_pid)::text END AS flownode_ids,
	   flowpg._compact_json(pg_catalog.jsonb_build_object('flow_type', f.mode) || flowpg._flow_options(c.options)) AS options,
	   f.created_at AS created_time,
	   f.updated_at AS updated_time,
	   GREATEST(s.last_flush_at, s.last_run_at, r.last_flushed_at) AS last_execution_time,
	   (SELECT pg_catalog.string_agg(pg_catalog.current_database() || '.' || n.nspname || '.' || rc.relname, ',' ORDER BY o)
		  FROM unnest(f.source_tables) WITH ORDINALITY AS u(t, o)
		  JOIN pg_catalog.pg_class rc ON rc.oid = u.t
		  JOIN pg_catalog.pg_namespace n ON n.oid = rc.relnamespace) AS source_table_names,
	   NULL::text AS flownode_addrs,
	   f.mode,
	   s.state,
	   f.state_reason
FROM flowpg.flows f
JOIN flowpg.flow c USING (flow_id)
LEFT JOIN flowpg.flow_stats s USING (flow_id)
LEFT JOIN flowpg.flow_run r USING (flow_id)
UNION ALL
SELECT p.flow_name,
	   NULL, 0,
	   pg_catalog.current_database()::text,
	   /* as an active flow's; the statement as written if it no longer parses */
	   coalesce(flowpg._pending_flow_definition(p.flow_name, pp.sink, p.expire_after, pp.eval_interval,
												p.comment, p.options, pp.query),
				p.statement),
	   coalesce(p.comment, ''),
	   pg_catalog.date_part('epoch', p.expire_after)::bigint,
	   '[]', pg_catalog.current_database() || '.' || p.sink_table, '{}',
	   flowpg._compact_json('{"flow_type": "batching"}'::jsonb || coalesce(p.options, '{}')),
	   p.created_at, p.updated_at, NULL, '', NULL,
	   'batching',
	   'pending',
	   /* an error can quote data: only for roles that may act for the owner */
	   CASE WHEN p.last_error IS NULL THEN 'waiting for ' || p.missing
			WHEN pg_catalog.pg_has_role(p.owner, 'USAGE')
			THEN 'the last attempt to start failed: ' || p.last_error
			ELSE 'the last attempt to start failed' END
FROM flowpg.pending_flow p
CROSS JOIN LATERAL flowpg._pending_flow_parts(p.statement, p.settings) pp;

CREATE OR REPLACE VIEW flowpg.information_schema_flow_statistics AS
SELECT f.flow_id,
	   f.flow_name,
	   GREATEST(f.created_at, pg_catalog.pg_postmaster_start_time()) AS start_time,
	   GREATEST(s.last_flush_at, s.last_run_at, r.last_flushed_at) AS last_execution_time,
	   GREATEST(0, pg_catalog.date_part('epoch', pg_catalog.now()
			 - GREATEST(f.created_at, pg_catalog.pg_postmaster_start_time())))::bigint AS uptime_seconds,
	   coalesce(s.state_bytes, 0) AS state_size
FROM flowpg.flows f
LEFT JOIN flowpg.flow_stats s USING (flow_id)
LEFT JOIN flowpg.flow_run r USING (flow_id);

GRANT SELECT ON flowpg.information_schema_flows, flowpg.information_schema_flow_statistics TO PUBLIC;

/*
 * 0.3 (issue 38): does the streaming engine keep the flow's state -- a
 * streaming flow, or a batching flow keeping partial states (its refresh
 * writes the groups changed since the last one from them).
 */
CREATE FUNCTION flowpg._on_streams(mode text, options jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN mode = 'streaming' OR coalesce(options->'partial_states' = 'true'::jsonb, false);

/*
 * 0.3 (issue 39): flow_backfill.start_at, the backfill's oldest time with
 * expire_after (NULL: the source's oldest row); end_before, the time
 * ordinal a streaming flow's pieces stop at (its state holds the windows
 * from there on, computed by its first load).
 */
ALTER TABLE flowpg.flow_backfill ADD COLUMN start_at timestamptz;
ALTER TABLE flowpg.flow_backfill ADD COLUMN end_before bigint;

/*
 * 0.3 (issue 39): a flow's horizon -- with expire_after, the start of its
 * oldest maintained window; the windows before it are frozen -- and where a
 * streaming flow's state begins (flowpg.state_keep, memory, expire_after).
 */
CREATE FUNCTION flowpg._flow_horizon(flow_id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'flowpg_flow_horizon'
LANGUAGE C STRICT STABLE;

CREATE FUNCTION flowpg._stream_floor(flow_id bigint,
	OUT state_from timestamptz, OUT degraded_whole boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'flowpg_stream_floor'
LANGUAGE C STRICT VOLATILE;

/*
 * flowpg.flows.sink_columns: how the outputs were matched to an existing
 * sink's columns -- 'by name', or, for a flow of flowpg.execute whose
 * outputs are not all named after sink columns, 'by position: out AS col,
 * ...' as GreptimeDB matches them (the outputs are renamed in the stored
 * query).
 */
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
			WHEN st.state = 'active' AND l.degraded THEN 'degraded'
			ELSE st.state END AS state,
	   /* a failure's message can quote data: only for roles that may act for the owner */
	   CASE WHEN f.paused AND st.state <> 'update needed'
			THEN 'paused by pause_flow: changes are captured, the sink is not written; '
				 || 'resume_flow catches up'
			WHEN st.state = 'active' AND b.flow_id IS NOT NULL AND flowpg._on_streams(f.mode, f.options)
			THEN 'computing the sink from the rows the source held at creation: '
				 || 'loading the state from the source, then writing every group'
				 || CASE WHEN b.end_before IS NOT NULL
						 THEN ', then the windows before the state''s: ' || b.pieces_done || ' of '
							  || coalesce(b.pieces_total::text, '?') || ' pieces done (flowpg.flow_backfills)'
						 ELSE '' END
			WHEN st.state = 'active' AND l.degraded AND fl.degraded_whole
			THEN 'flowpg.state_memory is full: the flow gave its state up; changes are recomputed '
				 || 'from the source until memory frees (flowpg.memory)'
			WHEN st.state = 'active' AND l.degraded
			THEN 'flowpg.state_memory is full: the windows before ' || coalesce(fl.state_from::text, '?')
				 || ' left the state; changes to them are recomputed from the source until memory frees '
				 || '(flowpg.memory)'
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
	   f.options->>'mode_reason' AS mode_reason,
	   /* how an existing sink's columns were matched to the outputs */
	   CASE WHEN f.options ? 'sink_columns_by_position'
			THEN 'by position: ' || (f.options->>'sink_columns_by_position')
			ELSE 'by name' END AS sink_columns,
	   /* the streaming engine keeps its windows' partial states (a batching flow: flowpg.batching_partial_states) */
	   flowpg._on_streams(f.mode, f.options) AS partial_states,
	   /* with expire_after: windows before it are frozen, kept as they were */
	   flowpg._flow_horizon(f.flow_id) AS horizon
FROM flowpg.flow f
CROSS JOIN LATERAL flowpg._deparse_query(f.flow_id) AS q(query)
CROSS JOIN LATERAL flowpg._flow_state(f.state, f.state_reason) AS st
LEFT JOIN flowpg.flow_backfill b ON b.flow_id = f.flow_id
LEFT JOIN LATERAL flowpg._stream_live(f.flow_id) l ON flowpg._on_streams(f.mode, f.options)
LEFT JOIN LATERAL flowpg._stream_floor(f.flow_id) fl ON flowpg._on_streams(f.mode, f.options)
LEFT JOIN pg_catalog.pg_attribute a
	   ON a.attrelid = f.time_table AND a.attnum = f.time_column;

/*
 * 0.3 (issue 25): a flow reading a partition or an inheritance child is
 * told of statements through the parent by the parent's capture triggers;
 * flows made by 0.2 get them here.
 */
SELECT flowpg._repair_capture();

/*
 * 0.3 (issue 37): verify_flow compares values exactly, by their binary
 * images, not by their types' equality (1.5 = 1.50, -0 = 0): the sink
 * must hold the value the query gives, not one equal to it.
 */
CREATE FUNCTION flowpg._value_image(value anyelement)
RETURNS bytea
AS 'MODULE_PATHNAME', 'flowpg_value_image'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

/*
 * 0.3 (issue 37): code added to a flow's tables (a trigger, policy, rule or index)
 * that the flow will not run as its owner is reported when it appears
 * (ddl_events.c): the event trigger hears of those statements too.
 */
DROP EVENT TRIGGER flowpg_ddl_command_end;
CREATE EVENT TRIGGER flowpg_ddl_command_end ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE', 'ALTER SCHEMA', 'ALTER FUNCTION', 'ALTER TYPE',
				 'ALTER AGGREGATE', 'ALTER OPERATOR', 'ALTER DOMAIN', 'ALTER ROUTINE',
				 'CREATE TABLE', 'CREATE TRIGGER', 'CREATE POLICY', 'ALTER POLICY',
				 'CREATE RULE', 'CREATE INDEX')
	EXECUTE FUNCTION flowpg._on_ddl_command_end();

/*
 * 0.3 (issue 38): the batching flows of a table share one dirty-range row
 * per (transaction, table, time column): flows lists those it is for, xid
 * is the writer's transaction.  Written by the capture triggers with
 * simple_heap_insert, as dirty_log.  A flow's refresh claims the rows it has
 * not seen (moves them, merged, into its own dirty_log entries) and records
 * the snapshot it saw them in: table_dirty_seen.  The worker deletes the
 * rows every flow of theirs has seen.  The rows are dumped (restored ones
 * take the restoring transaction's id), the snapshots are not: they mean
 * nothing in another cluster.
 */
CREATE TABLE flowpg.table_dirty_log (
	xid				xid8 NOT NULL,
	flows			bigint[] NOT NULL,
	lo				bigint,
	hi				bigint,
	nrows			bigint NOT NULL,
	logged_at		timestamptz NOT NULL
);
CREATE TABLE flowpg.table_dirty_seen (
	flow_id			bigint PRIMARY KEY REFERENCES flowpg.flow ON DELETE CASCADE,
	seen			pg_snapshot NOT NULL	/* the rows visible in it are claimed */
);
REVOKE ALL ON flowpg.table_dirty_log, flowpg.table_dirty_seen FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('flowpg.table_dirty_log', '');

/* Restored rows take the restoring transaction's id (see dirty_log.c). */
CREATE FUNCTION flowpg._dirty_row_restored()
RETURNS trigger
AS 'MODULE_PATHNAME', 'flowpg_dirty_row_restored'
LANGUAGE C;

CREATE TRIGGER dirty_row_restored BEFORE INSERT ON flowpg.table_dirty_log
	FOR EACH ROW EXECUTE FUNCTION flowpg._dirty_row_restored();

/* Every flow's logged changes not recomputed yet, from both logs. */
CREATE VIEW flowpg.dirty_entries AS
SELECT flow_id, lo, hi, nrows, logged_at FROM flowpg.dirty_log
UNION ALL
SELECT o.flow_id, t.lo, t.hi, t.nrows, t.logged_at
FROM flowpg.table_dirty_log t
CROSS JOIN LATERAL pg_catalog.unnest(t.flows) AS o(flow_id)
JOIN flowpg.flow f ON f.flow_id = o.flow_id	/* not a dropped one, nor one the streaming engine keeps */
	 AND NOT flowpg._on_streams(f.mode, f.options)
LEFT JOIN flowpg.table_dirty_seen s ON s.flow_id = o.flow_id
WHERE s.seen IS NULL OR NOT pg_catalog.pg_visible_in_snapshot(t.xid, s.seen);
REVOKE ALL ON flowpg.dirty_entries FROM PUBLIC;

/*
 * 0.3 (issue 37): flow_stats says why a due batching flow waits for a
 * worker (its owner's share of the workers is taken while other roles have
 * batching flows, or every batching worker is busy), and since when.
 */
CREATE FUNCTION flowpg._flow_waits(OUT flow_id bigint, OUT waiting text,
								   OUT waiting_since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'flowpg_flow_waits'
LANGUAGE C STRICT VOLATILE;

CREATE OR REPLACE VIEW flowpg.flow_stats AS
SELECT f.flow_id,
	   f.flow_name,
	   f.mode,
	   CASE WHEN f.paused AND st.state <> 'update needed' THEN 'paused'
			WHEN st.state = 'active' AND b.flow_id IS NOT NULL THEN 'backfilling'
			WHEN st.state = 'active' AND s.status = 'recovering' THEN 'recovering'
			WHEN st.state = 'active' AND l.degraded THEN 'degraded'
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
			WHEN flowpg._on_streams(f.mode, f.options) THEN l.retry_at
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
	   /* (in numeric, then float8: 3.996 ms, not 3.9960000000000004) */
	   EXTRACT(epoch FROM g.lag)::float8 AS lag_seconds,
	   (EXTRACT(epoch FROM s.freshness) * 1000)::float8 AS freshness_ms,
	   /* a due batching flow that no worker runs yet: why, and since when */
	   w.waiting,
	   w.waiting_since,
	   /*
	    * where the state begins: windows before it are recomputed from the
	    * source when they change (flowpg.state_keep, flowpg.state_memory), or
	    * not maintained (expire_after)
	    */
	   fl.state_from
FROM flowpg.flow f
CROSS JOIN LATERAL flowpg._flow_state(f.state, f.state_reason) AS st
LEFT JOIN LATERAL flowpg._stream_stats(f.flow_id) s ON flowpg._on_streams(f.mode, f.options)
LEFT JOIN LATERAL flowpg._stream_live(f.flow_id) l ON flowpg._on_streams(f.mode, f.options)
LEFT JOIN LATERAL flowpg._stream_floor(f.flow_id) fl ON flowpg._on_streams(f.mode, f.options)
LEFT JOIN LATERAL (SELECT p.started_at, p.pid, p.command FROM flowpg._flow_progress() p
				   WHERE p.flow_id = f.flow_id ORDER BY p.started_at LIMIT 1) p ON true
LEFT JOIN flowpg.flow_run r ON r.flow_id = f.flow_id
LEFT JOIN flowpg._flow_waits() w ON w.flow_id = f.flow_id
LEFT JOIN flowpg.flow_backfill b ON b.flow_id = f.flow_id
LEFT JOIN (SELECT dl.flow_id, count(*) AS pending, sum(dl.nrows) AS pending_rows,
				  min(dl.logged_at) AS oldest
			 FROM flowpg.dirty_entries dl GROUP BY dl.flow_id) d ON d.flow_id = f.flow_id
/* the oldest change not in the sink: logged dirty, or queued */
CROSS JOIN LATERAL (SELECT CASE WHEN d.oldest IS NULL AND s.oldest_queued_at IS NULL THEN interval '0'
								ELSE pg_catalog.clock_timestamp() - LEAST(d.oldest, s.oldest_queued_at)
						   END AS lag) g;

/*
 * 0.3 (issue 38): a transaction's rows are queued once for all the
 * streaming flows of its table.  The server row of flowpg.memory says what
 * the queue area holds (each transaction's rows once); a database's and a
 * flow's queue_bytes count a batch once per flow waiting for it.
 */
CREATE FUNCTION flowpg._queue_bytes()
RETURNS bigint
AS 'MODULE_PATHNAME', 'flowpg_queue_bytes'
LANGUAGE C VOLATILE;

CREATE OR REPLACE VIEW flowpg.memory AS
WITH flows AS (
	SELECT f.flow_id, f.flow_name, s.state_groups, s.state_bytes, s.queued_batches,
		   s.queued_bytes, s.fallbacks, l.degraded, l.degrades, l.evictions
	FROM flowpg.flow f
	CROSS JOIN LATERAL flowpg._stream_stats(f.flow_id) s
	CROSS JOIN LATERAL flowpg._stream_live(f.flow_id) l
	WHERE flowpg._on_streams(f.mode, f.options))
SELECT 'server'::text AS scope, NULL::text AS database, NULL::bigint AS flow_id,
	   NULL::text AS flow_name,
	   m.server_state_bytes AS state_bytes,
	   pg_catalog.pg_size_bytes(pg_catalog.current_setting('flowpg.state_memory', true)) AS state_limit,
	   NULL::bigint AS state_groups,
	   flowpg._queue_bytes() AS queue_bytes,
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

/*
 * 0.3 (issue 39): rollups that outlive their raw data.  A flow with
 * expire_after backfills its whole history (or from backfill_from on), and
 * its windows before the horizon stay as they were (flowpg.flow_backfill
 * and flowpg.flows, above).
 */

DROP FUNCTION flowpg.create_flow(text, text, text, text, interval, interval, text, boolean,
								 boolean, boolean);
CREATE FUNCTION flowpg.create_flow(
	flow_name text,
	sink_table text,
	query text,
	mode text DEFAULT 'auto',
	expire_after interval DEFAULT NULL,
	eval_interval interval DEFAULT NULL,
	comment text DEFAULT NULL,
	or_replace boolean DEFAULT false,
	if_not_exists boolean DEFAULT false,
	backfill boolean DEFAULT true,
	backfill_from timestamptz DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'flowpg_create_flow'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

/*
 * 0.3 (issue 39): TimescaleDB's time_bucket, for flows written by its users
 * (src/functions/time_bucket.c).  A flow's unqualified time_bucket(...) is this
 * one when no time_bucket is installed, and its common forms become the
 * date_bin / date_trunc windows they equal (src/planning/timescale.c).
 */
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts timestamptz)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'flowpg_time_bucket'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts timestamptz, origin timestamptz)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'flowpg_time_bucket_origin'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts timestamptz, "offset" interval)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'flowpg_time_bucket_offset'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts timestamptz, timezone text,
								   origin timestamptz DEFAULT NULL, "offset" interval DEFAULT NULL)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'flowpg_time_bucket_zone'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts timestamp)
RETURNS timestamp AS 'MODULE_PATHNAME', 'flowpg_time_bucket'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts timestamp, origin timestamp)
RETURNS timestamp AS 'MODULE_PATHNAME', 'flowpg_time_bucket_origin'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts timestamp, "offset" interval)
RETURNS timestamp AS 'MODULE_PATHNAME', 'flowpg_time_bucket_offset'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts date)
RETURNS date AS 'MODULE_PATHNAME', 'flowpg_time_bucket_date'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts date, origin date)
RETURNS date AS 'MODULE_PATHNAME', 'flowpg_time_bucket_date_origin'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width interval, ts date, "offset" interval)
RETURNS date AS 'MODULE_PATHNAME', 'flowpg_time_bucket_date_offset'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width smallint, ts smallint, "offset" smallint DEFAULT 0)
RETURNS smallint AS 'MODULE_PATHNAME', 'flowpg_time_bucket_int2'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width integer, ts integer, "offset" integer DEFAULT 0)
RETURNS integer AS 'MODULE_PATHNAME', 'flowpg_time_bucket_int4'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg.time_bucket(bucket_width bigint, ts bigint, "offset" bigint DEFAULT 0)
RETURNS bigint AS 'MODULE_PATHNAME', 'flowpg_time_bucket_int8'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

/*
 * 0.3 (issue 39): flows over flows.  Which flows read which flows' sinks
 * (a rollup of a rollup); flush_flow of a flow first flushes the flows it
 * reads from (src/lifecycle/flow_flush.c).
 */
CREATE VIEW flowpg.flow_dependencies AS
SELECT f.flow_id,
	   f.flow_name,
	   u.flow_id AS upstream_flow_id,
	   u.flow_name AS upstream_flow_name,
	   u.sink_table AS via_table
FROM flowpg.flow f
CROSS JOIN LATERAL pg_catalog.unnest(f.source_tables) AS s(source_table)
JOIN flowpg.flow u ON u.sink_table = s.source_table AND u.flow_id <> f.flow_id;
GRANT SELECT ON flowpg.flow_dependencies TO PUBLIC;

/*
 * 0.3 (issue 39): waiting for a new flow's backfill, which runs online
 * after create_flow commits (src/lifecycle/flow_flush.c).
 */
CREATE FUNCTION flowpg.wait_for_backfill(flow_name text, timeout interval DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'flowpg_wait_for_backfill'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

/*
 * 0.3 (issue 40): GreptimeDB's sketch aggregates, whose states (bytea)
 * roll up -- a flow over a sink of sketches merges them.  hll(x),
 * hll_merge(state), hll_count(state): HyperLogLog of precision 14
 * (src/functions/hll.c).  uddsketch_state(buckets, error, x),
 * uddsketch_merge(buckets, error, state), uddsketch_calc(q, state):
 * UDDSketch quantiles (src/functions/uddsketch.c).  In a flow an unqualified
 * call is ours when no function of that name is visible (dialect.c).
 */
CREATE FUNCTION flowpg._hll_trans(internal, anyelement)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_hll_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._hll_merge_trans(internal, bytea)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_hll_merge_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._hll_combine(internal, internal)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_hll_combine'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._hll_serialize(internal)
RETURNS bytea AS 'MODULE_PATHNAME', 'flowpg_hll_serialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._hll_deserialize(bytea, internal)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_hll_deserialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._hll_final(internal)
RETURNS bytea AS 'MODULE_PATHNAME', 'flowpg_hll_serialize'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE flowpg.hll(value anyelement) (
	SFUNC = flowpg._hll_trans,
	STYPE = internal,
	SSPACE = 16384,
	COMBINEFUNC = flowpg._hll_combine,
	SERIALFUNC = flowpg._hll_serialize,
	DESERIALFUNC = flowpg._hll_deserialize,
	FINALFUNC = flowpg._hll_final,
	FINALFUNC_MODIFY = READ_ONLY,
	PARALLEL = SAFE
);
CREATE AGGREGATE flowpg.hll_merge(state bytea) (
	SFUNC = flowpg._hll_merge_trans,
	STYPE = internal,
	SSPACE = 16384,
	COMBINEFUNC = flowpg._hll_combine,
	SERIALFUNC = flowpg._hll_serialize,
	DESERIALFUNC = flowpg._hll_deserialize,
	FINALFUNC = flowpg._hll_final,
	FINALFUNC_MODIFY = READ_ONLY,
	PARALLEL = SAFE
);
CREATE FUNCTION flowpg.hll_count(state bytea)
RETURNS bigint AS 'MODULE_PATHNAME', 'flowpg_hll_count'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON AGGREGATE flowpg.hll(anyelement) IS
	'a HyperLogLog sketch (precision 14) of the distinct non-NULL values, as GreptimeDB''s hll';
COMMENT ON AGGREGATE flowpg.hll_merge(bytea) IS
	'the sketch of the union of HyperLogLog sketches, as GreptimeDB''s hll_merge';
COMMENT ON FUNCTION flowpg.hll_count(bytea) IS
	'the estimated number of distinct values of a HyperLogLog sketch, as GreptimeDB''s hll_count';

CREATE FUNCTION flowpg._uddsketch_trans(internal, integer, double precision, double precision)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_uddsketch_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._uddsketch_merge_trans(internal, integer, double precision, bytea)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_uddsketch_merge_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._uddsketch_combine(internal, internal)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_uddsketch_combine'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._uddsketch_serialize(internal)
RETURNS bytea AS 'MODULE_PATHNAME', 'flowpg_uddsketch_serialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._uddsketch_deserialize(bytea, internal)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_uddsketch_deserialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE flowpg.uddsketch_state(buckets integer, error_rate double precision,
										value double precision) (
	SFUNC = flowpg._uddsketch_trans,
	STYPE = internal,
	COMBINEFUNC = flowpg._uddsketch_combine,
	SERIALFUNC = flowpg._uddsketch_serialize,
	DESERIALFUNC = flowpg._uddsketch_deserialize,
	FINALFUNC = flowpg._uddsketch_serialize,
	FINALFUNC_MODIFY = READ_ONLY,
	PARALLEL = SAFE
);
CREATE AGGREGATE flowpg.uddsketch_merge(buckets integer, error_rate double precision,
										state bytea) (
	SFUNC = flowpg._uddsketch_merge_trans,
	STYPE = internal,
	COMBINEFUNC = flowpg._uddsketch_combine,
	SERIALFUNC = flowpg._uddsketch_serialize,
	DESERIALFUNC = flowpg._uddsketch_deserialize,
	FINALFUNC = flowpg._uddsketch_serialize,
	FINALFUNC_MODIFY = READ_ONLY,
	PARALLEL = SAFE
);
CREATE FUNCTION flowpg.uddsketch_calc(quantile double precision, state bytea)
RETURNS double precision AS 'MODULE_PATHNAME', 'flowpg_uddsketch_calc'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON AGGREGATE flowpg.uddsketch_state(integer, double precision, double precision) IS
	'a UDDSketch of the non-NULL values (at most buckets buckets, relative error error_rate before collapsing), as GreptimeDB''s uddsketch_state';
COMMENT ON AGGREGATE flowpg.uddsketch_merge(integer, double precision, bytea) IS
	'the UDDSketch of the union of UDDSketches of those parameters, as GreptimeDB''s uddsketch_merge';
COMMENT ON FUNCTION flowpg.uddsketch_calc(double precision, bytea) IS
	'the estimated quantile of a UDDSketch (NULL for a sketch of no value), as GreptimeDB''s uddsketch_calc';

/*
 * 0.3 (issue 40): PromQL's range functions as aggregates over one series'
 * samples (src/functions/prom_range.c): prom_rate, prom_increase, prom_delta
 * (ts, value, range_start, range_end) with Prometheus's extrapolation to
 * the range's edges, and prom_irate, prom_idelta (ts, value) from the
 * last two samples.  NULL for fewer than two samples.
 */
CREATE FUNCTION flowpg._prom_range_trans(internal, timestamptz, double precision,
										 timestamptz, timestamptz)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_prom_samples_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_instant_trans(internal, timestamptz, double precision)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_prom_samples_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_samples_combine(internal, internal)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_prom_samples_combine'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_samples_serialize(internal)
RETURNS bytea AS 'MODULE_PATHNAME', 'flowpg_prom_samples_serialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_samples_deserialize(bytea, internal)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_prom_samples_deserialize'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_rate_final(internal)
RETURNS double precision AS 'MODULE_PATHNAME', 'flowpg_prom_rate_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_increase_final(internal)
RETURNS double precision AS 'MODULE_PATHNAME', 'flowpg_prom_increase_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_delta_final(internal)
RETURNS double precision AS 'MODULE_PATHNAME', 'flowpg_prom_delta_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_irate_final(internal)
RETURNS double precision AS 'MODULE_PATHNAME', 'flowpg_prom_irate_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_idelta_final(internal)
RETURNS double precision AS 'MODULE_PATHNAME', 'flowpg_prom_idelta_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE flowpg.prom_rate(ts timestamptz, value double precision,
								  range_start timestamptz, range_end timestamptz) (
	SFUNC = flowpg._prom_range_trans, STYPE = internal,
	COMBINEFUNC = flowpg._prom_samples_combine,
	SERIALFUNC = flowpg._prom_samples_serialize, DESERIALFUNC = flowpg._prom_samples_deserialize,
	FINALFUNC = flowpg._prom_rate_final, FINALFUNC_MODIFY = READ_WRITE, PARALLEL = SAFE);
CREATE AGGREGATE flowpg.prom_increase(ts timestamptz, value double precision,
									  range_start timestamptz, range_end timestamptz) (
	SFUNC = flowpg._prom_range_trans, STYPE = internal,
	COMBINEFUNC = flowpg._prom_samples_combine,
	SERIALFUNC = flowpg._prom_samples_serialize, DESERIALFUNC = flowpg._prom_samples_deserialize,
	FINALFUNC = flowpg._prom_increase_final, FINALFUNC_MODIFY = READ_WRITE, PARALLEL = SAFE);
CREATE AGGREGATE flowpg.prom_delta(ts timestamptz, value double precision,
								   range_start timestamptz, range_end timestamptz) (
	SFUNC = flowpg._prom_range_trans, STYPE = internal,
	COMBINEFUNC = flowpg._prom_samples_combine,
	SERIALFUNC = flowpg._prom_samples_serialize, DESERIALFUNC = flowpg._prom_samples_deserialize,
	FINALFUNC = flowpg._prom_delta_final, FINALFUNC_MODIFY = READ_WRITE, PARALLEL = SAFE);
CREATE AGGREGATE flowpg.prom_irate(ts timestamptz, value double precision) (
	SFUNC = flowpg._prom_instant_trans, STYPE = internal,
	COMBINEFUNC = flowpg._prom_samples_combine,
	SERIALFUNC = flowpg._prom_samples_serialize, DESERIALFUNC = flowpg._prom_samples_deserialize,
	FINALFUNC = flowpg._prom_irate_final, FINALFUNC_MODIFY = READ_WRITE, PARALLEL = SAFE);
CREATE AGGREGATE flowpg.prom_idelta(ts timestamptz, value double precision) (
	SFUNC = flowpg._prom_instant_trans, STYPE = internal,
	COMBINEFUNC = flowpg._prom_samples_combine,
	SERIALFUNC = flowpg._prom_samples_serialize, DESERIALFUNC = flowpg._prom_samples_deserialize,
	FINALFUNC = flowpg._prom_idelta_final, FINALFUNC_MODIFY = READ_WRITE, PARALLEL = SAFE);
COMMENT ON AGGREGATE flowpg.prom_rate(timestamptz, double precision, timestamptz, timestamptz) IS
	'PromQL''s rate() of one series'' samples in (range_start, range_end], per second, extrapolated as Prometheus does';
COMMENT ON AGGREGATE flowpg.prom_increase(timestamptz, double precision, timestamptz, timestamptz) IS
	'PromQL''s increase() of one series'' samples in (range_start, range_end], extrapolated as Prometheus does';
COMMENT ON AGGREGATE flowpg.prom_delta(timestamptz, double precision, timestamptz, timestamptz) IS
	'PromQL''s delta() of one series'' samples in (range_start, range_end], extrapolated as Prometheus does';
COMMENT ON AGGREGATE flowpg.prom_irate(timestamptz, double precision) IS
	'PromQL''s irate(): the per-second increase between the last two samples';
COMMENT ON AGGREGATE flowpg.prom_idelta(timestamptz, double precision) IS
	'PromQL''s idelta(): the difference between the last two samples';

/*
 * 0.3 (issue 40): PromQL's histogram_quantile over one group of a classic
 * histogram's buckets (le as text, '+Inf' included), as Prometheus's
 * bucketQuantile (src/functions/prom_range.c); TQL flows use it.
 */
CREATE FUNCTION flowpg._prom_buckets_trans(internal, double precision, text, double precision)
RETURNS internal AS 'MODULE_PATHNAME', 'flowpg_prom_buckets_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION flowpg._prom_histogram_quantile_final(internal)
RETURNS double precision AS 'MODULE_PATHNAME', 'flowpg_prom_histogram_quantile_final'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;
CREATE AGGREGATE flowpg.prom_histogram_quantile(quantile double precision, le text,
												 count double precision) (
	SFUNC = flowpg._prom_buckets_trans, STYPE = internal,
	COMBINEFUNC = flowpg._prom_samples_combine,
	SERIALFUNC = flowpg._prom_samples_serialize, DESERIALFUNC = flowpg._prom_samples_deserialize,
	FINALFUNC = flowpg._prom_histogram_quantile_final, FINALFUNC_MODIFY = READ_WRITE,
	PARALLEL = SAFE);
COMMENT ON AGGREGATE flowpg.prom_histogram_quantile(double precision, text, double precision) IS
	'PromQL''s histogram_quantile() over the buckets (upper bound le, cumulative count) of one histogram';
