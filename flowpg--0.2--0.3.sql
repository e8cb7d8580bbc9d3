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
