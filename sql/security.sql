-- Ownership and privileges: a flow is created with, and runs with, its
-- owner's rights; only the owner or a superuser may drop or replace it;
-- nobody but flowpg's functions writes the catalog.

CREATE ROLE regress_flow_owner LOGIN;
CREATE ROLE regress_flow_other LOGIN;
CREATE SCHEMA sec;
GRANT USAGE, CREATE ON SCHEMA sec TO regress_flow_owner;
GRANT USAGE ON SCHEMA sec TO regress_flow_other;
CREATE TABLE sec.events (at timestamptz, kind text, secret text);
INSERT INTO sec.events SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '5 minutes', 'k' || i % 3, 's'
FROM generate_series(0, 99) i;
GRANT SELECT (at, kind), TRIGGER ON sec.events TO regress_flow_owner;
CREATE TABLE sec.not_granted (at timestamptz);
CREATE TABLE sec.read_only (at timestamptz);
GRANT SELECT ON sec.read_only TO regress_flow_owner;

SET ROLE regress_flow_owner;
-- Reading granted columns is enough to create a flow; the sink is the owner's.
SELECT flowpg.create_flow('sec_kinds', 'sec.kinds_per_hour',
  $$SELECT kind, date_trunc('hour', at) AS hour, count(*) AS n FROM sec.events GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.flush_flow('sec_kinds') >= 0 AS backfilled;
SELECT owner FROM flowpg.flows WHERE flow_name = 'sec_kinds';
SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'sec.kinds_per_hour'::regclass;
-- Columns and tables it may not read are refused, and so are tables it may
-- read but not put triggers on (flowpg captures changes with triggers).
SELECT flowpg.create_flow('sec_secret', 'sec.secrets',
  $$SELECT secret, count(*) AS n FROM sec.events GROUP BY 1$$, eval_interval => '1 hour');
SELECT flowpg.create_flow('sec_nope', 'sec.nope',
  $$SELECT date_trunc('hour', at) AS hour, count(*) AS n FROM sec.not_granted GROUP BY 1$$);
SELECT flowpg.create_flow('sec_ro', 'sec.ro',
  $$SELECT date_trunc('hour', at) AS hour, count(*) AS n FROM sec.read_only GROUP BY 1$$);
-- A sink it cannot create, or cannot write.
SELECT flowpg.create_flow('sec_pub', 'public.sec_pub',
  $$SELECT date_trunc('hour', at) AS hour, count(*) AS n FROM sec.events GROUP BY 1$$);
RESET ROLE;
CREATE TABLE sec.readonly_sink (hour timestamptz UNIQUE, n bigint);
GRANT SELECT ON sec.readonly_sink TO regress_flow_owner;
SET ROLE regress_flow_owner;
SELECT flowpg.create_flow('sec_ro2', 'sec.readonly_sink',
  $$SELECT date_trunc('hour', at) AS hour, count(*) AS n FROM sec.events GROUP BY 1$$);
-- The catalog itself is out of reach; the view is not; nor are flowpg's
-- internal functions.
SELECT count(*) FROM flowpg.flow;
INSERT INTO flowpg.flow (flow_name) VALUES ('forged');
SELECT count(*) FROM flowpg.dirty_log;
CREATE TABLE sec.mine (x int);
CREATE TRIGGER t AFTER INSERT ON sec.mine EXECUTE FUNCTION flowpg._catalog_restore_fixup();
SELECT flowpg._deparse_query(-1) IS NULL AS nothing_to_see;
SELECT count(*) > 0 AS sees_flows FROM flowpg.flows;

-- Another role can neither drop nor replace the flow.
SET ROLE regress_flow_other;
SELECT flowpg.drop_flow('sec_kinds');
SELECT flowpg.create_flow('sec_kinds', 'sec.kinds_per_hour',
  $$SELECT kind, date_trunc('hour', at) AS hour, count(*) AS n FROM sec.events GROUP BY 1, 2$$,
  or_replace => true);
-- if_not_exists does not reveal more than the view does.
SELECT flowpg.create_flow('sec_kinds', 'x', 'SELECT 1 AS a FROM sec.events', if_not_exists => true) > 0 AS existing;

-- The owner can replace it; a superuser can drop it.
SET ROLE regress_flow_owner;
SELECT flowpg.create_flow('sec_kinds', 'sec.kinds_per_hour',
  $$SELECT kind, date_trunc('hour', at) AS hour, count(*) AS n FROM sec.events WHERE kind <> 'k0' GROUP BY 1, 2$$,
  or_replace => true) > 0 AS replaced;
SELECT flowpg.flush_flow('sec_kinds') >= 0 AS backfilled;
SELECT count(DISTINCT kind) FROM sec.kinds_per_hour;
RESET ROLE;
SELECT flowpg.drop_flow('sec_kinds');
SELECT count(*) FROM flowpg.flows WHERE flow_name LIKE 'sec%';

DROP SCHEMA sec CASCADE;
DROP ROLE regress_flow_owner;
DROP ROLE regress_flow_other;
