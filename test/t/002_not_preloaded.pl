# flowpg without shared_preload_libraries: CREATE EXTENSION works, but
# creating a flow fails with a clear error that names shared_preload_libraries.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('not_preloaded');
$node->init;
$node->append_conf('postgresql.conf', "lc_messages = 'C'\n");
$node->start;

unlike($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	qr/flowpg/, 'flowpg is not preloaded');

my ($ret, $stdout, $stderr) =
  $node->psql('postgres', 'CREATE EXTENSION flowpg');
is($ret, 0, 'CREATE EXTENSION flowpg succeeds without preloading')
  or diag($stderr);

$node->safe_psql(
	'postgres', q{
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value float8);
INSERT INTO metrics
  SELECT timestamptz '2024-01-01 00:00:00+00' + i * interval '10 seconds', i % 3, i
  FROM generate_series(0, 99) AS i;
});

my $create_flow = q{
SELECT flowpg.create_flow('per_minute', 'metrics_per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n
      FROM metrics GROUP BY device, date_trunc('minute', ts)$$);
};

($ret, $stdout, $stderr) = $node->psql('postgres', $create_flow);
isnt($ret, 0, 'create_flow fails when flowpg is not preloaded');
like($stderr, qr/ERROR:/, 'create_flow reports an error');
like($stderr, qr/shared_preload_libraries/,
	'the error mentions shared_preload_libraries');
is($node->safe_psql('postgres', 'SELECT count(*) FROM flowpg.flows'),
	'0', 'no flow was recorded');
is( $node->safe_psql(
		'postgres', q{SELECT to_regclass('public.metrics_per_minute') IS NULL}),
	't',
	'no sink table was created');

# Once preloaded, the same call works in the same database.
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'flowpg'\n");
$node->restart;
($ret, $stdout, $stderr) = $node->psql('postgres', $create_flow);
is($ret, 0, 'create_flow succeeds once flowpg is preloaded') or diag($stderr);
is($node->safe_psql('postgres', 'SELECT count(*) FROM flowpg.flows'),
	'1', 'the flow is recorded');

$node->stop;
done_testing();
