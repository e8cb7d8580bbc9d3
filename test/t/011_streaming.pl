# flowpg: the streaming engine under load, short of memory, across restarts.
#
# 1. flowload from 4 clients (multi-row INSERT and COPY, 10% of the
#    transactions rolled back, savepoints rolled back, some UPDATEs and
#    DELETEs, late rows) into a source with three streaming flows; then
#    flowload --verify: every sink equals its query on the source.
# 2. A server with the smallest flowpg.state_memory and queue_memory: the
#    state gives up windows and big transactions do not fit in the queue, so
#    changes fall back to the recompute of their windows -- the stats count
#    the fallbacks, and the sinks are still exact.
# 3. A prepared transaction that commits after a restart, and committed
#    transactions whose batches were still queued at an immediate shutdown,
#    reach the sink.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;

my $flows_sql = q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz, device int, value float8);
SELECT flowpg.create_flow('per_minute', 'per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total,
           avg(value) AS mean, min(value) AS lo, max(value) AS hi
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.create_flow('per_device', 'per_device',
  $$SELECT device, count(*) AS n, stddev(value) AS sd FROM metrics GROUP BY 1$$,
  mode => 'streaming');
SELECT flowpg.create_flow('big_values', 'big_values',
  $$SELECT ts, device, value FROM metrics WHERE value > 90$$, mode => 'streaming');
};

sub load
{
	my ($node, @args) = @_;
	my $conninfo = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
	my ($rc, $out, $err) = FlowpgTest::run_flowload('-d', $conninfo, @args);
	return ($rc, $out, $err);
}

sub verify
{
	my ($node, $name) = @_;
	my ($rc, $out, $err) = load($node, '--verify', 'per_minute,per_device,big_values', '--json');
	is($rc, 0, "$name: flowload --verify finds every sink exact") or diag("$out\n$err");
}

###############################################################################
# 1. A load with aborts and savepoints.
###############################################################################

my $node = FlowpgTest::node('streaming');
$node->safe_psql('postgres', $flows_sql);
foreach my $method ('insert', 'copy')
{
	my ($rc, $out, $err) = load($node, '--clients', '4', '--batch', '100', '--method', $method,
		'--rows', '40000', '--devices', '200', '--abort-fraction', '0.1',
		'--savepoint-fraction', '0.1', '--update-fraction', '0.03',
		'--delete-fraction', '0.03', '--late-fraction', '0.05', '--seed', '7');
	is($rc, 0, "$method load completed") or diag("$out\n$err");
}
verify($node, 'after the loads');
my $stats = $node->safe_psql('postgres', q{
SELECT bool_and(batches_applied > 0), bool_and(queue_depth = 0), sum(fallbacks)
  FROM flowpg.flow_stats});
like($stats, qr/^t\|t\|\d+$/, 'the worker applied batches and drained the queues');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM flowpg.flow_errors"), '0', 'no flow failed');

###############################################################################
# 3. Restarts: queued batches and a prepared transaction.
###############################################################################

$node->append_conf('postgresql.conf', "max_prepared_transactions = 5\n");
$node->restart;
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO metrics SELECT '2024-01-01 05:00+00'::timestamptz + i * interval '1 second', 7, i
  FROM generate_series(1, 500) i;
PREPARE TRANSACTION 'p1';
});
# committed rows whose batches are still queued when the server stops
$node->safe_psql('postgres', q{
ALTER SYSTEM SET flowpg.flush_interval = '1h';
SELECT pg_reload_conf();
});
sleep 1;
$node->safe_psql('postgres', q{
INSERT INTO metrics SELECT '2024-01-01 06:00+00'::timestamptz + i * interval '1 second', 8, i
  FROM generate_series(1, 500) i;
});
$node->stop('immediate');
$node->start;
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET flowpg.flush_interval;
SELECT pg_reload_conf();
COMMIT PREPARED 'p1';
});
verify($node, 'after an immediate shutdown and a prepared transaction committed after it');
is($node->safe_psql('postgres',
	"SELECT n FROM per_minute WHERE device = 7 AND minute = '2024-01-01 05:01+00'"),
	'60', 'the prepared transaction reached the sink');
$node->stop;

###############################################################################
# 2. Short of memory.
###############################################################################

my $small = FlowpgTest::node('streaming_small', qq{
flowpg.state_memory = '1MB'
flowpg.queue_memory = '256kB'
});
$small->safe_psql('postgres', $flows_sql);
my ($rc, $out, $err) = load($small, '--clients', '4', '--batch', '2000', '--method', 'copy',
	'--rows', '120000', '--devices', '500', '--abort-fraction', '0.1',
	'--savepoint-fraction', '0.1', '--late-fraction', '0.2', '--seed', '11');
is($rc, 0, 'the load into a server short of memory completed') or diag("$out\n$err");
($rc, $out, $err) = load($small, '--clients', '2', '--batch', '20', '--method', 'insert',
	'--rows', '4000', '--devices', '500', '--late-fraction', '0.5', '--seed', '12');
is($rc, 0, 'small transactions too') or diag("$out\n$err");
verify($small, 'short of memory');
my ($fallbacks, $bytes) = split /\|/, $small->safe_psql('postgres', q{
SELECT sum(fallbacks), max(state_bytes) FROM flowpg.flow_stats});
cmp_ok($fallbacks, '>', 0, "changes fell back to the recompute ($fallbacks times)");
cmp_ok($bytes, '<', 4 * 1024 * 1024, "the state stayed near its limit ($bytes bytes)");
$small->stop;

done_testing();
