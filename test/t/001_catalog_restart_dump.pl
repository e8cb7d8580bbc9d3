# flowpg: the flow catalog survives a server restart, and pg_dump -Fc /
# pg_restore into a new database reproduces the flows (CREATE EXTENSION comes
# from the dump, the catalog rows through pg_extension_config_dump) and their
# sink tables.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'flowpg'
flowpg.batching_partial_states = off
max_prepared_transactions = 10
lc_messages = 'C'
});
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE flowdb');
$node->safe_psql(
	'flowdb', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value float8);
INSERT INTO metrics
  SELECT timestamptz '2024-01-01 00:00:00+00' + i * interval '7 seconds', i % 5, (i * 37) % 101
  FROM generate_series(0, 2999) AS i;
});

# A streaming-capable flow (mode 'auto') and a batching flow without a time window.
$node->safe_psql(
	'flowdb', q{
SELECT flowpg.create_flow('per_minute', 'metrics_per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total,
           avg(value) AS mean, min(value) AS lo, max(value) AS hi
      FROM metrics GROUP BY device, date_trunc('minute', ts)$$);
});
$node->safe_psql(
	'flowdb', q{
SELECT flowpg.create_flow('device_totals', 'device_totals',
  $$SELECT device, count(*) AS n, sum(value) AS total FROM metrics GROUP BY device$$,
  mode => 'batching', eval_interval => '30 seconds', comment => 'totals per device');
});
# the backfills, online after create_flow: done by the worker
ok(FlowpgTest::poll_until($node, 'flowdb',
		q{SELECT count(*) FROM flowpg.flows WHERE state = 'active'}, '2', 60),
	'the worker completes both backfills');

# Everything that defines a flow (not its state or update time).
my $definition_sql = q{
SELECT flow_name, owner, mode, source_tables::text, sink_table::text, query,
       time_column, window_expression, expire_after, eval_interval, comment,
       flow_definition
  FROM flowpg.flows ORDER BY flow_name};
# The same, plus what must survive a restart unchanged.
my $catalog_sql = q{
SELECT flow_id, created_at, flow_name, owner, mode, source_tables::text,
       sink_table::text, query, time_column, window_expression, expire_after,
       eval_interval, comment, flow_definition
  FROM flowpg.flows ORDER BY flow_name};
# The sinks' contents (without update_at).
my $sinks_sql = q{
SELECT (SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', device, minute, n, total, mean, lo, hi), ',' ORDER BY device, minute))
          FROM metrics_per_minute)
    || ' / ' ||
       (SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', device, n, total), ',' ORDER BY device))
          FROM device_totals)};
# Oracle: the sink equals the flow's query over the source (EXCEPT ALL both ways).
my $oracle_sql = q{
WITH q AS (SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total,
                  avg(value) AS mean, min(value) AS lo, max(value) AS hi
             FROM metrics GROUP BY device, date_trunc('minute', ts)),
     s AS (SELECT device, minute, n, total, mean, lo, hi FROM metrics_per_minute)
SELECT (SELECT count(*) FROM (SELECT * FROM q EXCEPT ALL SELECT * FROM s) a)
     + (SELECT count(*) FROM (SELECT * FROM s EXCEPT ALL SELECT * FROM q) b)};

is($node->safe_psql('flowdb', 'SELECT count(*) FROM flowpg.flows'),
	'2', 'two flows in flowpg.flows');
is( $node->safe_psql(
		'flowdb',
		q{SELECT mode FROM flowpg.flows WHERE flow_name = 'device_totals'}),
	'batching',
	'device_totals is a batching flow');
isnt(
	$node->safe_psql(
		'flowdb',
		q{SELECT coalesce(flow_definition, '') FROM flowpg.flows WHERE flow_name = 'per_minute'}
	),
	'',
	'per_minute has a flow_definition');
is($node->safe_psql('flowdb', $oracle_sql),
	'0', 'backfill: sink equals the query over the source');
is($node->safe_psql('flowdb', 'SELECT count(*) FROM device_totals'),
	'5', 'backfill: batching sink filled by the backfill');

my $catalog_before = $node->safe_psql('flowdb', $catalog_sql);
my $definition_before = $node->safe_psql('flowdb', $definition_sql);
my $sinks_before = $node->safe_psql('flowdb', $sinks_sql);

# Restart: the catalog is the source of truth.
$node->restart;

is($node->safe_psql('flowdb', $catalog_sql),
	$catalog_before, 'flows unchanged after restart');
is($node->safe_psql('flowdb', $sinks_sql),
	$sinks_before, 'sinks unchanged after restart');
is($node->safe_psql('flowdb', $oracle_sql),
	'0', 'after restart: sink equals the query over the source');

# pg_dump -Fc, then pg_restore into a new database of the same node.
my $dump = $PostgreSQL::Test::Utils::tmp_check . '/flowdb.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'flowdb' ],
	'pg_dump -Fc flowdb');

$node->command_like([ 'pg_restore', '-l', $dump ],
	qr/EXTENSION - flowpg/, 'the dump creates the extension');

$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', 'restored', $dump ],
	'pg_restore into a new database');

is($node->safe_psql('restored', 'SELECT count(*) FROM flowpg.flows'),
	'2', 'restored database lists both flows');
is( $node->safe_psql(
		'restored',
		q{SELECT flow_definition FROM flowpg.flows WHERE flow_name = 'per_minute'}),
	$node->safe_psql(
		'flowdb',
		q{SELECT flow_definition FROM flowpg.flows WHERE flow_name = 'per_minute'}),
	'restored per_minute has the same flow_definition');
is($node->safe_psql('restored', $definition_sql),
	$definition_before, 'restored flows have the same definitions');
is( $node->safe_psql(
		'restored',
		q{SELECT to_regclass('public.metrics_per_minute') IS NOT NULL
		     AND to_regclass('public.device_totals') IS NOT NULL}),
	't',
	'sink tables exist in the restored database');
is($node->safe_psql('restored', $sinks_sql),
	$sinks_before, 'restored sinks have the same contents');

$node->stop;
done_testing();
