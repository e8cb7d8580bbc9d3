# flowpg: running out of streaming state memory degrades flows to the
# recompute, in every database, and they recover by themselves.
#
# flowpg.state_memory = 1MB for the server, three databases with 40
# streaming flows each, every flow with hundreds of groups: far more state
# than fits.  Before, 125+ flows failed for good with 53200, flush_flow
# failed in every database, and only a restart with more memory helped.
# Now a flow refused memory gives its state up and is recomputed from the
# source; every flush succeeds and every sink is exact; no database is left
# without its share; once memory frees, the flows load their state again.
# An empty flow holds a few hundred bytes.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('state_memory', q{
flowpg.state_memory = '1MB'
# every window kept: the state outgrows the memory (with state_keep it would
# shrink to the last windows, and fit)
flowpg.state_keep = -1
flowpg.workers_per_database = 2
max_worker_processes = 24
log_min_messages = warning
});

my @dbs = ('mem1', 'mem2', 'mem3');
my $flows = 40;

sub poll_until { my $db = shift; return FlowpgTest::poll_until($node, $db, @_); }

for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, $FlowpgTest::mismatches_function);
	$node->safe_psql($db, qq{
CREATE EXTENSION flowpg;
CREATE TABLE m (ts timestamptz NOT NULL, device int NOT NULL, v int NOT NULL);
SELECT count(flowpg.create_flow('f' || i, 'f' || i || '_out',
  format(\$\$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS s
            FROM m WHERE device %% $flows = %s GROUP BY 1, 2\$\$, i),
  mode => 'streaming')) FROM generate_series(0, $flows - 1) i;
});
}

# an empty flow is small
$node->safe_psql('mem1', q{SELECT flowpg.create_flow('empty', 'empty_out',
  $$SELECT device, count(*) AS n FROM m WHERE device < 0 GROUP BY device$$, mode => 'streaming');
  SELECT flowpg.flush_flow('empty')});
cmp_ok($node->safe_psql('mem1', q{SELECT state_bytes FROM flowpg.flow_stats WHERE flow_name = 'empty'}),
	'<', 1024, 'an empty streaming flow holds less than 1 kB of state');

# 2000 devices, 10 minutes: 500 groups per flow, 20,000 per database
for my $db (@dbs)
{
	$node->safe_psql($db, q{
INSERT INTO m SELECT '2024-01-01 00:00+00'::timestamptz + (i % 10) * interval '1 minute', i % 2000, i
  FROM generate_series(1, 20000) i});
}

sub check_all
{
	my ($what) = @_;
	for my $db (@dbs)
	{
		my ($rc, $out, $err) = $node->psql($db, q{
SELECT count(*) FILTER (WHERE flowpg.flush_flow(flow_name) >= 0) FROM flowpg.flows WHERE flow_name LIKE 'f%'});
		is($rc, 0, "$what: every flush succeeds in $db") or diag($err);
		is($node->safe_psql($db,
				q{SELECT count(*) FROM flowpg.flows WHERE flow_name LIKE 'f%' AND flow_mismatches(flow_name) <> 0}),
			'0', "$what: every sink in $db equals its query");
		is($node->safe_psql($db, q{SELECT count(*) FROM flowpg.flows WHERE state = 'failed'}),
			'0', "$what: no flow in $db failed");
	}
}

check_all('over the memory');
# a flow whose state can never fit (20,000 groups, no window to give up by)
# gives all of it up, and says so, in flows and flow_stats, with the reason
$node->safe_psql('mem1', q{SELECT flowpg.create_flow('hog', 'hog_out',
  $$SELECT device, v, count(*) AS n FROM m GROUP BY 1, 2$$, mode => 'streaming')});
ok(FlowpgTest::poll_until($node, 'mem1', q{
SELECT f.state || ' ' || s.state || ' ' || f.state_reason FROM flowpg.flows f JOIN flowpg.flow_stats s USING (flow_id)
 WHERE f.flow_name = 'hog'},
	'degraded degraded flowpg.state_memory is full: the flow gave its state up; changes are recomputed from the source until memory frees (flowpg.memory)',
	60), 'a degraded flow is shown degraded, with its reason')
  or diag($node->safe_psql('mem1', q{SELECT string_agg(flow_name || ':' || state || ':' || coalesce(state_reason, ''), E'\n') FROM flowpg.flows}));
is($node->safe_psql('mem1', q{SELECT flowpg.flush_flow('hog') >= 0 AND flow_mismatches('hog') = 0}), 't',
	'and exact');
$node->safe_psql('mem1', q{SELECT flowpg.drop_flow('hog')});
for my $db (@dbs)
{
	cmp_ok($node->safe_psql($db, q{SELECT coalesce(sum(state_groups), 0) FROM flowpg.flow_stats}),
		'>', 0, "$db keeps a share of the state memory");
}

# writes go on while memory is short: still exact
for my $db (@dbs)
{
	$node->safe_psql($db, q{
UPDATE m SET v = v + 1 WHERE device % 7 = 0;
DELETE FROM m WHERE device % 11 = 0;
INSERT INTO m SELECT '2024-01-01 00:20+00'::timestamptz, i % 2000, i FROM generate_series(1, 3000) i});
}
check_all('writes while memory is short');

# flowpg.memory says what the limit took, and holds the server within it
for my $db (@dbs)
{
	is($node->safe_psql($db, q{
SELECT (degrades + evictions > 0) || ' ' || (fallbacks >= 0) || ' ' || (state_bytes <= (SELECT state_limit FROM flowpg.memory WHERE scope = 'server'))
  FROM flowpg.memory WHERE scope = 'database'}),
		'true true true', "$db: flowpg.memory counts what state_memory took")
	  or diag($node->safe_psql($db, q{SELECT string_agg(flow_name || ':' || coalesce(state_bytes, -1) || '/' || degrades || '/' || evictions || '/' || degraded_flows || '/' || fallbacks, ' ') FROM flowpg.memory WHERE scope = 'flow'}));
}
cmp_ok($node->safe_psql('mem1', q{SELECT state_bytes FROM flowpg.memory WHERE scope = 'server'}),
	'<=', $node->safe_psql('mem1', q{SELECT state_limit FROM flowpg.memory WHERE scope = 'server'}),
	'the server state is within flowpg.state_memory');

# memory frees (two databases drop their flows): the others load their state again
for my $db ('mem1', 'mem2')
{
	$node->safe_psql($db, q{SELECT count(flowpg.drop_flow(flow_name)) FROM flowpg.flows});
}
$node->safe_psql('mem3', q{SELECT count(flowpg.drop_flow('f' || i)) FROM generate_series(5, 39) i});
ok(poll_until('mem3',
		q{SELECT bool_and(state_groups > 0) FROM flowpg.flow_stats WHERE flow_name IN ('f0', 'f1', 'f2', 'f3', 'f4')},
		't', 60),
	'the flows left load their state again once memory is free, without a restart');
$node->safe_psql('mem3', q{INSERT INTO m SELECT '2024-01-01 00:30+00'::timestamptz, i % 2000, i FROM generate_series(1, 2000) i});
is($node->safe_psql('mem3',
		q{SELECT count(*) FROM flowpg.flows WHERE flowpg.flush_flow(flow_name) >= 0 AND flow_mismatches(flow_name) <> 0}),
	'0', 'and their sinks stay exact');

$node->stop;
done_testing();
