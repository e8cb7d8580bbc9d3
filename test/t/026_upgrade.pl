# flowpg: an upgrade in place from the first release (0.1) to this one, as
# a package upgrade does it: ALTER EXTENSION UPDATE runs every update script
# from 0.1 on.  (028_upgrade_0_2.pl upgrades from the newest release.)
#
#   - the server runs the 0.1 library (scripts/previous-release.sh builds it
#     into a copy of this PostgreSQL) with flows of both engines over a plain
#     and a partitioned source, exact;
#   - it restarts onto this library with the database still at 0.1: writes
#     are captured, flowpg's views say "update needed", its functions refuse
#     with a hint, the worker touches nothing;
#   - ALTER EXTENSION flowpg UPDATE while a writer writes: no flow dropped,
#     no sink rebuilt (same relation), every sink exact after a flush, new
#     writes captured, a new flow backfills online;
#   - a flow 0.1 let have a name that needs quoting keeps it, reached by
#     its double-quoted name; the sinks of 0.1's flows refuse DROP TABLE
#     without CASCADE as those of new flows do;
#   - the updated database has the objects of a fresh install, and its
#     pg_dump restores with exact flows.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $old = $ENV{FLOWPG_RELEASE_0_1};
ok($old && -x "$old/bin/postgres",
	'release 0.1 is built (scripts/previous-release.sh, from the git history)')
  or BAIL_OUT('no release 0.1 to upgrade from: ' . ($old // 'FLOWPG_RELEASE_0_1 unset'));
my $new = dirname_of(`pg_config --bindir` =~ s/\s+$//r);
sub dirname_of { my $p = shift; $p =~ s{/[^/]+$}{}; return $p; }

my $node = FlowpgTest::upgrade_node('upgrade', $old);
sub psql { return $node->safe_psql($_[1] // 'flows', $_[0]); }
sub poll_until { return FlowpgTest::poll_until($node, 'flows', @_); }

psql(q{
SELECT flowpg.create_flow('b_min', 'b_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total FROM metrics GROUP BY 1, 2$$,
  mode => 'batching');
SELECT flowpg.create_flow('s_min', 's_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total, max(value) AS top
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.create_flow('pb_hour', 'pb_hour',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n, avg(value) AS mean FROM pmetrics GROUP BY 1$$,
  mode => 'batching');
SELECT flowpg.create_flow('ps_min', 'ps_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total FROM pmetrics GROUP BY 1, 2$$,
  mode => 'streaming');
-- 0.1 kept a flow name as given: upper case and a space
SELECT flowpg.create_flow('Mixed Flow', 'mixed_sink',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM metrics GROUP BY 1$$, mode => 'batching');
});
my @flows = qw(b_min s_min pb_hour ps_min);
my $flush_all = join('; ', map { "SELECT flowpg.flush_flow('$_') >= 0" } @flows);
my $exact_all = 'SELECT ' . join(' + ', map { "flow_mismatches('$_')" } @flows);
is(psql(q{SELECT extversion FROM pg_extension WHERE extname = 'flowpg'}), '0.1', 'installed at 0.1');
psql($flush_all);
is(psql($exact_all), '0', 'the 0.1 flows are exact');
my $sinks_before = psql(q{SELECT string_agg(sink_table::oid::text, ',' ORDER BY flow_id) FROM flowpg.flow});
# capture triggers as early 0.1 builds left them (firing in every session):
# the update brings them to this version's states
psql(q{UPDATE pg_trigger SET tgenabled = 'A' WHERE tgrelid = 'metrics'::regclass AND tgname = 'flowpg_capture_insert'});
my $trigger_states = q{SELECT string_agg(c.relname || '.' || t.tgname || '=' || t.tgenabled::text, ' ' ORDER BY t.tgname)
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname LIKE 'flowpg\_capture\_%' AND c.relname = 'metrics'};
like(psql($trigger_states), qr/flowpg_capture_insert=A/, 'an old-style capture trigger before the update');

# a writer on the old library, until the server stops under it
my $writer_sql = \&FlowpgTest::upgrade_writer_sql;
my ($wout, $werr) = ('', '');
my $w = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('flows'), '-c', $writer_sql->(100000) ],
	'>', \$wout, '2>', \$werr);
usleep(1_000_000);

# the package upgrade: the new library, the database still at 0.1
$node->stop('fast');
$w->finish;
$node->{_install_path} = $new;
$node->start;
is(psql(q{SELECT extversion FROM pg_extension WHERE extname = 'flowpg'}), '0.1',
	'restarted onto the new library, still at 0.1');
my $current = psql(q{SELECT default_version FROM pg_available_extensions WHERE name = 'flowpg'});
psql(q{INSERT INTO metrics VALUES ('2024-01-01 05:00', 1, 5); INSERT INTO pmetrics VALUES ('2024-01-01 05:00', 1, 5)});
is(psql(q{SELECT string_agg(DISTINCT state, ',') FROM flowpg.flows}), 'update needed',
	'the views say the update is needed');
like(psql(q{SELECT state_reason FROM flowpg.flows WHERE flow_name = 'b_min'}),
	qr/ALTER EXTENSION flowpg UPDATE/, 'and how to do it');
my ($rc, $out, $err) = $node->psql('flows', q{SELECT flowpg.flush_flow('b_min')});
isnt($rc, 0, 'flush_flow refuses before the update');
like($err, qr/at version 0\.1, its library at \Q$current\E.*HINT:  Run ALTER EXTENSION flowpg UPDATE/s,
	'saying why and what to do');
($rc, $out, $err) = $node->psql('flows', q{SELECT flowpg.create_flow('x', 'x',
  $$SELECT device, count(*) AS n FROM metrics GROUP BY 1$$)});
isnt($rc, 0, 'create_flow refuses too');
is(psql(q{SELECT count(*) FROM pg_class WHERE relname = 'x'}), '0', 'and leaves nothing behind');

# the update, while a writer writes
($wout, $werr) = ('', '');
$w = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('flows'), '-c', $writer_sql->(200000) ],
	'>', \$wout, '2>', \$werr);
usleep(500_000);
psql(q{ALTER EXTENSION flowpg UPDATE});
is(psql(q{SELECT extversion FROM pg_extension WHERE extname = 'flowpg'}), $current, "updated to $current");
$w->finish;
is($werr, '', 'the writer was not hurt by the update');
ok(poll_until(q{SELECT string_agg(DISTINCT state, ',') FROM flowpg.flows}, 'active', 60),
	'every flow is active again');
is(psql(q{SELECT string_agg(sink_table::oid::text, ',' ORDER BY flow_id) FROM flowpg.flow}), $sinks_before,
	'no flow dropped, no sink rebuilt');
psql($flush_all);
is(psql($exact_all), '0', 'every sink is exact after the update: writes before, across and after it');
is(psql($trigger_states),
	'metrics.flowpg_capture_delete=O metrics.flowpg_capture_insert=O metrics.flowpg_capture_row=R '
	  . 'metrics.flowpg_capture_truncate=A metrics.flowpg_capture_update=O',
	"the capture triggers are in place, in this version's states");

# names: the 0.1 flow keeps its name, which only its quoted spelling reaches now
is(psql(q{SELECT flow_name FROM flowpg.flows WHERE flow_name ILIKE 'mixed%'}), 'Mixed Flow',
	'the flow named with upper case and a space under 0.1 keeps its name');
($rc, $out, $err) = $node->psql('flows', q{SELECT flowpg.flush_flow('Mixed Flow')});
like($err, qr/invalid name syntax for flow_name: "Mixed Flow".*HINT:  Flow "Mixed Flow" exists: write "Mixed Flow" with its double quotes/s,
	'its unquoted spelling is refused, with the quoted one as the hint');
is(psql(q{SELECT flowpg.flush_flow('"Mixed Flow"') >= 0; SELECT flow_mismatches('Mixed Flow')}), "t\n0",
	'its quoted name reaches it, and it is exact');

# the sinks of 0.1's flows refuse DROP TABLE as new ones do
is(psql($FlowpgTest::sink_dependencies), '5/5', "every 0.1 flow's view depends on its sink after the update");
($rc, $out, $err) = $node->psql('flows', qq{\\set VERBOSITY verbose\nDROP TABLE b_min});
isnt($rc, 0, 'DROP TABLE of a 0.1 sink without CASCADE is refused');
like($err, qr/ERROR:  2BP01: cannot drop table b_min because other objects depend on it.*flowpg\.drop_flow\('b_min'\)/s,
	'with the dependent-objects error, naming the flow');
is(psql(q{SELECT count(*) FROM flowpg.flows WHERE flow_name = 'b_min'}), '1', 'and the flow is still there');
psql(q{INSERT INTO metrics SELECT '2024-01-02'::timestamptz + i * interval '1 minute', 3, i FROM generate_series(1, 100) i;
       INSERT INTO pmetrics SELECT '2024-01-02'::timestamptz + i * interval '1 minute', 3, i FROM generate_series(1, 100) i;});
psql($flush_all);
is(psql($exact_all), '0', 'new writes are captured');
psql(q{SELECT flowpg.create_flow('b_new', 'b_new',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM pmetrics GROUP BY 1$$, mode => 'batching')});
ok(poll_until(q{SELECT state FROM flowpg.flows WHERE flow_name = 'b_new'}, 'active', 60),
	'a new flow backfills online');
is(psql(q{SELECT flow_mismatches('b_new')}), '0', 'and is exact');

# the updated database has what a fresh install has
my $objects = $FlowpgTest::extension_objects;
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION flowpg');
is(psql($objects), $node->safe_psql('fresh', $objects),
	"the updated objects equal a fresh install of $current");

# a dump of the updated database restores, its flows exact
my $dump = $node->basedir . '/flows.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('flows') ], 'pg_dump of the updated database');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ], 'pg_restore');
$node->safe_psql('restored', join('; ', map { "SELECT flowpg.flush_flow('$_') >= 0" } (@flows, 'b_new')));
is($node->safe_psql('restored', 'SELECT ' . join(' + ', map { "flow_mismatches('$_')" } (@flows, 'b_new'))),
	'0', 'the restored flows are exact');

$node->stop;
done_testing();
