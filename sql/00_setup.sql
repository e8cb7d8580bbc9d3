-- Set-up shared by the regression suites: the extension, a source table
-- and the oracle that compares a sink with its flow's query.
CREATE EXTENSION flowpg;
SET client_min_messages = warning;

-- The oracle: rows of the sink that the flow's query does not produce, plus
-- rows the query produces that the sink lacks (EXCEPT ALL both ways).  The
-- columns flowpg fills itself (update_at, GreptimeDB's __ts_placeholder)
-- are not the query's.  Rows are compared exactly, as the text of their
-- values in the sink's column types: 1.5 and 1.50, -0 and 0, '1 mon' and
-- '30 days', 'abc' and 'ABC' under a nondeterministic collation are equal
-- under their types' "=", yet a sink holding one where the query gives the
-- other is stale.
CREATE FUNCTION flow_mismatches(flow text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	f record;
	sink_row text;
	query_row text;
	aliases text;
	n bigint;
BEGIN
	SELECT sink_table, query INTO STRICT f FROM flowpg.flows WHERE flow_name = flow;
	SELECT string_agg(format('s.%I', attname), ', ' ORDER BY attnum),
		   string_agg(format('CAST(q.c%s AS %s)', i, format_type(atttypid, atttypmod)), ', ' ORDER BY attnum),
		   string_agg(format('c%s', i), ', ' ORDER BY attnum)
	  INTO sink_row, query_row, aliases
	  FROM (SELECT attname, attnum, atttypid, atttypmod, row_number() OVER (ORDER BY attnum) AS i
			  FROM pg_attribute
			 WHERE attrelid = f.sink_table AND attnum > 0 AND NOT attisdropped
			   AND attname NOT IN ('update_at', '__ts_placeholder')) a;
	EXECUTE format('WITH s AS (SELECT ROW(%1$s)::text AS r FROM %2$s s),
						 q AS (SELECT ROW(%3$s)::text AS r FROM (%4$s) q(%5$s))
					SELECT count(*) FROM ((SELECT r FROM s EXCEPT ALL SELECT r FROM q)
										  UNION ALL (SELECT r FROM q EXCEPT ALL SELECT r FROM s)) d',
				   sink_row, f.sink_table, query_row, f.query, aliases) INTO n;
	RETURN n;
END $$;

-- flush_and_check(prefix, step): flushes the flows named prefix_*, then
-- the oracle for each of them, labelled with the step.
CREATE FUNCTION flush_and_check(prefix text, at_step text)
RETURNS TABLE (step text, flow text, mismatches bigint)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM flowpg.flush_flow(f.flow_name) FROM flowpg.flows f WHERE f.flow_name LIKE prefix || '\_%';
	RETURN QUERY SELECT at_step, f.flow_name::text, flow_mismatches(f.flow_name)
				   FROM flowpg.flows f WHERE f.flow_name LIKE prefix || '\_%' ORDER BY f.flow_id;
END $$;
-- try(statement): runs it and shows the error it raised, if any.
CREATE FUNCTION try(stmt text,
					OUT code text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	code := 'OK';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;

-- One day of metrics from 20 devices, every 13 seconds.
CREATE TABLE metrics (ts timestamptz NOT NULL, device int, value float8);
INSERT INTO metrics
SELECT '2024-03-01 00:00:00+00'::timestamptz + i * interval '13 seconds',
	   CASE WHEN i % 97 = 0 THEN NULL ELSE i % 20 END,
	   CASE WHEN i % 89 = 0 THEN NULL ELSE (i * 7919 % 1000) / 10.0 END
FROM generate_series(0, 6645) i;
SELECT count(*), count(DISTINCT device) FROM metrics;
