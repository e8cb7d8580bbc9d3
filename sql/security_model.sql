-- The security model: a flow computes what its owner's query returns -- the
-- owner's privileges and row-level security apply in both engines -- every
-- expression of a flow runs as its owner in a restricted security context
-- whoever calls flowpg, error texts reach only roles that may act for the
-- owner, and capture cannot be silenced.
SET client_min_messages = warning;
SET TimeZone = 'UTC';
CREATE ROLE regress_sm_owner LOGIN;
CREATE ROLE regress_sm_other LOGIN;
CREATE ROLE regress_sm_evil LOGIN;
CREATE ROLE regress_sm_tabowner LOGIN;
CREATE SCHEMA sm;
GRANT USAGE, CREATE ON SCHEMA sm TO regress_sm_owner, regress_sm_evil, regress_sm_tabowner;
GRANT USAGE, CREATE ON SCHEMA sm TO regress_sm_other;

-- The oracle (flow_mismatches, from 00_setup) runs as the owner: its query as the owner sees it.

------------------------------------------------------------------------------
-- 1. Row-level security and privileges apply to streaming flows too.
------------------------------------------------------------------------------
CREATE TABLE sm.rls (ts timestamptz, k int, v int);
INSERT INTO sm.rls VALUES ('2024-01-01', 1, 1), ('2024-01-01', 2, 1000);
ALTER TABLE sm.rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_one ON sm.rls FOR SELECT TO regress_sm_owner USING (k = 1);
GRANT SELECT, TRIGGER ON sm.rls TO regress_sm_owner;
SET ROLE regress_sm_owner;
-- a policy filters the source for the owner: auto picks batching, streaming says why not
SELECT flowpg.create_flow('sm_rls', 'sm.rls_sink',
  $$SELECT k, date_trunc('day', ts) AS day, count(*) AS n, sum(v) AS total FROM sm.rls GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.create_flow('sm_rls_s', 'sm.rls_sink_s',
  $$SELECT k, date_trunc('day', ts) AS day, count(*) AS n, sum(v) AS total FROM sm.rls GROUP BY 1, 2$$,
  mode => 'streaming');
SELECT mode FROM flowpg.flows WHERE flow_name = 'sm_rls';
RESET ROLE;
INSERT INTO sm.rls VALUES ('2024-01-01', 1, 1), ('2024-01-01', 2, 1000);
SET ROLE regress_sm_owner;
SELECT flowpg.flush_flow('sm_rls') >= 0 AS flushed;
SELECT k, n, total FROM sm.rls_sink ORDER BY k;
SELECT flow_mismatches('sm_rls') AS mismatches;

-- A streaming flow whose source gets a policy later: writers hand its rows
-- to the recompute, which applies the policy.
RESET ROLE;
CREATE TABLE sm.later (ts timestamptz, k int, v int);
INSERT INTO sm.later VALUES ('2024-01-01', 1, 1), ('2024-01-01', 2, 1000);
GRANT SELECT, TRIGGER ON sm.later TO regress_sm_owner;
SET ROLE regress_sm_owner;
SELECT flowpg.create_flow('sm_later', 'sm.later_sink',
  $$SELECT k, count(*) AS n, sum(v) AS total FROM sm.later GROUP BY k$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.flush_flow('sm_later') >= 0 AS backfilled;
RESET ROLE;
ALTER TABLE sm.later ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_one ON sm.later FOR SELECT TO regress_sm_owner USING (k = 1);
INSERT INTO sm.later VALUES ('2024-01-01', 1, 1), ('2024-01-01', 2, 1000), ('2024-01-01', 3, 5);
SET ROLE regress_sm_owner;
SELECT flowpg.flush_flow('sm_later') >= 0 AS flushed;
SELECT k, n, total FROM sm.later_sink ORDER BY k;
SELECT flow_mismatches('sm_later') AS mismatches;

-- REVOKE SELECT, and REVOKE ALL: new rows no longer reach the sinks, and
-- the flows fail as a batching flow does.
RESET ROLE;
CREATE TABLE sm.revoked (ts timestamptz, k int, v int);
CREATE TABLE sm.revoked_all (ts timestamptz, k int, v int);
INSERT INTO sm.revoked VALUES ('2024-01-01', 1, 1);
INSERT INTO sm.revoked_all VALUES ('2024-01-01', 1, 1);
GRANT SELECT, TRIGGER ON sm.revoked, sm.revoked_all TO regress_sm_owner;
SET ROLE regress_sm_owner;
SELECT flowpg.create_flow('sm_revoked', 'sm.revoked_sink',
  $$SELECT k, count(*) AS n, sum(v) AS total FROM sm.revoked GROUP BY k$$, mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('sm_revoked_all', 'sm.revoked_all_sink',
  $$SELECT k, count(*) AS n, sum(v) AS total FROM sm.revoked_all GROUP BY k$$, mode => 'streaming') > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name LIKE 'sm\_revoked%' ORDER BY 1;
RESET ROLE;
INSERT INTO sm.revoked VALUES ('2024-01-01', 1, 10);		-- still allowed: counted
SELECT flowpg.flush_flow('sm_revoked') >= 0 AS flushed;
REVOKE SELECT ON sm.revoked FROM regress_sm_owner;
REVOKE ALL ON sm.revoked_all FROM regress_sm_owner;
SET client_min_messages = error;
INSERT INTO sm.revoked VALUES ('2024-01-01', 1, 100);
INSERT INTO sm.revoked_all VALUES ('2024-01-01', 1, 100);
SET client_min_messages = warning;
SELECT flowpg.flush_flow('sm_revoked');
SELECT flowpg.flush_flow('sm_revoked_all');
SELECT k, n, total FROM sm.revoked_sink ORDER BY k;
SELECT k, n, total FROM sm.revoked_all_sink ORDER BY k;
SELECT flow_name, state FROM flowpg.flows WHERE flow_name LIKE 'sm\_revoked%' ORDER BY 1;

------------------------------------------------------------------------------
-- 2. A hostile flow: its window function makes its owner superuser when it
--    runs as anyone else.  Nothing flowpg does for a superuser may run it so.
------------------------------------------------------------------------------
SET ROLE regress_sm_evil;
CREATE TABLE sm.evil_src (ts timestamptz, k int, v int);
INSERT INTO sm.evil_src VALUES ('2024-01-01 10:00+00', 1, 1);
CREATE FUNCTION sm.escalate() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF current_user <> 'regress_sm_evil' THEN
		EXECUTE 'ALTER ROLE regress_sm_evil SUPERUSER';
	END IF;
END $$;
CREATE FUNCTION sm.evil_hour(t timestamptz) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	PERFORM sm.escalate();
	RETURN date_trunc('hour', t);
END $$;
CREATE FUNCTION sm.evil_sum_final(s bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	PERFORM sm.escalate();
	RETURN s;
END $$;
CREATE AGGREGATE sm.evil_sum(int) (SFUNC = int4_sum, STYPE = bigint, FINALFUNC = sm.evil_sum_final,
	COMBINEFUNC = int8pl);
SELECT flowpg.create_flow('sm_evil_s', 'sm.evil_sink_s',
  $$SELECT sm.evil_hour(ts) AS hour, k, sm.evil_sum(v) AS total FROM sm.evil_src GROUP BY 1, 2$$,
  mode => 'streaming') > 0 AS created;
SELECT flowpg.create_flow('sm_evil_b', 'sm.evil_sink_b',
  $$SELECT sm.evil_hour(ts) AS hour, k, sm.evil_sum(v) AS total FROM sm.evil_src GROUP BY 1, 2$$,
  mode => 'batching') > 0 AS created;
GRANT INSERT, UPDATE, DELETE, TRUNCATE ON sm.evil_src TO PUBLIC;
RESET ROLE;
-- every entry point, called by a superuser
SELECT * FROM flowpg.flow_window_bounds('sm_evil_s', '2024-01-01 10:30+00'::timestamptz);
SELECT * FROM flowpg.flow_window_bounds('sm_evil_b', '2024-01-01 10:30+00'::timestamptz);
INSERT INTO sm.evil_src VALUES ('2024-01-01 11:00+00', 2, 2);
UPDATE sm.evil_src SET v = v + 1;
SELECT flowpg.flush_flow('sm_evil_s') >= 0 AS flushed, flowpg.flush_flow('sm_evil_b') >= 0 AS flushed;
SELECT flowpg.refresh_flow('sm_evil_s') >= 0 AS refreshed, flowpg.refresh_flow('sm_evil_b') >= 0 AS refreshed;
BEGIN;
INSERT INTO sm.evil_src VALUES ('2024-01-01 12:00+00', 3, 3);
SELECT flowpg.flush_flow('sm_evil_s') >= 0 AS flushed_inline;
COMMIT;
SELECT count(*) > 0 AS listed FROM flowpg.flows WHERE flow_name LIKE 'sm\_evil%' AND query IS NOT NULL;
SELECT count(*) >= 0 AS stats FROM flowpg.flow_stats;
ALTER TABLE sm.evil_src ADD COLUMN note text;	-- event triggers deparse the flows
TRUNCATE sm.evil_src;
SELECT flowpg.flush_flow('sm_evil_s') >= 0 AS flushed, flowpg.flush_flow('sm_evil_b') >= 0 AS flushed;
SELECT rolsuper AS evil_became_superuser FROM pg_roles WHERE rolname = 'regress_sm_evil';

------------------------------------------------------------------------------
-- 3. Error texts reach only roles that may act for the owner.
------------------------------------------------------------------------------
CREATE TABLE sm.raw (ts timestamptz, k int, code text);
GRANT SELECT, TRIGGER ON sm.raw TO regress_sm_owner;
GRANT INSERT ON sm.raw TO regress_sm_other;
SET ROLE regress_sm_owner;
SELECT flowpg.create_flow('sm_codes', 'sm.codes',
  $$SELECT k, count(*) AS n, sum(code::int) AS total FROM sm.raw GROUP BY k$$,
  mode => 'batching', eval_interval => '1 second') > 0 AS created;
SELECT flowpg.create_flow('sm_codes_s', 'sm.codes_s',
  $$SELECT k, count(*) AS n, sum(code::int) AS total FROM sm.raw GROUP BY k$$,
  mode => 'streaming') > 0 AS created;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name LIKE 'sm\_codes%' ORDER BY 1;
RESET ROLE;
-- a writer that is not the owner gets a warning without the error's text
SET ROLE regress_sm_other;
SET client_min_messages = warning;
INSERT INTO sm.raw VALUES ('2024-01-01', 1, 'TOPSECRET-hunter2');
RESET ROLE;
-- the worker's run fails; wait for it
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN (SELECT count(*) FROM flowpg.flows WHERE flow_name LIKE 'sm\_codes%' AND state = 'failed') = 2;
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SET ROLE regress_sm_other;
SELECT flow_name, state, state_reason FROM flowpg.flows WHERE flow_name LIKE 'sm\_codes%' ORDER BY 1;
SELECT count(*) AS errors_seen FROM flowpg.flow_errors;
SELECT count(*) AS leaks FROM flowpg.flows WHERE state_reason LIKE '%TOPSECRET%';
SET ROLE regress_sm_owner;
SELECT flow_name, state, state_reason LIKE '%TOPSECRET%' AS owner_sees_it FROM flowpg.flows
 WHERE flow_name LIKE 'sm\_codes%' ORDER BY 1;
SELECT count(*) > 0 AS owner_sees_errors FROM flowpg.flow_errors WHERE message LIKE '%TOPSECRET%';
RESET ROLE;

------------------------------------------------------------------------------
-- 4. Capture cannot be silenced, not even by the source's owner.
------------------------------------------------------------------------------
SET ROLE regress_sm_tabowner;
CREATE TABLE sm.owned (ts timestamptz, k int, v int);
CREATE FUNCTION sm.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
GRANT SELECT, TRIGGER ON sm.owned TO regress_sm_owner;
SET ROLE regress_sm_owner;
SELECT flowpg.create_flow('sm_owned', 'sm.owned_sink',
  $$SELECT k, count(*) AS n, sum(v) AS total FROM sm.owned GROUP BY k$$, mode => 'batching',
  eval_interval => '1 hour') > 0 AS created;
SET ROLE regress_sm_tabowner;
ALTER TABLE sm.owned DISABLE TRIGGER flowpg_capture_insert;
ALTER TABLE sm.owned DISABLE TRIGGER ALL;
ALTER TABLE sm.owned ENABLE REPLICA TRIGGER flowpg_capture_insert;
ALTER TABLE sm.owned ENABLE ALWAYS TRIGGER flowpg_capture_update;
ALTER TABLE sm.owned ENABLE TRIGGER flowpg_capture_row;
ALTER TRIGGER flowpg_capture_delete ON sm.owned RENAME TO innocent;
DROP TRIGGER flowpg_capture_insert ON sm.owned;
CREATE OR REPLACE TRIGGER flowpg_capture_insert AFTER INSERT ON sm.owned
	FOR EACH STATEMENT EXECUTE FUNCTION sm.noop();
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'sm.owned'::regclass ORDER BY tgname;
INSERT INTO sm.owned VALUES ('2024-01-01', 1, 5);
SET ROLE regress_sm_owner;
SELECT flowpg.flush_flow('sm_owned') >= 0 AS flushed, flow_mismatches('sm_owned') AS mismatches;
-- a trigger of flowpg's name that flowpg did not make is not taken for its own
SET ROLE regress_sm_tabowner;
CREATE TABLE sm.squatted (ts timestamptz, k int, v int);
CREATE TRIGGER flowpg_capture_insert AFTER INSERT ON sm.squatted
	FOR EACH STATEMENT EXECUTE FUNCTION sm.noop();
GRANT SELECT, TRIGGER ON sm.squatted TO regress_sm_owner;
SET ROLE regress_sm_owner;
SELECT flowpg.create_flow('sm_squatted', 'sm.squatted_sink',
  $$SELECT k, count(*) AS n FROM sm.squatted GROUP BY k$$, mode => 'batching', eval_interval => '1 hour');
SELECT to_regclass('sm.squatted_sink') IS NULL AS nothing_left;
-- what the source's owner can still do: drop the table, and the flow with it
SET ROLE regress_sm_tabowner;
SET client_min_messages = notice;
DROP TABLE sm.owned CASCADE;
SET client_min_messages = warning;
SELECT count(*) AS flows_left FROM flowpg.flows WHERE flow_name = 'sm_owned';
RESET ROLE;

------------------------------------------------------------------------------
-- 5. A sink must belong to the flow's owner (or a role it is a member of):
--    its triggers run with the owner's rights.
------------------------------------------------------------------------------
SET ROLE regress_sm_other;
CREATE TABLE sm.others_sink (k int UNIQUE, n bigint);
GRANT ALL ON sm.others_sink TO PUBLIC;
RESET ROLE;
CREATE TABLE sm.src5 (ts timestamptz, k int);
GRANT SELECT, TRIGGER ON sm.src5 TO regress_sm_owner;
SET ROLE regress_sm_owner;
SELECT flowpg.create_flow('sm_foreign_sink', 'sm.others_sink',
  $$SELECT k, count(*) AS n FROM sm.src5 GROUP BY k$$);
RESET ROLE;
-- not even for a superuser's flow
SELECT flowpg.create_flow('sm_foreign_sink', 'sm.others_sink',
  $$SELECT k, count(*) AS n FROM sm.src5 GROUP BY k$$);
SELECT flowpg.create_flow('sm_own_sink', 'sm.own_sink',
  $$SELECT k, count(*) AS n FROM sm.src5 GROUP BY k$$) > 0 AS created;
ALTER TABLE sm.own_sink OWNER TO regress_sm_other;

------------------------------------------------------------------------------
-- 6. One role cannot take every flow slot when an administrator limits it.
------------------------------------------------------------------------------
SET flowpg.max_flows_per_role = 2;
SET ROLE regress_sm_owner;
SELECT count(*) AS owned_flows FROM flowpg.flows WHERE owner = 'regress_sm_owner';
SELECT flowpg.create_flow('sm_one_too_many', 'sm.too_many',
  $$SELECT k, count(*) AS n FROM sm.src5 GROUP BY k$$);
RESET ROLE;
-- pending flows count too: another role with a quota of 2 cannot make a
-- third one pending (before, a role with a quota of 2 made 2,006)
SET ROLE regress_sm_other;
SELECT f.flow_name, f.result FROM generate_series(1, 2) i, flowpg.execute(format(
  'CREATE FLOW sm_pending_%s SINK TO public.sm_pending_out_%s WITH (defer_on_missing_source = true) AS SELECT count(*) AS n FROM public.sm_later_%s', i, i, i)) f;
SELECT flow_name, result FROM flowpg.execute($$
CREATE FLOW sm_pending_3 SINK TO public.sm_pending_out_3 WITH (defer_on_missing_source = true)
AS SELECT count(*) AS n FROM public.sm_later_3$$);
-- nor a real one
SELECT flowpg.create_flow('sm_other_too_many', 'sm.other_too_many',
  $$SELECT k, count(*) AS n FROM sm.src5 GROUP BY k$$);
RESET ROLE;
RESET flowpg.max_flows_per_role;
-- a pending statement is bounded in size
SELECT flow_name, result FROM flowpg.execute(
  'CREATE FLOW sm_huge SINK TO public.sm_huge_out WITH (defer_on_missing_source = true) AS SELECT count(*) AS n FROM public.sm_nowhere WHERE '
  || (SELECT string_agg('1 = 1', ' AND ') FROM generate_series(1, 20000)));
-- the database's owner may drop any flow, pending ones included: no role
-- can squat a flow name for good; an ordinary role may not
SET ROLE regress_sm_evil;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW sm_pending_1');
SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE owner = 'regress_sm_owner' ORDER BY flow_name LIMIT 1;
RESET ROLE;
CREATE ROLE regress_sm_dba;
ALTER DATABASE :"DBNAME" OWNER TO regress_sm_dba;
SET ROLE regress_sm_dba;
SELECT flow_name, result FROM flowpg.execute('DROP FLOW sm_pending_1');
SELECT flow_name, result FROM flowpg.execute('DROP FLOW sm_pending_2');
SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE owner = 'regress_sm_owner' ORDER BY flow_name LIMIT 1;
RESET ROLE;
SELECT count(*) AS left_pending FROM flowpg.information_schema_flows WHERE flow_name LIKE 'sm\_pending%';
ALTER DATABASE :"DBNAME" OWNER TO CURRENT_USER;
DROP ROLE regress_sm_dba;

------------------------------------------------------------------------------
-- 7. Row-level security enabled or narrowed after creation: the sink is what
-- the owner may see now, in the windows no new row touched too, in both
-- engines (before, 20 hidden rows stayed in each sink, 5 after ALTER POLICY).
------------------------------------------------------------------------------
SET ROLE regress_sm_tabowner;
CREATE TABLE sm.pol (ts timestamptz, device int, v int);
INSERT INTO sm.pol SELECT '2024-01-01'::timestamptz + (i % 20) * interval '1 minute', i % 30, i
  FROM generate_series(1, 600) i;
GRANT SELECT, TRIGGER ON sm.pol TO regress_sm_owner;
RESET ROLE;
SET ROLE regress_sm_owner;
SELECT flowpg.create_flow('sm_pol_' || m, 'sm.pol_' || m,
  $$SELECT date_trunc('minute', ts) AS minute, device, count(*) AS n, sum(v) AS s FROM sm.pol GROUP BY 1, 2$$,
  mode => m) > 0 AS created FROM unnest(ARRAY['streaming', 'batching']) m;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows
 WHERE flow_name LIKE 'sm\_pol\_%' ORDER BY 1;
RESET ROLE;
SET ROLE regress_sm_tabowner;
CREATE POLICY pa ON sm.pol FOR SELECT TO regress_sm_owner USING (device < 10);
ALTER TABLE sm.pol ENABLE ROW LEVEL SECURITY;
INSERT INTO sm.pol VALUES ('2024-01-01 00:00+00', 1, 1);
RESET ROLE;
SET ROLE regress_sm_owner;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'sm\_pol\_%' ORDER BY 1;
SELECT (SELECT count(*) FROM sm.pol_streaming WHERE device >= 10) AS hidden_streaming,
       (SELECT count(*) FROM sm.pol_batching WHERE device >= 10) AS hidden_batching;
RESET ROLE;
-- the policy narrowed, no row written
SET ROLE regress_sm_tabowner;
ALTER POLICY pa ON sm.pol USING (device < 5);
RESET ROLE;
SET ROLE regress_sm_owner;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'sm\_pol\_%' ORDER BY 1;
SELECT count(DISTINCT device) AS devices_seen FROM sm.pol_batching;
RESET ROLE;
-- a policy for a group the owner then joins, and leaves: memberships count too
CREATE ROLE regress_sm_readers;
SET ROLE regress_sm_tabowner;
CREATE POLICY pg ON sm.pol FOR SELECT TO regress_sm_readers USING (device < 20);
RESET ROLE;
GRANT regress_sm_readers TO regress_sm_owner;
SET ROLE regress_sm_owner;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'sm\_pol\_%' ORDER BY 1;
SELECT count(DISTINCT device) AS devices_seen FROM sm.pol_streaming;
RESET ROLE;
REVOKE regress_sm_readers FROM regress_sm_owner;
SET ROLE regress_sm_owner;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'sm\_pol\_%' ORDER BY 1;
RESET ROLE;
-- row-level security disabled again: everything is visible again
SET ROLE regress_sm_tabowner;
ALTER TABLE sm.pol DISABLE ROW LEVEL SECURITY;
RESET ROLE;
SET ROLE regress_sm_owner;
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'sm\_pol\_%' ORDER BY 1;
SELECT count(DISTINCT device) AS devices_seen FROM sm.pol_streaming;
RESET ROLE;
DROP POLICY pg ON sm.pol;

SELECT count(flowpg.drop_flow(flow_name)) >= 0 AS dropped FROM flowpg.flows WHERE flow_name LIKE 'sm\_%';
DROP SCHEMA sm CASCADE;
DROP OWNED BY regress_sm_owner, regress_sm_other, regress_sm_evil, regress_sm_tabowner;
DROP ROLE regress_sm_owner, regress_sm_other, regress_sm_evil, regress_sm_tabowner, regress_sm_readers;
