-- Sinks GreptimeDB users pre-create (issue 22): assignment casts into an
-- existing sink's columns, projections into a sink with a unique key (the
-- last write per key wins), and GreptimeDB's matching of sink columns by
-- position in flowpg.execute.  GreptimeDB's cases (tests/cases/standalone/
-- common/flow) are ported with their flow statements verbatim; only the
-- tables' DDL is PostgreSQL's.  Sinks are compared with the rows of
-- GreptimeDB's .result files and with the flow's query (verify_flow,
-- flow_mismatches).
\set VERBOSITY default

-- GreptimeDB computes in UTC (flows pin the creating session's TimeZone)
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- flows of the other suites are not this file's, nor their tables
CREATE TEMP TABLE flows_before AS SELECT flow_name FROM flowpg.flows;
CREATE SCHEMA greptime_sinks;
SET search_path = greptime_sinks, public;

-- a projection's sink holds one of the query's rows per key: compared with
-- the query deduplicated on the key columns given
CREATE FUNCTION dedup_mismatches(flow text, keys text) RETURNS bigint
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
	-- sink rows that are no row of the query, keys of the query without a sink row
	EXECUTE format('SELECT (SELECT count(*) FROM (SELECT %1$s FROM %2$s EXCEPT SELECT * FROM (%3$s) q) d)
					 + (SELECT count(*) FROM (SELECT %4$s FROM (%3$s) q EXCEPT SELECT %4$s FROM %2$s) d)
					 + (SELECT count(*) - count(DISTINCT (%4$s)) FROM %2$s)',
				   cols, f.sink_table, f.query, keys) INTO n;
	RETURN n;
END $$;

---------------------------------------------------------------------------
-- 1. Assignment casts.  flow_insert: GreptimeDB's sink has rate DOUBLE
-- and update_at TIMESTAMP (written with the write's time in the flow's
-- TimeZone).  The rate is double precision already (a decimal literal is
-- Float64 in GreptimeDB's dialect); create_flow's native_rate below writes
-- a numeric into a DOUBLE column.
---------------------------------------------------------------------------
CREATE TABLE bytes_log (
    byte INT,
    ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE approx_rate (
    rate DOUBLE PRECISION,
    time_window TIMESTAMP NOT NULL PRIMARY KEY,
    update_at TIMESTAMP
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW find_approx_rate SINK TO approx_rate AS
SELECT
    (max(byte) - min(byte)) / 30.0 as rate,
    date_bin(INTERVAL '30 second', ts) as time_window
from
    bytes_log
GROUP BY
    time_window;
$$);
SELECT flow_name, mode, sink_columns FROM flowpg.flows WHERE flow_name = 'find_approx_rate';

INSERT INTO
    bytes_log (ts, byte)
VALUES
    ('2023-01-01 00:00:01', NULL),
    ('2023-01-01 00:00:29', 300);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
-- GreptimeDB: 0.0 | 2023-01-01T00:00:00
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;

INSERT INTO
    bytes_log (ts, byte)
VALUES
    ('2022-01-01 00:00:01', NULL),
    ('2022-01-01 00:00:29', NULL);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);

INSERT INTO
    bytes_log (ts, byte)
VALUES
    ('2025-01-01 00:00:01', 101),
    ('2025-01-01 00:00:29', 300);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);

INSERT INTO
    bytes_log (ts, byte)
VALUES
    ('2025-01-01 00:00:32', 450),
    ('2025-01-01 00:00:37', 500);
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('find_approx_rate')$$);
-- GreptimeDB: NULL | 2022-01-01, 0.0 | 2023-01-01, 6.633333333333334 | 2025-01-01T00:00:00,
-- 1.6666666666666667 | 2025-01-01T00:00:30
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;
SELECT pg_typeof(rate) AS rate_type, update_at IS NOT NULL AS has_update_at,
       pg_typeof(update_at) AS update_at_type
  FROM approx_rate WHERE time_window = '2025-01-01 00:00:30';
-- update_at: the write's transaction time in the flow's TimeZone
SELECT bool_and(update_at BETWEEN (now() AT TIME ZONE 'UTC') - interval '1 hour'
                              AND (now() AT TIME ZONE 'UTC') + interval '1 hour') AS recent
  FROM approx_rate;
SELECT flowpg.verify_flow('find_approx_rate') AS mismatches, flow_mismatches('find_approx_rate');

-- UPDATE and DELETE of source rows: recomputed, converted alike
UPDATE bytes_log SET byte = 800 WHERE byte = 500;
DELETE FROM bytes_log WHERE ts = '2025-01-01 00:00:01';
SELECT flowpg.flush_flow('find_approx_rate') >= 0 AS flushed;
SELECT rate, time_window FROM approx_rate ORDER BY time_window ASC;
SELECT flowpg.verify_flow('find_approx_rate') AS mismatches, flow_mismatches('find_approx_rate');

