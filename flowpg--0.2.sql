/* flowpg--0.2.sql: catalog, API and views of the flowpg extension. */

\echo Use "CREATE EXTENSION flowpg" to load this file. \quit

/*
 * The catalog.  Only flowpg's functions write it: they switch to the
 * extension owner for that, so ordinary roles get no rights on it at all.
 */
CREATE SEQUENCE flowpg.flow_id_seq;

/*
 * flowpg_flows holds one view per flow, over the flow's query.  It is never
 * read: it makes PostgreSQL record what the flow depends on (tables,
 * columns, functions, types, operators), so that DROP and ALTER refuse to
 * break a flow, as they refuse for any view.
 */
CREATE SCHEMA flowpg_flows;
REVOKE ALL ON SCHEMA flowpg_flows FROM PUBLIC;

CREATE TABLE flowpg.flow (
	flow_id			bigint PRIMARY KEY DEFAULT nextval('flowpg.flow_id_seq'),
	flow_name		text NOT NULL UNIQUE,
	owner			regrole NOT NULL,
	mode			text NOT NULL CHECK (mode IN ('streaming', 'batching')),
	kind			text NOT NULL CHECK (kind IN ('aggregate', 'projection')),
	source_tables	regclass[] NOT NULL,
	sink_table		regclass NOT NULL,
	query			text NOT NULL,		/* canonical text: schema-qualified, deparsed */
	query_tree		text NOT NULL,		/* nodeToString of the analysed query */
	time_table		regclass,			/* the table holding the time column */
	time_column		smallint,			/* its attnum; names are looked up live */
	window_expr		text,				/* deparsed time-window expression */
	expire_after	interval,
	eval_interval	interval,
	comment			text,
	settings		text[] NOT NULL,	/* pinned GUCs, as name=value */
	options			jsonb NOT NULL DEFAULT '{}',
	state			text NOT NULL DEFAULT 'active'
		CHECK (state IN ('active', 'failed', 'restoring')),
	state_reason	text,
	created_at		timestamptz NOT NULL DEFAULT now(),
	updated_at		timestamptz NOT NULL DEFAULT now(),
	planned_in		text NOT NULL,		/* system id:database oid of query_tree */
	deps_view		regclass,			/* flowpg_flows.<name>, see below */
	window_output	smallint,			/* which output is the time window */
	paused			boolean NOT NULL DEFAULT false	/* pause_flow (src/pause.c) */
);
/* (src/catalog.c reads rows by column position: keep the order.) */
ALTER SEQUENCE flowpg.flow_id_seq OWNED BY flowpg.flow.flow_id;

SELECT pg_catalog.pg_extension_config_dump('flowpg.flow', '');
SELECT pg_catalog.pg_extension_config_dump('flowpg.flow_id_seq', '');

REVOKE ALL ON flowpg.flow, flowpg.flow_id_seq FROM PUBLIC;
/*
 * The dirty log: ranges of time-column values (as int64 ordinals: µs for
 * timestamps, days for dates, integers as they are) changed by committed
 * transactions and not yet recomputed.  lo/hi NULL: the whole flow.
 * Written by the capture triggers with simple_heap_insert, so writers need
 * no rights on it; no index, so that writing it stays cheap.
 */
