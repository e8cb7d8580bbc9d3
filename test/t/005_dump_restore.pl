# flowpg: pg_dump -Fc / pg_restore of a database whose batching flows have
# dirty windows pending.
#
# The restored database must have the same flows (identical definitions),
# the same sink tables and contents, the capture triggers on the sources
# (in the states create_flow leaves them) and the pending dirty log.
# Changes made to the restored source are captured; after flush_flow the
# restored sinks equal the flows' queries over the restored source (EXCEPT
# ALL both ways), including the changes that were pending at dump time.
# Once flows are enabled again, the worker of the restored database runs
# them without flush_flow.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('dump_restore');

sub poll_until { return FlowpgTest::poll_until($node, @_); }

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
  mode => 'batching', comment => 'per device and minute');
SELECT flowpg.create_flow('device_totals', 'device_totals',
  $$SELECT device, count(*) AS n, sum(value) AS total FROM metrics GROUP BY device$$,
  mode => 'batching', eval_interval => '30 seconds');
SELECT flowpg.flush_flow('per_minute'), flowpg.flush_flow('device_totals');  -- the backfills
});

# Oracles: rows of each sink and of its query without a twin on the other side.
my $oracle_sql = q{
WITH q AS (SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
             FROM metrics GROUP BY device, date_trunc('minute', ts)),
     s AS (SELECT device, minute, n, total FROM metrics_per_minute),
     q2 AS (SELECT device, count(*) AS n, sum(value) AS total FROM metrics GROUP BY device),
     s2 AS (SELECT device, n, total FROM device_totals)
SELECT (SELECT count(*) FROM (SELECT * FROM q EXCEPT ALL SELECT * FROM s) a)
     + (SELECT count(*) FROM (SELECT * FROM s EXCEPT ALL SELECT * FROM q) b)
     || ' / ' ||
       ((SELECT count(*) FROM (SELECT * FROM q2 EXCEPT ALL SELECT * FROM s2) c)
     + (SELECT count(*) FROM (SELECT * FROM s2 EXCEPT ALL SELECT * FROM q2) d))};
my $definition_sql = q{
SELECT flow_id, flow_name, owner, mode, source_tables::text, sink_table::text, query,
       time_column, window_expression, expire_after, eval_interval, comment,
       flow_definition
  FROM flowpg.flows ORDER BY flow_name};
my $sinks_sql = q{
SELECT (SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', device, minute, n, total), ',' ORDER BY device, minute))
          FROM metrics_per_minute)
    || ' / ' ||
       (SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', device, n, total), ',' ORDER BY device))
          FROM device_totals)};
my $pending_sql = q{
SELECT string_agg(flow_name || '=' || pending, ' ' ORDER BY flow_name) FROM flowpg.flow_stats};
my $dirty_sql = q{
SELECT count(*) || ' ' || coalesce(md5(string_agg(concat_ws('|', flow_id, lo, hi, nrows), ',' ORDER BY flow_id, lo, hi, nrows)), '')
  FROM flowpg.dirty_entries};
my $triggers_sql = q{
SELECT string_agg(tgname || ':' || tgenabled::text || ':' || tgfoid::regproc::text, ' ' ORDER BY tgname)
  FROM pg_trigger WHERE tgrelid = 'public.metrics'::regclass AND NOT tgisinternal};

is($node->safe_psql('flowdb', $oracle_sql), '0 / 0', 'backfills are exact');

# Keep the worker from running flows, so that changes stay pending.
$node->safe_psql('postgres',
	'ALTER SYSTEM SET flowpg.enabled = off; SELECT pg_reload_conf();');
ok(poll_until('flowdb', 'SHOW flowpg.enabled', 'off', 10),
	'flowpg.enabled is off');
sleep(2);

$node->safe_psql(
	'flowdb', q{
INSERT INTO metrics
  SELECT timestamptz '2024-01-01 00:30:00+00' + i * interval '11 seconds', i % 7, i
  FROM generate_series(0, 99) AS i;
UPDATE metrics SET value = value + 500
 WHERE ts >= '2024-01-01 02:00:00+00' AND ts < '2024-01-01 02:02:00+00';
DELETE FROM metrics WHERE ts >= '2024-01-01 03:00:00+00' AND ts < '2024-01-01 03:01:00+00';
});
sleep(1);
like(
	$node->safe_psql('flowdb', $pending_sql),
	qr/^device_totals=[1-9]\d* per_minute=[1-9]\d*$/,
	'both flows have dirty windows pending');
isnt($node->safe_psql('flowdb', $oracle_sql),
	'0 / 0', 'the sinks are stale');

my $definitions = $node->safe_psql('flowdb', $definition_sql);
my $sinks = $node->safe_psql('flowdb', $sinks_sql);
my $pending = $node->safe_psql('flowdb', $pending_sql);
my $dirty = $node->safe_psql('flowdb', $dirty_sql);
my $triggers = $node->safe_psql('flowdb', $triggers_sql);
like(
	$triggers,
	qr/^flowpg_capture_delete:O:\S+ flowpg_capture_insert:O:\S+ flowpg_capture_row:R:\S+ flowpg_capture_truncate:A:\S+ flowpg_capture_update:O:\S+$/,
	'the source has the capture triggers: statement ones for ordinary sessions, a row one for replicas');