-- The same in the batching engine: bigint fed by int, timestamptz fed by
-- timestamp (a key: the flow's TimeZone, UTC, has one offset), DOUBLE fed
-- by numeric, update_at timestamp.
CREATE TABLE approx_rate_batching (
    rate DOUBLE PRECISION,
    hi BIGINT,
    time_window TIMESTAMPTZ NOT NULL PRIMARY KEY,
    update_at TIMESTAMP
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW find_approx_rate_batching SINK TO approx_rate_batching
WITH (mode = 'batching') AS
SELECT
    (max(byte) - min(byte)) / 30.0 as rate,
    max(byte) as hi,
    date_bin(INTERVAL '30 second', ts) as time_window
from
    bytes_log
GROUP BY
    time_window;
$$);
SELECT flowpg.flush_flow('find_approx_rate_batching') >= 0 AS flushed;
SELECT rate, hi, time_window FROM approx_rate_batching ORDER BY time_window;
INSERT INTO bytes_log (ts, byte) VALUES ('2025-01-01 00:00:40', 1000), ('2026-06-01 12:00:00', 7);
DELETE FROM bytes_log WHERE ts = '2023-01-01 00:00:29';
SELECT flowpg.flush_flow('find_approx_rate_batching') >= 0 AS flushed;
SELECT rate, hi, time_window FROM approx_rate_batching ORDER BY time_window;
SELECT flowpg.verify_flow('find_approx_rate_batching') AS mismatches,
       flow_mismatches('find_approx_rate_batching');
-- the refresh deletes by window range in the column's type
SELECT line FROM flowpg.explain_flow('find_approx_rate_batching') AS e(line)
 WHERE line ~ '^\s+(Delete:|\$[0-9]+ = )';
SELECT flowpg.refresh_flow('find_approx_rate_batching', '2025-01-01 00:00:00+00', '2025-01-01 00:01:00+00') AS refreshed;
SELECT flowpg.verify_flow('find_approx_rate_batching') AS mismatches;

-- a sink column altered to another castable type stays written (ALTER is checked)
ALTER TABLE approx_rate_batching ALTER COLUMN hi TYPE numeric;
INSERT INTO bytes_log (ts, byte) VALUES ('2026-06-01 12:00:01', 9);
SELECT flowpg.flush_flow('find_approx_rate_batching') >= 0 AS flushed;
SELECT rate, hi, pg_typeof(hi) AS hi_type, time_window FROM approx_rate_batching
 WHERE time_window >= '2026-01-01' ORDER BY time_window;
SELECT flowpg.verify_flow('find_approx_rate_batching') AS mismatches;
\x on
SELECT code, message FROM try($$ALTER TABLE approx_rate_batching ALTER COLUMN hi TYPE interval USING make_interval(secs => hi::float8)$$);
\x off

-- create_flow takes the same casts
CREATE TABLE native_rate (n BIGINT, total DOUBLE PRECISION, minute TIMESTAMPTZ PRIMARY KEY, update_at TIMESTAMP);
SELECT flowpg.create_flow('native_rate', 'native_rate',
  $$SELECT count(*)::int AS n, sum(byte)::numeric AS total, date_trunc('minute', ts) AS minute
      FROM bytes_log GROUP BY 3$$) > 0 AS created;
SELECT flowpg.flush_flow('native_rate') >= 0 AS flushed;
INSERT INTO bytes_log (ts, byte) VALUES ('2026-06-01 12:00:30', 11);
UPDATE bytes_log SET byte = byte + 1 WHERE ts = '2026-06-01 12:00:00';
SELECT flowpg.flush_flow('native_rate') >= 0 AS flushed;
SELECT n, total, minute FROM native_rate WHERE minute >= '2026-01-01' ORDER BY minute;
SELECT flowpg.verify_flow('native_rate') AS mismatches, flow_mismatches('native_rate');

-- Refused as INSERT refuses, or where a key's cast could merge groups;
-- nothing is left behind (no flow, no capture trigger, the sink untouched).
CREATE TABLE text_into_int (rate INT, time_window TIMESTAMP PRIMARY KEY);
CREATE TABLE lossy_key (n BIGINT, k INT PRIMARY KEY);
CREATE TABLE tz_key (n BIGINT, time_window TIMESTAMPTZ PRIMARY KEY);
CREATE TABLE naive_key (n BIGINT, time_window TIMESTAMP PRIMARY KEY);
CREATE TABLE rounded_key (n BIGINT, time_window TIMESTAMP(0) PRIMARY KEY);
CREATE TABLE bad_update_at (n BIGINT, time_window TIMESTAMP PRIMARY KEY, update_at DATE);
CREATE TABLE events_tz (v INT, at TIMESTAMPTZ);
\x on
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW bad SINK TO text_into_int AS SELECT max(byte)::text AS rate, date_bin(INTERVAL ''30 second'', ts) AS time_window FROM bytes_log GROUP BY time_window')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('bad', 'lossy_key', 'SELECT count(*) AS n, byte / 7.0 AS k FROM bytes_log GROUP BY 2', mode => 'batching', eval_interval => '1 minute')$$);
\x off
-- timestamp -> timestamptz under a TimeZone with daylight saving: 02:30 of a
-- spring-forward night does not exist and becomes the instant of 03:30
SET TimeZone = 'America/New_York';
SELECT '2024-03-10 02:30'::timestamp::timestamptz = '2024-03-10 03:30'::timestamp::timestamptz AS merged;
\x on
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW bad SINK TO tz_key AS SELECT count(*) AS n, date_bin(INTERVAL ''30 second'', ts) AS time_window FROM bytes_log GROUP BY time_window')$$);
\x off
SET TimeZone = 'UTC';
\x on
SELECT * FROM try($$SELECT flowpg.create_flow('bad', 'naive_key', 'SELECT count(*) AS n, date_trunc(''minute'', at) AS time_window FROM events_tz GROUP BY 2')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('bad', 'rounded_key', 'SELECT count(*) AS n, date_trunc(''milliseconds'', ts) AS time_window FROM bytes_log GROUP BY 2')$$);
SELECT * FROM try($$SELECT flowpg.create_flow('bad', 'bad_update_at', 'SELECT count(*) AS n, date_trunc(''minute'', ts) AS time_window FROM bytes_log GROUP BY 2')$$);
\x off
-- cast in the query: the group is the cast value, written as it is
SELECT flowpg.create_flow('rounded_key', 'rounded_key',
  $$SELECT count(*) AS n, date_trunc('minute', ts)::timestamp(0) AS time_window FROM bytes_log GROUP BY 2$$) > 0 AS created;
SELECT flowpg.flush_flow('rounded_key') >= 0 AS flushed;
SELECT flowpg.verify_flow('rounded_key') AS mismatches, flow_mismatches('rounded_key');
SELECT count(*) AS bad_flows FROM flowpg.flows WHERE flow_name = 'bad';
SELECT count(*) AS capture_triggers FROM pg_trigger WHERE tgrelid = 'events_tz'::regclass;
SELECT (SELECT count(*) FROM text_into_int) + (SELECT count(*) FROM lossy_key) + (SELECT count(*) FROM tz_key)
       + (SELECT count(*) FROM naive_key) + (SELECT count(*) FROM bad_update_at) AS rows_written;

---------------------------------------------------------------------------
-- 2. Projections into a sink with a unique key keep the last write per key.
-- flow_no_aggr: GreptimeDB's sink is keyed by its time index ts.
---------------------------------------------------------------------------
CREATE TABLE base (
    desc_str TEXT,
    ts TIMESTAMP NOT NULL
);
CREATE TABLE sink (
    desc_str TEXT,
    ts TIMESTAMP NOT NULL PRIMARY KEY
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW filter_out
SINK TO sink
AS
SELECT desc_str, ts FROM base
WHERE desc_str IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j');
$$);
SELECT flow_name, mode FROM flowpg.flows WHERE flow_name = 'filter_out';

INSERT INTO base VALUES
('a', '2023-01-01 00:00:00'),
('j', '2023-01-01 00:00:09'),
('l', '2023-01-01 00:00:08');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('filter_out')$$);
-- GreptimeDB: a | 2023-01-01T00:00:00, j | 2023-01-01T00:00:09
SELECT * FROM sink ORDER BY ts;

