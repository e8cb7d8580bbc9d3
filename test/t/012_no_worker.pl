# A database whose flows get no worker must not look healthy.
#
# max_worker_processes = 2 leaves room for flowpg's launcher and one worker:
# the first database with flows gets it, the second none.  The second
# database's flows show 'no worker' in flowpg.flows and flow_stats with a
# reason, a lag that grows and changes pending; create_flow there warns.
# When the first database's flows are dropped its worker leaves, the slot
# frees and the second database gets a worker without any request: its
# sinks become exact (both engines).  flowpg.enabled = off shows as
# 'disabled'.  Streaming flows count their runs.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('no_worker', q{
max_worker_processes = 2
max_logical_replication_workers = 0
max_parallel_workers_per_gather = 0
});

sub poll_until { return FlowpgTest::poll_until($node, @_); }

my $setup = q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
INSERT INTO metrics SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '13 seconds', i % 5, i
  FROM generate_series(1, 1000) i;
};
my $streaming = q{SELECT flowpg.create_flow('s', 's_sink',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming')};
my $batching = q{SELECT flowpg.create_flow('b', 'b_sink',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'batching')};
my $oracle = q{
WITH q AS (SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
             FROM metrics GROUP BY 1, 2)
SELECT (SELECT count(*) FROM ((SELECT device, minute, n, total FROM s_sink EXCEPT ALL SELECT * FROM q)
                         UNION ALL (SELECT * FROM q EXCEPT ALL SELECT device, minute, n, total FROM s_sink)) a)
    || ' ' ||
       (SELECT count(*) FROM ((SELECT device, minute, n, total FROM b_sink EXCEPT ALL SELECT * FROM q)
                         UNION ALL (SELECT * FROM q EXCEPT ALL SELECT device, minute, n, total FROM b_sink)) b)};
my $new_rows = q{INSERT INTO metrics SELECT '2024-01-02 00:00+00'::timestamptz + i * interval '7 seconds', i % 3, i
  FROM generate_series(1, 300) i};

for my $db ('db1', 'db2')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, $setup);
}

# db1 gets the one worker slot.
$node->safe_psql('db1', "$streaming; $batching");
ok( poll_until(
		'db1',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = 'db1'},
		'1', 30),
	'db1 has a worker');
$node->safe_psql('db1', $new_rows);
ok(poll_until('db1', $oracle, '0 0', 30), 'db1: the worker keeps both sinks exact');
ok( poll_until(
		'db1', q{SELECT runs > 0 FROM flowpg.flow_stats WHERE flow_name = 's'},
		't', 10),
	'db1: the streaming flow counts its runs');

# db2 gets none, and says so.
$node->safe_psql('db2', $streaming);
ok( poll_until(
		'db2', q{SELECT string_agg(state, ',') FROM flowpg.flows},
		'no worker', 40),
	'db2: flowpg.flows shows no worker');
like(
	$node->safe_psql('db2', q{SELECT state_reason FROM flowpg.flows WHERE flow_name = 's'}),
	qr/no flowpg worker runs for this database since .*max_worker_processes = 2/,
	'db2: with the reason');
my ($rc, $out, $err) = $node->psql('db2', $batching);
is($rc, 0, 'db2: the second flow is created');
like($err, qr/WARNING:  no flowpg worker runs for database "db2"/,
	'db2: create_flow warns that no worker runs');
like($err, qr/HINT:  Raise max_worker_processes/, 'db2: with a hint');

$node->safe_psql('db2', $new_rows);
$node->safe_psql('db2', q{UPDATE metrics SET value = value + 1 WHERE ts < '2024-01-01 00:10+00'});
ok( poll_until(
		'db2',
		q{SELECT bool_and(state = 'no worker') AND bool_and(lag > interval '1 second')
		     AND bool_and(pending > 0 OR queue_depth > 0) FROM flowpg.flow_stats},
		't', 20),
	'db2: flow_stats shows no worker, a growing lag and pending changes');
isnt($node->safe_psql('db2', $oracle), '0 0', 'db2: the sinks are stale meanwhile');
is( $node->safe_psql(
		'db2', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = 'db2'}),
	'0', 'db2: indeed no worker');

# The slot frees: db2 gets a worker by itself.
$node->safe_psql('db1', q{SELECT flowpg.drop_flow('s'), flowpg.drop_flow('b')});
ok( poll_until(
		'db2',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = 'db2'},
		'1', 40),
	'db2: a worker starts once db1 no longer needs its slot');
ok(poll_until('db2', $oracle, '0 0', 30), 'db2: both sinks become exact without flush_flow');
is($node->safe_psql('db2', q{SELECT string_agg(DISTINCT state, ',') FROM flowpg.flow_stats}),
	'active', 'db2: the flows are active again');
ok( poll_until(
		'db2', q{SELECT runs > 0 FROM flowpg.flow_stats WHERE flow_name = 's'},
		't', 10),
	'db2: the streaming flow counts its runs');

# flowpg.enabled = off shows as disabled.
$node->safe_psql('postgres', 'ALTER SYSTEM SET flowpg.enabled = off; SELECT pg_reload_conf();');
ok( poll_until(
		'db2',
		q{SELECT string_agg(DISTINCT f.state, ',') || ' ' || string_agg(DISTINCT s.state, ',')
		    FROM flowpg.flows f, flowpg.flow_stats s},
		'disabled disabled', 10),
	'flowpg.enabled = off: flows and flow_stats say disabled');
like($node->safe_psql('db2', q{SELECT state_reason FROM flowpg.flows LIMIT 1}),
	qr/flowpg.enabled is off/, 'with the reason');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET flowpg.enabled; SELECT pg_reload_conf();');
ok( poll_until(
		'db2', q{SELECT string_agg(DISTINCT state, ',') FROM flowpg.flows},
		'active', 10),
	'enabled again: active');

$node->stop;
done_testing();
