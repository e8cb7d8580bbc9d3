# flowpg: a restore re-plans flows over whatever objects the dump made,
# and their code would run with the flow owner's rights: only objects of
# roles that can act as the owner are trusted (trust.c).
#
#   - a flow of alice over alice's own table restores and runs as before;
#   - a superuser's flow over a table of mallory, whose implicit cast would
#     make her superuser, stays "restoring" and says which object and role;
#     nothing of it runs (mallory is no superuser after writes and flushes);
#   - its owner re-creates it with or_replace, vetting the objects as any
#     query's author does, and it is active and exact.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('restore_trust');

sub poll_until { my $db = shift; return FlowpgTest::poll_until($node, $db, @_); }

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', $FlowpgTest::mismatches_function);
$node->safe_psql('src', q{
CREATE EXTENSION flowpg;
CREATE ROLE alice LOGIN;
CREATE ROLE mallory LOGIN;
CREATE SCHEMA alice AUTHORIZATION alice;
CREATE SCHEMA mal AUTHORIZATION mallory;
SET ROLE alice;
CREATE TABLE alice.events (ts timestamptz, device int, value int);
INSERT INTO alice.events SELECT '2024-01-01'::timestamptz + i * interval '1 minute', i % 5, i FROM generate_series(1, 100) i;
SELECT flowpg.create_flow('alice_f', 'alice.alice_out',
  $$SELECT device, date_trunc('hour', ts) AS hour, sum(value) AS s FROM alice.events GROUP BY 1, 2$$, mode => 'batching');
RESET ROLE;
SET ROLE mallory;
CREATE TYPE mal.ct AS (x int);
CREATE TABLE mal.ran (who name);
GRANT INSERT ON mal.ran TO PUBLIC;
-- a stable cast (flows refuse volatile ones) calling a volatile function
CREATE FUNCTION mal.escalate() RETURNS void LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
	INSERT INTO mal.ran VALUES (current_user);
	BEGIN
		EXECUTE 'ALTER ROLE mallory SUPERUSER';
	EXCEPTION WHEN OTHERS THEN
		NULL;
	END;
END $f$;
CREATE FUNCTION mal.ct_int(mal.ct) RETURNS int LANGUAGE plpgsql STABLE AS $f$
BEGIN
	PERFORM mal.escalate();
	RETURN ($1).x;
END $f$;
CREATE CAST (mal.ct AS int4) WITH FUNCTION mal.ct_int(mal.ct) AS IMPLICIT;
CREATE TABLE mal.events (ts timestamptz, device int, value mal.ct);
INSERT INTO mal.events SELECT '2024-01-01'::timestamptz + i * interval '1 minute', i % 5, row(i)::mal.ct FROM generate_series(1, 100) i;
GRANT SELECT, TRIGGER ON mal.events TO alice;
RESET ROLE;
-- the superuser vets mallory's table and cast here, by creating the flow
SELECT flowpg.create_flow('admin_f', 'public.admin_out',
  $$SELECT device, date_trunc('hour', ts) AS hour, sum(value) AS s FROM mal.events GROUP BY 1, 2$$, mode => 'batching');
});
# the backfills (online: after create_flow), before mallory loses her rights
$node->safe_psql('src', q{SELECT flowpg.flush_flow('admin_f'), flowpg.flush_flow('alice_f')});

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ], 'pg_dump');
$node->safe_psql('postgres', 'ALTER ROLE mallory NOSUPERUSER');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('dst'), $dump ], 'pg_restore exits cleanly');
$node->safe_psql('dst', 'INSERT INTO mal.events VALUES (now(), 1, row(1000)::mal.ct); INSERT INTO alice.events VALUES (now(), 1, 1000)');
my $ran = $node->safe_psql('dst', q{SELECT count(*) FROM mal.ran});

ok(poll_until('dst', q{SELECT state FROM flowpg.flows WHERE flow_name = 'alice_f'}, 'active', 30),
	"alice's flow over her own table is restored and active");
is($node->safe_psql('dst', q{SELECT flowpg.flush_flow('alice_f') >= 0; SELECT flow_mismatches('alice_f')}),
	"t\n0", 'and exact');

ok(poll_until('dst',
		q{SELECT state = 'restoring' AND state_reason LIKE '%mal.ct_int(mal.ct) of role mallory%'
		    FROM flowpg.flows WHERE flow_name = 'admin_f'}, 't', 30),
	"the superuser's restored flow over mallory's objects waits, naming the untrusted function");
my ($rc, $out, $err) = $node->psql('dst', q{SELECT flowpg.flush_flow('admin_f')});
isnt($rc, 0, 'flushing it is refused');
like($err, qr/is being restored/, 'with the reason');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
	'f', "mallory is no superuser");
is($node->safe_psql('dst', q{SELECT count(*) FROM mal.ran}), $ran,
	"mallory's cast never ran for the restored flow");

# the owner vets the objects again by re-creating the flow
$node->safe_psql('dst', q{SELECT flowpg.create_flow('admin_f', 'public.admin_out',
  $$SELECT device, date_trunc('hour', ts) AS hour, sum(value) AS s FROM mal.events GROUP BY 1, 2$$, mode => 'batching', or_replace => true);
  SELECT flowpg.flush_flow('admin_f')});
is($node->safe_psql('dst', q{SELECT state FROM flowpg.flows WHERE flow_name = 'admin_f'}),
	'active', 're-created by its owner, it is active');

$node->stop;
done_testing();