-- another row at a time the sink holds: the last write wins (GreptimeDB's
-- upsert by key), in one statement, one transaction, or across them
INSERT INTO base VALUES ('b', '2023-01-01 00:00:00'), ('c', '2023-01-01 00:00:00');
BEGIN;
INSERT INTO base VALUES ('d', '2023-01-01 00:00:09');
INSERT INTO base VALUES ('e', '2023-01-01 00:00:09');
COMMIT;
SELECT flowpg.flush_flow('filter_out') >= 0 AS flushed;
SELECT * FROM sink ORDER BY ts;
INSERT INTO base VALUES ('f', '2023-01-01 00:00:09');
SELECT flowpg.flush_flow('filter_out') >= 0 AS flushed;
SELECT * FROM sink ORDER BY ts;
SELECT flowpg.verify_flow('filter_out') AS mismatches, dedup_mismatches('filter_out', 'ts');

-- a hand edit is found: the sink row is no row of the query
UPDATE sink SET desc_str = 'z' WHERE ts = '2023-01-01 00:00:09';
SELECT flowpg.verify_flow('filter_out') AS mismatches;
-- a recompute (refresh_flow, or an UPDATE/DELETE of a source row) picks the
-- row whose other columns are greatest: 'j' at 00:00:09, 'c' at 00:00:00
SELECT flowpg.refresh_flow('filter_out') AS rows;
SELECT * FROM sink ORDER BY ts;
DELETE FROM base WHERE desc_str = 'c';
SELECT flowpg.flush_flow('filter_out') >= 0 AS flushed;
SELECT * FROM sink ORDER BY ts;
SELECT flowpg.verify_flow('filter_out') AS mismatches, dedup_mismatches('filter_out', 'ts');
DELETE FROM base WHERE ts = '2023-01-01 00:00:00';
SELECT flowpg.flush_flow('filter_out') >= 0 AS flushed;
SELECT * FROM sink ORDER BY ts;
SELECT flowpg.verify_flow('filter_out') AS mismatches, dedup_mismatches('filter_out', 'ts');
-- without its key the sink is recomputed, and holds every row of the query
ALTER TABLE sink DROP CONSTRAINT sink_pkey;
SELECT flowpg.flush_flow('filter_out') >= 0 AS flushed;
SELECT * FROM sink ORDER BY ts, desc_str;
SELECT flowpg.verify_flow('filter_out') AS mismatches, flow_mismatches('filter_out');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW filter_out');
DROP TABLE base;
DROP TABLE sink;

