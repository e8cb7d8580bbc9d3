# flowpg: operating flows across restarts, restores and long work.
#
#   - pause_flow keeps a flow paused across a clean restart, a crash and a
#     dump and restore: nothing writes its sink meanwhile, the changes are
#     captured, and resume_flow catches up exactly (both engines);
#   - flowpg.flow_progress shows a refresh of millions of rows while it
#     runs (an inline refresh_flow, the worker's backfill), with the flow's
#     name in pg_stat_activity and the statement labelled with the flow;
#     flow_stats says a run is in progress, since when and in which process.
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

my $node = FlowpgTest::node('operating', q{
shared_preload_libraries = 'flowpg,pg_stat_statements'
pg_stat_statements.track = all
flowpg.batching_partial_states = off
});
$node->safe_psql('postgres', 'CREATE DATABASE flows');
sub psql { return $node->safe_psql('flows', $_[0]); }
sub poll_until { return FlowpgTest::poll_until($node, 'flows', @_); }

psql($FlowpgTest::mismatches_function);
psql(q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
INSERT INTO metrics
SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 20, i % 1000
FROM generate_series(0, 49999) i;
SELECT flowpg.create_flow('s', 's_out',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.create_flow('b', 'b_out',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, max(value) AS top
      FROM metrics GROUP BY 1, 2$$, mode => 'batching');
SELECT flowpg.flush_flow('s'), flowpg.flush_flow('b');
});
my $exact = q{SELECT flow_mismatches('s') || ' ' || flow_mismatches('b')};
is(psql($exact), '0 0', 'both flows exact after their backfill');

# Changes of every kind while paused.
my $batch = 0;
sub changes
{
	$batch++;
	psql(qq{
INSERT INTO metrics
SELECT '2024-01-02'::timestamptz + ($batch * 1000 + i) * interval '1 second', i % 20, i
FROM generate_series(0, 999) i;
UPDATE metrics SET value = value + 1 WHERE ts < '2024-01-01'::timestamptz + $batch * interval '10 minutes';
DELETE FROM metrics WHERE ts >= '2024-01-01 05:00'::timestamptz + $batch * interval '1 hour'
                      AND ts < '2024-01-01 05:02'::timestamptz + $batch * interval '1 hour';
});
}
my $sinks = q{SELECT (SELECT md5(string_agg(s_out::text, ',' ORDER BY device, minute)) FROM s_out) || ' '
                  || (SELECT md5(string_agg(b_out::text, ',' ORDER BY device, minute)) FROM b_out)};

psql(q{SELECT flowpg.pause_flow('s'), flowpg.pause_flow('b')});
my $frozen = psql($sinks);
changes();
usleep(500_000);
is(psql($sinks), $frozen, 'paused: neither sink is written');
is(psql(q{SELECT string_agg(state, ',' ORDER BY flow_name) FROM flowpg.flow_stats}),
	'paused,paused', 'flow_stats shows both paused');

# A clean restart: still paused, the changes still captured.
$node->restart;
changes();
usleep(500_000);
is(psql(q{SELECT string_agg(state, ',' ORDER BY flow_name) FROM flowpg.flows}),
	'paused,paused', 'still paused after a restart');
is(psql($sinks), $frozen, 'after the restart: neither sink is written');

# A crash: the same.
$node->stop('immediate');
$node->start;
changes();
usleep(500_000);
is(psql(q{SELECT string_agg(state, ',' ORDER BY flow_name) FROM flowpg.flows}),
	'paused,paused', 'still paused after a crash');
is(psql($sinks), $frozen, 'after the crash: neither sink is written');
isnt(psql($exact), '0 0', 'the sinks are behind their queries');

# A dump and restore keeps them paused.
my $dump = $PostgreSQL::Test::Utils::tmp_check . '/operating.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'flows' ], 'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'restored', $dump ], 'pg_restore');
is($node->safe_psql('restored', q{SELECT string_agg(state, ',' ORDER BY flow_name) FROM flowpg.flows}),
	'paused,paused', 'the restored flows are paused');
$node->safe_psql('restored', q{INSERT INTO metrics VALUES ('2024-01-03', 1, 1)});
usleep(500_000);
is($node->safe_psql('restored', $sinks), $frozen, 'restored and paused: neither sink is written');

