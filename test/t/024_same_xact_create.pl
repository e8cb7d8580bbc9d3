# flowpg: a streaming flow created in the writer's own transaction.
#
#   BEGIN; SELECT flowpg.create_flow(..., mode => 'streaming');
#   INSERT INTO src ...; COMMIT;
#
# The writer's partials are queued at PRE_COMMIT, which takes the flow's
# queue slot in shared memory -- before the commit, and so the flow's
# catalog row, is visible to anyone.  A worker syncing its flows meanwhile
# (sync_flows, every 250 ms) lists that slot, does not find its flow in
# the catalog and takes the slot for a dropped flow's: it frees the queue,
# with the writer's batch.  Whatever happens, after flush_flow the sink
# must equal the flow's query over the source.
#
#   1. 20 times, plainly (the window is the commit's WAL write: rarely hit);
#   2. with the window held open: synchronous_standby_names names a standby
#      that never comes, so the writer's COMMIT (synchronous_commit = on in
#      that session only) waits after its commit record -- after PRE_COMMIT,
#      before its transaction is visible -- until the setting is reset 1.5 s
#      later, while the worker syncs several times.  3 times.
#
# The held runs do lose the batch (flow_stats shows no batch applied, the
# plain runs one), but the flow's first round refills its state from the
# source under a snapshot that sees the writer's commit, so the sink is
# exact all the same; the stats are printed (note) for whoever looks.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('same_xact', q{
synchronous_commit = local
flowpg.flush_interval = '100ms'
wal_level = replica
max_wal_senders = 2
});

$node->safe_psql('postgres', 'CREATE DATABASE flows');
$node->safe_psql('flows', $FlowpgTest::mismatches_function);
$node->safe_psql('flows', q{
CREATE EXTENSION flowpg;
CREATE TABLE src (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
INSERT INTO src
  SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '13 seconds', i % 4, i
  FROM generate_series(1, 2000) i;
-- another streaming flow, so that the worker keeps running streaming rounds
CREATE TABLE other (ts timestamptz NOT NULL, v int NOT NULL);
SELECT flowpg.create_flow('other', 'other_sink',
  $$SELECT date_trunc('minute', ts) AS minute, count(*) AS n FROM other GROUP BY 1$$,
  mode => 'streaming');
INSERT INTO other VALUES (now(), 1);
});

# The writer's transaction for flow $name: create it, then insert rows into
# existing windows and a new one ($k makes each iteration's rows its own).
sub writer_sql
{
	my ($name, $k) = @_;
	return qq{
BEGIN;
SELECT flowpg.create_flow('$name', '${name}_sink',
  \$\$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM src GROUP BY 1, 2\$\$, mode => 'streaming') > 0;
INSERT INTO src
  SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '17 seconds', i % 4, 100000 * $k + i
  FROM generate_series(1, 50) i
  UNION ALL SELECT '2024-02-01 00:00+00'::timestamptz + $k * interval '1 hour', 9, $k;
COMMIT;
};
}

# After flush_flow: the flow's mismatches and whether it streams.
sub check_and_drop
{
	my ($name) = @_;
	my $r = $node->safe_psql('flows', qq{
SELECT flowpg.flush_flow('$name') >= 0;
SELECT flow_mismatches('$name') || ' ' || mode FROM flowpg.flows WHERE flow_name = '$name';
SELECT format('batches applied %s, dropped %s, refills %s, fallbacks %s',
              batches_applied, batches_dropped, state_refills, fallbacks)
  FROM flowpg.flow_stats WHERE flow_name = '$name';
SELECT flowpg.drop_flow('$name');
DROP TABLE ${name}_sink;
});
	my @lines = split /\n/, $r;
	note("$name: $lines[2]");
	return $lines[1];
}

# 1. Plain, 20 times.
my $lost = 0;
for my $i (1 .. 20)
{
	my $name = "plain_$i";
	$node->safe_psql('flows', "SET synchronous_commit = on;" . writer_sql($name, $i));
	my $result = check_and_drop($name);
	if ($result ne '0 streaming')
	{
		$lost++;
		diag("iteration $i: mismatches and mode: $result");
	}
}
is($lost, 0, 'plain: the sink is exact after flush_flow, 20 times');

# 2. The window between PRE_COMMIT and the commit's visibility held open.
sub set_standby_names
{
	my ($value) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET synchronous_standby_names = '$value'; SELECT pg_reload_conf();");
}

my $held_lost = 0;
for my $i (1 .. 3)
{
	my $name = "held_$i";
	set_standby_names('nobody');
	# the checkpointer publishes the setting to the backends' commits
	usleep(300_000);

	my ($out, $err) = ('', '');
	my $file = PostgreSQL::Test::Utils::tempdir() . "/$name.sql";
	PostgreSQL::Test::Utils::append_to_file($file,
		"SET synchronous_commit = on;" . writer_sql($name, 100 + $i));
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('flows'), '-f', $file ],
		'<', \undef, '>', \$out, '2>', \$err);
	my $waiting = FlowpgTest::poll_until($node, 'flows',
		q{SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query = 'COMMIT;'},
		'1', 20);
	ok($waiting, "held $i: the writer's COMMIT waits after its commit record");
	# the worker syncs its flows every 250 ms (and at every streaming round)
	usleep(1_500_000);
	my $slot_seen = $node->safe_psql('flows',
		"SELECT count(*) FROM flowpg.flows WHERE flow_name = '$name'");
	set_standby_names('');
	$h->finish;
	is($? >> 8, 0, "held $i: the writer's transaction committed") or diag($err);

	my $result = check_and_drop($name);
	if ($result ne '0 streaming')
	{
		$held_lost++;
		diag("held $i: mismatches and mode: $result (flow visible while held: $slot_seen)");
	}
}
is($held_lost, 0, 'held open: the sink is exact after flush_flow, 3 times');

is($node->safe_psql('flows', "SELECT flowpg.flush_flow('other') >= 0, flow_mismatches('other')"),
	't|0', 'the other flow is exact');

$node->stop;
done_testing();