-- flow_no_aggr, second case
CREATE TABLE base (
    desc_str TEXT,
    ts TIMESTAMP NOT NULL
);
CREATE TABLE sink (
    desc_str TEXT,
    ts TIMESTAMP NOT NULL PRIMARY KEY
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW filter_out
SINK TO sink
AS
SELECT desc_str, ts FROM base
WHERE desc_str NOT IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j');
$$);
INSERT INTO base VALUES
('a', '2023-01-01 00:00:00'),
('j', '2023-01-01 00:00:09'),
('l', '2023-01-01 00:00:08');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('filter_out')$$);
-- GreptimeDB: l | 2023-01-01T00:00:08
SELECT * FROM sink ORDER BY ts;
SELECT flowpg.verify_flow('filter_out') AS mismatches;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW filter_out');
DROP TABLE base;
DROP TABLE sink;

-- flow_basic's requests_long_term: EVAL INTERVAL, so the batching engine,
-- which recomputes the sink: several source rows of one key become one row.
-- GreptimeDB's PRIMARY KEY(service_name) + TIME INDEX(ts), whose NULL
-- service_name is one key: UNIQUE NULLS NOT DISTINCT.
CREATE TABLE requests (
    service_name TEXT,
    service_ip TEXT,
    val INT,
    ts TIMESTAMP NOT NULL
);
CREATE TABLE requests_without_ip (
    service_name TEXT,
    val INT,
    ts TIMESTAMP NOT NULL,
    UNIQUE NULLS NOT DISTINCT (service_name, ts)
);

SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW requests_long_term SINK TO requests_without_ip EVAL INTERVAL '1m' AS
SELECT
    service_name,
    val,
    ts
FROM
    requests;
$$);
SELECT flow_name, mode FROM flowpg.flows WHERE flow_name = 'requests_long_term';

INSERT INTO
    requests
VALUES
    (NULL, '10.0.0.1', 100, '2024-10-18 19:00:00'),
    ('svc1', '10.0.0.2', 100, '2024-10-18 19:00:00'),
    (NULL, '10.0.0.1', 200, '2024-10-18 19:00:30'),
    ('svc1', '10.0.0.2', 200, '2024-10-18 19:00:30'),
    (NULL, '10.0.0.1', 300, '2024-10-18 19:01:00'),
    (NULL, '10.0.0.2', 100, '2024-10-18 19:01:01'),
    ('svc1', '10.0.0.1', 400, '2024-10-18 19:01:30'),
    ('svc1', '10.0.0.2', 200, '2024-10-18 19:01:31');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('requests_long_term')$$);
SELECT
    *
FROM
    requests_without_ip
ORDER BY ts ASC, service_name;

INSERT INTO
    requests
VALUES
    (null, '10.0.0.1', 100, '2024-10-19 19:00:00'),
    (null, '10.0.0.2', 100, '2024-10-19 19:00:00'),
    (null, '10.0.0.1', 200, '2024-10-19 19:00:30'),
    (null, '10.0.0.2', 200, '2024-10-19 19:00:30'),
    (null, '10.0.0.1', 300, '2024-10-19 19:01:00'),
    (null, '10.0.0.2', 100, '2024-10-19 19:01:01'),
    (null, '10.0.0.1', 400, '2024-10-19 19:01:30'),
    (null, '10.0.0.2', 200, '2024-10-19 19:01:31');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('requests_long_term')$$);
