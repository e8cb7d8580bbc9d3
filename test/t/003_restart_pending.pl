# flowpg: dirty windows that are pending when the server stops are refreshed
# by the flowpg worker after a clean restart, without any flush_flow.
#
# flowpg.enabled = off keeps the worker from running flows, so the changes
# stay in the dirty log (flowpg.flow_stats.pending > 0) across the restart;
# once flows are enabled again the worker must empty the log on its own and
# leave the sink equal to the flow's query over the source.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('restart_pending');

$node->safe_psql('postgres', 'CREATE DATABASE flowdb');
$node->safe_psql(
	'flowdb', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
INSERT INTO metrics
  SELECT timestamptz '2024-01-01 00:00:00+00' + i * interval '7 seconds', i % 5, (i * 37) % 101
  FROM generate_series(0, 2999) AS i;
SELECT flowpg.create_flow('per_minute', 'metrics_per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY device, date_trunc('minute', ts)$$,
  mode => 'batching');
});

# Oracle: rows of the sink and of the query without a twin on the other side.
my $oracle_sql = $FlowpgTest::per_minute_oracle;
my $pending_sql = $FlowpgTest::per_minute_pending;
my $worker_sql = q{
SELECT count(*) FROM pg_stat_activity
 WHERE backend_type = 'flowpg worker' AND datname = 'flowdb'};

# Polls a query until it returns the expected value, for at most $seconds.
sub poll_until { return FlowpgTest::poll_until($node, @_); }

# The backfill is online: the worker computes the sink after create_flow.
ok(poll_until('flowdb', "SELECT ($oracle_sql) = 0 AND state = 'active' FROM flowpg.flows WHERE flow_name = 'per_minute'", 't', 30),
	'the worker\'s backfill is exact');

# The worker of flowdb runs (create_flow asked the launcher for one).
ok(poll_until('flowdb', "SELECT ($worker_sql) > 0", 't', 20),
	'a flowpg worker runs for flowdb');

# Stop running flows, and give the worker time to read its configuration.
$node->safe_psql('postgres',
	'ALTER SYSTEM SET flowpg.enabled = off; SELECT pg_reload_conf();');
ok(poll_until('flowdb', 'SHOW flowpg.enabled', 'off', 10),
	'flowpg.enabled is off');
sleep(2);

# Changes of several kinds, in several transactions; one aborts.
$node->safe_psql(
	'flowdb', q{
INSERT INTO metrics
  SELECT timestamptz '2024-01-01 00:10:00+00' + i * interval '3 seconds', i % 7, i
  FROM generate_series(0, 199) AS i;
});
$node->safe_psql(
	'flowdb', q{
UPDATE metrics SET value = value + 1000
 WHERE ts >= '2024-01-01 01:00:00+00' AND ts < '2024-01-01 01:05:00+00';
});
$node->safe_psql(
	'flowdb', q{
DELETE FROM metrics WHERE ts >= '2024-01-01 02:00:00+00' AND ts < '2024-01-01 02:03:00+00';
});
$node->safe_psql(
	'flowdb', q{
BEGIN;
INSERT INTO metrics VALUES ('2024-01-01 03:00:00+00', 99, 123456);
ROLLBACK;
});
$node->safe_psql(
	'flowdb', q{
INSERT INTO metrics VALUES ('2024-01-02 00:00:00+00', 1, 42), ('2024-01-02 00:00:30+00', 1, 43);
});

# Several worker cycles (200ms) later nothing was refreshed.
sleep(2);
my $pending = $node->safe_psql('flowdb', $pending_sql);
cmp_ok($pending, '>', 0, "dirty windows are pending ($pending)");
isnt($node->safe_psql('flowdb', $oracle_sql),
	'0', 'the sink is stale while flows are disabled');
my $runs_before = $node->safe_psql('flowdb',
	q{SELECT runs FROM flowpg.flow_stats WHERE flow_name = 'per_minute'});

# A clean restart keeps the dirty log.
$node->restart;
is($node->safe_psql('flowdb', $pending_sql),
	$pending, 'the pending dirty windows survive the restart');
is($node->safe_psql('flowdb', 'SHOW flowpg.enabled'),
	'off', 'flows are still disabled after the restart');
ok(poll_until('flowdb', "SELECT ($worker_sql) > 0", 't', 20),
	'after the restart a flowpg worker runs for flowdb');

# Enable flows again: the worker refreshes the pending windows by itself.
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET flowpg.enabled; SELECT pg_reload_conf();');
ok(poll_until('flowdb', $pending_sql, '0', 30),
	'the worker refreshed every pending window within 30 s');
is($node->safe_psql('flowdb', $oracle_sql),
	'0', 'after the worker ran: the sink equals the query over the source');
cmp_ok(
	$node->safe_psql(
		'flowdb',
		q{SELECT runs FROM flowpg.flow_stats WHERE flow_name = 'per_minute'}),
	'>',
	$runs_before,
	'flow_stats counts the worker runs');
is( $node->safe_psql(
		'flowdb', q{SELECT count(*) FROM metrics_per_minute WHERE device = 99}),
	'0',
	'the aborted insert is not in the sink');

# The workers are visible in pg_stat_activity, as is the launcher; the
# pool stays within flowpg.workers_per_database.
ok($node->safe_psql('flowdb', "SELECT ($worker_sql) BETWEEN 1 AND current_setting('flowpg.workers_per_database')::int") eq 't',
	'flowpg workers for flowdb in pg_stat_activity, within flowpg.workers_per_database');
is( $node->safe_psql(
		'flowdb',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg launcher'}
	),
	'1',
	'the flowpg launcher is in pg_stat_activity');

# And it keeps running flows: a new change reaches the sink without a flush.
$node->safe_psql('flowdb',
	q{INSERT INTO metrics VALUES ('2024-01-01 00:00:01+00', 2, 7777)});
ok( poll_until(
		'flowdb', "SELECT ($pending_sql) = 0 AND ($oracle_sql) = 0", 't', 20),
	'a later change is refreshed by the worker');

$node->stop;
done_testing();