# resume_flow catches up exactly, without flush_flow, in both databases.
psql(q{SELECT flowpg.resume_flow('s'), flowpg.resume_flow('b')});
ok(poll_until($exact, '0 0', 30), 'resumed: both sinks catch up without flush_flow');
is(psql(q{SELECT string_agg(state, ',' ORDER BY flow_name) FROM flowpg.flows}),
	'active,active', 'both active again');
$node->safe_psql('restored', q{SELECT flowpg.resume_flow('s'), flowpg.resume_flow('b')});
ok(FlowpgTest::poll_until($node, 'restored', $exact, '0 0', 30),
	'the restored flows catch up once resumed');
changes();
ok(poll_until($exact, '0 0', 30), 'and keep up with later changes');

# Progress of long work.  A batching flow over 1M rows; its backfill is
# the worker's (one piece: no index leads with ts).
psql(q{
CREATE TABLE big (ts timestamptz NOT NULL, k int NOT NULL, v float8 NOT NULL);
INSERT INTO big
SELECT '2024-01-01'::timestamptz + i * interval '10 ms', i % 1000, i % 7919
FROM generate_series(1, 1000000) i;
SELECT flowpg.create_flow('big', 'big_out',
  $$SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, avg(v) AS mean,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY v) AS median
      FROM big GROUP BY 1, 2$$, mode => 'batching');
});
ok(poll_until(q{SELECT command || ' ' || (pid <> pg_backend_pid()) FROM flowpg.flow_progress WHERE flow_name = 'big'},
		'backfill true', 30),
	'flow_progress shows the worker backfilling');
ok(poll_until(q{SELECT running_command || ' ' || (running_since IS NOT NULL) || ' '
                     || (running_pid = (SELECT pid FROM flowpg.flow_progress WHERE flow_name = 'big'))
                  FROM flowpg.flow_stats WHERE flow_name = 'big'},
		'backfill true true', 10),
	'flow_stats: a run in progress, since when and in which process');
is(psql(q{SELECT a.backend_type || ': ' || a.query FROM pg_stat_activity a
             JOIN flowpg.flow_progress p USING (pid) WHERE p.flow_name = 'big'}),
	'flowpg worker: flowpg: refreshing flow big',
	"pg_stat_activity names the flow the worker runs");
ok(poll_until(q{SELECT state FROM flowpg.flows WHERE flow_name = 'big'}, 'active', 120),
	'the backfill completes');
is(psql(q{SELECT count(*) FROM flowpg.flow_progress WHERE flow_name = 'big'}), '0',
	'and leaves no progress row');
psql('CREATE EXTENSION pg_stat_statements');
like(psql(q{SELECT string_agg(DISTINCT left(query, 40), ' | ') FROM pg_stat_statements
             WHERE query LIKE '/* flowpg flow: big */%'}),
	qr{/\* flowpg flow: big \*/ (DELETE|INSERT)},
	'pg_stat_statements attributes the sink statements to the flow');

# An inline refresh_flow of the whole flow, watched from another session.
my ($out, $err) = ('', '');
my $refresh = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('flows'),
	  '-c', q{SELECT flowpg.refresh_flow('big') > 0} ],
	'>', \$out, '2>', \$err);
ok(poll_until(q{SELECT command || ' / ' || phase FROM flowpg.flow_progress
                 WHERE flow_name = 'big' AND pid IN (SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend')},
		'recompute / recomputing the whole sink', 30),
	'flow_progress shows the inline refresh and its phase');
like(psql(q{SELECT (clock_timestamp() - started_at > interval '0') || ' ' || (running_for >= interval '0')
              FROM flowpg.flow_progress WHERE flow_name = 'big'}),
	qr/^true true$/, 'with its start');
$refresh->finish;
is($out, "t\n", 'the refresh completed') or diag($err);
is(psql(q{SELECT count(*) FROM flowpg.flow_progress WHERE flow_name = 'big'}), '0',
	'the ended refresh leaves no row');
is(psql(q{SELECT flow_mismatches('big')}), '0', 'the refreshed sink is exact');

$node->stop;
done_testing();