SELECT
    *
FROM
    requests_without_ip
ORDER BY ts ASC, service_name;

INSERT INTO
    requests
VALUES
    ('svc2', '10.0.0.1', 100, '2024-10-18 19:00:00'),
    ('svc2', '10.0.0.2', 100, '2024-10-18 19:00:00'),
    ('svc2', '10.0.0.1', 200, '2024-10-18 19:00:30'),
    ('svc2', '10.0.0.2', 200, '2024-10-18 19:00:30'),
    ('svc2', '10.0.0.1', 300, '2024-10-18 19:01:00'),
    ('svc2', '10.0.0.2', 100, '2024-10-18 19:01:01'),
    ('svc2', '10.0.0.1', 400, '2024-10-18 19:01:30'),
    ('svc2', '10.0.0.2', 200, '2024-10-18 19:01:31');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('requests_long_term')$$);
-- GreptimeDB's 20 rows
SELECT
    *
FROM
    requests_without_ip
ORDER BY ts ASC, service_name;
SELECT flowpg.verify_flow('requests_long_term') AS mismatches,
       dedup_mismatches('requests_long_term', 'service_name, ts');
-- rows of one key with different values: the greatest val wins the recompute
INSERT INTO requests VALUES ('svc2', '10.0.0.3', 50, '2024-10-18 19:00:00'), ('svc2', '10.0.0.4', 150, '2024-10-18 19:00:00');
SELECT flowpg.flush_flow('requests_long_term') >= 0 AS flushed;
SELECT * FROM requests_without_ip WHERE service_name = 'svc2' AND ts = '2024-10-18 19:00:00';
SELECT flowpg.verify_flow('requests_long_term') AS mismatches,
       dedup_mismatches('requests_long_term', 'service_name, ts');
SELECT line FROM flowpg.explain_flow('requests_long_term') AS e(line) WHERE line LIKE '%Insert:%';
SELECT flow_name, result FROM flowpg.execute('DROP FLOW requests_long_term');

-- flow_null's calc_nullable_pk, streaming: PRIMARY KEY (pid, client) and
-- TIME INDEX ts, pid nullable
CREATE TABLE nullable_pk (
    pid INT NULL,
    client TEXT,
    ts TIMESTAMP NOT NULL
);
CREATE TABLE out_nullable_pk (
    pid INT NULL,
    client TEXT,
    ts TIMESTAMP NOT NULL,
    UNIQUE NULLS NOT DISTINCT (pid, client, ts)
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW calc_nullable_pk SINK TO out_nullable_pk AS
SELECT
    pid,
    client,
    ts
FROM
    nullable_pk;
$$);
INSERT INTO
    nullable_pk
VALUES
    (1, 'name1', '2024-10-18 19:00:00'),
    (2, 'name2', '2024-10-18 19:00:00'),
    (3, 'name3', '2024-10-18 19:00:00');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_nullable_pk')$$);
SELECT * FROM out_nullable_pk ORDER BY pid, client;
INSERT INTO
    nullable_pk (client, ts)
VALUES
    ('name1', '2024-10-18 19:00:00'),
    ('name2', '2024-10-18 19:00:00'),
    ('name3', '2024-10-18 19:00:00');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('calc_nullable_pk')$$);
-- GreptimeDB's six rows
SELECT * FROM out_nullable_pk ORDER BY pid NULLS FIRST, client;
-- the same rows again: still one per key
INSERT INTO nullable_pk (client, ts) VALUES ('name1', '2024-10-18 19:00:00');
SELECT flowpg.flush_flow('calc_nullable_pk') >= 0 AS flushed;
SELECT count(*) FROM out_nullable_pk;
SELECT flowpg.verify_flow('calc_nullable_pk') AS mismatches,
       dedup_mismatches('calc_nullable_pk', 'pid, client, ts');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW calc_nullable_pk');

