/* flowpg--0.2--0.3.sql: ALTER EXTENSION flowpg UPDATE from 0.2. */

\echo Use "ALTER EXTENSION flowpg UPDATE TO '0.3'" to load this file. \quit

/*
 * There is no flowpg--0.3.sql: CREATE EXTENSION flowpg installs 0.2's
 * script and this one after it, so a fresh install and an updated one run
 * the same statements for what 0.3 adds.
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
 * Recording rules (flows grouping by now(), src/batch.c): the time their
 * query was last evaluated at, which verify_flow checks the sink against.
 */
ALTER TABLE flowpg.flow_run ADD COLUMN last_tick timestamptz;

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
	   f.options->>'mode_reason' AS mode_reason,
	   /* how an existing sink's columns were matched to the outputs */
	   CASE WHEN f.options ? 'sink_columns_by_position'
			THEN 'by position: ' || (f.options->>'sink_columns_by_position')
			ELSE 'by name' END AS sink_columns
FROM flowpg.flow f
CROSS JOIN LATERAL flowpg._deparse_query(f.flow_id) AS q(query)
CROSS JOIN LATERAL flowpg._flow_state(f.state, f.state_reason) AS st
LEFT JOIN flowpg.flow_backfill b ON b.flow_id = f.flow_id
LEFT JOIN pg_catalog.pg_attribute a
	   ON a.attrelid = f.time_table AND a.attnum = f.time_column;
