# flowpg: a streaming flow's sink writes paced by their cost.
#
# The sink has a statement trigger that sleeps a second, so every write of
# the sink takes at least a second.  After such a write the next one waits
# four times its estimated cost (here about 4 s, within flowpg.max_sink_lag
# of 6 s): a change applied meanwhile is not in the sink 2 s later -- while
# flow_stats.lag counts it -- and is there once the paced write has run.
# flush_flow writes at once, whatever the pace.  Only lower bounds on
# delays are asserted (a slow machine makes them longer, never shorter);
# every wait for a write has a generous timeout.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = FlowpgTest::node('pacing', q{
flowpg.flush_interval = '100ms'
flowpg.max_sink_lag = '6s'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION flowpg;
CREATE TABLE src (ts timestamptz, k int, v int);
SELECT flowpg.create_flow('paced', 'paced_sink',
  $$SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS total
      FROM src GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.flush_flow('paced');
CREATE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_sleep(1);
	RETURN NULL;
END $$;
CREATE TRIGGER slow AFTER INSERT OR UPDATE ON paced_sink
	FOR EACH STATEMENT EXECUTE FUNCTION slow_write();
});

my $in_sink = q{SELECT count(*) FROM paced_sink WHERE k = %d};

# A first change: written (slowly) by the worker, within the bound.
$node->safe_psql('postgres', q{INSERT INTO src VALUES ('2024-01-01 00:00:10+00', 1, 1)});
ok(FlowpgTest::poll_until($node, 'postgres', sprintf($in_sink, 1), '1', 60),
	'a change is written by the worker');

# The next change waits for the paced write.
my $t0 = time();
$node->safe_psql('postgres', q{INSERT INTO src VALUES ('2024-01-01 00:00:20+00', 2, 1)});
usleep(2_000_000);
# (a row per line: the count, then the lag in ms)
my ($absent, $lag) = split /\n/, $node->safe_psql('postgres',
	sprintf($in_sink, 2) . q{ UNION ALL SELECT (lag_seconds * 1000)::int FROM flowpg.flow_stats
	  WHERE flow_name = 'paced'});
my $looked = time() - $t0;
# the paced write comes about 2.9 s after the change (4 x 1 s after the
# previous write began); without pacing, about 1.1 s after it
if ($looked < 2.8)
{
	is($absent, '0', sprintf('%.1f s after the change, the paced write has not run yet', $looked));
	cmp_ok($lag, '>=', 1500, 'flow_stats.lag counts the applied change waiting for its write');
}
else
{
	diag(sprintf('looked %.1f s after the change: too late to tell pacing from none, not checked', $looked));
}
ok(FlowpgTest::poll_until($node, 'postgres', sprintf($in_sink, 2), '1', 60),
	'the paced write runs, within max_sink_lag');

# flush_flow writes at once.
$node->safe_psql('postgres', q{INSERT INTO src VALUES ('2024-01-01 00:00:30+00', 3, 1)});
$node->safe_psql('postgres', q{SELECT flowpg.flush_flow('paced')});
is($node->safe_psql('postgres', sprintf($in_sink, 3)), '1', 'flush_flow writes at once');

# The sink equals the query.
is($node->safe_psql('postgres', q{
  SELECT count(*) FROM ((SELECT k, minute, n, total FROM paced_sink
                         EXCEPT ALL
                         SELECT k, date_trunc('minute', ts), count(*), sum(v) FROM src GROUP BY 1, 2)
                        UNION ALL
                        (SELECT k, date_trunc('minute', ts), count(*), sum(v) FROM src GROUP BY 1, 2
                         EXCEPT ALL
                         SELECT k, minute, n, total FROM paced_sink)) d}),
	'0', 'the sink equals the query');

$node->stop;
done_testing();
