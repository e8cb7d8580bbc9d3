# flowpg: a fresh install (CREATE EXTENSION flowpg, one script:
# flowpg--0.3.sql) and an updated one (CREATE EXTENSION flowpg VERSION
# '0.2', then ALTER EXTENSION flowpg UPDATE) have the same objects, each
# with the same definition: functions and aggregates, tables with their
# columns, defaults, constraints and indexes, views, sequences, triggers,
# event triggers, privileges, comments, and the tables pg_dump carries.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('fresh_install');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('postgres', 'CREATE DATABASE updated');
$node->safe_psql('fresh', 'CREATE EXTENSION flowpg');
$node->safe_psql('updated', q{CREATE EXTENSION flowpg VERSION '0.2'});
is($node->safe_psql('updated', q{SELECT extversion FROM pg_extension WHERE extname = 'flowpg'}),
   '0.2', 'the updated database starts at 0.2');
$node->safe_psql('updated', 'ALTER EXTENSION flowpg UPDATE');

my $describe = q{
WITH members AS (
  SELECT d.classid, d.objid FROM pg_depend d
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'flowpg'))
SELECT line FROM (
  SELECT 'function ' || p.oid::regprocedure || ' -> ' || pg_get_function_result(p.oid)
         || ' ' || p.prokind::text || ' ' || p.provolatile::text || ' ' || p.proisstrict
         || ' ' || p.prosecdef::text || ' ' || p.proparallel::text || ' acl ' || coalesce(p.proacl::text, '-')
         || ' comment ' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
         || E'\n' || CASE WHEN p.prokind::text = 'a' THEN
              (SELECT concat_ws(' ', a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn,
                                a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn,
                                a.aggtranstype::regtype, a.agginitval, a.aggfinalmodify::text)
                 FROM pg_aggregate a WHERE a.aggfnoid = p.oid)
            ELSE pg_get_functiondef(p.oid) END AS line
    FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
  UNION ALL
  SELECT 'relation ' || c.oid::regclass || ' kind ' || c.relkind::text || ' acl ' || coalesce(c.relacl::text, '-')
         || ' rls ' || c.relrowsecurity::text || ' comment ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
         || E'\n' || coalesce((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                                          || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                                          || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), ''),
                                          ', ' ORDER BY a.attnum)
                                 FROM pg_attribute a
                                 LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                                WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '')
         || E'\n' || CASE WHEN c.relkind::text = 'v' THEN pg_get_viewdef(c.oid) ELSE '' END
         || coalesce((SELECT string_agg(pg_get_constraintdef(k.oid), '; ' ORDER BY pg_get_constraintdef(k.oid))
                        FROM pg_constraint k WHERE k.conrelid = c.oid), '')
         || coalesce((SELECT string_agg(pg_get_indexdef(i.indexrelid), '; ' ORDER BY pg_get_indexdef(i.indexrelid))
                        FROM pg_index i WHERE i.indrelid = c.oid), '')
         || coalesce((SELECT string_agg(pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text, '; ' ORDER BY t.tgname)
                        FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal), '')
    FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
  UNION ALL
  SELECT 'event trigger ' || e.evtname || ' ' || e.evtevent || ' ' || e.evtfoid::regproc || ' '
         || e.evtenabled::text || ' ' || coalesce(e.evttags::text, '-')
    FROM members m JOIN pg_event_trigger e ON m.classid = 'pg_event_trigger'::regclass AND e.oid = m.objid
  UNION ALL
  SELECT 'schema ' || n.nspname || ' acl ' || coalesce(n.nspacl::text, '-')
    FROM members m JOIN pg_namespace n ON m.classid = 'pg_namespace'::regclass AND n.oid = m.objid
  UNION ALL
  SELECT 'type ' || t.oid::regtype || ' ' || t.typtype::text
    FROM members m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
  UNION ALL
  SELECT 'other ' || pg_describe_object(m.classid, m.objid, 0)
    FROM members m
   WHERE m.classid NOT IN ('pg_proc'::regclass, 'pg_class'::regclass, 'pg_event_trigger'::regclass,
                           'pg_namespace'::regclass, 'pg_type'::regclass)
  UNION ALL
  SELECT 'schema flowpg acl ' || coalesce(nspacl::text, '-') FROM pg_namespace WHERE nspname = 'flowpg'
  UNION ALL
  SELECT 'dumped ' || coalesce((SELECT string_agg(x::regclass::text || ' where ' || coalesce(w, ''), ', ' ORDER BY x::regclass::text)
                                  FROM pg_extension e,
                                       unnest(e.extconfig, e.extcondition) AS u(x, w)
                                 WHERE e.extname = 'flowpg'), '-')
) lines ORDER BY line};

my $fresh = $node->safe_psql('fresh', $describe);
my $updated = $node->safe_psql('updated', $describe);
my $count = () = $fresh =~ /^(function|relation|event trigger) /mg;
ok($count >= 80, "the fresh install has the extension's objects ($count)");
is($fresh, $updated, 'a fresh install and an install updated from 0.2 have the same objects');
if ($fresh ne $updated)
{
	# the first difference, to say what went wrong
	my @f = split /\n/, $fresh;
	my @u = split /\n/, $updated;
	for my $i (0 .. ($#f > $#u ? $#f : $#u))
	{
		next if ($f[$i] // '') eq ($u[$i] // '');
		diag("fresh:   " . ($f[$i] // '(none)'));
		diag("updated: " . ($u[$i] // '(none)'));
		last;
	}
}

# and each works: a flow created in both
for my $db ('fresh', 'updated')
{
	$node->safe_psql($db, q{
CREATE TABLE m (ts timestamptz NOT NULL, v int);
INSERT INTO m SELECT '2024-01-01'::timestamptz + i * interval '1 second', i FROM generate_series(1, 1000) i;
SELECT flowpg.create_flow('m1', 'm1_out', $$SELECT date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS s FROM m GROUP BY 1$$);
SELECT flowpg.flush_flow('m1');});
	is($node->safe_psql($db, q{SELECT flowpg.verify_flow('m1')}), '0', "a flow in the $db database is exact");
}

$node->stop;
done_testing();
