# Rows applied by logical replication are captured: fan-in from two
# publishers into one subscriber that aggregates them.
#
# Two publishers (no flowpg) each load the same table from concurrent
# clients -- inserts, updates, deletes, rolled-back transactions, a large
# transaction streamed to the subscriber while in progress, prepared
# transactions committed and rolled back (two_phase) -- and the subscriber
# maintains a streaming and a batching flow over the union.  The apply
# workers fire only row triggers (session_replication_role = replica), so
# flowpg captures them with its replica-only row trigger.  After catch-up
# and flush_flow, both sinks equal their queries; the subscriber's table
# holds exactly the publishers' rows.  Replication lag and freshness
# (publisher commit to the row, and to the sink row, on the subscriber) are
# measured under load and printed.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $table = q{CREATE TABLE metrics (
	id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	ts timestamptz NOT NULL, device int NOT NULL, value float8)};

my @pubs;
for my $name ('pub1', 'pub2')
{
	my $pub = PostgreSQL::Test::Cluster->new($name);
	$pub->init(allows_streaming => 'logical');
	$pub->append_conf('postgresql.conf', q{
max_prepared_transactions = 10
logical_decoding_work_mem = '64kB'
lc_messages = 'C'
});
	$pub->start;
	$pub->safe_psql('postgres', $table);
	$pub->safe_psql('postgres', q{CREATE PUBLICATION fan_in FOR TABLE metrics});
	push @pubs, $pub;
}
$pubs[0]->safe_psql('postgres', q{INSERT INTO metrics (ts, device, value)
  SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '3 seconds', i % 20, i FROM generate_series(1, 2000) i});
$pubs[1]->safe_psql('postgres', q{INSERT INTO metrics (ts, device, value)
  SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '5 seconds', i % 30, -i FROM generate_series(1, 2000) i});

