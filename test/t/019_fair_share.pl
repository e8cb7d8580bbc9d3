# flowpg: one role's slow batching flows do not starve another role's.
#
# Role ra has three EVAL INTERVAL '1s' flows whose runs take about 3 s each:
# they are always overdue and, with workers_per_database = 3, would hold
# both batching workers (the third is kept for streaming); while rb has a
# batching flow, ra's share is one of them (pool.c).  Before, each worker
# that finished one of them took it (or its twin) again, and role rb's flow
# ran only after they were dropped (40 s+; here the old code made it wait
# two or three of ra's runs).  Now a worker that frees up
# takes the due flow of the role with the fewest runs in progress: rb's
# flow waits for at most the rest of one of ra's runs.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('fair_share', q{
flowpg.workers_per_database = 3
max_worker_processes = 16
flowpg.query_timeout = '60s'
});

sub psql { return $node->safe_psql('flows', $_[0]); }
sub poll_until { return FlowpgTest::poll_until($node, 'flows', @_); }

FlowpgTest::slow_roles_setup($node, 0.5, 'a1', 'a2', 'a3');

ok(poll_until(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg worker'
                AND query IN ('flowpg: refreshing flow a1', 'flowpg: refreshing flow a2',
                              'flowpg: refreshing flow a3')}, '1', 60),
	"ra's slow flows run, on one of the two batching workers: the other is rb's share");
my $run_secs = 3;	# 6 rows of half a second

my $a_runs_sql = q{SELECT sum(runs) FROM flowpg.flow_stats WHERE flow_name IN ('a1', 'a2', 'a3')};
for my $sample (1 .. 4)
{
	my $a_runs = psql($a_runs_sql);
	my $started = time();
	psql("INSERT INTO b_src VALUES (now(), $sample)");
	ok(poll_until("SELECT count(*) FROM b1_out WHERE k = $sample", '1', 30),
		"sample $sample: rb's flow ran");
	my $waited = time() - $started;
	my $a_ran = psql($a_runs_sql) - $a_runs;
	# at most the rest of one of ra's runs, plus a poll, plus b1's own run
	cmp_ok($waited, '<', 1.5 * $run_secs + 1,
		sprintf("sample $sample: rb's flow waited %.1f s, not behind ra's flows", $waited));
	note("sample $sample: ra's flows finished $a_ran runs meanwhile");
}

# ra's flows are not starved either: each of them keeps running
my $before = psql(q{SELECT string_agg(runs::text, ',' ORDER BY flow_name) FROM flowpg.flow_stats WHERE flow_name LIKE 'a_'});
my @before = split(/,/, $before);
ok(poll_until(qq{SELECT bool_and(runs > (ARRAY[$before])[substr(flow_name, 2)::int])
                   FROM flowpg.flow_stats WHERE flow_name LIKE 'a_'}, 't', 40),
	"each of ra's flows keeps running too");

psql('DELETE FROM slow_switch');
is(psql(q{SELECT flowpg.flush_flow('b1') >= 0; SET ROLE rb; SELECT flow_mismatches('b1')}), "t\n0",
	"rb's sink equals its query");

$node->stop;
done_testing();