CREATE TABLE flowpg.dirty_log (
	flow_id			bigint NOT NULL,
	lo				bigint,
	hi				bigint,
	nrows			bigint NOT NULL,
	logged_at		timestamptz NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('flowpg.dirty_log', '');

/* Counters and schedule of each flow's runs. */
CREATE TABLE flowpg.flow_run (
	flow_id			bigint PRIMARY KEY,
	runs			bigint NOT NULL DEFAULT 0,
	failures		bigint NOT NULL DEFAULT 0,
	consecutive_failures int NOT NULL DEFAULT 0,
	rows_in			bigint NOT NULL DEFAULT 0,
	rows_out		bigint NOT NULL DEFAULT 0,
	last_run_at		timestamptz,
	last_run_duration interval,
	next_run_at		timestamptz,
	last_worker_pid	int,
	last_success_at	timestamptz
);

/* The most recent errors of each flow. */
CREATE TABLE flowpg.flow_error (
	flow_id			bigint NOT NULL,
	at				timestamptz NOT NULL,
	sqlstate		text NOT NULL,
	message			text NOT NULL,
	detail			text
);

/*
 * Flows created with defer_on_missing_source over tables that do not
 * exist yet (see pending_flow.c): the statement runs again, as its owner
 * under the settings it was given with, when a table is created.
 */
CREATE TABLE flowpg.pending_flow (
	flow_name		text PRIMARY KEY,
	owner			regrole NOT NULL,
	statement		text NOT NULL,
	settings		text[] NOT NULL,
	sink_table		text NOT NULL,		/* as the statement names it */
	comment			text,
	options			jsonb,				/* its WITH options */
	expire_after	interval,
	missing			text NOT NULL,		/* the tables it waits for */
	last_error		text,				/* why the last attempt to start failed */
	created_at		timestamptz NOT NULL DEFAULT now(),
	updated_at		timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('flowpg.pending_flow', '');

/*
 * Flows whose sink is still being computed from the rows their source held
 * when they were created or replaced (src/backfill.c): the worker does it
 * in pieces of the time range, [time_lo, done_until) is done.  Not dumped:
 * a restored flow is recomputed whole anyway.
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

REVOKE ALL ON flowpg.dirty_log, flowpg.flow_run, flowpg.flow_error,
	flowpg.pending_flow, flowpg.flow_backfill FROM PUBLIC;


/*
 * The API.  Flow names follow PostgreSQL's rules for identifiers (unquoted
 * ones are folded to lower case), as the sink's name does; NULL is an error
 * wherever it means nothing (window_start and window_end NULL mean
 * unbounded, expire_after, eval_interval and comment NULL mean none).
 */
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
	backfill boolean DEFAULT true)
RETURNS bigint
AS 'MODULE_PATHNAME', 'flowpg_create_flow'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

CREATE FUNCTION flowpg.drop_flow(flow_name text, if_exists boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'flowpg_drop_flow'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

/*
 * flush_flow: returns once every change committed before the call is in the
 * sink (the refresh runs in the calling session), with the rows written.
 */
CREATE FUNCTION flowpg.flush_flow(flow_name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'flowpg_flush_flow'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

/* refresh_flow: recomputes the windows meeting [window_start, window_end). */
CREATE FUNCTION flowpg.refresh_flow(flow_name text,
									window_start timestamptz DEFAULT NULL,
									window_end timestamptz DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'flowpg_refresh_flow'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

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

/* The capture trigger function of source tables (see capture.c). */
CREATE FUNCTION flowpg._capture()
RETURNS trigger
AS 'MODULE_PATHNAME', 'flowpg_capture'
LANGUAGE C;

/*
 * Brings every flow's capture triggers to this version's set and states
 * (src/capture.c); the update scripts run it, so that flows made by an
 * older release capture as new ones do.
 */
CREATE FUNCTION flowpg._repair_capture()
RETURNS int
AS 'MODULE_PATHNAME', 'flowpg_repair_capture'
LANGUAGE C VOLATILE;

/* A truncated sink makes its flow recompute (see sink.c). */
CREATE FUNCTION flowpg._sink_truncated()
RETURNS trigger
AS 'MODULE_PATHNAME', 'flowpg_sink_truncated'
LANGUAGE C;

/*
 * Records the dependency of every flow's view in flowpg_flows on its sink
 * table, which makes DROP TABLE of a sink refuse without CASCADE
 * (src/ddl_events.c), where it is missing: the update from 0.1 runs it, and
 * so may an administrator after pg_upgrade, which does not carry it.
 */
CREATE FUNCTION flowpg._repair_dependencies()
RETURNS int
AS 'MODULE_PATHNAME', 'flowpg_repair_dependencies'
LANGUAGE C VOLATILE;

/*
 * window_bounds: the window [window_start, window_end) of source values that
 * a window expression maps to the same value as "value"; the expression
 * names the source column as $1.  Found by probing the expression
 * (exponential then binary search), so any monotonic expression works.
 */
CREATE FUNCTION flowpg.window_bounds(expression text, value anyelement,
									 OUT window_start anyelement,
									 OUT window_end anyelement)
AS 'MODULE_PATHNAME', 'flowpg_window_bounds'
LANGUAGE C CALLED ON NULL INPUT STABLE;

/* The same for a flow's own window expression, under its pinned settings. */
CREATE FUNCTION flowpg.flow_window_bounds(flow_name text, value anyelement,
										  OUT window_start anyelement,
										  OUT window_end anyelement)
AS 'MODULE_PATHNAME', 'flowpg_flow_window_bounds'
LANGUAGE C CALLED ON NULL INPUT STABLE;

/* Deparses a stored query tree under the flow's pinned settings. */
CREATE FUNCTION flowpg._deparse_query(flow_id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'flowpg_deparse_query'
LANGUAGE C STRICT STABLE;

/*
 * flowpg.flows: one row per flow.  The query and names are deparsed from the
 * stored tree, so renaming a source, sink or column shows the new names.
 */
/*
 * What a flow's state is: the catalog's (what its last run left), unless no
 * worker runs the database's flows at all (no slot, flowpg.enabled off).
 */
CREATE FUNCTION flowpg._flow_state(state text, state_reason text,
	OUT state text, OUT state_reason text)
RETURNS record
AS 'MODULE_PATHNAME', 'flowpg_flow_state'
LANGUAGE C VOLATILE;

/*
 * A flow as a GreptimeDB statement, in the form SHOW CREATE FLOW prints
 * (IF NOT EXISTS, intervals in seconds, WITH values as strings), which
 * flowpg.execute accepts back.  A flow from flowpg.execute shows its query
 * as written there, until a rename changes its canonical text.
 */
CREATE FUNCTION flowpg._interval_literal(i interval)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT
RETURN CASE WHEN pg_catalog.date_part('epoch', i) = pg_catalog.trunc(pg_catalog.date_part('epoch', i))
			THEN pg_catalog.quote_literal(pg_catalog.date_part('epoch', i)::bigint::text || ' s')
			ELSE pg_catalog.quote_literal(i::text) END;

CREATE FUNCTION flowpg._flow_options(options jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE STRICT
RETURN coalesce(options->'with', '{}'::jsonb)
	   || CASE WHEN options->>'requested_mode' IN ('streaming', 'batching')
			   THEN pg_catalog.jsonb_build_object('mode', options->>'requested_mode')
			   ELSE '{}'::jsonb END
	   || CASE WHEN options->>'backfill' = 'false'
			   THEN '{"backfill": "false"}'::jsonb ELSE '{}'::jsonb END;

CREATE FUNCTION flowpg._flow_definition(flow_name text, sink regclass, expire_after interval,
										eval_interval interval, comment text, options jsonb,
										query text)
RETURNS text
LANGUAGE sql STABLE
RETURN 'CREATE FLOW IF NOT EXISTS ' || pg_catalog.quote_ident(flow_name)
	   || E'\nSINK TO ' || (SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname)
							FROM pg_catalog.pg_class c
							JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
							WHERE c.oid = sink)
	   || coalesce(E'\nEXPIRE AFTER ' || flowpg._interval_literal(expire_after), '')
	   || coalesce(E'\nEVAL INTERVAL ' || flowpg._interval_literal(eval_interval), '')
	   || coalesce(E'\nCOMMENT ' || pg_catalog.quote_literal(comment), '')
	   || coalesce((SELECT E'\nWITH (' || pg_catalog.string_agg(o.key || ' = ' || pg_catalog.quote_literal(o.value), ', ' ORDER BY o.key) || ')'
					FROM pg_catalog.jsonb_each_text(flowpg._flow_options(options)) o), '')
	   || E'\nAS ' || query;

CREATE VIEW flowpg.flows AS
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

/* The streaming engine's counters of a flow, from shared memory. */
CREATE FUNCTION flowpg._stream_stats(flow_id bigint,
	OUT state_groups bigint, OUT state_bytes bigint,
	OUT queued_batches bigint, OUT queued_bytes bigint,
	OUT batches_applied bigint, OUT batches_dropped bigint,
	OUT fallbacks bigint, OUT freshness interval,
	OUT last_flush_at timestamptz, OUT status text,
	OUT oldest_queued_at timestamptz, OUT state_refills bigint,
	OUT state_repairs bigint, OUT last_worker_pid int)
RETURNS record
AS 'MODULE_PATHNAME', 'flowpg_stream_stats'
LANGUAGE C STRICT VOLATILE;

/* flowpg.flow_stats: what each flow did and what it has pending. */
CREATE VIEW flowpg.flow_stats AS
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

/* flowpg.flow_backfills: the progress of each online backfill (backfill.c). */
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

/*
 * flowpg.flow_errors: the most recent errors of each flow.  Messages can
 * quote data, so each role sees only the errors of flows it may act for.
 */
CREATE VIEW flowpg.flow_errors AS
SELECT e.flow_id, f.flow_name, e.at, e.sqlstate, e.message, e.detail
FROM flowpg.flow_error e
JOIN flowpg.flow f USING (flow_id)
WHERE pg_catalog.pg_has_role(f.owner, 'USAGE');

/*
 * The same facts in GreptimeDB's shape (its information_schema.flows and
 * flow_statistics), pending flows included; SHOW FLOWS, SHOW CREATE FLOW
 * and SHOW FLOW STATUS read these.  The last columns are flowpg's own.
 */
CREATE VIEW flowpg.information_schema_flows AS
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
	   (pg_catalog.jsonb_build_object('flow_type', f.mode) || flowpg._flow_options(c.options))::text AS options,
	   f.created_at AS created_time,
	   f.updated_at AS updated_time,
	   coalesce(s.last_flush_at, s.last_run_at) AS last_execution_time,
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
UNION ALL
SELECT p.flow_name,
	   NULL, 0,
	   pg_catalog.current_database()::text,
	   p.statement,
	   coalesce(p.comment, ''),
	   pg_catalog.date_part('epoch', p.expire_after)::bigint,
	   '[]', pg_catalog.current_database() || '.' || p.sink_table, '{}',
	   ('{"flow_type": "batching"}'::jsonb || coalesce(p.options, '{}'))::text,
	   p.created_at, p.updated_at, NULL, '', NULL,
	   'batching',
	   'pending',
	   /* an error can quote data: only for roles that may act for the owner */
	   CASE WHEN p.last_error IS NULL THEN 'waiting for ' || p.missing
			WHEN pg_catalog.pg_has_role(p.owner, 'USAGE')
			THEN 'the last attempt to start failed: ' || p.last_error
			ELSE 'the last attempt to start failed' END
FROM flowpg.pending_flow p;

CREATE VIEW flowpg.information_schema_flow_statistics AS
SELECT f.flow_id,
	   f.flow_name,
	   GREATEST(f.created_at, pg_catalog.pg_postmaster_start_time()) AS start_time,
	   coalesce(s.last_flush_at, s.last_run_at) AS last_execution_time,
	   GREATEST(0, pg_catalog.date_part('epoch', pg_catalog.now()
			 - GREATEST(f.created_at, pg_catalog.pg_postmaster_start_time())))::bigint AS uptime_seconds,
	   coalesce(s.state_bytes, 0) AS state_size
FROM flowpg.flows f
LEFT JOIN flowpg.flow_stats s USING (flow_id);

/*
 * GreptimeDB's flow statements (see greptime.c): each returns rows of
 * (flow_name, result, affected_rows), one per flow it concerns.
 */
CREATE FUNCTION flowpg.execute(statement text,
	OUT flow_name text, OUT result text, OUT affected_rows bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'flowpg_execute'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

/*
 * now() in a flow's query: the time of the EVAL INTERVAL tick the run
 * evaluates (see eval_tick.c); now() elsewhere.
 */
CREATE FUNCTION flowpg.now()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'flowpg_now'
LANGUAGE C STABLE PARALLEL RESTRICTED;

GRANT USAGE ON SCHEMA flowpg TO PUBLIC;
GRANT SELECT ON flowpg.flows, flowpg.flow_stats, flowpg.flow_errors,
	flowpg.information_schema_flows, flowpg.information_schema_flow_statistics,
	flowpg.flow_backfills TO PUBLIC;

/*
 * Keep flows consistent with DDL on their tables: dropping a source or sink
 * drops the flows built on it; an ALTER that would break a flow is refused.
 */
CREATE FUNCTION flowpg._on_sql_drop()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'flowpg_on_sql_drop'
LANGUAGE C;

CREATE FUNCTION flowpg._on_ddl_command_end()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'flowpg_on_ddl_command_end'
LANGUAGE C;

CREATE EVENT TRIGGER flowpg_sql_drop ON sql_drop
	EXECUTE FUNCTION flowpg._on_sql_drop();

CREATE EVENT TRIGGER flowpg_ddl_command_end ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE', 'ALTER SCHEMA', 'ALTER FUNCTION', 'ALTER TYPE',
				 'ALTER AGGREGATE', 'ALTER OPERATOR', 'ALTER DOMAIN', 'ALTER ROUTINE',
				 'CREATE TABLE')
	EXECUTE FUNCTION flowpg._on_ddl_command_end();

/* Pending flows start when their tables appear (see greptime.c). */
CREATE FUNCTION flowpg._start_pending_flows()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'flowpg_start_pending_flows'
LANGUAGE C;

CREATE EVENT TRIGGER flowpg_start_pending_flows ON ddl_command_end
	WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE',
				 'ALTER SCHEMA', 'CREATE SCHEMA', 'GRANT')
	EXECUTE FUNCTION flowpg._start_pending_flows();

/* Re-plans catalog rows restored from another database (see ddl_events.c). */
CREATE FUNCTION flowpg._catalog_restore_fixup()
RETURNS trigger
AS 'MODULE_PATHNAME', 'flowpg_catalog_restore_fixup'
LANGUAGE C;

CREATE TRIGGER flow_restore_fixup BEFORE INSERT ON flowpg.flow
	FOR EACH ROW EXECUTE FUNCTION flowpg._catalog_restore_fixup();

/* Internal functions: run by flowpg itself, not callable by users. */
REVOKE EXECUTE ON FUNCTION flowpg._capture(), flowpg._sink_truncated(), flowpg._catalog_restore_fixup(),
	flowpg._on_sql_drop(), flowpg._on_ddl_command_end(), flowpg._start_pending_flows(),
	flowpg._repair_capture(), flowpg._repair_dependencies() FROM PUBLIC;
