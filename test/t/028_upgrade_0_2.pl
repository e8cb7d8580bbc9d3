# flowpg: an upgrade in place from the newest release (0.2) to this one, as
# a package upgrade does it, with what 0.2 users have in place:
#
#   - the server runs the 0.2 library (scripts/previous-release.sh) with
#     flows of both engines over a plain and a partitioned source, a flow
#     made with GreptimeDB's statement, a paused flow and a pending one;
#   - it restarts onto this library with the database still at 0.2: the
#     views say "update needed", flowpg's functions refuse with a hint,
#     writes are captured;
#   - ALTER EXTENSION flowpg UPDATE while a writer writes: no flow dropped,
#     no sink rebuilt, every sink exact after a flush, the paused flow still
#     paused (and exact once resumed), the pending flow starts when its
#     table appears, a new flow uses what this release adds;
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

my $old = $ENV{FLOWPG_PREVIOUS_RELEASE};
ok($old && -x "$old/bin/postgres",
	'the previous release is built (scripts/previous-release.sh, from the git history)')
  or BAIL_OUT('no previous release to upgrade from: ' . ($old // 'FLOWPG_PREVIOUS_RELEASE unset'));
my $new = `pg_config --bindir` =~ s/\s+$//r =~ s{/[^/]+$}{}r;

my $node = FlowpgTest::upgrade_node('upgrade_0_2', $old);
sub psql { return $node->safe_psql($_[1] // 'flows', $_[0]); }
sub poll_until { return FlowpgTest::poll_until($node, 'flows', @_); }

psql(q{
SELECT flowpg.create_flow('b_min', 'b_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total FROM metrics GROUP BY 1, 2$$,
  mode => 'batching');
SELECT flowpg.create_flow('s_min', 's_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total, max(value) AS top
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.create_flow('ps_min', 'ps_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total FROM pmetrics GROUP BY 1, 2$$,
  mode => 'streaming');
SELECT flowpg.create_flow('paused_hour', 'paused_hour',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n, avg(value) AS mean FROM pmetrics GROUP BY 1$$,
  mode => 'batching');
SELECT * FROM flowpg.execute($$CREATE FLOW g_bin SINK TO g_bin AS
  SELECT device, date_bin(INTERVAL '10 minutes', ts) AS time_window, min(value) AS low FROM metrics GROUP BY device, time_window$$);
SELECT * FROM flowpg.execute($$CREATE FLOW later SINK TO later_sink WITH (defer_on_missing_source = true) AS
  SELECT k, count(*) AS n FROM later_source GROUP BY k$$);
});
my @flows = qw(b_min s_min ps_min paused_hour g_bin);
ok(poll_until(q{SELECT count(*) FROM flowpg.flows WHERE state = 'active'}, scalar(@flows), 60),
	'the 0.2 flows are active');
my $flush_all = join('; ', map { "SELECT flowpg.flush_flow('$_') >= 0" } @flows);
my $exact_all = 'SELECT ' . join(' + ', map { "flow_mismatches('$_')" } @flows);
is(psql(q{SELECT extversion FROM pg_extension WHERE extname = 'flowpg'}), '0.2', 'installed at 0.2');
psql($flush_all);
is(psql($exact_all), '0', 'the 0.2 flows are exact');
psql(q{SELECT flowpg.pause_flow('paused_hour')});
my $pending_state = q{SELECT state FROM flowpg.information_schema_flows WHERE flow_name = 'later'};
is(psql($pending_state), 'pending', 'a pending flow');
my $sinks_before = psql(q{SELECT string_agg(sink_table::oid::text, ',' ORDER BY flow_id) FROM flowpg.flow});

# a writer on the old library, until the server stops under it
my ($wout, $werr) = ('', '');
my $w = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('flows'), '-c', FlowpgTest::upgrade_writer_sql(100000) ],
	'>', \$wout, '2>', \$werr);
usleep(1_000_000);

# the package upgrade: the new library, the database still at 0.2
$node->stop('fast');
$w->finish;
$node->{_install_path} = $new;
$node->start;
my $current = psql(q{SELECT default_version FROM pg_available_extensions WHERE name = 'flowpg'});
isnt($current, '0.2', "this library's version ($current) is newer");
is(psql(q{SELECT extversion FROM pg_extension WHERE extname = 'flowpg'}), '0.2',
	'restarted onto the new library, still at 0.2');
psql(q{INSERT INTO metrics VALUES ('2024-01-01 05:00', 1, 5); INSERT INTO pmetrics VALUES ('2024-01-01 05:00', 1, 5)});
is(psql(q{SELECT string_agg(DISTINCT state, ',') FROM flowpg.flows}), 'update needed',
	'the views say the update is needed');
my ($rc, $out, $err) = $node->psql('flows', q{SELECT flowpg.flush_flow('b_min')});
like($err, qr/at version 0\.2, its library at \Q$current\E.*HINT:  Run ALTER EXTENSION flowpg UPDATE/s,
	'flush_flow refuses before the update, saying why and what to do');

# the update, while a writer writes
($wout, $werr) = ('', '');
$w = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('flows'), '-c', FlowpgTest::upgrade_writer_sql(200000) ],
	'>', \$wout, '2>', \$werr);
usleep(500_000);
psql(q{ALTER EXTENSION flowpg UPDATE});
is(psql(q{SELECT extversion FROM pg_extension WHERE extname = 'flowpg'}), $current, "updated to $current");
$w->finish;
is($werr, '', 'the writer was not hurt by the update');
ok(poll_until(q{SELECT string_agg(flow_name || '=' || state, ',' ORDER BY flow_name) FROM flowpg.information_schema_flows},
	'b_min=active,g_bin=active,later=pending,paused_hour=paused,ps_min=active,s_min=active', 60),
	'every flow is back in its state: active, paused, pending');
is(psql(q{SELECT string_agg(sink_table::oid::text, ',' ORDER BY flow_id) FROM flowpg.flow}), $sinks_before,
	'no flow dropped, no sink rebuilt');
my @running = grep { $_ ne 'paused_hour' } @flows;
psql(join('; ', map { "SELECT flowpg.flush_flow('$_') >= 0" } @running));
is(psql('SELECT ' . join(' + ', map { "flow_mismatches('$_')" } @running)), '0',
	'every running sink is exact after the update: writes before, across and after it');
psql(q{SELECT flowpg.resume_flow('paused_hour'); SELECT flowpg.flush_flow('paused_hour')});
is(psql(q{SELECT flow_mismatches('paused_hour')}), '0', 'the paused flow, resumed, is exact');
is(psql($FlowpgTest::sink_dependencies), '5/5', "every flow's view still depends on its sink");

# the pending flow starts when its table appears
psql(q{CREATE TABLE later_source (k int); INSERT INTO later_source SELECT i % 3 FROM generate_series(1, 30) i});
ok(poll_until($pending_state, 'active', 60),
	'the pending flow of 0.2 starts when its table appears');
psql(q{SELECT flowpg.flush_flow('later')});
is(psql(q{SELECT flow_mismatches('later')}), '0', 'and is exact');

# what this release adds works on the updated database
psql(q{SELECT * FROM flowpg.execute($$CREATE FLOW g_rate SINK TO g_rate AS
  SELECT device, date_bin(INTERVAL '1 hour', ts) AS time_window, (max(value) - min(value)) / 30.0 AS rate
    FROM metrics GROUP BY device, time_window$$)});
ok(poll_until(q{SELECT state FROM flowpg.flows WHERE flow_name = 'g_rate'}, 'active', 60),
	'a new flow backfills online');
is(psql(q{SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'g_rate'::regclass AND attname = 'rate'}),
	'double precision', "with this release's GreptimeDB typing");
is(psql(q{SELECT flow_mismatches('g_rate')}), '0', 'and is exact');
psql(q{SELECT flowpg.create_flow('s_last', 's_last',
  $$SELECT device, date_trunc('hour', ts) AS hour, last_value(value ORDER BY ts) AS latest FROM metrics GROUP BY 1, 2$$,
  mode => 'streaming')});
ok(poll_until(q{SELECT state FROM flowpg.flows WHERE flow_name = 's_last'}, 'active', 60),
	"a streaming flow with this release's ordered last_value aggregate");
psql(q{INSERT INTO metrics VALUES ('2024-01-01 06:30', 2, -1); SELECT flowpg.flush_flow('s_last')});
is(psql(q{SELECT flow_mismatches('s_last')}), '0', 'is exact');
push @flows, 'later', 'g_rate', 's_last';

# the updated database has what a fresh install has
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION flowpg');
is(psql($FlowpgTest::extension_objects), $node->safe_psql('fresh', $FlowpgTest::extension_objects),
	"the updated objects equal a fresh install of $current");

# a dump of the updated database restores, its flows exact
my $dump = $node->basedir . '/flows.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('flows') ], 'pg_dump of the updated database');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ], 'pg_restore');
$node->safe_psql('restored', join('; ', map { "SELECT flowpg.flush_flow('$_') >= 0" } @flows));
is($node->safe_psql('restored', 'SELECT ' . join(' + ', map { "flow_mismatches('$_')" } @flows)),
	'0', 'the restored flows are exact');

$node->stop;
done_testing();