-- A unique index that lets NULL keys repeat (NULLS DISTINCT): rows with a
-- NULL key never conflict, and each is kept, as the index keeps them.
CREATE TABLE distinct_nulls (pid INT, client TEXT, seen TIMESTAMP, UNIQUE (pid, client));
SELECT flowpg.create_flow('distinct_nulls', 'distinct_nulls', 'SELECT pid, client, ts AS seen FROM nullable_pk') > 0 AS created;
SELECT flowpg.flush_flow('distinct_nulls') >= 0 AS flushed;
INSERT INTO nullable_pk VALUES (1, 'name1', '2024-10-18 20:00:00'), (NULL, 'name1', '2024-10-18 20:00:00');
SELECT flowpg.flush_flow('distinct_nulls') >= 0 AS flushed;
SELECT pid, client, seen FROM distinct_nulls ORDER BY pid NULLS FIRST, client, seen;
SELECT flowpg.verify_flow('distinct_nulls') AS mismatches;
SELECT flowpg.refresh_flow('distinct_nulls') AS rows;
SELECT pid, client, seen FROM distinct_nulls ORDER BY pid NULLS FIRST, client, seen;
SELECT flowpg.verify_flow('distinct_nulls') AS mismatches;
SELECT flowpg.drop_flow('distinct_nulls');

-- A key whose cast could merge rows of two keys is refused; a unique index
-- on a column the flow does not write is no key of the flow: rows are
-- appended, and a violation's hint says so (item 6: not "unique index on ()").
CREATE TABLE proj_lossy (pid NUMERIC, k INT PRIMARY KEY);
\x on
SELECT * FROM try($$SELECT flowpg.create_flow('bad', 'proj_lossy', 'SELECT pid, pid / 3.0 AS k FROM nullable_pk')$$);
\x off
CREATE TABLE proj_unwritten (pid INT, client TEXT, written TIMESTAMPTZ NOT NULL DEFAULT '2000-01-01', UNIQUE (client, written));
SELECT flowpg.create_flow('proj_unwritten', 'proj_unwritten', 'SELECT pid, client FROM nullable_pk') > 0 AS created;
SELECT flowpg.refresh_flow('proj_unwritten');
SELECT flowpg.drop_flow('proj_unwritten');
-- of two unique indexes the one of fewest columns is the key (any index
-- over more columns of it holds then); another one can still be violated
CREATE TABLE proj_two_keys (pid INT, client TEXT, ts TIMESTAMP, UNIQUE (client), UNIQUE NULLS NOT DISTINCT (ts));
SELECT flowpg.create_flow('proj_two_keys', 'proj_two_keys', 'SELECT pid, client, ts FROM nullable_pk') > 0 AS created;
SELECT flowpg.refresh_flow('proj_two_keys');
SELECT flowpg.drop_flow('proj_two_keys');
DROP TABLE nullable_pk, out_nullable_pk, distinct_nulls, proj_lossy, proj_unwritten, proj_two_keys;

---------------------------------------------------------------------------
-- 3. Positional matching of sink columns in flowpg.execute.
-- flow_null: the flow's time_window goes into the sink's ts.
---------------------------------------------------------------------------
CREATE TABLE sum_val_in_reqs (
    sum_val BIGINT,
    ts TIMESTAMP NOT NULL PRIMARY KEY
);
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW requests_long_term SINK TO sum_val_in_reqs AS
SELECT
    sum(val) as sum_val,
    date_bin(INTERVAL '30 seconds', ts) as time_window,
FROM
    requests
GROUP BY
    time_window;
$$);
SELECT flow_name, sink_columns FROM flowpg.flows WHERE flow_name = 'requests_long_term';
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('requests_long_term')$$);
SELECT sum_val, ts FROM sum_val_in_reqs ORDER BY ts;
INSERT INTO requests VALUES ('svc3', '10.0.0.9', 5, '2024-10-18 19:00:10');
UPDATE requests SET val = val + 1 WHERE service_name = 'svc1';
SELECT flowpg.flush_flow('requests_long_term') >= 0 AS flushed;
SELECT sum_val, ts FROM sum_val_in_reqs ORDER BY ts;
SELECT flowpg.verify_flow('requests_long_term') AS mismatches, flow_mismatches('requests_long_term');
-- SHOW CREATE FLOW shows the query as written; the stored query names the sink's column
SELECT result FROM flowpg.execute('SHOW CREATE FLOW requests_long_term');
SELECT query FROM flowpg.flows WHERE flow_name = 'requests_long_term';
SELECT flow_name, result FROM flowpg.execute('DROP FLOW requests_long_term');

-- create_flow matches by name only
\x on
SELECT * FROM try($$SELECT flowpg.create_flow('bad', 'sum_val_in_reqs', 'SELECT sum(val) AS sum_val, date_trunc(''minute'', ts) AS time_window FROM requests GROUP BY 2')$$);
\x off

-- show_create_flow: out_num_cnt_show (number, ts); the flow's n1 is number,
-- and ts, the last column, a time, is left to its default (GreptimeDB writes
-- its now() there).  GreptimeDB's key (number, ts) is not translated: ts is
-- the time of the write, and a recompute (after an UPDATE or DELETE of a
-- source row, or a CREATE OR REPLACE) writes every row at one time.
CREATE TABLE numbers_input_show (
    number INT,
    ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (number, ts)
);
create table out_num_cnt_show (
    number INT,
    ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW filter_numbers_show SINK TO out_num_cnt_show AS SELECT number as n1 FROM numbers_input_show where number > 10;$$);