# Dump and restore into a new database.
my $dump = $PostgreSQL::Test::Utils::tmp_check . '/flowdb_pending.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'flowdb' ],
	'pg_dump -Fc flowdb');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', 'restored', $dump ],
	'pg_restore into a new database');

is($node->safe_psql('restored', $definition_sql),
	$definitions, 'the restored flows have identical definitions');
is( $node->safe_psql(
		'restored',
		q{SELECT string_agg(flow_definition, E'\n' ORDER BY flow_name) FROM flowpg.flows}),
	$node->safe_psql(
		'flowdb',
		q{SELECT string_agg(flow_definition, E'\n' ORDER BY flow_name) FROM flowpg.flows}),
	'flow_definition is identical');
is($node->safe_psql('restored', $sinks_sql),
	$sinks, 'the restored sinks have the same contents');
is($node->safe_psql('restored', $triggers_sql),
	$triggers, 'the restored source has the same capture triggers');
is($node->safe_psql('restored', $dirty_sql),
	$dirty, 'the restored dirty log has the pending entries');
is($node->safe_psql('restored', $pending_sql),
	$pending, 'flow_stats shows them pending');
is( $node->safe_psql(
		'restored',
		q{SELECT count(*) FROM pg_indexes WHERE tablename IN ('metrics_per_minute', 'device_totals')}),
	$node->safe_psql(
		'flowdb',
		q{SELECT count(*) FROM pg_indexes WHERE tablename IN ('metrics_per_minute', 'device_totals')}),
	'the sinks have their unique indexes');

# The flows' views depend on their sinks again (pg_dump does not carry that
# dependency: the restore records it), so a sink refuses DROP TABLE.
is($node->safe_psql('flowdb', $FlowpgTest::sink_dependencies), '2/2',
	'the original sinks are depended on by their flows');
is($node->safe_psql('restored', $FlowpgTest::sink_dependencies), '2/2',
	'so are the restored sinks');
my ($rc, $out, $err) = $node->psql('restored', 'DROP TABLE metrics_per_minute');
isnt($rc, 0, 'restored: DROP TABLE of a sink is refused');
like($err, qr/cannot drop table metrics_per_minute because other objects depend on it.*flowpg\.drop_flow\('per_minute'\)/s,
	'with the flow named in the error');

# New changes in the restored database are captured.
$node->safe_psql(
	'restored', q{
INSERT INTO metrics
  SELECT timestamptz '2024-01-01 04:00:00+00' + i * interval '13 seconds', i % 3, 1000 + i
  FROM generate_series(0, 49) AS i;
UPDATE metrics SET ts = ts + interval '1 hour' WHERE ts >= '2024-01-01 01:00:00+00' AND ts < '2024-01-01 01:01:00+00';
DELETE FROM metrics WHERE device = 4 AND ts < '2024-01-01 00:05:00+00';
});
my $flow_pending_sql =
  q{SELECT pending FROM flowpg.flow_stats WHERE flow_name = '%s'};
for my $flow ('per_minute', 'device_totals')
{
	cmp_ok(
		$node->safe_psql('restored', sprintf($flow_pending_sql, $flow)),
		'>',
		$node->safe_psql('flowdb', sprintf($flow_pending_sql, $flow)),
		"changes to the restored source are logged for the restored flow $flow");
}

# flush_flow in the restored database: exact, with the changes pending at
# dump time and the new ones.
$node->safe_psql('restored',
	q{SELECT flowpg.flush_flow('per_minute'), flowpg.flush_flow('device_totals')});
is($node->safe_psql('restored', $oracle_sql),
	'0 / 0', 'restored: after flush_flow the sinks equal the queries');
is($node->safe_psql('restored', $pending_sql),
	'device_totals=0 per_minute=0', 'restored: nothing is pending');

# The original database is unaffected and flushes exactly too.
is($node->safe_psql('flowdb', $pending_sql),
	$pending, 'the original still has its own pending entries');
$node->safe_psql('flowdb',
	q{SELECT flowpg.flush_flow('per_minute'), flowpg.flush_flow('device_totals')});
is($node->safe_psql('flowdb', $oracle_sql),
	'0 / 0', 'original: after flush_flow the sinks equal the queries');
isnt($node->safe_psql('flowdb', $sinks_sql),
	$node->safe_psql('restored', $sinks_sql),
	'the two databases have diverged');

# Flows enabled again: the worker of the restored database runs them.
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET flowpg.enabled; SELECT pg_reload_conf();');
$node->safe_psql('restored',
	q{INSERT INTO metrics VALUES ('2024-01-01 00:00:03+00', 1, 77), ('2024-01-01 07:00:00+00', 2, 78)});
ok( poll_until(
		'restored',
		"SELECT ($pending_sql) = 'device_totals=0 per_minute=0' AND ($oracle_sql) = '0 / 0'",
		't', 45),
	'restored: the worker refreshes the flows without flush_flow');
is( $node->safe_psql(
		'restored',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = 'restored'}
	),
	't',
	'a flowpg worker runs for the restored database');

$node->stop;
done_testing();
