-- Set-up shared by the regression suites: the extension, a source table
-- and the oracle that compares a sink with its flow's query.
CREATE EXTENSION flowpg;
SET client_min_messages = warning;

-- The oracle: rows of the sink that the flow's query does not produce, plus
-- rows the query produces that the sink lacks (EXCEPT ALL both ways).  The
-- columns flowpg fills itself (update_at, GreptimeDB's __ts_placeholder)
-- are not the query's.
CREATE FUNCTION flow_mismatches(flow text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	f record;
	cols text;
	n bigint;
BEGIN
	SELECT sink_table, query INTO STRICT f FROM flowpg.flows WHERE flow_name = flow;
	SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
	  FROM pg_attribute
	 WHERE attrelid = f.sink_table AND attnum > 0 AND NOT attisdropped
	   AND attname NOT IN ('update_at', '__ts_placeholder');
	EXECUTE format('SELECT count(*) FROM ((SELECT %1$s FROM %2$s EXCEPT ALL SELECT * FROM (%3$s) q)
					UNION ALL (SELECT * FROM (%3$s) q EXCEPT ALL SELECT %1$s FROM %2$s)) d',
				   cols, f.sink_table, f.query) INTO n;
	RETURN n;
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