my $sub = FlowpgTest::node('sub', q{
max_prepared_transactions = 10
max_worker_processes = 20
max_logical_replication_workers = 8
});
$sub->safe_psql('postgres', $table);
$sub->safe_psql('postgres', q{
CREATE EXTENSION flowpg;
SELECT flowpg.create_flow('fan_s', 'fan_s',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.create_flow('fan_r', 'fan_r',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, count(value) AS nv,
           max(value) AS peak, min(value) AS low
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.create_flow('fan_b', 'fan_b',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'batching');
});
is( $sub->safe_psql('postgres',
		q{SELECT string_agg(tgname || ':' || tgenabled::text, ' ' ORDER BY tgname) FROM pg_trigger
		   WHERE tgrelid = 'metrics'::regclass AND tgname LIKE 'flowpg%'}),
	'flowpg_capture_delete:O flowpg_capture_insert:O flowpg_capture_row:R flowpg_capture_truncate:A flowpg_capture_update:O',
	'statement triggers for ordinary sessions, a row trigger for replicas');

$sub->safe_psql('postgres', sprintf(
	q{CREATE SUBSCRIPTION sub1 CONNECTION '%s' PUBLICATION fan_in WITH (streaming = on)},
	$pubs[0]->connstr('postgres') =~ s/'/''/gr));
$sub->safe_psql('postgres', sprintf(
	q{CREATE SUBSCRIPTION sub2 CONNECTION '%s' PUBLICATION fan_in WITH (streaming = on, two_phase = true)},
	$pubs[1]->connstr('postgres') =~ s/'/''/gr));
$sub->wait_for_subscription_sync($pubs[0], 'sub1');
$sub->wait_for_subscription_sync($pubs[1], 'sub2');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM metrics'), '4000', 'the initial sync copied both tables');

my $verify = sub {
	my ($what) = @_;
	my ($rc, $out, $err) = FlowpgTest::run_flowload('-d', $sub->connstr('postgres'),
		'--verify', 'fan_s,fan_r,fan_b');
	is($rc, 0, "$what: every sink equals its query") or diag("$out\n$err");
};
$verify->('after the initial sync');

# Concurrent load on both publishers, with probes of the lag meanwhile.
my @loads;
for my $i (0, 1)
{
	my ($out, $err) = ('', '');
	my @cmd = (FlowpgTest::flowload(), '-d', $pubs[$i]->connstr('postgres'),
		'--clients', '2', '--batch', '50', '--method', $i ? 'insert' : 'copy',
		'--duration', '8', '--rate', '3000', '--devices', '40', '--seed', 11 + $i,
		'--abort-fraction', '0.1', '--update-fraction', '0.1', '--delete-fraction', '0.05',
		'--savepoint-fraction', '0.1');
	push @loads, [ IPC::Run::start(\@cmd, '>', \$out, '2>', \$err), \$out, \$err ];
}

# Probes: a row committed on a publisher (its value: the commit's clock),
# awaited on the subscriber in its table and in the streaming sink.
my @rep;
my @fresh;
my $probe_no = 0;
for my $n (1 .. 10)
{
	my ($stdout, $stderr);
	my $device = 100000 + $probe_no;
	$pubs[$n % 2]->safe_psql('postgres', qq{INSERT INTO metrics (ts, device, value)
	  VALUES ('2024-01-01 00:00+00', $device, extract(epoch FROM clock_timestamp()))});
	$probe_no++;
	$sub->psql('postgres', qq{
DO \$\$
DECLARE t float8; rep float8;
BEGIN
  LOOP
    SELECT value INTO t FROM metrics WHERE device = $device;
    EXIT WHEN t IS NOT NULL;
    PERFORM pg_sleep(0.002);
  END LOOP;
  rep := extract(epoch FROM clock_timestamp()) - t;
  LOOP
    EXIT WHEN EXISTS (SELECT 1 FROM fan_s WHERE device = $device);
    PERFORM pg_sleep(0.002);
  END LOOP;
  RAISE NOTICE 'probe % %', round(rep * 1000), round((extract(epoch FROM clock_timestamp()) - t) * 1000);
END \$\$}, stdout => \$stdout, stderr => \$stderr, timeout => 30);
	if ($stderr =~ /probe (\d+) (\d+)/)
	{
		push @rep, $1;
		push @fresh, $2;
	}
	usleep(400_000);
}

for my $load (@loads)
{
	IPC::Run::finish($load->[0]);
	is($? >> 8, 0, 'a publisher load ran') or diag("${$load->[1]}\n${$load->[2]}");
}
$pubs[0]->wait_for_catchup('sub1');
$pubs[1]->wait_for_catchup('sub2');
$verify->('after the loads');

# Replicated updates and deletes reach the apply worker's row trigger:
# fan_r takes the old rows back (moves between groups and windows,
# vanishing groups, removed extremes) instead of recomputing their
# windows; fan_s (a float sum, no inverse) recomputes them.
$pubs[0]->safe_psql('postgres', q{
UPDATE metrics SET value = value * 2 WHERE device = 1;
UPDATE metrics SET device = device + 20, ts = ts + interval '7 minutes' WHERE value::int % 5 = 0;
DELETE FROM metrics WHERE device = 2;
});
$pubs[1]->safe_psql('postgres', q{
BEGIN;
DELETE FROM metrics WHERE value::int % 3 = 0;
UPDATE metrics SET value = NULL WHERE value::int % 7 = 0;
COMMIT;
});
$pubs[0]->wait_for_catchup('sub1');
$pubs[1]->wait_for_catchup('sub2');
$verify->('after replicated updates and deletes');

# A large transaction, streamed to the subscriber before it commits, and
# prepared transactions decoded at PREPARE (two_phase).
$pubs[1]->safe_psql('postgres', q{INSERT INTO metrics (ts, device, value)
  SELECT '2024-01-01 03:00+00'::timestamptz + i * interval '100 ms', i % 17, i FROM generate_series(1, 30000) i});
$pubs[1]->safe_psql('postgres', q{
BEGIN;
INSERT INTO metrics (ts, device, value) SELECT '2024-01-01 05:00+00'::timestamptz + i * interval '1 s', 7, i
  FROM generate_series(1, 500) i;
UPDATE metrics SET value = value + 1 WHERE device = 3 AND ts < '2024-01-01 00:10+00';
PREPARE TRANSACTION 'kept';
BEGIN;
INSERT INTO metrics (ts, device, value) SELECT '2024-01-01 06:00+00'::timestamptz + i * interval '1 s', 8, i
  FROM generate_series(1, 500) i;
DELETE FROM metrics WHERE device = 4 AND ts < '2024-01-01 00:10+00';
PREPARE TRANSACTION 'dropped';
});
$pubs[1]->wait_for_catchup('sub2');
cmp_ok($pubs[1]->safe_psql('postgres', q{SELECT stream_txns FROM pg_stat_replication_slots WHERE slot_name = 'sub2'}),
	'>', 0, 'the large transaction was streamed while in progress');
is($sub->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts}), '2',
	'the subscriber holds both prepared transactions');
$verify->('with transactions prepared, not committed');
$pubs[1]->safe_psql('postgres', q{COMMIT PREPARED 'kept'; ROLLBACK PREPARED 'dropped';});
$pubs[1]->wait_for_catchup('sub2');


my $rows = $pubs[0]->safe_psql('postgres', 'SELECT count(*) FROM metrics') +
  $pubs[1]->safe_psql('postgres', 'SELECT count(*) FROM metrics');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM metrics'), $rows,
	"the subscriber holds the publishers' $rows rows");
cmp_ok($rows, '>', 40000, 'the loads wrote rows');
$verify->('after the large and the prepared transactions');
is( $sub->safe_psql('postgres',
		q{SELECT count(*) FROM flowpg.flow_errors}), '0', 'no flow failed');

# A TRUNCATE replicates too.
$pubs[0]->safe_psql('postgres', 'TRUNCATE metrics');
$pubs[0]->wait_for_catchup('sub1');
$verify->('after a replicated TRUNCATE');

sub median
{
	my @s = sort { $a <=> $b } @_;
	return @s ? $s[ int($#s / 2) ] : 'n/a';
}
ok(@fresh >= 8, 'the probes saw their rows in the streaming sink');
note(sprintf('fan-in under load (2 publishers x 2 clients x 3000 rows/s): replication lag median %s ms (max %s), '
	  . 'publisher commit to streaming sink median %s ms (max %s), %d probes',
	median(@rep), (sort { $b <=> $a } @rep)[0] // 'n/a',
	median(@fresh), (sort { $b <=> $a } @fresh)[0] // 'n/a', scalar @fresh));
diag(sprintf('fan-in: replication lag median %s ms, commit to sink median %s ms',
	median(@rep), median(@fresh)));

$sub->stop;
$_->stop for @pubs;
done_testing();
