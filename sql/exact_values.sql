-- A sink holds the values its query gives, not values equal to them: a
-- group whose new value is equal to the old one under its type's "=" but
-- is a different value (1.5 and 1.50, '30 days' and '1 mon', -0 and 0,
-- 'abc' and 'ABC' under a nondeterministic collation, a user type whose
-- "=" is coarser than its identity) must be rewritten, in both engines;
-- verify_flow and the oracle tell such a stale value from the right one.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SET client_min_messages = warning;
CREATE SCHEMA ex;
CREATE COLLATION ex.nd (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
-- a user type whose "=" is coarser than its identity: text compared
-- ignoring case; ci_greatest keeps the later of equal values, as max does
CREATE TYPE ex.ci;
CREATE FUNCTION ex.ci_in(cstring) RETURNS ex.ci LANGUAGE internal IMMUTABLE STRICT AS 'textin';
CREATE FUNCTION ex.ci_out(ex.ci) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'textout';
CREATE TYPE ex.ci (INPUT = ex.ci_in, OUTPUT = ex.ci_out, LIKE = text);
CREATE CAST (ex.ci AS text) WITHOUT FUNCTION;
CREATE FUNCTION ex.ci_eq(ex.ci, ex.ci) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT RETURN lower($1::text) = lower($2::text);
CREATE OPERATOR = (FUNCTION = ex.ci_eq, LEFTARG = ex.ci, RIGHTARG = ex.ci);
CREATE FUNCTION ex.ci_greatest(ex.ci, ex.ci) RETURNS ex.ci
LANGUAGE sql IMMUTABLE STRICT RETURN CASE WHEN lower($1::text) > lower($2::text) THEN $1 ELSE $2 END;
CREATE AGGREGATE ex.ci_max(ex.ci) (
	SFUNC = ex.ci_greatest, STYPE = ex.ci, COMBINEFUNC = ex.ci_greatest);
-- and a composite type: (1.5) = (1.50) under its "=", yet they differ
CREATE TYPE ex.amount AS (value numeric);
CREATE FUNCTION ex.amount_add(ex.amount, ex.amount) RETURNS ex.amount
LANGUAGE sql IMMUTABLE STRICT RETURN ROW(($1).value + ($2).value)::ex.amount;
CREATE AGGREGATE ex.total(ex.amount) (
	SFUNC = ex.amount_add, STYPE = ex.amount, COMBINEFUNC = ex.amount_add);
CREATE TABLE ex.m (ts timestamptz NOT NULL, k int, n numeric, iv interval, f float8,
				   t text COLLATE ex.nd, u ex.ci, a ex.amount);
CREATE INDEX ON ex.m (ts);

-- One flow per value, in each engine: a second value of the same group
-- changes only that value.
CREATE FUNCTION ex.make(name text, agg text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	engine text;
BEGIN
	FOREACH engine IN ARRAY ARRAY['streaming', 'batching'] LOOP
		PERFORM flowpg.create_flow(name || '_' || engine, 'ex.' || name || '_' || engine,
			format('SELECT date_trunc(''hour'', ts) AS hour, k, %s AS v FROM ex.m GROUP BY 1, 2', agg),
			mode => engine);
	END LOOP;
END $$;
SELECT ex.make('sum_numeric', 'sum(n)'), ex.make('max_interval', 'max(iv)'),
	   ex.make('max_float', 'max(f)'), ex.make('max_text', 'max(t)'),
	   ex.make('max_user_type', 'ex.ci_max(u)'), ex.make('total_composite', 'ex.total(a)');
SELECT flow_name, mode FROM flowpg.flows WHERE sink_table::text LIKE 'ex.%'
 ORDER BY 1;

-- the first values, written
INSERT INTO ex.m VALUES ('2024-03-01 00:10+00', 1, 1.5, '30 days', '-0', 'abc', 'xyz', ROW(1.5));
SELECT count(flowpg.flush_flow(flow_name)) FROM flowpg.flows WHERE sink_table::text LIKE 'ex.%';
CREATE FUNCTION ex.sinks() RETURNS TABLE (flow text, v text) LANGUAGE plpgsql AS $$
DECLARE
	f record;
BEGIN
	FOR f IN SELECT flow_name, sink_table FROM flowpg.flows
			  WHERE sink_table::text LIKE 'ex.%' ORDER BY flow_name LOOP
		flow := f.flow_name;
		FOR v IN EXECUTE format('SELECT string_agg(v::text, '','' ORDER BY hour, k) FROM %s', f.sink_table) LOOP
			RETURN NEXT;
		END LOOP;
	END LOOP;
END $$;
SELECT * FROM ex.sinks();

-- a second row per value, equal under "=" to what the group had: the
-- aggregates give the new value (max keeps the later of equal values)
INSERT INTO ex.m VALUES ('2024-03-01 00:20+00', 1, 0.00, '1 mon', '0', 'ABC', 'XYZ', ROW(0.00));
SELECT count(flowpg.flush_flow(flow_name)) FROM flowpg.flows WHERE sink_table::text LIKE 'ex.%';
SELECT * FROM ex.sinks();
-- what the queries give
SELECT sum(n)::text AS sum_numeric, max(iv)::text AS max_interval, max(f)::text AS max_float,
	   max(t) AS max_text, ex.ci_max(u)::text AS max_user_type, ex.total(a)::text AS total_composite
  FROM ex.m;
SELECT flow_name, flow_mismatches(flow_name) AS oracle, flowpg.verify_flow(flow_name) AS verify
  FROM flowpg.flows WHERE sink_table::text LIKE 'ex.%' ORDER BY 1;

-- A sink left with the old, equal value is stale: the oracle and
-- verify_flow count it (one row each way), as the types' "=" would not.
UPDATE ex.sum_numeric_streaming SET v = 1.5;
UPDATE ex.max_interval_batching SET v = '30 days';
UPDATE ex.max_float_streaming SET v = '-0';
UPDATE ex.max_text_batching SET v = 'abc';
UPDATE ex.max_user_type_streaming SET v = 'xyz';
UPDATE ex.total_composite_batching SET v = ROW(1.5);
SELECT flow_name, flow_mismatches(flow_name) AS oracle, flowpg.verify_flow(flow_name) AS verify,
	   flowpg.verify_flow(flow_name, 1e-9) AS verify_tolerant
  FROM flowpg.flows WHERE sink_table::text LIKE 'ex.%' ORDER BY 1;
-- NaN is one value, however computed: a sink NaN matches the query's
UPDATE ex.m SET f = 'NaN' WHERE n = 0.00;
SELECT flowpg.flush_flow('max_float_streaming') >= 0 AS flushed,
	   flowpg.flush_flow('max_float_batching') >= 0 AS flushed;
SELECT v::text, flow_mismatches('max_float_streaming') AS oracle,
	   flowpg.verify_flow('max_float_streaming') AS verify FROM ex.max_float_streaming;
-- a refresh rewrites the stale values
SELECT count(flowpg.refresh_flow(flow_name)) FROM flowpg.flows WHERE sink_table::text LIKE 'ex.%';
SELECT * FROM ex.sinks();
SELECT flow_name, flowpg.verify_flow(flow_name) AS verify
  FROM flowpg.flows WHERE sink_table::text LIKE 'ex.%' ORDER BY 1;

SELECT count(flowpg.drop_flow(flow_name)) FROM flowpg.flows WHERE sink_table::text LIKE 'ex.%';
DROP SCHEMA ex CASCADE;