SELECT flow_name, sink_columns FROM flowpg.flows WHERE flow_name = 'filter_numbers_show';
INSERT INTO numbers_input_show VALUES (10, '1970-01-01 00:00:00'),(15, '1970-01-01 00:00:01'),(16, '1970-01-01 00:00:02');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('filter_numbers_show')$$);
-- GreptimeDB: 15, 16
SELECT number FROM out_num_cnt_show ORDER BY number;
-- should mismatch, hence the old flow remains
\x on
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE OR REPLACE FLOW filter_numbers_show SINK TO out_num_cnt_show AS SELECT number AS n1, number AS n2 FROM numbers_input_show where number > 15;')$$);
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE OR REPLACE FLOW filter_numbers_show SINK TO out_num_cnt_show AS SELECT number AS n1, number AS n2, number AS n3 FROM numbers_input_show where number > 15;')$$);
\x off
SELECT result FROM flowpg.execute('SHOW CREATE FLOW filter_numbers_show');
INSERT INTO numbers_input_show VALUES (10, '1970-01-01 00:00:06'),(11, '1970-01-01 00:00:08'),(15, '1970-01-01 00:00:07'),(18, '1970-01-01 00:00:03');
SELECT flow_name, result FROM flowpg.execute($$ADMIN FLUSH_FLOW('filter_numbers_show')$$);
-- GreptimeDB: 11, 15, 15, 16, 18
SELECT number FROM out_num_cnt_show ORDER BY number;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW filter_numbers_show');

-- flow_sink_schema_mismatch: more outputs than sink columns is refused
CREATE TABLE source_mm (
    "number" INT,
    extra TEXT,
    ts TIMESTAMP NOT NULL
);
CREATE TABLE sink_mm (
    "number" INT,
    time_window TIMESTAMP NOT NULL,
    cnt BIGINT,
    UNIQUE ("number", time_window)
);
\x on
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW mismatch_flow SINK TO sink_mm AS
SELECT
    "number",
    extra,
    date_bin(INTERVAL ''1 second'', ts) as time_window,
    count(*) as cnt
FROM
    source_mm
GROUP BY
    "number", extra, time_window;')$$);
\x off
-- an unknown output at a position whose column another output names
\x on
SELECT * FROM try($$SELECT * FROM flowpg.execute('CREATE FLOW mismatch_flow SINK TO sink_mm AS SELECT date_bin(INTERVAL ''1 second'', ts) as tw, "number", count(*) as cnt FROM source_mm GROUP BY "number", tw')$$);
\x off
-- update_at and __ts_placeholder are skipped wherever they are
CREATE TABLE placeholder_sink (update_at TIMESTAMP, n BIGINT, "__ts_placeholder" TIMESTAMP NOT NULL, second TIMESTAMP NOT NULL,
                               UNIQUE (second, "__ts_placeholder"));
SELECT flow_name, result FROM flowpg.execute($$CREATE FLOW placeholder_flow SINK TO placeholder_sink AS SELECT count(*) AS cnt, date_bin(INTERVAL '1 second', ts) AS tw FROM source_mm GROUP BY tw$$);
SELECT flow_name, sink_columns FROM flowpg.flows WHERE flow_name = 'placeholder_flow';
INSERT INTO source_mm VALUES (1, 'x', '2024-01-01 00:00:00.5'), (2, 'y', '2024-01-01 00:00:00.7'), (3, 'z', '2024-01-01 00:00:01');
SELECT flowpg.flush_flow('placeholder_flow') >= 0 AS flushed;
SELECT n, second, "__ts_placeholder", update_at IS NOT NULL AS has_update_at FROM placeholder_sink ORDER BY second;
SELECT flowpg.verify_flow('placeholder_flow') AS mismatches, flow_mismatches('placeholder_flow');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW placeholder_flow');
SELECT count(*) AS mismatch_flows FROM flowpg.flows WHERE flow_name = 'mismatch_flow';

---------------------------------------------------------------------------
-- Keys the sink could merge are refused, wherever they would merge
---------------------------------------------------------------------------
CREATE TABLE names_src (k text, v int);
-- text -> name is an implicit cast in text's operator family, but cuts at 63 bytes
CREATE TABLE name_key (k name PRIMARY KEY, v int);
SELECT code, message, detail FROM try($$SELECT flowpg.create_flow('name_key', 'name_key',
  'SELECT k, v FROM names_src', mode => 'streaming')$$);
