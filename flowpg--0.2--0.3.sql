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
