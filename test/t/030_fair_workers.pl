# flowpg: one role's long runs never leave another role's flow without a
# worker, and flow_stats says why a flow waits.
#
# Role ra has two EVAL INTERVAL '1s' flows, each a join whose run takes
# about 12 s.  With flowpg.workers_per_database = 3 (two batching workers,
# one kept for streaming rounds) they used to take both batching workers in
# turn, and role rb's flow, due meanwhile, waited for the end of one of
# them (tens of seconds).  While rb has a batching flow, ra's runs hold one
# batching worker at most: rb's flow runs within a poll or two of coming
# due, every time, and ra's second flow waits for ra's share, which
# flowpg.flow_stats.waiting says.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('fair_workers', q{
flowpg.workers_per_database = 3
max_worker_processes = 16
flowpg.query_timeout = '120s'
});

sub psql { return $node->safe_psql('flows', $_[0]); }
sub poll_until { return FlowpgTest::poll_until($node, 'flows', @_); }

FlowpgTest::slow_roles_setup($node, 2, 'a1', 'a2');
my $run_secs = 12;    # 6 rows of two seconds

ok(poll_until(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg worker'
                AND query IN ('flowpg: refreshing flow a1', 'flowpg: refreshing flow a2')}, '1', 60),
	"one of ra's long flows runs");
ok(poll_until(q{SELECT waiting FROM flowpg.flow_stats WHERE flow_name IN ('a1', 'a2')
                AND waiting IS NOT NULL},
	'for a worker: its owner\'s flows run on 1 of the 2 batching workers, '
	. 'the most one role may hold while other roles have batching flows', 30),
	"flow_stats says why ra's other flow waits");
is(psql(q{SELECT count(*) FROM flowpg.flow_stats WHERE flow_name IN ('a1', 'a2')
          AND waiting IS NOT NULL AND waiting_since <= now()}), '1',
	'with the time it started waiting');

# rb's flow comes due while ra's long runs go on: it runs at once, every time
for my $sample (1 .. 3)
{
	my $started = time();
	psql("INSERT INTO b_src VALUES (now(), $sample)");
	ok(poll_until("SELECT count(*) FROM b1_out WHERE k = $sample", '1', 60),
		"sample $sample: rb's flow ran");
	my $waited = time() - $started;
	# a poll, the pool growing a worker maybe, and b1's own run; never one of ra's runs
	cmp_ok($waited, '<', $run_secs / 2,
		sprintf("sample $sample: rb's flow waited %.1f s, not behind ra's %d s runs",
			$waited, $run_secs));
	is(psql("SELECT waiting FROM flowpg.flow_stats WHERE flow_name = 'b1'"), '',
		"sample $sample: nothing says rb's flow waits");
}

# ra's flows still run, both of them, in turn
my $before = psql(q{SELECT string_agg(runs::text, ',' ORDER BY flow_name) FROM flowpg.flow_stats
                    WHERE flow_name IN ('a1', 'a2')});
ok(poll_until(qq{SELECT bool_and(runs > (ARRAY[$before])[substr(flow_name, 2)::int])
                   FROM flowpg.flow_stats WHERE flow_name IN ('a1', 'a2')}, 't', 4 * $run_secs + 10),
	"each of ra's flows keeps running");

psql('DELETE FROM slow_switch');
is(psql(q{SELECT flowpg.flush_flow('b1') >= 0; SET ROLE rb; SELECT flow_mismatches('b1')}), "t\n0",
	"rb's sink equals its query");

$node->stop;
done_testing();