CREATE TABLE name_group (k name PRIMARY KEY, n bigint);
SELECT code, message FROM try($$SELECT flowpg.create_flow('name_group', 'name_group',
  'SELECT k, count(*) AS n FROM names_src GROUP BY k', mode => 'streaming')$$);
-- a nondeterministic collation ('A' and 'a' one key), on the column or the index
CREATE COLLATION sinks_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE ci_key (k text COLLATE sinks_ci PRIMARY KEY, v int);
SELECT code, message FROM try($$SELECT flowpg.create_flow('ci_key', 'ci_key',
  'SELECT k, v FROM names_src', mode => 'streaming')$$);
CREATE TABLE ci_group (k text COLLATE sinks_ci, n bigint, UNIQUE NULLS NOT DISTINCT (k));
SELECT code, message FROM try($$SELECT flowpg.create_flow('ci_group', 'ci_group',
  'SELECT k, count(*) AS n FROM names_src GROUP BY k', mode => 'streaming')$$);
CREATE TABLE ci_index (k text, n bigint);
CREATE UNIQUE INDEX ON ci_index (k COLLATE sinks_ci) NULLS NOT DISTINCT;
SELECT code, message FROM try($$SELECT flowpg.create_flow('ci_index', 'ci_index',
  'SELECT k, count(*) AS n FROM names_src GROUP BY k', mode => 'streaming')$$);
SELECT count(*) AS flows_left FROM flowpg.flows WHERE flow_name IN ('name_key', 'name_group', 'ci_key', 'ci_group', 'ci_index');
-- a projection's key index made after the flow is checked as at creation
CREATE TABLE numeric_src (k numeric, v int);
CREATE TABLE int_sink (k integer, v int);
SELECT flowpg.create_flow('late_key', 'int_sink', 'SELECT k, v FROM numeric_src', mode => 'streaming') > 0 AS created;
SELECT code, message FROM try($$CREATE UNIQUE INDEX int_sink_k ON int_sink (k)$$);
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'int_sink'::regclass;
SELECT flowpg.drop_flow('late_key');
-- a sink column type without an array type (an array) fed by a domain over it
CREATE DOMAIN sinks_intarr AS int[];
CREATE TABLE arr_src (k int, a sinks_intarr);
CREATE TABLE arr_sink (k int PRIMARY KEY, a int[]);
SELECT code, message FROM try($$SELECT flowpg.create_flow('arr_flow', 'arr_sink',
  'SELECT k, a FROM arr_src', mode => 'streaming')$$);
SELECT count(*) AS flows_left FROM flowpg.flows WHERE flow_name = 'arr_flow';
-- a projection's key takes the last write's form (1.0, then 1.00), in
-- both paths; the recompute's winner does not depend on the plan
CREATE TABLE form_src (k numeric, v int);
CREATE TABLE form_sink (k numeric PRIMARY KEY, v int);
SELECT flowpg.create_flow('form_flow', 'form_sink', 'SELECT k, v FROM form_src', mode => 'streaming') > 0 AS created;
INSERT INTO form_src VALUES (1.0, 1);
SELECT flowpg.flush_flow('form_flow') >= 0 AS flushed;
INSERT INTO form_src VALUES (1.00, 1);
SELECT flowpg.flush_flow('form_flow') >= 0 AS flushed;
SELECT k::text, v FROM form_sink;
SELECT flowpg.refresh_flow('form_flow') >= 0 AS refreshed;
SELECT k::text, v FROM form_sink;
SELECT flowpg.verify_flow('form_flow') AS mismatches;
SELECT flowpg.drop_flow('form_flow');
DROP TABLE names_src, name_key, name_group, ci_key, ci_group, ci_index, numeric_src, int_sink,
  arr_src, arr_sink, form_src, form_sink;
DROP DOMAIN sinks_intarr;
DROP COLLATION sinks_ci;

---------------------------------------------------------------------------
SELECT flow_name, result FROM flowpg.execute('DROP FLOW find_approx_rate');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW find_approx_rate_batching');
SELECT flowpg.drop_flow('native_rate');
SELECT flowpg.drop_flow('rounded_key');
SELECT flow_name FROM flowpg.flows WHERE flow_name NOT IN (SELECT flow_name FROM flows_before);
DROP TABLE bytes_log, approx_rate, approx_rate_batching, native_rate, text_into_int, lossy_key,
  tz_key, naive_key, rounded_key, bad_update_at, events_tz, requests, requests_without_ip,
  sum_val_in_reqs, numbers_input_show, out_num_cnt_show, source_mm, sink_mm, placeholder_sink;
DROP FUNCTION dedup_mismatches(text, text);
RESET search_path;
DROP SCHEMA greptime_sinks;
